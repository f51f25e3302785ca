"""Several processes (and hosts) on JAX's own distributed runtime (``jax.distributed``).

symlib runs the same code in one process or in many: a computation is laid out on a
:class:`jax.sharding.Mesh` over ``jax.devices()``, which after
:func:`jax.distributed.initialize` holds the devices of *every* process (each process
addresses only its own, ``jax.local_devices()``). Every process runs the same program
(multi-controller SPMD): the same calls, in the same order, with the same arguments,
except for the data each one holds. XLA's collectives (NCCL on GPUs, gloo on CPUs,
JAX's default ``jax_cpu_collectives_implementation``) join the processes inside the
compiled programs; no runner of symlib's own is involved.

This module lives in :mod:`symlib.core` because JAX's runtime must start before anything
initialises JAX's backend, and importing :mod:`symlib.inference` does (BlackJAX computes
constants when it is imported): ``from symlib.core.distributed import initialize_from_env``
imports only JAX.

* :func:`initialize_from_env` starts the runtime from environment variables (JAX's
  ``JAX_COORDINATOR_ADDRESS``, with ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``; or a
  SLURM / Open MPI job, which JAX detects itself) and does nothing in a plain single
  process, so a script calls it unconditionally.
* :func:`is_writer` (process 0) tells the one process that writes shared files;
  :func:`sync_processes` makes the others wait until it has.
* :func:`process_rows` is the block of a data set's rows a process holds, for
  :func:`symlib.inference.hmc.make_logdensity` with ``process_local=True``.
* :func:`allgather` gathers host values (numpy) from every process.
* :func:`global_mesh` is the 1-D mesh of every device, ordered by process, and
  :func:`put_global` places host values on it (``jax.device_put``, PRNG keys included).

A launch on one host with two processes (CPU or one GPU each)::

    JAX_COORDINATOR_ADDRESS=127.0.0.1:12345 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=0 python run.py &
    JAX_COORDINATOR_ADDRESS=127.0.0.1:12345 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=1 python run.py

and on a SLURM cluster ``srun --ntasks=8 python run.py`` (``book/running.md``).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh

__all__ = [
    "ENV_VARS",
    "ProcessInfo",
    "allgather",
    "sync_processes",
    "global_mesh",
    "initialize_from_env",
    "is_writer",
    "process_info",
    "process_rows",
    "put_global",
]

#: the environment variables :func:`initialize_from_env` reads (the first is JAX's own)
ENV_VARS = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")
_SLURM = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")
_OMPI = "OMPI_MCA_orte_hnp_uri"


class ProcessInfo(NamedTuple):
    """Where this process stands: ``process_index`` of ``process_count`` processes, its
    ``local_devices`` and the ``num_devices`` of all processes together; ``how`` says how
    the runtime was started (``"single"``: no distributed runtime; ``"env"``: from
    ``JAX_*`` variables; ``"slurm"``, ``"ompi"``: detected by JAX; ``"already"``: it was
    running before the call)."""

    process_index: int
    process_count: int
    local_devices: tuple
    num_devices: int
    how: str


def process_info(how: str = "already") -> ProcessInfo:
    """The :class:`ProcessInfo` of this process now.

    Args:
        how: the value of the ``how`` field.

    Returns:
        A :class:`ProcessInfo`.
    """
    return ProcessInfo(jax.process_index(), jax.process_count(), tuple(jax.local_devices()), jax.device_count(), how)


def _int_env(env: Mapping[str, str], name: str) -> int:
    value = env[name]
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def initialize_from_env(env: Mapping[str, str] | None = None, *, initialization_timeout: int = 300) -> ProcessInfo:
    """Start JAX's distributed runtime if the environment describes a multi-process launch.

    Call it first thing, before any JAX computation (JAX's rule for
    :func:`jax.distributed.initialize`). In order:

    1. the runtime is already running: nothing is done;
    2. ``JAX_COORDINATOR_ADDRESS`` (``host:port`` of process 0), ``JAX_NUM_PROCESSES`` and
       ``JAX_PROCESS_ID`` are all set: ``jax.distributed.initialize`` with them (JAX reads
       ``JAX_LOCAL_DEVICE_IDS`` itself, e.g. ``0`` to give a process one GPU of a host);
    3. a SLURM job step with several tasks (``srun``), or an Open MPI launch (``mpirun``):
       ``jax.distributed.initialize()``, which finds the coordinator, the process count
       and the process id itself (one GPU per process on GPUs);
    4. otherwise: a single process, nothing is started.

    Args:
        env: the variables to read (default ``os.environ``).
        initialization_timeout: seconds to wait for every process to join.

    Returns:
        The :class:`ProcessInfo` of this process.

    Raises:
        ValueError: if only some of the three ``JAX_*`` variables are set, or one is not
            an integer where one is expected.
    """
    env = os.environ if env is None else env
    if jax.distributed.is_initialized():
        return process_info("already")
    given = [name for name in ENV_VARS if env.get(name)]
    if given and len(given) < len(ENV_VARS):
        missing = [name for name in ENV_VARS if name not in given]
        raise ValueError(f"{', '.join(given)} set but {', '.join(missing)} not: a multi-process launch needs all of "
                         f"{', '.join(ENV_VARS)} (or none of them, for one process)")
    if given:
        jax.distributed.initialize(env["JAX_COORDINATOR_ADDRESS"], _int_env(env, "JAX_NUM_PROCESSES"),
                                   _int_env(env, "JAX_PROCESS_ID"), initialization_timeout=initialization_timeout)
        return process_info("env")
    if all(name in env for name in _SLURM) and _int_env(env, "SLURM_NTASKS") > 1:
        jax.distributed.initialize(initialization_timeout=initialization_timeout)
        return process_info("slurm")
    if _OMPI in env:
        jax.distributed.initialize(initialization_timeout=initialization_timeout)
        return process_info("ompi")
    return process_info("single")


def is_writer() -> bool:
    """Whether this process writes shared files (checkpoints, samples, results): process 0.

    Returns:
        ``jax.process_index() == 0`` (always ``True`` in a single process).
    """
    return jax.process_index() == 0


def sync_processes(name: str) -> None:
    """Wait until every process has reached the synchronisation point ``name`` (a process barrier; nothing in one
    process). Not the loss barrier of :func:`symlib.evaluation.barrier`.

    Every process must call it, with the same ``name``, in the same order.

    Args:
        name: a label shared by all processes (it must match across processes).
    """
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def allgather(value) -> np.ndarray:
    """The host values of every process, stacked in process order.

    Values travel bit for bit: 8-byte dtypes (float64, int64), which JAX would narrow to 4
    bytes without ``jax_enable_x64``, go as pairs of uint32.

    Args:
        value: a numpy array (or scalar) of the same shape and dtype in every process.

    Returns:
        A numpy array of shape ``(process_count, *value.shape)``, of ``value``'s dtype.
    """
    value = np.asarray(value)
    if jax.process_count() == 1:
        return value[None]
    from jax.experimental import multihost_utils

    if value.dtype.itemsize == 8:
        words = np.ascontiguousarray(value).reshape(-1).view(np.uint32)
        gathered = np.asarray(multihost_utils.process_allgather(words, tiled=False), np.uint32)
        return np.ascontiguousarray(gathered).view(value.dtype).reshape((-1, *value.shape))
    return np.asarray(multihost_utils.process_allgather(value, tiled=False))


def global_mesh(axis: str = "data", devices=None) -> Mesh:
    """A 1-D mesh over ``devices`` (default: every device of every process), ordered by
    process then device id, so that each process's devices form one contiguous block.

    Args:
        axis: the mesh axis name.
        devices: the devices (default ``jax.devices()``).

    Returns:
        A :class:`jax.sharding.Mesh` with one axis.

    Raises:
        ValueError: if ``devices`` is empty.
    """
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("devices is empty")
    devices = sorted(devices, key=lambda d: (d.process_index, d.id))
    return Mesh(np.array(devices), (axis,))


def process_rows(n: int, process_index: int | None = None, process_count: int | None = None) -> slice:
    """The rows of an ``n``-row data set that a process holds when the rows are split into
    ``process_count`` contiguous blocks in process order (the first ``n % process_count``
    blocks one row longer).

    Args:
        n: rows of the whole data set.
        process_index: the process (default: this one).
        process_count: the number of processes (default: all of them).

    Returns:
        A ``slice`` of the rows.

    Raises:
        ValueError: if ``process_count < 1`` or ``process_index`` is not in ``[0, process_count)``.
    """
    p = jax.process_index() if process_index is None else int(process_index)
    count = jax.process_count() if process_count is None else int(process_count)
    if count < 1:
        raise ValueError(f"process_count must be >= 1, got {count}")
    if not 0 <= p < count:
        raise ValueError(f"process_index must lie in [0, process_count) = [0, {count}), got {p}")
    base, extra = divmod(int(n), count)
    start = p * base + min(p, extra)
    return slice(start, start + base + (p < extra))


def put_global(tree, sharding):
    """``jax.device_put(tree, sharding)`` that also works for a sharding over the devices of
    several processes: every process passes the same (host) values and places the parts of
    its own devices. Typed PRNG keys go as their key data there (``device_put`` refuses
    them across processes) and are wrapped again.

    Args:
        tree: a pytree of arrays (numpy, JAX, typed PRNG keys), equal in every process.
        sharding: a :class:`jax.sharding.Sharding`.

    Returns:
        ``tree`` with every leaf placed on ``sharding``.
    """
    if sharding.is_fully_addressable:
        return jax.device_put(tree, sharding)

    def put(a):
        if jax.numpy.issubdtype(jax.numpy.result_type(a), jax.dtypes.prng_key):
            data = jax.device_put(np.asarray(jax.random.key_data(a)), sharding)
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(a))
        return jax.device_put(np.asarray(a), sharding)

    return jax.tree.map(put, tree)
