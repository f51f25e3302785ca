"""The target of :func:`~symlib.inference.hmc.run_hmc`: :class:`LogDensity` (any log density, with
the fingerprint of its data) and :func:`make_logdensity`, the (tempered) log posterior of a
network under its likelihood on a data set, data-parallel over devices with ``jax.sharding``."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import sys
import types
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from symlib.core.checks import check_finite, check_finite_tree, positive_float
from symlib.core.models import layout_check
from symlib.core.distributed import allgather, global_mesh, put_global
from symlib.inference.likelihood import Categorical, Gaussian, check_likelihood


# --------------------------------------------------------------------------------------
# Target densities
# --------------------------------------------------------------------------------------


@jax.tree_util.register_pytree_node_class
class LogDensity:
    """A log density ``params -> scalar`` that carries its data as pytree leaves.

    ``fn(params, *data)`` is the density; ``data`` (arrays, possibly sharded) are passed to
    jitted samplers as arguments instead of being baked into the program as constants.
    ``mesh`` is the device mesh the data live on (``None``: wherever JAX puts them) and
    ``fingerprint`` a hash of the data and settings, used to refuse resuming a run on a
    different target (``None``: the data cannot be checked).
    """

    def __init__(self, fn: Callable, data: tuple = (), mesh: Mesh | None = None, fingerprint: str | None = None):
        self.fn, self.data, self.mesh, self.fingerprint = fn, tuple(data), mesh, fingerprint

    def __call__(self, params):
        return _call_logdensity(self, params)

    def replicate(self, tree):
        """Place ``tree`` replicated on this density's mesh.

        Args:
            tree: a pytree of arrays.

        Returns:
            ``tree`` with every leaf replicated on :attr:`mesh` (``tree`` itself without a mesh).
        """
        if self.mesh is None:
            return tree
        return put_global(tree, NamedSharding(self.mesh, P()))

    def tree_flatten(self):
        """JAX pytree protocol.

        Returns:
            The data arrays (the leaves) and ``(fn, mesh, fingerprint)`` (static).
        """
        return self.data, (self.fn, self.mesh, self.fingerprint)

    @classmethod
    def tree_unflatten(cls, aux, children):
        """JAX pytree protocol: the inverse of :meth:`tree_flatten`.

        Args:
            aux: ``(fn, mesh, fingerprint)``.
            children: the data arrays.

        Returns:
            A :class:`LogDensity`.
        """
        return cls(aux[0], tuple(children), aux[1], aux[2])


def replicated(logdensity: LogDensity, tree):
    """Constrain the outputs of a jitted function to be replicated on the density's mesh, so
    that every process holds (and can read) the whole chain state."""
    if logdensity.mesh is None:
        return tree
    sharding = NamedSharding(logdensity.mesh, P())
    return jax.tree.map(lambda a: jax.lax.with_sharding_constraint(a, sharding), tree)


@jax.jit
def _call_logdensity(logdensity: LogDensity, params):
    return logdensity.fn(params, *logdensity.data)


def as_logdensity(logdensity: Callable) -> LogDensity:
    if isinstance(logdensity, LogDensity):
        return logdensity
    if not callable(logdensity):
        raise TypeError(f"logdensity must be callable, got {type(logdensity).__name__}")
    return LogDensity(logdensity)


@dataclass(frozen=True)
class _BNNLogPosterior:
    """Tempered log posterior of a network: log N(params; 0, prior_var I) + loglik / T, the
    log-likelihood ``likelihood``'s. ``probe``: two stand-in targets (:func:`_target_probe`,
    hashable) against which the outputs are checked when traced."""

    prior_var: float
    temperature: float
    apply_fn: Callable
    example_shape: tuple
    probe: tuple
    likelihood: Categorical | Gaussian

    def __call__(self, params, x, y, mask, *state):
        if state:  # model state held fixed (make_logdensity's ``state``): the network is params and state
            if not isinstance(params, Mapping) or set(params) & set(state[0]):
                raise ValueError(f"with a fixed state ({sorted(state[0])}) the position must be a dict of the "
                                 f"weights' entries only, got {type(params).__name__} "
                                 f"{sorted(params) if isinstance(params, Mapping) else ''}")
            outputs = self._outputs({**params, **state[0]}, x)
        else:
            outputs = self._outputs(params, x)
        per_example = self.likelihood.loglik(outputs, y)
        loglik = jnp.sum(jnp.where(mask, per_example, 0.0))
        return log_prior(params, self.prior_var) + loglik / self.temperature

    def _outputs(self, params, x):
        check = layout_check(self.apply_fn)
        if check is not None:  # shapes only: runs on traced parameters
            check(params, self.example_shape, "params", 0)
        try:
            outputs = self.apply_fn(params, x)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"apply_fn(params, x) failed for x of shape (n, {', '.join(map(str, self.example_shape))}): {err}. "
                "Check that the parameters fit the data (input width, layer shapes)."
            ) from err
        if outputs.ndim < 1 or outputs.shape[0] != x.shape[0]:
            raise ValueError(f"apply_fn must return one output per example (n, ...); got {outputs.shape} for x of "
                             f"shape {x.shape}")
        values, shape, dtype = self.probe
        self.likelihood.check(np.asarray(values, dtype).reshape(shape), outputs.shape[1:], "y")
        return outputs


def log_prior(params, prior_var: float = 1.0) -> jax.Array:
    """Log density of the isotropic Gaussian prior, summed over every parameter.

    Args:
        params: a pytree of arrays.
        prior_var: the prior variance of every parameter.

    Returns:
        ``log N(params; 0, prior_var I)`` as a scalar.
    """
    leaves = jax.tree_util.tree_leaves(params)
    dim = sum(leaf.size for leaf in leaves)
    sq = sum(jnp.sum(jnp.square(leaf)) for leaf in leaves)
    return -0.5 * sq / prior_var - 0.5 * dim * math.log(2.0 * math.pi * prior_var)


def _validate_data(x, y, likelihood) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim < 2:
        raise ValueError(f"x must have an example axis and at least one feature axis (e.g. (n, features) or "
                         f"(n, height, width, channels) images), got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"x must be floating point, got dtype {x.dtype}")
    likelihood.check(y, None, "y")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} examples but y has {y.shape[0]} targets")
    if x.shape[0] == 0:
        raise ValueError("the data set is empty")
    check_finite(x, "x")
    return x, (y.astype(np.int32) if isinstance(likelihood, Categorical) else y)


def _target_probe(y: np.ndarray, high=None) -> tuple:
    """Two stand-in targets for the check of the network's outputs when the density is traced
    (:meth:`_BNNLogPosterior._outputs`): the smallest and the largest of ``y`` along its example
    axis (``high``: the largest, of every process's rows), as a flat tuple with their shape and dtype."""
    top = y.max(axis=0) if high is None else np.full(y.shape[1:], high, y.dtype)
    probe = np.stack([y.min(axis=0), top])
    return tuple(probe.ravel().tolist()), probe.shape, probe.dtype.str


def _data_mesh(devices) -> Mesh:
    if devices is None:  # every device of every process, each process's devices in one block
        return global_mesh("data")
    devices = list(devices)
    if not devices:
        raise ValueError("devices is empty")
    return Mesh(np.array(devices), ("data",))


def _shard_data(x: np.ndarray, y: np.ndarray, mesh: Mesh):
    """Pad the examples to a multiple of the device count (mask 0 on padding) and shard them."""
    n, n_dev = x.shape[0], mesh.devices.size
    pad = (-n) % n_dev
    mask = np.concatenate([np.ones(n, bool), np.zeros(pad, bool)])
    x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
    y = np.concatenate([y, np.zeros((pad,) + y.shape[1:], y.dtype)])
    sharding = NamedSharding(mesh, P("data"))
    return tuple(jax.device_put(a, sharding) for a in (x, y, mask))


def _shard_local_data(x: np.ndarray, y: np.ndarray, mesh: Mesh):
    """Global arrays from each process's own rows (see ``make_logdensity(process_local=True)``).

    Every process pads its rows to the same count, a multiple of its number of devices
    (mask 0 on padding); the global arrays hold process 0's block, then process 1's, ...

    Returns:
        ``(x, y, mask)`` sharded along the mesh, the largest label of all processes, and
        the sha256 digests of every process's rows (``(processes, 32)`` uint8).
    """
    local_devices = [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
    digest = np.frombuffer(bytes.fromhex(hash_parts(x, y)), np.uint8)
    info = allgather(np.concatenate([np.array([x.shape[0], len(local_devices), int(y.max())], np.int64),
                                     digest.astype(np.int64)]))
    if len(set(info[:, 1].tolist())) != 1 or info[0, 1] == 0:
        raise ValueError(f"process_local=True needs the mesh to hold the same number of devices of every process, "
                         f"got {info[:, 1].tolist()} (processes in order)")
    n_dev = int(info[0, 1])
    rows = -(-int(info[:, 0].max()) // n_dev) * n_dev  # rows per process, padding included
    pad = rows - x.shape[0]
    mask = np.concatenate([np.ones(x.shape[0], bool), np.zeros(pad, bool)])
    x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
    y = np.concatenate([y, np.zeros((pad,) + y.shape[1:], y.dtype)])
    sharding = NamedSharding(mesh, P("data"))
    arrays = tuple(jax.make_array_from_process_local_data(sharding, a, (rows * info.shape[0],) + a.shape[1:])
                   for a in (x, y, mask))
    return arrays, int(info[:, 2].max()), info[:, 3:].astype(np.uint8)


def hash_parts(*parts) -> str:
    """sha256 hex digest of ``parts``: arrays by shape, dtype and bytes, anything else by ``repr``."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(str((part.shape, part.dtype.str)).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


_SIMPLE = (type(None), type(Ellipsis), bool, int, float, complex, str, bytes)


def _is_named(obj) -> bool:
    """Whether ``obj`` is what its module holds under its qualified name (a module-level function or class)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    qualname = getattr(obj, "__qualname__", None)
    if module is None or not isinstance(qualname, str) or "<" in qualname:
        return False
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is obj


class _Digest:
    """A sha256 digest of a callable's code and the values it closes over (:func:`model_name`),
    with the parts that could not be fingerprinted."""

    def __init__(self):
        self.sha, self.problems, self.seen = hashlib.sha256(), [], set()

    def text(self, value: str) -> None:
        self.sha.update(value.encode() + b"\0")

    def feed(self, value, where: str) -> None:
        if isinstance(value, _SIMPLE):
            return self.text(f"{type(value).__name__}:{value!r}")
        if isinstance(value, (np.ndarray, np.generic, jax.Array)):
            array = np.asarray(value)
            self.text(f"array:{array.shape}:{array.dtype.str}")
            return self.sha.update(np.ascontiguousarray(array).tobytes())
        if isinstance(value, types.ModuleType):
            return self.text(f"module:{value.__name__}")
        if _is_named(value):
            return self.text(f"named:{value.__module__}.{value.__qualname__}")
        if id(value) in self.seen:
            return self.text("seen")
        self.seen.add(id(value))
        self.text(f"{type(value).__module__}.{type(value).__qualname__}")
        if isinstance(value, types.CodeType):
            self.sha.update(value.co_code)
            self.text(repr(value.co_names))
            return self.feed(value.co_consts, where)
        if isinstance(value, types.FunctionType):
            return self._function(value)
        if isinstance(value, types.MethodType):
            return self.feed((value.__func__, value.__self__), where)
        if isinstance(value, functools.partial):
            return self.feed((value.func, value.args, value.keywords), where)
        if isinstance(value, (tuple, list)):
            for item in value:
                self.feed(item, where)
            return None
        if isinstance(value, (set, frozenset)):
            return self.feed(sorted(value, key=repr), where)
        if isinstance(value, dict):
            return self.feed(sorted(value.items(), key=lambda item: repr(item[0])), where)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.feed([(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)], where)
        if hasattr(value, "__wrapped__"):  # e.g. a jitted function
            return self.feed(value.__wrapped__, where)
        self.problems.append(f"{where} (a {type(value).__name__})")

    def _function(self, fn: types.FunctionType) -> None:
        self.text(f"{fn.__module__}.{fn.__qualname__}")
        self.feed((fn.__code__, fn.__defaults__, fn.__kwdefaults__), f"a default of {fn.__qualname__}")
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # a cell not filled yet
                self.text("empty cell")
                continue
            self.feed(contents, f"closure cell {name!r} of {fn.__qualname__}")


def model_name(apply_fn: Callable) -> tuple[str, list[str]]:
    """How ``apply_fn`` enters the fingerprint of :func:`make_logdensity`'s density.

    A function that its module holds under its qualified name (e.g.
    :func:`symlib.core.models.mlp_apply`) is named by its module and qualified name: its
    code may change without abandoning a stored run, and two such functions of one name in
    different modules are different models. Any other callable (a lambda, a closure, a
    ``functools.partial``, a bound method, a jitted local function) is named by its
    qualified name and a sha256 digest of its module, code (bytecode, constants, the global
    names it uses: their names, not their values), defaults and closure cells, recursively:
    simple values by ``repr``, arrays by shape, dtype and bytes, containers and dataclasses
    item by item, module-level functions, classes and modules by name.

    Args:
        apply_fn: the model.

    Returns:
        ``(name, problems)``: the name, and the parts of ``apply_fn`` that could not be
        fingerprinted (e.g. ``"closure cell 'net' of make.<locals>.apply (a Net)"``; empty if none).
    """
    qualname = getattr(apply_fn, "__qualname__", type(apply_fn).__qualname__)
    if _is_named(apply_fn):
        return f"{apply_fn.__module__}.{qualname}", []
    digest = _Digest()
    digest.feed(apply_fn, "apply_fn")
    return f"{qualname}|{digest.sha.hexdigest()}", digest.problems


def _fingerprinted_name(apply_fn: Callable) -> str:
    """:func:`model_name`; where a part cannot be fingerprinted, a name unique to this call
    (so that no stored run is resumed with it) and a warning that says so."""
    name, problems = model_name(apply_fn)
    if problems:
        warnings.warn(f"make_logdensity: apply_fn cannot be fingerprinted ({'; '.join(problems)}), so this "
                      "density's fingerprint is unique to this call and run_hmc will not resume a run stored with it "
                      "in out_dir; close over simple values, arrays, functions or dataclasses only, or use a "
                      "module-level function", UserWarning, stacklevel=3)
        name += f"|unique {uuid.uuid4().hex}"
    return name


def make_logdensity(x, y, prior_var: float = 1.0, temperature: float = 1.0, *, apply_fn: Callable,
                    devices=None, process_local: bool = False, state: Mapping | None = None,
                    likelihood=Categorical()) -> LogDensity:
    """Full-batch tempered log posterior of a network under its likelihood.

    The density is ``params -> log N(params; 0, prior_var I) + sum_i log p(y_i | x_i) / T``
    with ``p(y | x)`` the ``likelihood`` of ``apply_fn(params, x)`` (categorical:
    ``softmax(apply_fn(params, x))[y]``). The examples are sharded over
    ``devices``, padded to a multiple of their number with masked rows; parameters are
    replicated.

    **Model state** (``state``, e.g. ``{"batch_stats": ...}`` of a Flax model with BatchNorm):
    held fixed, as the other fits of :mod:`symlib.inference` hold it: the density is over the
    remaining entries of the network's dict (the weights; the prior is on them only) and
    ``apply_fn`` gets ``{**params, **state}``, so HMC samples the weights, and a sampled
    network is a sample merged with ``state``.

    **Several processes** (after :func:`jax.distributed.initialize`, e.g. through
    :func:`symlib.core.distributed.initialize_from_env`): ``devices=None`` means the
    devices of every process, and every process calls this function (and then
    :func:`run_hmc`) with the same arguments, except for the data with ``process_local``:

    * ``process_local=False`` (default): every process passes the whole data set; each
      places only the rows of its own devices.
    * ``process_local=True``: every process passes only its own rows (e.g.
      ``x[process_rows(n)]``, :func:`symlib.core.distributed.process_rows`); the data
      set is their concatenation in process order. Each process pads its rows to a common
      count. The density's fingerprint then hashes the list of per-process hashes (in one
      process: the same fingerprint as ``process_local=False``), so a stored run resumes
      with the same split of the data over processes only.

    Args:
        x: inputs, a floating array of shape ``(n, features)`` (an MLP) or ``(n, ...)``
            for other networks (e.g. NHWC images for :func:`symlib.core.cnn.optunet_apply`),
            without NaN or inf.
        y: targets of the likelihood: integer labels ``>= 0`` of shape ``(n,)`` (categorical),
            finite real targets of the outputs' shape (Gaussian).
        prior_var: variance of the Gaussian prior on every parameter.
        temperature: the log-likelihood is divided by it (``T``).
        apply_fn: the model, ``apply_fn(params, x) -> outputs`` (logits of shape ``(n, classes)``
            for the categorical likelihood), e.g. :func:`symlib.core.models.mlp_apply`.
        devices: devices to shard the examples over (default: all devices of the default
            backend, of every process). With ``process_local``, leave it ``None``.
        process_local: ``x`` and ``y`` are this process's rows only (see above).
        state: top-level entries of the network held fixed (above), replicated on the
            devices; part of the fingerprint.
        likelihood: :class:`~symlib.inference.likelihood.Categorical` (default) or
            :class:`~symlib.inference.likelihood.Gaussian`.

    Returns:
        A :class:`LogDensity` whose ``fingerprint`` hashes the data, ``prior_var``,
        ``temperature``, ``apply_fn`` (:func:`model_name`: its name, or its code and closure)
        and a likelihood other than the categorical one. Warns (``UserWarning``) when
        ``apply_fn`` cannot be fingerprinted; the fingerprint is then unique to this call.

    Raises:
        ValueError: for malformed data (shapes, dtypes, NaN/inf, negative labels or targets
            that do not fit the likelihood), a
            non-positive ``prior_var`` or ``temperature``, an empty ``devices``; and, when
            the density is first called, for parameters that do not fit ``x`` (for
            :func:`symlib.core.models.mlp_apply`: not the ``dense_0..dense_{L-1}`` layout, or the
            wrong input width) or outputs that do not fit the targets (too few classes for the labels).
        TypeError: if ``likelihood`` is not a likelihood.
    """
    check_likelihood(likelihood)
    x, y = _validate_data(x, y, likelihood)
    prior_var, temperature = positive_float(prior_var, "prior_var"), positive_float(temperature, "temperature")
    mesh = _data_mesh(devices)
    name = _fingerprinted_name(apply_fn)
    fixed, extra_parts = (), ()
    if state is not None:
        if not isinstance(state, Mapping) or not state:
            raise ValueError(f"state must be a non-empty dict of the network's fixed entries (e.g. "
                             f"{{'batch_stats': ...}}), got {state!r:.80}")
        check_finite_tree(state, "state")
        leaves, treedef = jax.tree_util.tree_flatten(dict(state))
        fixed = (put_global(dict(state), NamedSharding(mesh, P())),)
        extra_parts = ("state", str(treedef), *[np.asarray(leaf) for leaf in leaves])
    if not isinstance(likelihood, Categorical):  # the categorical fingerprint is kept as it was: stored runs resume
        extra_parts += ("likelihood", repr(likelihood))
    if not process_local:
        fn = _BNNLogPosterior(prior_var, temperature, apply_fn, tuple(x.shape[1:]), _target_probe(y), likelihood)
        fingerprint = hash_parts(x, y, fn.prior_var, fn.temperature, name, *extra_parts)
        return LogDensity(fn, _shard_data(x, y, mesh) + fixed, mesh, fingerprint)
    data, max_label, digests = _shard_local_data(x, y, mesh)
    high = max_label if isinstance(likelihood, Categorical) else None
    fn = _BNNLogPosterior(prior_var, temperature, apply_fn, tuple(x.shape[1:]), _target_probe(y, high), likelihood)
    if len(digests) == 1:
        fingerprint = hash_parts(x, y, fn.prior_var, fn.temperature, name, *extra_parts)
    else:
        fingerprint = hash_parts("process_local", digests, fn.prior_var, fn.temperature, name, *extra_parts)
    return LogDensity(fn, data + fixed, mesh, fingerprint)
