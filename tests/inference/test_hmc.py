"""Tests of symlib.inference.hmc: correctness on known posteriors, diagnostics of bad step sizes,
chunked storage and resumption, the identity of stored runs, checksums, data-parallel sharding,
input validation and the symmetries of the log density."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import symlib.inference.hmc as hmc
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference.diagnostics import ess
from symlib.inference.hmc import (
    SAMPLER_VERSION,
    CorruptRunError,
    HMCConfig,
    HMCWarning,
    iter_sample_chunks,
    load_result,
    load_samples,
    log_prior,
    make_logdensity,
    run_fingerprint,
    run_hmc,
)
from symlib.symmetry.scaling import apply_scaling, mlp_scaling_spec
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec, random_permutations

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- helpers


def _gaussian_logdensity(mean, cov):
    prec = np.linalg.inv(cov)

    def logdensity(p):
        z = jnp.stack([p["a"], p["b"]]) - mean
        return -0.5 * z @ prec @ z

    return logdensity


def _toy_data(n=21, d=3, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, classes, size=n).astype(np.int32)
    return x, y


def _file_digests(out_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out_dir.glob("*_0*.npz")) if not p.name.startswith("state_")}


class _Interrupt(Exception):
    pass


def _interrupt_after(k):
    calls = []

    def on_chunk(info):
        calls.append(info)
        if len(calls) == k:
            raise _Interrupt(info)

    return on_chunk


def _assert_same_run(a, b):
    jax.tree.map(np.testing.assert_array_equal, a.samples, b.samples)
    for k in a.stats:
        np.testing.assert_array_equal(a.stats[k], b.stats[k])
    np.testing.assert_array_equal(a.step_size, b.step_size)


# ---------------------------------------------------------------------------- correctness


def test_bayesian_linear_regression_posterior_moments():
    """Conjugate Gaussian posterior of (w, b): sample means and variances match the exact ones
    within a Monte-Carlo tolerance computed from the effective sample size."""
    rng = np.random.default_rng(1)
    n, sigma = 20, 0.5
    x = rng.normal(size=(n, 2))
    y = x @ np.array([1.0, -0.5]) + 0.3 + sigma * rng.normal(size=n)
    z = np.concatenate([x, np.ones((n, 1))], axis=1)
    cov = np.linalg.inv(z.T @ z / sigma**2 + np.eye(3))
    mean = cov @ z.T @ y / sigma**2

    xj, yj = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)

    def logdensity(p):
        resid = yj - xj @ p["w"] - p["b"]
        return -0.5 * (jnp.sum(p["w"] ** 2) + p["b"] ** 2) - 0.5 * jnp.sum(resid**2) / sigma**2

    cfg = HMCConfig(step_size=0.05, num_leapfrog=12, num_burnin=100, num_samples=600, thin=1, num_chains=4)
    init = {"w": jnp.zeros(2), "b": jnp.float32(0.0)}
    res = run_hmc(jax.random.key(0), init, logdensity, cfg)
    draws = np.concatenate([res.samples["w"], res.samples["b"][..., None]], axis=-1)  # (chains, samples, 3)
    assert draws.shape == (4, 600, 3)
    assert res.mean_acceptance > 0.6 and res.num_divergences == 0

    sd = np.sqrt(np.diag(cov))
    n_eff = ess(draws)
    assert np.all(n_eff > 100), n_eff
    est_mean = draws.mean(axis=(0, 1))
    assert np.all(np.abs(est_mean - mean) < 5 * sd / np.sqrt(n_eff)), (est_mean, mean, n_eff)
    est_var = draws.reshape(-1, 3).var(axis=0)
    n_eff_sq = ess((draws - mean) ** 2)
    assert np.all(np.abs(est_var / sd**2 - 1) < 5 * np.sqrt(2 / n_eff_sq)), (est_var, sd**2, n_eff_sq)


def test_correlated_gaussian_with_step_size_adaptation():
    """Dual averaging during burn-in moves the step size from 0.05 to a value with roughly the
    target acceptance; it is then frozen (one value per chain) and the moments match.
    (Short trajectories: with a fixed number of leapfrog steps, a trajectory near half a
    period of the Gaussian makes HMC non-ergodic, the known resonance of fixed-length HMC.)"""
    mean, cov = np.array([1.0, -2.0]), np.array([[1.0, 0.8], [0.8, 1.0]])
    cfg = HMCConfig(step_size=0.05, num_leapfrog=3, num_burnin=200, num_samples=300, thin=2, num_chains=3,
                    adapt_step_size=True, target_accept=0.75)
    res = run_hmc(jax.random.key(3), {"a": jnp.float32(0.0), "b": jnp.float32(0.0)}, _gaussian_logdensity(mean, cov), cfg)
    assert res.step_size.shape == (3,) and np.all(res.step_size > 0.2)
    assert 0.6 < res.mean_acceptance < 0.97
    draws = np.stack([res.samples["a"], res.samples["b"]], axis=-1)
    n_eff = ess(draws)
    assert np.all(n_eff > 100), n_eff
    assert np.all(np.abs(draws.mean((0, 1)) - mean) < 5 / np.sqrt(n_eff))
    assert np.all(np.abs(draws.reshape(-1, 2).var(0) - 1) < 5 * np.sqrt(2 / n_eff))
    np.testing.assert_allclose(np.corrcoef(draws.reshape(-1, 2).T)[0, 1], 0.8, atol=0.1)


def test_absurd_step_size_is_reported():
    cfg = HMCConfig(step_size=50.0, num_leapfrog=10, num_burnin=5, num_samples=20, thin=1, num_chains=2)
    ld = _gaussian_logdensity(np.zeros(2), np.array([[1.0, 0.9], [0.9, 1.0]]))
    with pytest.warns(HMCWarning) as record:
        res = run_hmc(jax.random.key(0), {"a": jnp.float32(0.1), "b": jnp.float32(0.0)}, ld, cfg)
    assert res.num_divergences > 0
    assert res.mean_acceptance < 0.2
    assert res.stats["is_divergent"].shape == (2, cfg.num_iterations)
    text = " ".join(str(w.message) for w in record)
    assert "diverged" in text and "smaller step size" in text and "acceptance" in text


def test_good_run_issues_no_warning(recwarn):
    cfg = HMCConfig(step_size=0.7, num_leapfrog=3, num_burnin=10, num_samples=30, thin=1, num_chains=2)
    res = run_hmc(jax.random.key(0), {"a": jnp.float32(0.0), "b": jnp.float32(0.0)},
                  _gaussian_logdensity(np.zeros(2), np.eye(2)), cfg)
    assert not [w for w in recwarn if issubclass(w.category, HMCWarning)]
    assert res.warning_messages() == []


@pytest.mark.filterwarnings("ignore::symlib.inference.hmc.HMCWarning")
def test_per_chain_initial_positions_and_stats_shapes():
    ld = _gaussian_logdensity(np.zeros(2), np.eye(2))
    cfg = HMCConfig(step_size=0.2, num_leapfrog=3, num_burnin=3, num_samples=4, thin=3, num_chains=2)
    init = {"a": jnp.array([-5.0, 5.0]), "b": jnp.array([0.0, 0.0])}
    res = run_hmc(jax.random.key(0), init, ld, cfg, init_per_chain=True)
    assert res.samples["a"].shape == (2, 4)
    assert all(v.shape == (2, cfg.num_iterations) for v in res.stats.values())
    assert res.samples["a"][0, 0] < res.samples["a"][1, 0]  # chains started apart
    with pytest.raises(ValueError, match="leading axis"):
        run_hmc(jax.random.key(0), {"a": jnp.zeros(3), "b": jnp.zeros(3)}, ld, cfg, init_per_chain=True)


def test_config_validation():
    good = dict(step_size=0.1, num_leapfrog=5, num_burnin=10, num_samples=10, thin=2)
    HMCConfig(**good)
    for field, bad in [("step_size", 0.0), ("step_size", float("nan")), ("num_leapfrog", 0), ("num_burnin", -1),
                       ("num_samples", 0), ("thin", 0), ("num_chains", 0), ("thin", 1.5), ("target_accept", 1.0),
                       ("step_size_jitter", -0.1), ("step_size_jitter", 1.0), ("step_size_jitter", float("inf")),
                       ("num_leapfrog_jitter", -1), ("num_leapfrog_jitter", 5), ("num_leapfrog_jitter", 1.0),
                       ("num_leapfrog_jitter", True)]:
        with pytest.raises(ValueError, match=field):
            HMCConfig(**{**good, field: bad})
    with pytest.raises(ValueError, match="burn-in"):
        HMCConfig(**{**good, "num_burnin": 0}, adapt_step_size=True)
    assert HMCConfig(**good).num_iterations == 30
    assert HMCConfig(**good, step_size_jitter=0.5, num_leapfrog_jitter=4).step_size_jitter == 0.5
    assert HMCConfig(**good).step_size_jitter == 0.0 and HMCConfig(**good).num_leapfrog_jitter == 0  # the defaults


def test_jitter_is_in_the_identity_and_no_jitter_keeps_the_old_one():
    """A config without jitter has the identity it had before the jitter fields existed (so
    stored runs are resumed); any jitter makes it another run."""
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=4, num_burnin=1, num_samples=2, thin=1)
    old_fields = {k: v for k, v in cfg.to_dict().items() if k not in ("step_size_jitter", "num_leapfrog_jitter")}
    assert cfg.identity_dict() == old_fields
    assert HMCConfig(**cfg.to_dict()) == cfg and HMCConfig(**old_fields) == cfg  # old state.json configs load
    key = jax.random.key(0)
    fp = run_fingerprint(key, init, ld, cfg)
    assert fp["config"] == hmc.target.hash_parts(json.dumps(old_fields, sort_keys=True))
    for jitter in (dict(step_size_jitter=0.1), dict(num_leapfrog_jitter=1)):
        jittered = HMCConfig(**{**cfg.to_dict(), **jitter})
        assert jittered.identity_dict() == {**old_fields, **jitter}
        assert run_fingerprint(key, init, ld, jittered)["config"] != fp["config"]


@pytest.mark.parametrize("jitter", [{}, dict(step_size_jitter=0.3, num_leapfrog_jitter=2)])
def test_the_public_kernel_is_run_hmcs_kernel(jitter):
    """A loop of one's own over jittered_hmc's init/step gives run_hmc's chain (no burn-in,
    thin 1, fixed step size); without jitter a step is blackjax.hmc's step."""
    import blackjax

    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=4, num_burnin=0, num_samples=5, thin=1, **jitter)
    key = jax.random.key(3)
    res = run_hmc(key, init, ld, cfg)
    kernel = hmc.jittered_hmc(ld, 4, **jitter)
    state, chain_key = kernel.init(init), hmc.driver.per_chain_keys(key, 1)[0]
    eps = jnp.asarray(0.05, jnp.float32)
    for t in range(5):
        state, _ = jax.jit(kernel.step)(jax.random.fold_in(chain_key, t), state, eps)
        for got, want in zip(jax.tree_util.tree_leaves(state.position),
                             jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda a: a[0, t], res.samples))):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)
    if not jitter:
        dim = sum(a.size for a in jax.tree_util.tree_leaves(init))
        plain = blackjax.hmc(ld, 0.05, inverse_mass_matrix=jnp.ones(dim), num_integration_steps=4)
        k = jax.random.key(9)
        a, _ = kernel.step(k, kernel.init(init), 0.05)
        b, _ = plain.step(k, plain.init(init))
        for u, v in zip(jax.tree_util.tree_leaves(a.position), jax.tree_util.tree_leaves(b.position)):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_a_sink_of_ones_own_gets_every_kept_sample():
    """run_hmc(sink=): a running-mean sink that keeps no sample sees the samples the default
    in-memory sink keeps, chunk by chunk, and gives its own result."""
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=4, num_burnin=2, num_samples=5, thin=1, num_chains=2)
    key = jax.random.key(4)
    ref = run_hmc(key, init, ld, cfg, chunk_size=2)

    class RunningMean:
        def __init__(self, run):
            self.inner, self.total, self.count, self.segments = hmc.InMemorySink(run), None, 0, []

        def open(self):
            return self.inner.open()

        def store(self, seg, carry, stats, kept):
            self.segments.append(seg.kind)
            if kept is not None:
                part = jax.tree_util.tree_map(lambda a: np.asarray(a).sum(axis=(0, 1)), kept)
                self.total = part if self.total is None else jax.tree_util.tree_map(np.add, self.total, part)
                chains, k = np.shape(jax.tree_util.tree_leaves(kept)[0])[:2]
                self.count += chains * k
            self.inner.store(seg, carry, stats, None)

        def result(self, carry):
            return self

    out = run_hmc(key, init, ld, cfg, chunk_size=2, sink=RunningMean)
    assert out.count == 2 * 5 and out.segments.count("samples") == 3  # chunks of 2, 2 and 1 samples
    want = jax.tree_util.tree_map(lambda a: np.asarray(a).mean(axis=(0, 1)), ref.samples)
    for got, w in zip(jax.tree_util.tree_leaves(out.total), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(got / out.count, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="out_dir or sink"):
        run_hmc(key, init, ld, cfg, out_dir="somewhere", sink=RunningMean)


def test_a_sink_can_stop_the_run_and_a_later_run_continue_it():
    """``proceed(seg, carry)`` is asked before every segment: a sink that stops after two
    segments gets the carry of the second; a second run whose sink opens at that carry
    finishes the chains, with the samples of one uninterrupted run."""
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=4, num_burnin=2, num_samples=5, thin=1, num_chains=2)
    key = jax.random.key(4)
    ref = run_hmc(key, init, ld, cfg, chunk_size=2)
    saved = {}

    class Pieces(hmc.InMemorySink):
        def __init__(self, run):
            super().__init__(run)
            self.asked = 0

        def open(self):
            return saved.get("carry") or super().open()

        def proceed(self, seg, carry):
            self.asked += 1
            return "carry" in saved or self.asked <= 2

        def store(self, seg, carry, stats, kept):
            super().store(seg, carry, stats, kept)
            saved.setdefault("kept", []).extend([] if kept is None else [kept])

        def result(self, carry):
            return carry

    first = run_hmc(key, init, ld, cfg, chunk_size=2, sink=Pieces)
    assert first.segment == 2 and first.iteration < cfg.num_iterations
    saved["carry"] = first
    last = run_hmc(key, init, ld, cfg, chunk_size=2, sink=Pieces)
    assert last.iteration == cfg.num_iterations
    samples = jax.tree_util.tree_map(lambda *a: np.concatenate(a, axis=1), *saved["kept"])
    for got, want in zip(jax.tree_util.tree_leaves(samples), jax.tree_util.tree_leaves(ref.samples)):
        np.testing.assert_array_equal(got, np.asarray(want))


# ---------------------------------------------------------------------------- storage and resumption


def _mlp_problem():
    x, y = _toy_data()
    ld = make_logdensity(x, y, apply_fn=mlp_apply)
    init = mlp_init(jax.random.key(7), [3, 5, 3])
    return ld, init


@pytest.mark.parametrize("adapt, stop_after, jitter", [(False, 3, {}), (True, 1, {}),
                                                      (True, 3, dict(step_size_jitter=0.3, num_leapfrog_jitter=2))])
def test_resume_gives_identical_chain(tmp_path, adapt, stop_after, jitter):
    """Interrupt after ``stop_after`` stored chunks (in the sampling phase / in burn-in), rerun:
    identical to an uninterrupted run (and to an in-memory run); stored chunks are untouched.
    Also with jitter: its draws come from the iteration's key, so they are the same again."""
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=4, num_burnin=7, num_samples=10, thin=2, num_chains=2,
                    adapt_step_size=adapt, **jitter)
    key = jax.random.key(11)
    full = run_hmc(key, init, ld, cfg, out_dir=tmp_path / "full", chunk_size=3)

    part_dir = tmp_path / "part"
    with pytest.raises(_Interrupt):
        run_hmc(key, init, ld, cfg, out_dir=part_dir, chunk_size=3, on_chunk=_interrupt_after(stop_after))
    meta = json.loads((part_dir / "state.json").read_text())
    assert meta["next_segment"] == stop_after and not meta["complete"]
    before = _file_digests(part_dir)
    assert len(before) == stop_after

    resumed = run_hmc(key, init, ld, cfg, out_dir=part_dir, chunk_size=3)
    after = _file_digests(part_dir)
    assert {k: after[k] for k in before} == before
    assert after == _file_digests(tmp_path / "full")
    _assert_same_run(full, resumed)
    _assert_same_run(full, run_hmc(key, init, ld, cfg, chunk_size=3))
    # a finished run is just loaded again
    _assert_same_run(full, run_hmc(key, init, ld, cfg, out_dir=part_dir, chunk_size=3))


def test_resume_refuses_another_run_and_names_the_difference(tmp_path, monkeypatch):
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=2, num_burnin=2, num_samples=4, thin=1, num_chains=1)
    key = jax.random.key(0)
    run_hmc(key, init, ld, cfg, out_dir=tmp_path, chunk_size=2)
    x, y = _toy_data(seed=5)
    cases = [
        (r"differs in the HMC config \(HMCConfig\) \(config: stored .*'num_samples': 4.*requested .*'num_samples': 6",
         dict(cfg=HMCConfig(**{**cfg.to_dict(), "num_samples": 6}))),
        (r"differs in the initial state \(init_params\)\.", dict(init=jax.tree.map(lambda a: a + 1.0, init))),
        (r"differs in the key\.", dict(key=jax.random.key(1))),
        (r"differs in the data", dict(ld=make_logdensity(x, y, apply_fn=mlp_apply))),
        (r"differs in the chunk layout \(chunk_size\) \(chunk_size: stored 2, requested 3\)", dict(chunk_size=3)),
    ]
    for pattern, change in cases:
        args = {"key": key, "init": init, "ld": ld, "cfg": cfg, "chunk_size": 2, **change}
        with pytest.raises(ValueError, match=pattern) as err:
            run_hmc(args["key"], args["init"], args["ld"], args["cfg"], out_dir=tmp_path, chunk_size=args["chunk_size"])
        assert "Choose another out_dir" in str(err.value) and f"delete {tmp_path}" in str(err.value)
    monkeypatch.setattr(hmc.store, "SAMPLER_VERSION", SAMPLER_VERSION + 1)  # read by the run identity
    with pytest.raises(ValueError, match=rf"sampler version \(SAMPLER_VERSION\) \(sampler_version: stored "
                                         rf"{SAMPLER_VERSION}, requested {SAMPLER_VERSION + 1}\)"):
        run_hmc(key, init, ld, cfg, out_dir=tmp_path, chunk_size=2)


def test_run_fingerprint_is_what_the_run_stores(tmp_path):
    """The identity holds config, chunk layout, data, initial state, key and sampler version,
    and nothing else: equal arguments give equal fingerprints."""
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=2, num_burnin=1, num_samples=2, thin=1, num_chains=2)
    key = jax.random.key(3)
    fp = run_fingerprint(key, init, ld, cfg, chunk_size=2)
    assert set(fp) == {"config", "chunk_size", "data", "initial_state", "key", "sampler_version"}
    assert fp["sampler_version"] == SAMPLER_VERSION and fp["chunk_size"] == 2 and fp["data"] == ld.fingerprint
    x, y = _toy_data()
    assert run_fingerprint(jax.random.key(3), init, make_logdensity(x, y, apply_fn=mlp_apply), cfg, chunk_size=2) == fp
    stacked = jax.tree.map(lambda a: jnp.stack([a, a]), init)  # the same start given per chain
    assert run_fingerprint(key, stacked, ld, cfg, chunk_size=2, init_per_chain=True) == fp
    run_hmc(key, init, ld, cfg, out_dir=tmp_path, chunk_size=2)
    assert json.loads((tmp_path / "state.json").read_text())["identity"] == fp
    assert run_fingerprint(jax.random.key(4), init, ld, cfg, chunk_size=2)["key"] != fp["key"]
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        run_fingerprint(key, init, ld, cfg, chunk_size=0)


# ---------------------------------------------------------------------------- checksums


def _corrupted_setup(tmp_path):
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.3, num_leapfrog=2, num_burnin=2, num_samples=6, thin=1, num_chains=2)
    key = jax.random.key(5)
    run = dict(key=key, init_params=init, logdensity=ld, cfg=cfg, chunk_size=2)
    full = run_hmc(out_dir=tmp_path / "full", **run)
    return run, full


def _edit_meta(out_dir: Path, edit) -> None:
    path = out_dir / "state.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


def test_truncated_sample_chunk_is_detected_and_recomputed(tmp_path):
    run, full = _corrupted_setup(tmp_path)
    out = tmp_path / "full"
    digests = _file_digests(out)
    chunk = out / "samples_00001.npz"
    chunk.write_bytes(chunk.read_bytes()[:-100])
    for load in (load_samples, load_result, lambda d: run_hmc(out_dir=d, **run)):
        with pytest.raises(CorruptRunError, match=r"samples_00001\.npz is truncated or corrupted.*Delete that file"):
            load(out)
    chunk.unlink()  # the advice: delete it and call run_hmc again
    with pytest.raises(CorruptRunError, match=r"samples_00001\.npz is missing"):
        load_samples(out)
    again = run_hmc(out_dir=out, **run)
    assert _file_digests(out) == digests
    _assert_same_run(full, again)


def test_flipped_byte_in_checkpoint_is_detected_and_previous_checkpoint_used(tmp_path):
    run, full = _corrupted_setup(tmp_path)
    part = tmp_path / "part"
    with pytest.raises(_Interrupt):
        run_hmc(out_dir=part, on_chunk=_interrupt_after(2), **run)
    checkpoint = part / json.loads((part / "state.json").read_text())["state_file"]
    assert checkpoint.name == "state_00002.npz"
    data = bytearray(checkpoint.read_bytes())
    data[len(data) // 2] ^= 0xFF
    checkpoint.write_bytes(bytes(data))
    with pytest.raises(CorruptRunError, match=r"state_00002\.npz is truncated or corrupted.*Delete that checkpoint"):
        run_hmc(out_dir=part, **run)
    with pytest.raises(CorruptRunError, match=r"state_00002\.npz"):
        load_result(part)
    checkpoint.unlink()  # resumes from state_00001.npz, recomputing the second chunk
    resumed = run_hmc(out_dir=part, **run)
    _assert_same_run(full, resumed)
    assert _file_digests(part) == _file_digests(tmp_path / "full")


def test_missing_checksum_is_an_error(tmp_path):
    run, _ = _corrupted_setup(tmp_path)
    out = tmp_path / "full"
    _edit_meta(out, lambda meta: meta["checksums"].pop("samples_00000.npz"))
    with pytest.raises(CorruptRunError, match=r"samples_00000\.npz has no sha256 checksum"):
        load_samples(out)
    with pytest.raises(CorruptRunError, match=r"samples_00000\.npz has no sha256 checksum"):
        run_hmc(out_dir=out, **run)


def test_broken_or_foreign_run_directories(tmp_path):
    run, _ = _corrupted_setup(tmp_path)
    out = tmp_path / "full"
    meta_text = (out / "state.json").read_text()
    (out / "state.json").write_text(meta_text[: len(meta_text) // 2])
    with pytest.raises(CorruptRunError, match=r"state\.json is not valid JSON"):
        load_samples(out)
    (out / "state.json").write_text(meta_text)
    _edit_meta(out, lambda meta: meta.pop("checksums"))
    with pytest.raises(CorruptRunError, match=r"state\.json lacks \['checksums'\]"):
        load_result(out)
    _edit_meta(out, lambda meta: meta.update(format_version=1, checksums={}))
    with pytest.raises(ValueError, match="storage format 1"):
        run_hmc(out_dir=out, **run)
    (out / "state.json").unlink()
    with pytest.raises(ValueError, match=r"holds HMC files \(burnin_00000\.npz, \.\.\.\) but no state\.json"):
        run_hmc(out_dir=out, **run)
    with pytest.raises(FileNotFoundError, match="state.json missing"):
        load_samples(out)


@pytest.mark.filterwarnings("ignore::symlib.inference.hmc.HMCWarning")
def test_samples_are_stored_in_chunks_and_loaded_from_disk(tmp_path):
    ld, init = _mlp_problem()
    cfg = HMCConfig(step_size=0.05, num_leapfrog=2, num_burnin=3, num_samples=7, thin=2, num_chains=2)
    res = run_hmc(jax.random.key(2), init, ld, cfg, out_dir=tmp_path, chunk_size=3)
    assert res._samples is None  # not held in memory: read from the chunk files when first used
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in names if n.startswith("samples_")] == ["samples_00000.npz", "samples_00001.npz", "samples_00002.npz"]
    assert "state.json" in names  # a checkpoint before each of the 4 segments and after the last one
    assert [n for n in names if n.startswith("state_")] == [f"state_{i:05d}.npz" for i in range(5)]
    assert not [n for n in names if n.endswith(".tmp")]
    chunks = list(iter_sample_chunks(tmp_path))
    assert [start for start, _ in chunks] == [0, 3, 6]
    assert chunks[-1][1]["dense_0"]["kernel"].shape == (2, 1, 3, 5)
    loaded = load_samples(tmp_path)  # structure read back from state.json
    assert loaded["dense_0"]["kernel"].shape == (2, 7, 3, 5)
    jax.tree.map(np.testing.assert_array_equal, loaded, res.samples)
    again = load_result(tmp_path)
    assert again.stats["acceptance_rate"].shape == (2, cfg.num_iterations)
    assert isinstance(res.samples["dense_1"]["bias"], np.ndarray)


def test_progress_bar_only_when_asked(capsys):
    ld = _gaussian_logdensity(np.zeros(2), np.eye(2))
    cfg = HMCConfig(step_size=0.3, num_leapfrog=2, num_burnin=2, num_samples=3, thin=1)
    init = {"a": jnp.float32(0.0), "b": jnp.float32(0.0)}
    run_hmc(jax.random.key(0), init, ld, cfg)  # stderr is not a TTY under pytest
    assert capsys.readouterr().err == ""
    run_hmc(jax.random.key(0), init, ld, cfg, progress=True)
    err = capsys.readouterr().err
    assert "hmc" in err and "5/5" in err and "it/s" in err and "acc=" in err


# ---------------------------------------------------------------------------- make_logdensity


def test_make_logdensity_matches_direct_computation():
    x, y = _toy_data(n=13)
    params = mlp_init(jax.random.key(1), [3, 4, 3])
    prior_var, temperature = 2.0, 0.5
    ld = make_logdensity(x, y, prior_var=prior_var, temperature=temperature, apply_fn=mlp_apply)
    logits = np.asarray(mlp_apply(params, x), np.float64)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    flat = np.concatenate([np.ravel(a) for a in jax.tree_util.tree_leaves(params)]).astype(np.float64)
    prior = -0.5 * flat @ flat / prior_var - 0.5 * flat.size * np.log(2 * np.pi * prior_var)
    expected = prior + logp[np.arange(13), y].sum() / temperature
    np.testing.assert_allclose(float(ld(params)), expected, rtol=1e-5)
    grad = jax.grad(ld)(params)
    assert jax.tree.map(jnp.shape, grad) == jax.tree.map(jnp.shape, params)


def test_make_logdensity_validates_inputs():
    x, y = _toy_data(n=10)
    bad_x = x.copy()
    bad_x[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make_logdensity(bad_x, y, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="labels must be >= 0"):
        make_logdensity(x, np.where(np.arange(10) == 2, -1, y), apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="x has 10 examples but y has 9 targets"):
        make_logdensity(x, y[:9], apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="at least one feature axis"):
        make_logdensity(x[:, 0], y, apply_fn=mlp_apply)
    # an MLP cannot take (n, d, 1) examples
    images = make_logdensity(x.reshape(10, x.shape[1], 1), y, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match=r"the MLP takes x of shape \(n, features\)"):
        images(mlp_init(jax.random.PRNGKey(0), [x.shape[1], 3, 2]))
    with pytest.raises(ValueError, match="floating"):
        make_logdensity(x.astype(np.int32), y, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="integer"):
        make_logdensity(x, y.astype(np.float32), apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="prior_var"):
        make_logdensity(x, y, prior_var=0.0, apply_fn=mlp_apply)
    ld = make_logdensity(x, y, apply_fn=mlp_apply)
    with pytest.raises(ValueError, match="x has 3 features but the network's input width is 4"):
        ld(mlp_init(jax.random.key(0), [4, 5, 3]))
    with pytest.raises(ValueError, match=r"y must lie in \[0, 2\) for 2 classes, got values in \[0, 2\]"):
        ld(mlp_init(jax.random.key(0), [3, 5, 2]))


def test_make_logdensity_checks_the_mlp_layout():
    x, y = _toy_data(n=10)
    ld = make_logdensity(x, y, apply_fn=mlp_apply)
    params = mlp_init(jax.random.key(0), [3, 5, 3])
    with pytest.raises(ValueError, match=r"layers dense_0\.\.dense_1, got \['dense_0', 'dense_2'\]"):
        ld({"dense_0": params["dense_0"], "dense_2": params["dense_1"]})
    with pytest.raises(ValueError, match=r"params\['dense_1'\] must hold exactly 'kernel' and 'bias'"):
        ld({"dense_0": params["dense_0"], "dense_1": {"kernel": params["dense_1"]["kernel"]}})
    with pytest.raises(TypeError, match="params must be a dict of layers"):
        ld([params["dense_0"], params["dense_1"]])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_start_names_the_leaf(bad):
    ld, init = _mlp_problem()
    init = jax.tree.map(np.array, init)
    init["dense_1"]["bias"][2] = bad
    cfg = HMCConfig(step_size=0.05, num_leapfrog=2, num_burnin=1, num_samples=2, thin=1)
    with pytest.raises(ValueError, match=r"init_params\['dense_1'\]\['bias'\] contains NaN or inf \(1 of 3"):
        run_hmc(jax.random.key(0), init, ld, cfg)


def test_finite_start_with_non_finite_density_advises_smaller_step():
    cfg = HMCConfig(step_size=0.1, num_leapfrog=2, num_burnin=2, num_samples=5, thin=1)
    with pytest.warns(HMCWarning, match="smaller"):
        res = run_hmc(jax.random.key(0), {"a": jnp.float32(0.0)}, lambda p: jnp.log(p["a"]), cfg)
    assert res.mean_acceptance == 0.0


# ---------------------------------------------------------------------------- symmetries of the density


def _random_mlp(rng, sizes):
    return {f"dense_{i}": {"kernel": rng.normal(0, 0.7, (a, b)).astype(np.float32),
                           "bias": rng.normal(0, 0.3, b).astype(np.float32)}
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))}


_SYM_SIZES = [3, 4, 5, 3]
_SYM_DATA = _toy_data(n=17, d=3, classes=3, seed=9)
_SYM_LD = make_logdensity(*_SYM_DATA, prior_var=0.5, apply_fn=mlp_apply)


def _sq_norm(params) -> float:
    return sum(float(np.sum(np.asarray(a, np.float64) ** 2)) for a in jax.tree_util.tree_leaves(params))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_logdensity_permutation_invariant_and_only_likelihood_rescaling_invariant(seed):
    """The Gaussian prior and the likelihood are both invariant under permutations of hidden
    units; under a positive ReLU rescaling only the likelihood is, and the prior changes
    by exactly -(|theta'|^2 - |theta|^2) / (2 prior_var)."""
    rng = np.random.default_rng(seed)
    params = _random_mlp(rng, _SYM_SIZES)
    value = float(_SYM_LD(params))

    spec = mlp_permutation_spec(len(_SYM_SIZES) - 2)
    permuted = apply_permutation(spec, random_permutations(rng, spec, params), params)
    np.testing.assert_allclose(float(_SYM_LD(permuted)), value, rtol=1e-6)

    signs = [rng.choice([-1.0, 1.0], size=w) for w in _SYM_SIZES[1:-1]]
    scales = [np.exp(s * rng.uniform(0.3, 1.0, size=s.size)) for s in signs]  # each at least 35% away from 1
    scaled = apply_scaling(mlp_scaling_spec(len(scales)), params, {f"P_{l}": v for l, v in enumerate(scales)})
    prior_change = -(_sq_norm(scaled) - _sq_norm(params)) / (2 * 0.5)
    assume(abs(prior_change) > 0.05)
    loglik = value - float(log_prior(params, 0.5))
    loglik_scaled = float(_SYM_LD(scaled)) - float(log_prior(scaled, 0.5))
    np.testing.assert_allclose(loglik_scaled, loglik, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(float(log_prior(scaled, 0.5)) - float(log_prior(params, 0.5)), prior_change,
                               rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(float(_SYM_LD(scaled)) - value, prior_change, rtol=1e-3, atol=2e-3)


# ---------------------------------------------------------------------------- sharding

_SHARDED_SCRIPT = textwrap.dedent("""
    import json, jax, jax.numpy as jnp, numpy as np
    from symlib.inference.hmc import HMCConfig, make_logdensity, run_hmc
    from symlib.core.models import mlp_apply, mlp_init
    assert len(jax.devices()) == 4, jax.devices()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3)).astype(np.float32)   # 30 examples: not a multiple of 4
    y = rng.integers(0, 3, size=30).astype(np.int32)
    params = mlp_init(jax.random.key(0), [3, 8, 3])
    cfg = HMCConfig(step_size=0.03, num_leapfrog=5, num_burnin=2, num_samples=4, thin=2, num_chains=2)
    flat = lambda tree: np.concatenate([a.reshape(2, 4, -1) for a in jax.tree_util.tree_leaves(tree)], -1).tolist()
    out = {}
    for name, devices in (("sharded", jax.devices()), ("single", jax.devices()[:1])):
        ld = make_logdensity(x, y, devices=devices, apply_fn=mlp_apply)
        value, grad = jax.value_and_grad(ld)(params)
        res = run_hmc(jax.random.key(1), params, ld, cfg)
        out[name] = {
            "num_shards": len(ld.data[0].sharding.device_set),
            "padded_n": int(ld.data[0].shape[0]),
            "value": float(value),
            "grad": np.concatenate([np.ravel(g) for g in jax.tree_util.tree_leaves(grad)]).tolist(),
            "samples": flat(res.samples),
            "acceptance": res.stats["acceptance_rate"].tolist(),
        }
    # a stored run started on one device and resumed on four (a device lent with another count)
    class Stop(Exception):
        pass
    def stop(info):
        raise Stop
    one, four = (make_logdensity(x, y, devices=d, apply_fn=mlp_apply) for d in (jax.devices()[:1], jax.devices()))
    assert one.fingerprint == four.fingerprint
    try:
        run_hmc(jax.random.key(1), params, one, cfg, out_dir=OUT, chunk_size=2, on_chunk=stop)
    except Stop:
        pass
    later = []
    res = run_hmc(jax.random.key(1), params, four, cfg, out_dir=OUT, chunk_size=2, on_chunk=later.append)
    out["resumed"] = {"samples": flat(res.samples), "acceptance": res.stats["acceptance_rate"].tolist(),
                      "first_iteration": later[0]["iteration"], "chunks": len(later)}
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_sharded_equals_unsharded(tmp_path):
    """The data sharded over four devices give the one-device density, gradient and chain; a
    stored run interrupted on one device and resumed on four (the fingerprint holds no device
    count) continues the same chain, up to the order of the sums."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    script = _SHARDED_SCRIPT.replace("OUT", repr(str(tmp_path / "run")))
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    sharded, single = out["sharded"], out["single"]
    assert sharded["num_shards"] == 4 and sharded["padded_n"] == 32
    assert single["num_shards"] == 1 and single["padded_n"] == 30
    np.testing.assert_allclose(sharded["value"], single["value"], rtol=1e-5)
    np.testing.assert_allclose(sharded["grad"], single["grad"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sharded["samples"], single["samples"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sharded["acceptance"], single["acceptance"], rtol=1e-4, atol=1e-5)
    resumed = out["resumed"]
    assert resumed["chunks"] == 2 and resumed["first_iteration"] > 2, resumed  # it went on after the first chunk
    np.testing.assert_allclose(resumed["samples"], single["samples"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(resumed["acceptance"], single["acceptance"], rtol=1e-4, atol=1e-5)


_X64_SCRIPT = textwrap.dedent('''
    import json
    import jax, jax.numpy as jnp, numpy as np
    from symlib.inference.hmc import HMCConfig, run_hmc
    out = {}
    for adapt in (False, True):
        cfg = HMCConfig(step_size=0.3, num_leapfrog=5, num_burnin=50, num_samples=400, thin=1, num_chains=2,
                        adapt_step_size=adapt)
        res = run_hmc(jax.random.key(0), {"w": jnp.zeros(3, jnp.float64)},
                      lambda p: -0.5 * jnp.sum(p["w"] ** 2), cfg)
        s = np.asarray(res.samples["w"]).reshape(-1, 3)
        out[str(adapt)] = {"dtype": str(res.samples["w"].dtype), "step_dtype": str(res.step_size.dtype),
                           "var": s.var(axis=0).tolist()}
    print("RESULT" + json.dumps(out))
''')


def test_hmc_runs_with_float64_enabled():
    """Under jax_enable_x64 the dual-averaging update came out in float64 while the skipped
    iterations kept the carry's float32, and lax.cond refused the two branches: every run_hmc
    raised TypeError, adapting or not. Now it samples a standard normal in float64."""
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", _X64_SCRIPT], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    for adapt in ("False", "True"):
        assert out[adapt]["dtype"] == "float64" and out[adapt]["step_dtype"] == "float32", out
        np.testing.assert_allclose(out[adapt]["var"], 1.0, atol=0.25)
