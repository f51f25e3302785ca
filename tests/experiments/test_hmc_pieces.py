"""Tests of symlib.experiments.xiao.hmc_pieces (HMC in pieces with running summaries) and
symlib.evaluation.running: a run cut into pieces, its state reloaded from disk between them,
gives the summaries of one uninterrupted run and those computed from run_hmc's stored
samples; damaged states are refused; the state stays small."""
from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from _helpers import PIECES_CHUNK, PIECES_SIZES, pieces_cfg, pieces_data, pieces_init, tiny_pieced_run
from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation import summaries as S
from symlib.experiments.xiao.hmc_pieces import advance, load_state, state_nbytes, summaries
from symlib.evaluation.predictive import predict_from_samples
from symlib.evaluation.running import RunningMoments
from symlib.inference.diagnostics import function_space_diagnostics
from symlib.inference.hmc import CorruptRunError, HMCConfig, load_samples, make_logdensity, run_hmc
from symlib.symmetry.specs import mlp_permutation_spec, random_permutations

SIZES, CFG, CHUNK = PIECES_SIZES, pieces_cfg(), PIECES_CHUNK
_data, _init, _run = pieces_data, pieces_init, tiny_pieced_run


def _maxdiff(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(u, np.float64) - np.asarray(v, np.float64))))
               for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _assert_same_gaussian(a, b, atol=1e-6):
    assert _maxdiff(a.mu, b.mu) <= atol and _maxdiff(a.sigma, b.sigma) <= atol
    if a.perms is not None and b.perms is not None:
        for name in a.perms:
            np.testing.assert_array_equal(a.perms[name], b.perms[name])


@pytest.fixture(scope="module")
def pieced(tmp_path_factory):
    """The same run in 3 pieces and in one, and run_hmc's stored samples."""
    root = tmp_path_factory.mktemp("pieces")
    steps = [advance(root / "pieces", _run(), num_iterations=10),  # burn-in and the first samples
             advance(root / "pieces", _run(), num_samples=4),
             advance(root / "pieces", _run())]
    whole = advance(root / "whole", _run())
    x, y, x_test, y_test = _data()
    run_hmc(jax.random.key(1), _init(), make_logdensity(x, y, apply_fn=mlp_apply), CFG, out_dir=root / "stored",
            chunk_size=CHUNK, init_per_chain=True)
    return root, steps, whole


def test_pieces_progress(pieced):
    root, steps, whole = pieced
    assert [s.iteration for s in steps] == [15, 23, CFG.num_iterations]
    assert [s.num_kept for s in steps] == [4, 8, CFG.num_samples]
    assert [s.complete for s in steps] == [False, False, True] and whole.complete
    assert steps[0].remaining_seconds is not None and steps[-1].remaining_seconds == 0
    again = advance(root / "pieces", _run())  # a complete run does nothing
    assert again.piece_iterations == 0 and again.complete
    meta, _ = load_state(root / "pieces")
    pieces = meta["pieces"]
    assert [(p["start_iteration"], p["end_iteration"]) for p in pieces] == [(0, 15), (15, 23), (23, 31)]
    assert all(p["device"] and p["date"] and p["command"] and p["elapsed_s"] >= 0 for p in pieces)
    assert "iteration 31/31" in str(again) and "complete" in str(again)


def test_pieces_equal_one_run(pieced):
    root = pieced[0]
    a, b = summaries(root / "pieces"), summaries(root / "whole")
    _assert_same_gaussian(a.q_d, b.q_d, atol=0)
    for m in b.q_r:
        _assert_same_gaussian(a.q_r[m], b.q_r[m], atol=0)
    np.testing.assert_array_equal(a.test_probs, b.test_probs)
    for k in b.traces:
        np.testing.assert_array_equal(a.traces[k], b.traces[k])
    assert a.test == b.test


def test_pieces_equal_summaries_of_stored_samples(pieced):
    root = pieced[0]
    got = summaries(root / "pieces")
    x, y, x_test, y_test = _data()
    stored = load_samples(root / "stored")
    flat = jax.tree.map(lambda v: v.reshape((-1,) + v.shape[2:]), stored)
    spec = mlp_permutation_spec(1)
    _assert_same_gaussian(got.q_d, S.direct_summary(flat))
    _assert_same_gaussian(got.q_r["weight"], S.rebasin_summary(flat, spec, method="weight"))
    _assert_same_gaussian(got.q_r["activation"], S.rebasin_summary(flat, spec, method="activation", data=x[:30]))
    chains = np.repeat(np.arange(CFG.num_chains), CFG.num_samples)
    _assert_same_gaussian(got.q_r["weight (per chain)"], S.grouped_rebasin_summary(flat, chains, spec))
    np.testing.assert_allclose(got.test_probs, np.asarray(predict_from_samples(flat, x_test, apply_fn=mlp_apply)),
                               atol=1e-6)
    diag = function_space_diagnostics(stored, x_test, y_test, apply_fn=mlp_apply)
    np.testing.assert_allclose(got.traces["test_loglik"], diag["test_loglik"]["values"], rtol=1e-5)
    np.testing.assert_allclose(got.traces["true_class_prob"], diag["true_class_prob"]["values"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.diagnostics["rhat_test_loglik"], diag["test_loglik"]["rhat"], rtol=1e-4)
    from symlib.inference.hmc import load_result

    ref = load_result(root / "stored")
    for k, v in ref.stats.items():
        np.testing.assert_array_equal(got.traces[k], v)
    assert got.diagnostics["mean_acceptance"] == pytest.approx(ref.mean_acceptance)
    np.testing.assert_array_equal(got.diagnostics["step_size"], ref.step_size)
    assert got.test["accuracy"] == pytest.approx(float(np.mean(got.test_probs.argmax(1) == y_test)))


def test_state_is_small_and_bounded(pieced):
    root = pieced[0]
    meta, _ = load_state(root / "pieces")
    files = list((root / "pieces").iterdir())
    assert sorted(p.name for p in files) == sorted(["state.json", meta["state_file"]])  # older arrays deleted
    like = mlp_init(jax.random.key(0), SIZES)
    size = (root / "pieces" / meta["state_file"]).stat().st_size
    assert size <= state_nbytes(like, CFG, 40) <= 1.05 * size
    # the paper setting: 2 chains x 500 samples of a 784-512-10 MLP, 10,000 test images
    paper = HMCConfig(step_size=1e-4, num_leapfrog=500, num_burnin=600, num_samples=500, thin=10, num_chains=2,
                      adapt_step_size=True)
    nbytes = state_nbytes(mlp_init(jax.random.key(0), [784, 512, 10]), paper, 10_000)
    assert 30e6 < nbytes < 50e6


def test_damaged_state_is_refused(pieced, tmp_path):
    import shutil

    root = pieced[0]
    state = tmp_path / "state"
    shutil.copytree(root / "pieces", state)
    meta = json.loads((state / "state.json").read_text())
    arrays = state / meta["state_file"]
    data = arrays.read_bytes()
    arrays.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptRunError, match=meta["state_file"] + ".*truncated or corrupted"):
        summaries(state)
    with pytest.raises(CorruptRunError, match="truncated or corrupted"):
        advance(state, _run())
    arrays.unlink()
    with pytest.raises(CorruptRunError, match="is missing"):
        load_state(state)
    (state / "state.json").write_text('{"format_version": 1, "ident')
    with pytest.raises(CorruptRunError, match="not valid JSON"):
        summaries(state)
    with pytest.raises(FileNotFoundError, match="no pieced HMC state"):
        summaries(tmp_path / "nothing")


def test_another_run_is_refused(pieced):
    root = pieced[0]
    other = HMCConfig(**{**CFG.to_dict(), "num_leapfrog": 4})
    with pytest.raises(ValueError, match="another pieced HMC run: it differs in config"):
        advance(root / "pieces", _run(cfg=other))
    with pytest.raises(ValueError, match="differs in summaries"):
        advance(root / "pieces", _run(match_key=3))


def test_budget_stops_at_a_segment_boundary(tmp_path):
    first = advance(tmp_path / "s", _run(), budget_seconds=1e-3)  # no measurement yet: one segment
    assert first.iteration == 7 and first.seconds_per_iteration > 0
    assert load_state(tmp_path / "s")[0]["pieces"][0]["seconds_per_iteration"] == first.seconds_per_iteration
    with pytest.raises(ValueError, match="0 kept sample"):  # still in burn-in
        summaries(tmp_path / "s")
    second = advance(tmp_path / "s", _run(), budget_seconds=1e-3)  # a measured rate: nothing fits
    assert second.piece_iterations == 0
    with pytest.raises(ValueError, match="budget_seconds must be > 0"):
        advance(tmp_path / "s", _run(), budget_seconds=0)


def test_running_moments_match_two_pass_and_permute():
    rng = np.random.default_rng(3)
    like = mlp_init(jax.random.key(2), [5, 7, 3])
    stack = jax.tree.map(lambda a: (rng.normal(size=(23, *a.shape)) * 3 + 100).astype(np.float32), like)
    mom = RunningMoments.zeros(like)
    for lo, hi in ((0, 1), (1, 9), (9, 10), (10, 23)):
        mom.update(jax.tree.map(lambda a: a[lo:hi], stack))
    direct = S.direct_summary(stack)
    _assert_same_gaussian(mom.summary(), direct, atol=1e-5)
    halves = [RunningMoments.zeros(like).update(jax.tree.map(lambda a: a[s], stack))
              for s in (slice(0, 11), slice(11, 23))]
    merged = halves[0].merge(halves[1])
    assert merged.count == 23 and _maxdiff(merged.mean, mom.mean) < 1e-10 and _maxdiff(merged.m2, mom.m2) < 1e-8
    again = RunningMoments.from_arrays(mom.to_arrays("x_"), "x_", like)
    assert again.count == 23 and _maxdiff(again.m2, mom.m2) == 0
    spec = mlp_permutation_spec(1)
    perms = random_permutations(jax.random.key(4), spec, like)
    from symlib.symmetry.matching import apply_permutation_many

    rows = {k: np.broadcast_to(np.asarray(v), (23, len(v))) for k, v in perms.items()}
    permuted = S.direct_summary(apply_permutation_many(spec, rows, stack))
    _assert_same_gaussian(mom.permuted(spec, perms).summary(), permuted, atol=1e-5)
    with pytest.raises(ValueError, match="at least 2 samples"):
        RunningMoments.zeros(like).summary()


def test_cli_advances_and_writes_the_summary(tmp_path, monkeypatch, capsys):
    from symlib.__main__ import main
    from symlib.experiments import xiao

    monkeypatch.setattr(xiao, "hmc_pieces_run", lambda profile, chains, samples, chunk: _run())
    monkeypatch.setattr(xiao, "hmc_pieces_summary", lambda profile, state: {"progress": summaries(state).progress,
                                                                            "pieces": [{"elapsed_s": 1.0}]})
    args = ["hmc-piece", "--state", str(tmp_path / "s"), "--minutes", "0.001", "--out", str(tmp_path / "res")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "HMC in pieces: 2 chains x 12 samples" in out and "iteration 7/31" in out and "more piece(s)" in out
    assert not (tmp_path / "res").exists()  # not complete: no summary unless asked for
    assert main(["hmc-piece", "--state", str(tmp_path / "s"), "--summarize"]) == 1  # --out is needed
    advance(tmp_path / "part", _run(), num_iterations=10)  # 4 kept samples per chain: a labelled reduction
    assert main(["hmc-piece", "--state", str(tmp_path / "part"), "--summarize", "--out", str(tmp_path / "p")]) == 0
    assert "summary of 4 of 12 kept samples per chain (not complete)" in capsys.readouterr().out
    partial = json.loads((tmp_path / "p" / "hmc_pieces-quick.json").read_text())
    assert partial["summary"]["progress"]["num_kept"] == 4
    assert main(args[:-3] + ["10", "--out", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    assert "complete" in out and "summary of 12 of 12 kept samples per chain (complete) written to" in out
    record = json.loads((tmp_path / "res" / "hmc_pieces-quick.json").read_text())
    assert record["summary"]["progress"]["complete"] and record["command"].startswith("python -m symlib hmc-piece")
    assert main(["hmc-piece", "--state", str(tmp_path / "s"), "--status"]) == 0
    out = capsys.readouterr().out
    assert "iteration 31 of 31" in out and "complete; checksum ok" in out and "iterations 7-31" in out


def test_xiao_pieces_on_a_tiny_profile(tmp_path):
    """The experiment's pieced run: the hmc experiment's settings and Table 1's HMC columns."""
    import dataclasses

    from symlib.experiments import xiao
    from symlib.experiments.profiles import get_profile

    tiny = dataclasses.replace(get_profile("quick"), name="tiny", n_train=300, n_val=0, n_test=50, hidden=8,
                               bnn_n_train=100, hmc_leapfrog=2, hmc_burnin=2, hmc_thin=1, mc_samples=4)
    run = xiao.hmc_pieces_run(tiny, chains=2, samples=3, chunk_size=2)
    assert run.cfg.num_leapfrog == 2 and run.cfg.num_chains == 2 and run.methods == ("weight", "activation")
    assert np.shape(run.x_match) == (100, 784)
    assert advance(tmp_path, run).complete
    out = xiao.hmc_pieces_summary(tiny, tmp_path)
    assert list(out["table"]) == ["HMC sample", "HMC q_d", "HMC q_r", "HMC q_r (weight)", "HMC q_r (per chain)"]
    assert out["table"]["HMC sample"]["agreement"] == 1.0 and out["table"]["HMC sample"]["tv"] == 0.0
    assert out["progress"]["complete"] and len(out["pieces"]) == 1 and out["n_test"] == 50
    json.dumps(out)  # a results file can hold it
    # another profile's test set: a clear refusal, not numpy's shape error deep in the metrics
    other = dataclasses.replace(tiny, name="other", n_test=60)
    with pytest.raises(ValueError, match="sampled against other test data .* profile 'other'"):
        xiao.hmc_pieces_summary(other, tmp_path)


def test_detached_pieces_attach_to_the_run_advanced_in_place(pieced, tmp_path):
    """Pieces advanced from detached states (only the chains and the reference travel) and
    attached back give the summaries of the run advanced in place, to float rounding."""
    from symlib.experiments.xiao.hmc_pieces import attach, detach

    root, state, travel = pieced[0], tmp_path / "state", tmp_path / "travel"
    first = advance(travel, _run(), num_iterations=10)  # the first piece starts the run, no state here
    assert attach(state, travel) == {"iteration": 15, "num_kept": 4, "pieces": 1, "already": False}
    assert attach(state, travel)["already"]  # twice: nothing changes
    for kw in ({"num_samples": 4}, {}):
        detach(state, travel)
        meta, arrays = load_state(travel)
        assert meta["detached"] and meta["base"]["iteration"] == load_state(state)[0]["iteration"]
        assert all(k.startswith(("chain_", "reference_")) or k == "has_reference" for k in arrays)
        with pytest.raises(ValueError, match="no piece has advanced"):
            attach(state, travel)
        with pytest.raises(ValueError, match="partial state"):  # neither summaries nor detach read a partial state
            advance(travel, _run(), **kw) and summaries(travel)
        with pytest.raises(ValueError, match="partial state"):
            detach(travel, tmp_path / "again")
        got = attach(state, travel)
        assert not got["already"] and got["pieces"] == 1
    assert first.iteration == 15 and got == {"iteration": CFG.num_iterations, "num_kept": CFG.num_samples, "pieces": 1,
                                             "already": False}
    a, b = summaries(state), summaries(root / "whole")
    _assert_same_gaussian(a.q_d, b.q_d)
    for m in b.q_r:
        _assert_same_gaussian(a.q_r[m], b.q_r[m])
    np.testing.assert_allclose(a.test_probs, b.test_probs, atol=1e-12)
    for k in b.traces:
        np.testing.assert_array_equal(a.traces[k], b.traces[k])
    assert a.test == pytest.approx(b.test) and a.diagnostics["mean_acceptance"] == b.diagnostics["mean_acceptance"]
    assert [(p["start_iteration"], p["end_iteration"]) for p in a.progress["pieces"]] == [(0, 15), (15, 23), (23, 31)]


def test_attach_refuses_a_stale_or_foreign_piece(pieced, tmp_path):
    """A piece advanced from an older detached state, or from another run, is refused by name."""
    import shutil

    from symlib.experiments.xiao.hmc_pieces import attach, detach

    state = tmp_path / "state"
    shutil.copytree(pieced[0] / "pieces", state)  # the complete run
    advance(tmp_path / "start", _run(), num_iterations=10)
    with pytest.raises(ValueError, match="started the run anew"):  # a piece without a base, onto a run
        attach(tmp_path / "early", tmp_path / "start") and attach(state, tmp_path / "start")
    early = tmp_path / "early"  # the run at iteration 15, detached twice: the second piece is stale
    detach(early, tmp_path / "a")
    detach(early, tmp_path / "b")
    advance(tmp_path / "a", _run(), num_samples=4)
    advance(tmp_path / "b", _run())  # further than a: not the same piece
    attach(early, tmp_path / "a")
    with pytest.raises(ValueError, match="continues the state at iteration 15.*detach the state again"):
        attach(early, tmp_path / "b")
    other = HMCConfig(**{**CFG.to_dict(), "num_leapfrog": 4})
    advance(tmp_path / "other", _run(cfg=other), num_iterations=10)
    with pytest.raises(ValueError, match="another pieced HMC run"):
        attach(early, tmp_path / "other")


def test_detached_state_is_small():
    paper = HMCConfig(step_size=1e-4, num_leapfrog=500, num_burnin=600, num_samples=500, thin=10, num_chains=2,
                      adapt_step_size=True)
    like = mlp_init(jax.random.key(0), [784, 512, 10])
    assert 7e6 < state_nbytes(like, paper, 10_000, detached=True) < 10e6
