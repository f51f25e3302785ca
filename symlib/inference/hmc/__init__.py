"""Full-batch Hamiltonian Monte Carlo on BNN posteriors (BlackJAX), chunked, resumable and checksummed.

Implements the sampler of Xiao et al. (App. A): a standard Gaussian prior, full-batch
log-likelihood, HMC with an identity mass matrix, a fixed step size and a fixed number of
leapfrog steps per iteration (500 in the paper), ``num_burnin`` burn-in iterations (600),
then one sample kept every ``thin`` iterations (10) until ``num_samples`` (1000) are kept.
Optionally (off by default) the step size or the number of leapfrog steps is drawn afresh
at every iteration (``HMCConfig.step_size_jitter``, ``HMCConfig.num_leapfrog_jitter``;
Neal 2011, Sec. 5.4.2.2), which keeps a fixed trajectory from resonating with some
coordinates' periods (see :class:`HMCConfig`).

* :func:`make_logdensity` builds the (tempered) log posterior of a network (its
  ``apply_fn``) on a data set, data-parallel over devices with ``jax.sharding``: the
  examples are split along a 1-D ``Mesh(devices, ("data",))``, parameters are replicated
  and XLA inserts the reduction of the per-example sum. One code path for one CPU, one
  GPU or several devices.
* :func:`run_hmc` runs several chains at once (``vmap``) with BlackJAX's HMC kernel.
  The transitions run inside ``jax.lax.scan``; one jitted call makes ``thin`` iterations
  and returns only the last state, plus per-iteration statistics for every iteration.
  With ``out_dir`` the kept samples are written to disk chunk by chunk
  (``samples_XXXXX.npz``) together with a checkpoint of the chain state, so that an
  interrupted run resumes where it stopped and gives the same chain as an uninterrupted
  one (the key of iteration ``t`` of chain ``c`` is ``fold_in(fold_in(key, c), t)``).
* **Several processes or hosts** (JAX's distributed runtime, started by
  :func:`symlib.core.distributed.initialize_from_env`): the same calls in every process.
  The mesh spans the devices of every process, each process provides its own rows
  (``make_logdensity(..., process_local=True)``) or the whole data set, the chain state
  is replicated (every process gets all samples), and with ``out_dir`` (on a shared
  filesystem) only process 0 writes while the others wait at a barrier after each
  checkpoint; every process reads the stored run to resume it.

**Identity of a stored run.** A run is identified by :func:`run_fingerprint`: the
:class:`HMCConfig`, the chunk layout (``chunk_size``), the data (the fingerprint of a
:func:`make_logdensity` target), the initial state, the key and :data:`SAMPLER_VERSION`;
never by the version of symlib's code, so editing unrelated code does not abandon a long
run. :func:`run_hmc` resumes only a run with the same identity and otherwise says which
part differs. The devices are not part of it: a run started on one device resumes on four
(or the reverse) and continues the same chain up to the order of the sums over the shards
(``tests/inference/test_hmc.py::test_sharded_equals_unsharded``).

Files in ``out_dir`` (each written to a temporary name, then renamed):

* ``burnin_XXXXX.npz``: per-iteration statistics of a stretch of burn-in;
* ``samples_XXXXX.npz``: ``leaf_<i>`` arrays of shape ``(chains, k, ...)`` (``k`` kept
  samples, at most ``chunk_size``) and the statistics of the iterations that produced them;
* ``state_XXXXX.npz``: the checkpoint before segment ``XXXXX`` (positions, log densities,
  gradients, step sizes, dual-averaging state). Every checkpoint is kept (each is about
  two samples per chain), so a lost or damaged file can be recomputed from the one before;
* ``state.json``: the commit marker: progress counters, the config, the run's identity,
  the sha256 checksum of every file above and the name of the latest checkpoint.
  Rewritten last, so a crash never leaves it pointing at something incomplete.

Every file is checked against its checksum whenever it is read (loading samples or a
result, resuming a run). A missing, truncated or damaged file, or one without a checksum,
raises :class:`CorruptRunError` naming it; deleting that file and calling :func:`run_hmc`
again with the same arguments recomputes it (and everything after it) from the
checkpoint before it.

**Parts** (each a module of this package, with public seams):

* :mod:`~symlib.inference.hmc.target`: :class:`LogDensity` and :func:`make_logdensity`
  (the log posterior, sharding);
* :mod:`~symlib.inference.hmc.kernel`: :func:`jittered_hmc` (``init``/``step`` in
  BlackJAX's style) and the compiled blocks of iterations with step-size adaptation;
* :mod:`~symlib.inference.hmc.store`: the segment plan, checksummed files, the run's
  identity, :func:`load_samples` and :func:`load_result`;
* :mod:`~symlib.inference.hmc.config`: :class:`HMCConfig`, :class:`HMCResult`;
* :mod:`~symlib.inference.hmc.driver`: :func:`run_hmc`, writing to memory or to a run
  directory, and the pieces (``prepare_run``, ``run_segment``, ``carry_at``...) that
  :mod:`symlib.experiments.xiao.hmc_pieces` drives one piece at a time;
* :mod:`~symlib.inference.hmc.precision`: :func:`precision_study` and :func:`choose_precision`,
  the measurements that decide the matrix-product precision (float32, TF32, bfloat16) of a
  run on a GPU.
"""
from symlib.core.exports import lazy_exports

_EXPORTS = {
    "config": ["SAMPLER_VERSION", "CorruptRunError", "HMCConfig", "HMCWarning"],
    "driver": ["InMemorySink", "RunDirSink", "Sink", "run_fingerprint", "run_hmc"],
    "kernel": ["JitteredHMC", "jittered_hmc"],
    "store": ["HMCResult", "iter_sample_chunks", "load_result", "load_samples"],
    "target": ["LogDensity", "log_prior", "make_logdensity"],
    "precision": ["choose_precision", "density_errors", "precision_run", "precision_study", "study_of_runs"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
