"""The claims of Xiao et al. (2023) (symlib/experiments/xiao/) on synthetic summaries.

For every claim: a summary like the paper's picture, where it must hold; one where the
effect is absent or reversed, where it must not; and noise alone (the two quantities the
claim compares drawn from one distribution, or a single unit), which must never give
"holds". Each claim reads its threshold from the one registry.
"""
import copy

import numpy as np
import pytest

import symlib.experiments  # noqa: F401  (registers the experiments and their claims)
from symlib.experiments import xiao
from symlib.experiments.judging import claims
from symlib.experiments.judging.claims import Verdict
from symlib.experiments.judging.thresholds import THRESHOLDS

HOLDS, SAME, DIFFERS, UNTESTED = Verdict.HOLDS, Verdict.SAME_DIRECTION, Verdict.DIFFERS, Verdict.NOT_TESTED
OPPOSITE = Verdict.OPPOSITE_DIRECTION
XIAO = ("rebasin_barriers", "not_sweep", "not_paths", "ensemble", "vi", "compact_representation")
SEEDS = range(12)


def _outcomes(experiment, summary):
    return {o.claim.name: o for o in claims.evaluate(experiment, summary)}


def _verdict(experiment, name, summary):
    return _outcomes(experiment, summary)[name].verdict


def test_every_xiao_claim_reads_its_own_registered_threshold():
    names = {e: [c.name for c in claims.CLAIMS[e]] for e in XIAO}
    assert names == {
        "rebasin_barriers": ["rebasin_removes_barrier", "matched_barrier_nearly_zero"],
        "not_sweep": ["not_after_training", "not_nearly_equal", "distance_and_barrier_grow"],
        "not_paths": ["not_along_path", "not_path_smooth", "not_stable_over_epochs"],
        "ensemble": ["accuracy_as_table1"],
        "vi": ["accuracy_as_table1"],
        "compact_representation": ["qr_beats_qd_hmc", "qr_beats_qd_ensemble", "ensemble_qr_beats_hmc_qr",
                                   "rebasin_shrinks_sigma_hmc", "rebasin_shrinks_sigma_ensemble",
                                   "bayesian_sigma_near_prior", "stitched_pruning_wins", "qd_falls_with_chains"],
    }
    summaries = {"rebasin_barriers": _barriers(), "not_sweep": _sweep(), "not_paths": _paths(),
                 "ensemble": _accuracy(98.66), "vi": _accuracy(98.11), "compact_representation": _compact()}
    for experiment, summary in summaries.items():
        for o in claims.evaluate(experiment, summary):
            t = o.evidence.threshold
            assert THRESHOLDS.get(t.key) is t and t.key == f"{experiment}.{o.claim.name}"
            assert "2026-11-2" in t.set_on and t.quote and t.reading


# ------------------------------------------------------------------ rebasin_barriers (Fig. 1)

def _barriers(raw=(0.2, 0.22, 0.18), weight=(0.01, 0.012, 0.008), activation=(0.02, 0.018, 0.022)):
    pairs = {"no matching": list(raw), "weight matching": list(weight), "activation matching": list(activation)}
    return {f"barrier_pairs_{s}": copy.deepcopy(pairs) for s in ("train", "test")}


def test_rebasin_removes_barrier():
    name = "rebasin_removes_barrier"
    o = _outcomes("rebasin_barriers", _barriers())[name]
    assert o.verdict is HOLDS and o.evidence.units.startswith("3 independent network pairs")
    assert _verdict("rebasin_barriers", name, _barriers(weight=(0.15, 0.16, 0.14))) is DIFFERS  # a quarter removed
    # no barrier to remove in any pair: a share of 0 in each, tied units, so no interval (since 2026-12-01)
    tied = _outcomes("rebasin_barriers", _barriers(raw=(0.0, 0.0, 0.0)))[name]
    assert tied.verdict is OPPOSITE and "no spread among the 3 network pairs" in tied.detail
    # one pair (a saved run without replicates): at best the same direction
    one = {f"barrier_{s}": {"no matching": 0.2, "weight matching": 0.001, "activation matching": 0.002}
           for s in ("train", "test")}
    assert _verdict("rebasin_barriers", name, one) is SAME


def test_matched_barrier_nearly_zero():
    name = "matched_barrier_nearly_zero"
    assert _verdict("rebasin_barriers", name, _barriers()) is HOLDS
    # most of a large barrier removed, but a tenth of a nat left: the share holds, the absolute reading differs
    big = _barriers(raw=(2.0, 2.2, 1.8), weight=(0.1, 0.12, 0.09), activation=(0.1, 0.12, 0.11))
    assert _verdict("rebasin_barriers", "rebasin_removes_barrier", big) is HOLDS
    o = _outcomes("rebasin_barriers", big)[name]
    assert o.verdict is DIFFERS and "nats" in o.detail


@pytest.mark.parametrize("seed", SEEDS)
def test_rebasin_removes_barrier_never_holds_on_noise(seed):
    rng = np.random.default_rng(seed)  # raw and matched barriers from one distribution
    raw, w, a = (rng.gamma(4.0, 0.05, 3) for _ in range(3))
    assert _verdict("rebasin_barriers", "rebasin_removes_barrier", _barriers(raw, w, a)) is not HOLDS


def test_barrier_replicates_give_mean_and_standard_error():
    rep = xiao.barrier_replicates(_barriers())
    mean, se, n = rep["train"]["no matching"]
    assert n == 3 and mean == pytest.approx(0.2) and se == pytest.approx(np.std([0.2, 0.22, 0.18], ddof=1) / 3**0.5)
    one = {f"barrier_{s}": {"no matching": 0.2, "weight matching": 0.0, "activation matching": 0.0}
           for s in ("train", "test")}
    assert xiao.barrier_replicates(one)["test"]["no matching"][2] == 1


# ------------------------------------------------------------------ not_sweep (Fig. 2 left, centre)

WIDTH = 128
GRID = np.unique(np.linspace(0, WIDTH - 1, 12).round().astype(int))


def _sweep(runs=3, prime=None, distance=None, barrier=None, seed=0):
    """Rows of a sweep: by default NoT(P') = NoT(P) +- 1 and distance / barrier growing with NoT."""
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("run", "not_p", "not_p_prime", "distance_raw", "distance_matched", "barrier_raw",
                            "barrier_matched")}
    for r in range(runs):
        k = GRID.astype(float)
        pp = prime(k, rng) if prime else np.clip(k + rng.integers(-1, 2, k.size), 0, WIDTH - 1)
        rows["run"] += [r] * k.size
        rows["not_p"] += GRID.tolist()
        rows["not_p_prime"] += np.asarray(pp).astype(int).tolist()
        rows["distance_raw"] += list(distance(k, rng) if distance else 20 + 0.2 * k + rng.normal(0, 1, k.size))
        rows["distance_matched"] += list(20 + rng.normal(0, 1, k.size))
        rows["barrier_raw"] += list(barrier(k, rng) if barrier else 1e-3 * k + rng.normal(0, 0.005, k.size))
        rows["barrier_matched"] += list(np.abs(rng.normal(0, 0.002, k.size)))
    return {"rows": rows, "runs": runs, "not_values": int(GRID.size)}


def _iid_not(k, rng):
    return rng.integers(0, WIDTH, k.size)


def _iid(k, rng):
    return rng.normal(30, 5, k.size)


def test_not_sweep_claims_hold_on_the_papers_picture():
    out = _outcomes("not_sweep", _sweep())
    assert {n: o.verdict for n, o in out.items()} == {"not_after_training": HOLDS, "not_nearly_equal": HOLDS,
                                                      "distance_and_barrier_grow": HOLDS}
    assert all(o.evidence.units.startswith("3 runs") for o in out.values())


def test_tied_correlations_read_no_interval():
    """Runs whose NoT(P') equals NoT(P) exactly (the quick profile's): r = 1 in every run, no
    spread, so no interval (not the cap [-1, 1]) and at most "same direction"."""
    ev = _outcomes("not_sweep", _sweep(prime=lambda k, rng: k))["not_after_training"].evidence
    assert ev.effect == pytest.approx(1.0) and (ev.low, ev.high) == (-np.inf, np.inf) and ev.verdict is SAME
    assert ev.interval_text() == "1 (no interval) over 3 runs"


def test_not_after_training_fails_when_training_scrambles_nots():
    assert _verdict("not_sweep", "not_after_training", _sweep(prime=_iid_not)) is DIFFERS


def test_not_nearly_equal_fails_on_a_shift_the_correlation_misses():
    shifted = _sweep(prime=lambda k, rng: np.minimum(k + 40 + rng.integers(-1, 2, k.size), WIDTH - 1))  # r near 1
    out = _outcomes("not_sweep", shifted)
    assert out["not_nearly_equal"].verdict is DIFFERS and out["not_after_training"].verdict is HOLDS
    # so the correlation's claim and reading say what r tests (NoT(P') tracks NoT(P)), not "equals"
    statement, t = out["not_after_training"].claim.statement, out["not_after_training"].evidence.threshold
    assert "tracks" in statement and "equals" not in statement and "not_nearly_equal" in statement
    assert "not that the two are equal" in t.reading and "NoT remains almost exactly unaffected by training" in t.quote


def test_distance_and_barrier_grow_fails_when_either_is_flat():
    # a flat series has a correlation near 0 whose interval over 3 runs spans the threshold:
    # inconclusive by the symmetric rule, never "holds"
    assert _verdict("not_sweep", "distance_and_barrier_grow", _sweep(distance=_iid)) is OPPOSITE
    assert _verdict("not_sweep", "distance_and_barrier_grow",
                    _sweep(barrier=lambda k, rng: rng.normal(0.05, 0.01, k.size))) is OPPOSITE


@pytest.mark.parametrize("seed", SEEDS)
def test_not_sweep_claims_never_hold_on_noise(seed):
    noise = _sweep(prime=_iid_not, distance=_iid, barrier=lambda k, rng: rng.normal(0.05, 0.01, k.size), seed=seed)
    assert all(o.verdict is not HOLDS for o in claims.evaluate("not_sweep", noise))


def test_not_sweep_claims_on_one_run_are_at_best_the_same_direction():
    assert {o.verdict for o in claims.evaluate("not_sweep", _sweep(runs=1))} == {SAME}


# ------------------------------------------------------------------ not_paths (Fig. 2 right)

def _path(points=21, top=63, dip=0):
    lam = np.linspace(0, 1, points)
    nl = np.round(top / (1 + np.exp(-20 * (lam - 0.5)))).astype(int)
    nl[:3], nl[-3:] = 0, top
    if dip:  # NoT overshoots, then falls back by ``dip``
        nl[points // 2] = nl[points // 2 + 1] + dip
    return nl


def _paths(pairs=6, epochs_range=0, dip=0, traces=None):
    """``pairs`` pairs (reference, permuted copy) that differ a little, as independent pairs do:
    NoT over the epochs moves by 0 or 1 (plus ``epochs_range``), and the first pair's path
    falls back by one more transposition than the others'."""
    ne = [[63] * 6 for _ in range(pairs)]
    for i, e in enumerate(ne):
        e[-1] += epochs_range + i % 2
    nl = traces if traces is not None else [_path(dip=dip + (i == 0)).tolist() for i in range(pairs)]
    return {"hidden": WIDTH, "not_p": 63, "permuted": {"not_epochs": ne[0], "not_lambda": list(nl[0])},
            "replicates": {"not_p": [63] * len(nl), "not_epochs": ne[:len(nl)], "not_lambda": [list(x) for x in nl]}}


def test_not_paths_claims_hold_on_the_papers_picture():
    out = _outcomes("not_paths", _paths())
    assert out["not_along_path"].verdict is HOLDS and out["not_stable_over_epochs"].verdict is HOLDS
    assert out["not_along_path"].evidence.units.startswith("6 independent pairs")
    # perfect paths and no change over the epochs in every pair: tied units, so no interval
    tied = _outcomes("not_paths", _paths(pairs=3, traces=[_path().tolist()] * 3))
    for name in ("not_along_path", "not_path_smooth"):
        assert tied[name].verdict is SAME and "no spread among the 3 pairs" in tied[name].detail


def test_not_along_path_fails_on_a_dip_or_a_jump_at_the_start():
    assert _verdict("not_paths", "not_along_path", _paths(dip=10)) is DIFFERS
    jump = [np.r_[0, np.full(20, 40 + k)] for k in range(3)]
    assert _verdict("not_paths", "not_along_path", _paths(traces=jump)) is DIFFERS


def test_not_path_smooth_fails_on_a_path_that_jumps():
    """Flat, then most of the change in one step, then flat: monotone and flat near both ends
    (not_along_path holds), but not smooth."""
    assert _verdict("not_paths", "not_path_smooth", _paths()) is HOLDS
    jump = [np.r_[np.zeros(10), 5 + k, np.full(10, 60 + k)].astype(int) for k in range(6)]
    jump[0][11] += 1  # falls back by one transposition: pairs differ
    assert _verdict("not_paths", "not_along_path", _paths(traces=jump)) is HOLDS
    out = _outcomes("not_paths", _paths(traces=jump))["not_path_smooth"]
    assert out.verdict is DIFFERS and "largest single step of NoT per pair 56, 55, 55, 55, 55, 55" in out.detail
    # no change along any path: a share of 0 in every pair, tied units, so no interval
    assert _verdict("not_paths", "not_path_smooth", _paths(traces=[np.zeros(21, int)] * 3)) is SAME


def test_not_stable_over_epochs_fails_on_drift():
    assert _verdict("not_paths", "not_stable_over_epochs", _paths(epochs_range=20)) is DIFFERS


@pytest.mark.parametrize("seed", SEEDS)
def test_not_paths_claims_never_hold_on_noise(seed):
    rng = np.random.default_rng(seed)
    s = _paths(traces=[rng.integers(0, WIDTH, 21) for _ in range(3)])
    s["replicates"]["not_epochs"] = [rng.integers(0, WIDTH, 6).tolist() for _ in range(3)]
    assert all(o.verdict is not HOLDS for o in claims.evaluate("not_paths", s))


def test_not_paths_claims_on_one_pair_are_at_best_the_same_direction():
    s = _paths()
    del s["replicates"]  # a saved run without replicates
    assert {o.verdict for o in claims.evaluate("not_paths", s)} == {SAME}


# ------------------------------------------------------------------ ensemble and vi (Table 1 accuracies)

def _accuracy(percent, n_test=10_000, hidden=512, n_train=50_000):
    return {"accuracy": percent / 100, "nll": 0.05, "n_test": n_test, "hidden": hidden, "n_train": n_train}


@pytest.mark.parametrize("experiment, paper", [("ensemble", 98.66), ("vi", 98.11)])
def test_accuracy_as_table1(experiment, paper):
    name = "accuracy_as_table1"
    # one run gives no interval over independent runs (test images are not independent units): the effect
    # alone, the verdict capped at "same direction" / "opposite direction, not significant" (claims.one_run)
    assert _verdict(experiment, name, _accuracy(paper + 0.1)) is SAME
    assert _verdict(experiment, name, _accuracy(paper - 3.0)) is OPPOSITE
    ev = _outcomes(experiment, _accuracy(paper - 3.0))[name].evidence
    assert ev.one_run and "one run" in ev.units and ev.effect == pytest.approx(3.0)
    assert ev.low == -np.inf and ev.high == np.inf  # no interval, whatever the number of test images
    assert "test images" not in ev.units and "[" not in ev.detail and "10,000 test images" in ev.detail
    assert ev.interval_text().startswith("3 (no interval) over one run")
    few = _outcomes(experiment, _accuracy(paper - 3.0, n_test=60))[name].evidence
    assert (few.low, few.high, few.verdict) == (ev.low, ev.high, OPPOSITE)
    # a summary that does not record the number of test images is judged all the same
    old = _accuracy(paper + 0.1)
    del old["n_test"]
    assert _verdict(experiment, name, old) is SAME


@pytest.mark.parametrize("experiment, paper", [("ensemble", 98.66), ("vi", 98.11)])
def test_accuracy_of_a_miniature_is_not_tested_whichever_way_it_points(experiment, paper):
    """gate.xiao_mlp_setup: a run with fewer hidden units or training images than Table 1's
    setup (512 units, 50,000 images) is not tested, near the paper's number or far from it; a
    summary that does not record its setup is not tested either; a larger one is judged."""
    name = "accuracy_as_table1"
    for percent in (paper, paper - 8.0):
        for small in ({"hidden": 128}, {"n_train": 2_000}, {"hidden": 128, "n_train": 2_000}):
            ev = _outcomes(experiment, _accuracy(percent, **small))[name].evidence
            assert ev.verdict is Verdict.NOT_TESTED and "miniature" in ev.untested, small
            assert "not judged" in ev.detail and f"{percent:.2f}%" in ev.detail
    ev = _outcomes(experiment, _accuracy(paper - 8.0, hidden=128, n_train=2_000))[name].evidence
    assert "128 hidden units" in ev.untested and "2,000 training images" in ev.untested
    unrecorded = _accuracy(paper)
    del unrecorded["n_train"]
    assert "does not record" in _outcomes(experiment, unrecorded)[name].evidence.untested
    assert _verdict(experiment, name, _accuracy(paper + 0.1, hidden=1024, n_train=60_000)) is SAME
    assert _verdict(experiment, name, _accuracy(paper - 3.0, n_train=60_000)) is OPPOSITE
    # the quick profile's miniature is registered as not tested, not as a difference of direction
    assert claims.documented_difference(experiment, "quick", name)
    small = _accuracy(paper - 8.0, hidden=128, n_train=2_000)
    assert claims.unexpected_failures(claims.evaluate(experiment, small), "quick") == []
    # the gate reads its fields by name: the summary's key order does not matter
    shuffled = dict(reversed(list(small.items())))
    a, b = _outcomes(experiment, shuffled)[name].evidence, _outcomes(experiment, small)[name].evidence
    assert (a.verdict, a.untested, a.detail) == (b.verdict, b.untested, b.detail)
    at_scale = _accuracy(paper - 0.2)
    a = _outcomes(experiment, dict(reversed(list(at_scale.items()))))[name].evidence
    b = _outcomes(experiment, at_scale)[name].evidence
    assert (a.verdict, a.effect, a.detail) == (b.verdict, b.effect, b.detail)


# ------------------------------------------------------------------ compact_representation (Table 1, Fig. 3)

RNG = np.random.default_rng(1)
UNITS = 128


def _run(hmc_r=0.72, hmc_d=0.15, ens_r=0.93, ens_d=0.62, shrink=np.log(0.8), zero_sigma=1.0, vi_zero_sigma=1.0,
         stitched_gain=0.2, seed=0, rhat=1.01, ess=800.0, first_chain=0.98):
    """One run of compact_representation's summary (one group of chains, one ensemble, one VI fit)."""
    rng = np.random.default_rng(seed)

    def col(agreement):
        a = agreement + rng.normal(0, 0.003)  # run-to-run spread
        return {"agreement": a, "tv": 1 - a, "accuracy_samples": 100 * a, "accuracy_mean": 100 * a}

    base = rng.normal(np.log(0.5), 0.2, (4, UNITS))
    unit = {"HMC q_d": base[0], "HMC q_r": base[1] + shrink, "Ensemble q_d": base[2] - 3,
            "Ensemble q_r": base[3] - 3 + shrink, "VI q": base[0]}
    pixels = 60
    zp = {c: zero_sigma * np.exp(rng.normal(0, 0.05, pixels)) for c in ("HMC q_d", "HMC q_r")}
    zp["VI q"] = vi_zero_sigma * np.exp(rng.normal(0, 0.05, pixels))
    ens, hmc = np.array([0.9, 0.5, 0.3, 0.1]), np.array([0.9, 0.45, 0.35, 0.12])
    gain = stitched_gain + rng.normal(0, 0.003)
    return {"table": {"HMC q_d": col(hmc_d), "HMC q_r": col(hmc_r), "Ensemble q_d": col(ens_d),
                      "Ensemble q_r": col(ens_r)},
            "median_sigma": {k: float(np.exp(np.median(v))) for k, v in unit.items()},
            "near_prior": {"HMC q_d": 0.3, "HMC q_r": 0.3, "VI q": 0.9},
            "pruning": {"keep_fraction": [1.0, 0.5, 0.3, 0.1], "ensemble": ens.tolist(), "hmc": hmc.tolist(),
                        "ensemble mu + hmc sigma": np.r_[0.9, np.maximum(ens, hmc)[1:] + gain].tolist()},
            "hmc_convergence": {"rhat_test_loglik": rhat, "ess_test_loglik": ess},
            "first_chain_qd_agreement": first_chain,
            "unit_log_sigma": {k: v.tolist() for k, v in unit.items()},
            "zero_pixel_sigma": {k: v.tolist() for k, v in zp.items()}}


def _compact(runs=1, n_test=2000, chains=5, seed=0, **kw):
    """A compact_representation summary of ``runs`` independent runs."""
    return {"replicates": [_run(seed=seed + 1000 * i, **kw) for i in range(runs)], "chains_per_replicate": chains,
            "n_test": n_test, "prior_std": 1.0}


#: the paper's claims of Table 1 and Fig. 3 (qd_falls_with_chains is ours)
PAPERS = ("qr_beats_qd_hmc", "qr_beats_qd_ensemble", "ensemble_qr_beats_hmc_qr", "rebasin_shrinks_sigma_hmc",
          "rebasin_shrinks_sigma_ensemble", "bayesian_sigma_near_prior", "stitched_pruning_wins")


def test_compact_claims_on_one_run_are_at_most_the_same_direction():
    """Within one set of samples the intervals lie on the paper's side, but they run over the
    test images, hidden units or pixels of one run: "same direction, not significant"."""
    out = _outcomes("compact_representation", _compact())
    assert all(out[k].verdict is SAME and out[k].evidence.one_run for k in PAPERS), \
        {k: (o.verdict, o.detail) for k, o in out.items()}
    t = {k: o.evidence.threshold for k, o in out.items()}
    assert all((out[k].evidence.low > t[k].value) if t[k].direction == "above" else (out[k].evidence.high < t[k].value)
               for k in PAPERS)
    assert out["qd_falls_with_chains"].verdict is UNTESTED  # one group of chains gives no interval over runs


def test_compact_claims_over_independent_runs_hold_on_the_papers_picture():
    out = _outcomes("compact_representation", _compact(runs=3))
    for k, o in out.items():
        assert o.verdict is HOLDS and not o.evidence.one_run, (k, o.detail)
        assert o.evidence.units.startswith("3 independent runs"), o.evidence.units
    assert "5 HMC chains" in out["qr_beats_qd_hmc"].evidence.units  # the verdict names the chains it pools
    assert "per run: " in out["qr_beats_qd_hmc"].detail


@pytest.mark.parametrize("edit, name", [
    (dict(hmc_r=0.2), "qr_beats_qd_hmc"),  # a gap of 0.05 is not 'much better'
    (dict(ens_r=0.65), "qr_beats_qd_ensemble"),
    (dict(ens_r=0.6, ens_d=0.5), "ensemble_qr_beats_hmc_qr"),  # Table 1 (ii) reversed
    (dict(shrink=0.3), "rebasin_shrinks_sigma_hmc"),
    (dict(shrink=0.3), "rebasin_shrinks_sigma_ensemble"),
    (dict(zero_sigma=0.571), "bayesian_sigma_near_prior"),  # chains that never reach the prior's scale
    (dict(vi_zero_sigma=0.2), "bayesian_sigma_near_prior"),
    (dict(zero_sigma=2.0), "bayesian_sigma_near_prior"),
    (dict(stitched_gain=-0.05), "stitched_pruning_wins"),
    (dict(first_chain=0.1), "qd_falls_with_chains"),  # pooling chains does not lower q_d's agreement
])
@pytest.mark.parametrize("runs", [1, 3])
def test_each_compact_claim_fails_when_its_effect_is_absent(edit, name, runs):
    # one run: at most "opposite direction, not significant"; three runs: differs
    expected = {1: OPPOSITE, 3: DIFFERS}[runs]
    if name == "qd_falls_with_chains" and runs == 1:
        expected = UNTESTED
    o = _outcomes("compact_representation", _compact(runs=runs, **edit))[name]
    assert o.verdict is expected, o.detail


def test_near_prior_fails_at_the_chapters_value_whatever_the_share_of_weights():
    s = _compact(zero_sigma=0.571)
    s["replicates"][0]["near_prior"] = {"HMC q_d": 0.9, "HMC q_r": 0.9, "VI q": 0.9}  # 'lots of weights' near it
    o = _outcomes("compact_representation", s)["bayesian_sigma_near_prior"]
    assert o.verdict is OPPOSITE and "HMC q_d 0.57" in o.detail


#: the claims that read the HMC samples or their predictive (guarded by the convergence gate)
HMC_READING = ("qr_beats_qd_hmc", "qr_beats_qd_ensemble", "ensemble_qr_beats_hmc_qr", "rebasin_shrinks_sigma_hmc",
               "bayesian_sigma_near_prior", "stitched_pruning_wins")


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("gate", [dict(rhat=2.56), dict(ess=15.0), dict(rhat=1.3, ess=40.0)])
def test_unconverged_hmc_is_not_tested_whichever_way_the_effect_points(gate, runs):
    """A planted unconverged run: the paper's picture (every effect on the paper's side) and its
    opposite (every effect on the other side) both give "not tested", naming the gate."""
    favourable = _outcomes("compact_representation", _compact(runs=runs, **gate))
    unfavourable = _outcomes("compact_representation", _compact(runs=runs, hmc_r=0.2, ens_r=0.6, ens_d=0.5,
                                                                shrink=0.3, zero_sigma=0.571, stitched_gain=-0.05,
                                                                **gate))
    for out in (favourable, unfavourable):
        for name in HMC_READING:
            assert out[name].verdict is UNTESTED, (name, out[name].detail)
            assert "not converged" in out[name].evidence.untested or "too few" in out[name].evidence.untested
            assert out[name].detail.startswith("not judged: ")
        # the ensemble-only claim does not read HMC: judged as ever
        assert out["rebasin_shrinks_sigma_ensemble"].verdict is not UNTESTED
    assert _outcomes("compact_representation", _compact())["qr_beats_qd_hmc"].verdict is SAME  # converged
    s = _compact()
    del s["replicates"][0]["hmc_convergence"]  # a summary without diagnostics cannot show convergence
    assert _verdict("compact_representation", "qr_beats_qd_hmc", s) is UNTESTED


def test_one_unconverged_run_gates_every_run():
    s = _compact(runs=3)
    s["replicates"][1]["hmc_convergence"]["rhat_test_loglik"] = 1.8
    o = _outcomes("compact_representation", s)["qr_beats_qd_hmc"]
    assert o.verdict is UNTESTED and "1.80 (the worst of 3 runs)" in o.evidence.untested


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("runs", [1, 3])
def test_compact_claims_never_hold_on_noise(seed, runs):
    """q_r and q_d alike (same agreement, same sigma distribution), the stitched curve no better."""
    s = _compact(runs=runs, hmc_r=0.5, hmc_d=0.5, ens_r=0.5, ens_d=0.5, shrink=0.0, stitched_gain=0.0,
                 first_chain=0.5, seed=100 + seed)
    rng = np.random.default_rng(seed)
    for run in s["replicates"]:
        base = rng.normal(np.log(0.5), 0.2, (2, UNITS))  # q_r and q_d: one distribution
        for method in ("HMC", "Ensemble"):
            run["unit_log_sigma"][f"{method} q_d"], run["unit_log_sigma"][f"{method} q_r"] = \
                base[0].tolist(), base[1].tolist()
        hmc = np.asarray(run["pruning"]["hmc"])  # the stitched curve: HMC's, up to noise
        run["pruning"]["ensemble mu + hmc sigma"] = (hmc + rng.normal(0, 0.01, hmc.size)).tolist()
    out = _outcomes("compact_representation", s)
    for name in (*PAPERS[:5], "stitched_pruning_wins", "qd_falls_with_chains"):
        assert out[name].verdict is not HOLDS, (name, out[name].detail)


def test_near_prior_on_a_few_noisy_pixels_is_not_a_verdict():
    """Sampled sigmas spread around the prior's on two pixels: no interval within the factor."""
    s = _compact()
    s["replicates"][0]["zero_pixel_sigma"] = {c: [0.5, 1.9] for c in xiao.NEAR_PRIOR_COLUMNS}
    assert _verdict("compact_representation", "bayesian_sigma_near_prior", s) is not HOLDS


def test_small_test_sets_leave_table1_at_the_same_direction():
    s = _compact(hmc_r=0.5, hmc_d=0.3, n_test=50)
    assert _verdict("compact_representation", "qr_beats_qd_hmc", s) is SAME


def test_compact_claims_without_the_new_fields_are_not_tested():
    s = _compact(runs=3)
    for run in s["replicates"]:
        del run["unit_log_sigma"], run["zero_pixel_sigma"], run["first_chain_qd_agreement"]
    out = _outcomes("compact_representation", s)
    for name in ("rebasin_shrinks_sigma_hmc", "rebasin_shrinks_sigma_ensemble", "bayesian_sigma_near_prior",
                 "qd_falls_with_chains"):
        assert out[name].verdict is UNTESTED


def test_qd_falls_with_chains_needs_pooled_chains():
    assert _verdict("compact_representation", "qd_falls_with_chains", _compact(runs=3, chains=1)) is UNTESTED
    o = _outcomes("compact_representation", _compact(runs=3))["qd_falls_with_chains"]
    assert o.evidence.effect == pytest.approx(0.98 - 0.15, abs=0.02)
    assert "pooled against its first chain alone" in o.evidence.units


def test_always_zero_pixels_and_per_unit_sigma():
    x = np.zeros((5, 6))
    x[:, 1], x[2, 4] = 1.0, 0.5
    assert xiao.always_zero_pixels(x).tolist() == [0, 2, 3, 5]
    sigma = {"dense_0": {"kernel": np.arange(12.0).reshape(6, 2), "bias": np.array([100.0, -100.0])},
             "dense_1": {"kernel": np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])}}
    # unit 0: incoming 0, 2, .., 10, bias 100, outgoing 1, 1, 1 -> median of 10 values
    assert xiao.unit_sigma_medians(sigma).tolist() == [np.median([0, 2, 4, 6, 8, 10, 100, 1, 1, 1]),
                                                       np.median([1, 3, 5, 7, 9, 11, -100, 2, 2, 2])]
    assert xiao.pixel_sigma_medians(sigma, np.array([0, 5])).tolist() == [0.5, 10.5]


def test_hmc_budget_is_read_from_the_profile():
    from symlib.experiments.report import manifest
    from symlib.experiments.profiles import get_profile

    for name in ("quick", "paper"):
        p = get_profile(name)
        b = xiao.hmc_budget(p)
        assert (b.images, b.chains, b.samples_per_chain, b.warmup) == (p.bnn_n_train, p.hmc_chains, p.hmc_samples,
                                                                      p.hmc_burnin)
        assert b.samples == p.hmc_chains * p.hmc_samples
        assert manifest.hmc_budget(p) == str(b) and f"{p.bnn_n_train:,} images" in str(b)
    assert xiao.hmc_budget(get_profile("paper")).samples == 1_000  # App. A: 1,000 HMC samples


def test_compact_and_swap_claims_do_not_depend_on_key_order():
    """The replicated compact summary (no saved run covers it yet) gives the same effects,
    intervals and verdicts with its dicts' keys shuffled at every depth."""
    from test_claims import _shuffled

    s = _compact(runs=3)
    base = claims.evaluate("compact_representation", s)
    rng = np.random.default_rng(0)
    for _ in range(3):
        again = claims.evaluate("compact_representation", _shuffled(copy.deepcopy(s), rng))
        for a, b in zip(base, again):
            assert a.claim.name == b.claim.name and a.verdict is b.verdict, a.claim.name
            np.testing.assert_allclose([a.evidence.effect, a.evidence.low, a.evidence.high],
                                       [b.evidence.effect, b.evidence.low, b.evidence.high], equal_nan=True)


def test_near_prior_takes_each_column_over_the_runs_before_the_worst():
    """HMC centred on the prior but noisy over pixels, VI at 0.69x the prior in every run: within
    each run the noisy HMC column was "worst" (its interval reaches furthest), and the mean of
    those picks over runs held, hiding VI's 0.39 of log-distance; each column over the runs
    first puts VI forward."""
    s = _compact(runs=3)
    rng = np.random.default_rng(5)
    for rep, v in zip(s["replicates"], (-0.37, -0.39, -0.40)):
        rep["zero_pixel_sigma"]["VI q"] = np.exp(v + rng.normal(0, 0.005, 60)).tolist()
        for c in ("HMC q_d", "HMC q_r"):
            x = rng.normal(0, 2.2, 60)
            rep["zero_pixel_sigma"][c] = np.exp(x - x.mean() + rng.normal(0, 0.03)).tolist()
    ev = _outcomes("compact_representation", s)["bayesian_sigma_near_prior"].evidence
    assert ev.verdict is not HOLDS and "worst part: VI q" in ev.units, (ev.units, ev.detail)
    assert ev.effect == pytest.approx(0.387, abs=0.01)
