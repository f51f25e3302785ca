"""One process of the multi-process HMC test (tests/inference/test_multiprocess_hmc.py).

Started (with JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID set) as

    python tests/inference/_multiprocess_hmc_worker.py RESULTS_DIR MODE

MODE ``first``: an uninterrupted run into RESULTS_DIR/full, then a run into
RESULTS_DIR/cut that stops after two chunks (an exception from ``on_chunk`` in every
process, as a job killed between checkpoints). MODE ``resume``: the run into
RESULTS_DIR/cut again, which resumes it, a bank of 3 networks trained with
``fit_ensemble`` split over the two processes' devices, and an MMD kernel bank whose
blocks are split over the two processes. Every process saves what it got to
RESULTS_DIR/<run>_p<process>.npz. The problems (data, network, config) are
:func:`problem` and :func:`bank`, which the test also uses for its single-process reference.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

N, SIZES = 200, [4, 8, 3]


def problem():
    """(x, y, init params, HMCConfig, key, chunk_size) shared by the workers and the test."""
    import jax

    from symlib.core.models import mlp_init
    from symlib.inference.hmc import HMCConfig

    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, SIZES[0])).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int32) + (x[:, 2] > 1).astype(np.int32)
    cfg = HMCConfig(step_size=0.02, num_leapfrog=5, num_burnin=4, num_samples=6, thin=2, num_chains=2,
                    adapt_step_size=True)
    return x, y, mlp_init(jax.random.key(0), SIZES), cfg, jax.random.key(1), 2


def bank(x, y, devices=None):
    """A bank of 3 MLPs trained at once (``fit_ensemble``), as flat ``(3, params)`` and ``(3, epochs)`` arrays."""
    import jax

    from symlib.core.models import mlp_apply, mlp_init
    import optax
    from symlib.inference import Data, Model, TrainConfig, fit_ensemble

    init_key, data_key = jax.random.split(jax.random.key(2))
    params0 = jax.vmap(lambda k: mlp_init(k, SIZES))(jax.random.split(init_key, 3))
    ens = fit_ensemble(data_key, params0, Model(mlp_apply), Data(x, y),
                       TrainConfig(epochs=2, batch_size=50, optimizer=optax.adam(1e-2)), devices=devices)
    params, losses = ens.samples, ens.info["epoch_loss"]
    flat = np.concatenate([np.asarray(a).reshape(3, -1) for a in jax.tree_util.tree_leaves(params)], axis=1)
    return flat, np.asarray(losses)


def mmd_samples():
    """Two small samples for ``mmd_kernel_bank`` (several blocks of 16 rows)."""
    rng = np.random.default_rng(5)
    return rng.normal(size=(60, 50)), rng.normal(0.1, 1.0, size=(40, 50))


class Interrupted(Exception):
    pass


def _save(path: Path, result, extra: dict) -> None:
    import jax

    leaves = {f"leaf_{i}": np.asarray(a) for i, a in enumerate(jax.tree_util.tree_leaves(result.samples))}
    np.savez(path, **leaves, **{f"stat_{k}": v for k, v in result.stats.items()},
             step_size=np.asarray(result.step_size), **extra)


def main(results: Path, mode: str) -> None:
    from symlib.core import distributed

    info = distributed.initialize_from_env(initialization_timeout=45)
    import jax

    from symlib.core.models import mlp_apply
    from symlib.inference.hmc import make_logdensity, run_hmc

    assert info.how == "env" and info.process_count == 2 and info.num_devices == 2, info
    pid = info.process_index
    x, y, params, cfg, key, chunk = problem()
    rows = distributed.process_rows(N)
    ld = make_logdensity(x[rows], y[rows], process_local=True, apply_fn=mlp_apply)
    extra = {"rows": np.array([rows.start, rows.stop]), "writer": np.bool_(distributed.is_writer())}
    if mode == "first":
        ld_full = make_logdensity(x, y, apply_fn=mlp_apply)  # every process passes all rows: the same density
        extra["logdensity_local"] = np.float64(ld(params))
        extra["logdensity_full"] = np.float64(ld_full(params))
        extra["fingerprint_full"] = np.str_(ld_full.fingerprint)
        res = run_hmc(key, params, ld, cfg, out_dir=results / "full", chunk_size=chunk)
        _save(results / f"full_p{pid}.npz", res, extra)
        calls = []

        def stop_after_two(info):
            calls.append(info)
            if len(calls) == 2:
                raise Interrupted(info)

        try:
            run_hmc(key, params, ld, cfg, out_dir=results / "cut", chunk_size=chunk, on_chunk=stop_after_two)
        except Interrupted:
            print(f"process {pid}: interrupted after {calls[-1]}", file=sys.stderr)
        else:
            raise AssertionError("the run was not interrupted")
    else:
        res = run_hmc(key, params, ld, cfg, out_dir=results / "cut", chunk_size=chunk)
        extra["bank_params"], extra["bank_losses"] = bank(x, y)
        from symlib.evaluation.mmd import mmd_kernel_bank

        values = mmd_kernel_bank(*mmd_samples(), chunk_size=16, processes=True).values
        extra.update({f"mmd_{k}": v for k, v in values.items()})
        _save(results / f"cut_p{pid}.npz", res, extra)
    distributed.sync_processes("worker.done")
    print(f"process {pid} of {jax.process_count()}: {mode} done", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
