"""Laurent et al.'s experiments: the toy symmetry tests, the mass Hessian and line helpers,
the ``laurent_mlps`` summary, and that their claims fail when the numbers say so."""
import json

import numpy as np
import pytest
from _helpers import random_mlp, stack_trees

from symlib.experiments import SUMMARIES
from symlib.experiments.judging import claims
from symlib.experiments.laurent import mass_along_line, mass_hessian, toy_bootstrap, toy_symmetry_tests
from symlib.symmetry.scaling import apply_scaling, mass, min_mass, mlp_scaling_spec


def _toy_weights(rng, n=4000, shift=0.0, share=0.5):
    """Two mirrored clusters of output weights, ``share`` of them with w1 > w2; ``shift``
    moves w1 only. Symmetric for ``shift=0, share=0.5``."""
    side = rng.random(n) < share
    w = np.where(side[:, None], [3.0, 1.0], [1.0, 3.0]) + 0.3 * rng.normal(size=(n, 2))
    w[:, 0] += shift
    canonical = np.sort(w, axis=1)[:, ::-1]
    return {"raw": w, "unit_norm": w, "canonical": canonical}


def test_toy_symmetry_tests_accept_symmetry_and_reject_a_shift():
    rng = np.random.default_rng(0)
    sym = toy_symmetry_tests(_toy_weights(rng), resamples=5)
    assert sym["sign_test_p"] > 0.01 and sym["split_half_ks_p"] > 0.01
    assert sorted(np.round(sym["modes"]["raw"]).tolist()) == [-2.0, 2.0]
    shifted = toy_symmetry_tests(_toy_weights(rng, shift=0.3), resamples=5)  # same signs, shifted clusters
    assert shifted["split_half_ks_p"] < 1e-6
    unbalanced = toy_symmetry_tests(_toy_weights(rng, share=0.6), resamples=5)
    assert unbalanced["sign_test_p"] < 1e-6 and unbalanced["split_half_ks_p"] < 1e-6


def test_toy_symmetry_tests_name_bad_input():
    w = _toy_weights(np.random.default_rng(1), n=20)
    with pytest.raises(ValueError, match="must hold the form 'canonical'"):
        toy_symmetry_tests({"raw": w["raw"], "unit_norm": w["unit_norm"]})
    with pytest.raises(ValueError, match=r"weights\['raw'\] must have shape \(networks >= 8, 2\), got \(20, 3\)"):
        toy_symmetry_tests({**w, "raw": np.ones((20, 3))})


def test_toy_summary_of_an_artifact_and_its_claims():
    """The summary of a toy artifact is JSON-able, keeps its bootstrap over the networks, and
    its claims run on it (their verdicts are tested in tests/experiments/test_claims_laurent.py)."""
    rng = np.random.default_rng(2)
    w = _toy_weights(rng, n=400)
    art = {"loss": np.r_[np.full(400, 0.01), [0.5]], "kept": np.arange(400), "max_logit_diff": 1e-13,
           **{k: w[k] for k in ("raw", "unit_norm", "canonical")}}
    art["bootstrap"] = toy_bootstrap({k: w[k] for k in ("raw", "unit_norm", "canonical")}, resamples=20)
    summary = json.loads(json.dumps(SUMMARIES["toy_perceptrons"](art)))
    assert summary["nets"] == 401 and summary["kept"] == 400 and summary["networks"] == 400
    assert len(summary["bootstrap"]["mode_margin"]) == len(summary["bootstrap"]["regroup_gain"]) == 20
    # the stored bootstrap is the one toy_symmetry_tests computes itself from the same weights
    again = toy_symmetry_tests({k: w[k] for k in ("raw", "unit_norm", "canonical")}, resamples=20)
    assert again["bootstrap"] == summary["bootstrap"] and again["mode_margin"] == summary["mode_margin"]
    outcomes = {o.claim.name: o for o in claims.evaluate("toy_perceptrons", summary)}
    assert outcomes["mode_duplicated"].holds and outcomes["functions_unchanged"].holds
    assert not outcomes["few_dropped"].holds  # 1 of 401 dropped: too few networks to say "less than 1%"


def test_mass_hessian_matches_finite_differences():
    rng = np.random.default_rng(2)
    net = random_mlp(rng, [4, 3, 5, 2])
    u = [0.3 * rng.normal(size=3), 0.3 * rng.normal(size=5)]
    H = mass_hessian(net, u)
    flat = np.concatenate(u)

    def m(x):
        spec = mlp_scaling_spec(2)
        return mass(spec, apply_scaling(spec, net, {"P_0": np.exp(x[:3]), "P_1": np.exp(x[3:])}))

    h, n = 1e-4, len(flat)
    fd = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            ea, eb = np.eye(n)[a] * h, np.eye(n)[b] * h
            fd[a, b] = (m(flat + ea + eb) - m(flat + ea - eb) - m(flat - ea + eb) + m(flat - ea - eb)) / (4 * h * h)
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-6)
    assert np.linalg.eigvalsh(H)[0] > 0


def test_mass_hessian_singular_for_an_isolated_unit_and_bad_input():
    net = random_mlp(np.random.default_rng(3), [4, 3, 2])
    net["dense_0"]["kernel"][:, 1] = 0.0
    net["dense_1"]["kernel"][1, :] = 0.0
    assert abs(np.linalg.eigvalsh(mass_hessian(net))[0]) < 1e-12
    with pytest.raises(ValueError, match=r"log_scales must have shapes \[\(3,\)\]"):
        mass_hessian(net, [np.zeros(2)])
    with pytest.raises(ValueError, match="at least one hidden layer"):
        mass_hessian({"dense_0": net["dense_0"]})


def test_mass_along_line_minimum_at_min_mass():
    net = random_mlp(np.random.default_rng(4), [5, 4, 4, 3])
    s = min_mass(mlp_scaling_spec(2), net, method="newton")
    direction = [np.ones(4) / 4, -np.ones(4) / 4]
    t = np.linspace(-1, 1, 21)
    line = mass_along_line(net, [s.log_scales["P_0"], s.log_scales["P_1"]], direction, t)
    assert np.argmin(line) == 10 and np.isclose(line[10], s.mass)
    np.testing.assert_allclose(mass_along_line(net, [np.zeros(4)] * 2, direction, [0.0]), [mass(mlp_scaling_spec(2), net)])


def test_laurent_summary_on_small_networks_and_its_claims():
    rng = np.random.default_rng(5)
    nets = [random_mlp(rng, [6, 5, 4, 3], bias_scale=0.1) for _ in range(10)]
    art = {"params": stack_trees(nets), "test_accuracy": np.full(10, 0.9), "swaps": np.zeros((10, 2, 3, 2)),
           "sizes": np.array([6, 5, 4, 3]), "lr": np.array([0.04, 0.02]), "milestones": np.array([1]),
           "epoch_stats": [rng.normal(size=(10, 2, 5)), rng.normal(size=(10, 2, 4))]}
    summary = json.loads(json.dumps(SUMMARIES["laurent_mlps"](art)))
    mm = summary["min_mass"]
    assert mm["all_converged"] and len(mm["mass_before"]) == 10
    assert np.all(np.asarray(mm["mass_after"]) <= np.asarray(mm["mass_before"]))
    assert mm["random_lines"]["lines"] == 80 == mm["random_lines"]["minimum_at_optimum"] == mm["random_lines"]["convex"]
    assert mm["hessian_min_over_max_eigenvalue"]["min-mass"] > 0
    assert summary["marginals"]["positions"] == [6, 5, 3]
    assert summary["marginals"]["ks_ranks"]["networks_per_half"] == 5  # the marginals' interval over networks
    outcomes = {o.claim.name: o for o in claims.evaluate("laurent_mlps", summary)}
    for name in ("marginals_identical_before", "marginals_differ_after"):
        assert outcomes[name].evidence.untested is None and "10 networks" in outcomes[name].evidence.units
    assert outcomes["above_min_mass"].holds and outcomes["min_mass_convex"].holds
    # no swaps at all: "mostly in the high learning-rate phases" cannot hold
    assert not outcomes["swaps_in_high_lr_phases"].holds
    # the claims fail when the numbers say so
    bad = json.loads(json.dumps(summary))
    bad["min_mass"]["mass_after"] = bad["min_mass"]["mass_before"]
    bad["min_mass"]["hessian_min_over_max_eigenvalue"]["halfway"] = 0.0
    bad["min_mass"]["hidden_bias_sq_after"] = [b + 1.0 for b in bad["min_mass"]["hidden_bias_sq_before"]]
    outcomes = {o.claim.name: o for o in claims.evaluate("laurent_mlps", bad)}
    assert not any(outcomes[k].holds for k in ("above_min_mass", "min_mass_convex", "corollary1_lower_loss"))


def _swap_run(rng, runs=6, epochs=20, steps=4, widths=(5, 4), freeze_at=12):
    """Swap counts falling with the learning rate (halved at 5 and 10) and orderings that
    change every epoch until ``freeze_at`` and never after."""
    phase = np.searchsorted([5, 10], np.arange(epochs), side="right")
    swaps = rng.poisson(np.array([3.0, 1.5, 0.2])[phase][None, :, None, None], size=(runs, epochs, steps, len(widths)))
    stats = []
    for w in widths:
        s = rng.normal(size=(runs, epochs, w))
        s[:, freeze_at:] = s[:, freeze_at - 1:freeze_at]
        stats.append(s)
    return swaps, stats


def test_sec52_claims_hold_and_fail():
    from symlib.experiments.laurent import swap_summary
    rng = np.random.default_rng(0)
    swaps, stats = _swap_run(rng)
    from symlib.experiments.judging.claims import CLAIMS
    check = {c.name: c.check for c in CLAIMS["laurent_mlps"]}
    # every run frozen: no net swap late in any run is no spread over the runs, so no interval
    frozen = check["ordering_freezes"]({"swaps": {"perm_names": ["P_0", "P_1"],
                                                  **swap_summary(swaps, stats, [5, 10], [5, 4], [1, 1])}})
    assert frozen.verdict is claims.Verdict.SAME_DIRECTION and "no spread" in frozen.units
    for s in stats:  # run 0 exchanges two neighbouring units in its last epoch: one net swap
        i, j = np.argsort(s[0, -1])[:2]
        s[0, -1, [i, j]] = s[0, -1, [j, i]]
    sw = {"perm_names": ["P_0", "P_1"], **swap_summary(swaps, stats, [5, 10], [5, 4], [1, 1])}
    assert check["swaps_in_high_lr_phases"]({"swaps": sw}).verdict is claims.Verdict.HOLDS
    assert check["ordering_freezes"]({"swaps": sw}).verdict is claims.Verdict.HOLDS
    assert len(sw["per_run"]["first_per_step"][0]) == 6
    # orderings still moving at the end, or swaps as frequent late as early: the claims fail
    swaps_late, stats_late = _swap_run(rng, freeze_at=20)
    sw_late = {"perm_names": ["P_0", "P_1"], **swap_summary(swaps_late, stats_late, [5, 10], [5, 4], [1, 1])}
    assert check["ordering_freezes"]({"swaps": sw_late}).verdict is not claims.Verdict.HOLDS
    flat = rng.poisson(2.0, size=swaps.shape)
    sw_flat = {"perm_names": ["P_0", "P_1"], **swap_summary(flat, stats, [5, 10], [5, 4], [1, 1])}
    assert check["swaps_in_high_lr_phases"]({"swaps": sw_flat}).verdict is claims.Verdict.DIFFERS
    with pytest.raises(ValueError, match="at least 2 epochs, got 1"):
        swap_summary(swaps[:, :1], [s[:, :1] for s in stats], [5, 10], [5, 4], [1, 1])


def test_optunet_summary_leaves_out_unconverged_nets_and_its_claims_run():
    import jax
    from symlib.core.cnn import optunet_init
    from symlib.experiments.laurent.optunet import OptuNetsResult, optunet_summary
    rng = np.random.default_rng(1)
    nets = [jax.tree_util.tree_map(np.asarray, optunet_init(jax.random.key(i))) for i in range(6)]
    swaps, (s_conv, s_dense) = _swap_run(rng, runs=6, widths=(10, 3))
    art = {"params": stack_trees(nets), "epoch_loss": np.ones((6, 20)),
           "test_accuracy": np.array([0.5, 0.1, 0.6, 0.7, 0.5, 0.6]),
           "swaps": swaps, "epoch_stats": {"P_conv_1": s_conv, "P_dense_0": s_dense},
           "perm_names": np.asarray(["P_conv_1", "P_dense_0"]), "units": np.array([10, 3]), "blocks": np.array([2, 1]),
           "lr": np.array([0.04] * 5 + [0.02] * 5 + [0.01] * 10), "milestones": np.array([5, 10]),
           "weight_decay": 2e-4}
    res = OptuNetsResult.from_artifact(art)
    assert res.converged.tolist() == [True, False, True, True, True, True] and res.perm_names == ["P_conv_1", "P_dense_0"]
    summary = json.loads(json.dumps(optunet_summary(art)))
    assert summary["nets"] == 6 and summary["converged"] == 5 and len(summary["min_mass"]["mass_before"]) == 5
    assert summary["min_mass"]["layer_params"] == [32, 250, 33, 40]
    assert summary["swaps"]["pairs"] == [20, 3]
    outcomes = {o.claim.name: o for o in claims.evaluate("laurent_optunets", summary)}
    assert {"above_min_mass", "min_mass_convex", "corollary1_lower_loss", "largest_weight", "swaps_scarce",
            "swaps_gathered", "swaps_in_high_lr_phases", "ordering_freezes"} == set(outcomes)
    pr = summary["swaps"]["per_run"]
    assert len(pr["steps_with_swap"]) == 2 and len(pr["steps_with_swap"][0]) == 5  # per permutation, per run
    assert all(x is None or x >= 0 for x in pr["burst_ratio"][0])
    assert outcomes["min_mass_convex"].holds and outcomes["swaps_in_high_lr_phases"].holds
    with pytest.raises(ValueError, match="none of the 6 OptuNets reached 15%"):
        optunet_summary({**art, "test_accuracy": np.full(6, 0.1)})


def test_posterior_units_groups_and_matching():
    from symlib.experiments.laurent.collapse import disjoint_pairs
    from symlib.experiments.laurent.posteriors import reference_groups, sample_groups
    assert sample_groups("multi-SWAG", 10, 5).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert sample_groups("SWAG", 4, 5).tolist() == [0, 1, 2, 3] and sample_groups("DE", 3, 5).tolist() == [0, 1, 2]
    assert np.all(np.bincount(sample_groups("SGHMC", 100, 10)) == 5)  # at most 20 groups of independent draws
    g = reference_groups(1000)
    assert len(np.unique(g)) == 20 and np.all(np.bincount(g) == 50)
    assert reference_groups(16).tolist() == list(range(16))
    i, j = np.triu_indices(5, k=1)
    taken = disjoint_pairs(np.stack([i, j], 1))
    assert [(int(i[k]), int(j[k])) for k in taken] == [(0, 1), (2, 3)]


def test_network_bootstrap_keeps_pairs_of_resampled_networks():
    from symlib.experiments.laurent.collapse import network_bootstrap_ratio
    rng = np.random.default_rng(3)
    i, j = np.triu_indices(12, k=1)
    a = 1 + 0.1 * rng.normal(size=i.size)
    est, reps = network_bootstrap_ratio(np.stack([i, j], 1), a, 2 * a, 12, resamples=200)
    assert est == pytest.approx(1.0) and np.allclose(reps, 1.0)  # a scale change leaves the CV unchanged
    est, reps = network_bootstrap_ratio(np.stack([i, j], 1), a, 1 + 3 * (a - 1), 12, resamples=200)
    assert est == pytest.approx(3.0 / np.mean(1 + 3 * (a - 1)) * np.mean(a), rel=1e-6) and reps.size == 200


def test_network_bootstrap_pearson_on_a_subset_of_the_pairs():
    from symlib.experiments.laurent.collapse import network_bootstrap_pearson
    rng = np.random.default_rng(4)
    n = 30
    i, j = np.triu_indices(n, k=1)
    keep = np.sort(rng.choice(i.size, 150, replace=False))
    pairs = np.stack([i, j], 1)[keep]
    a = rng.normal(size=keep.size)
    b = 0.5 * a + rng.normal(size=keep.size)
    r, reps = network_bootstrap_pearson(pairs, a, b, n, resamples=50, seed=7)
    assert r == pytest.approx(np.corrcoef(a, b)[0, 1]) and reps.size == 50
    # the first replicate by hand: networks drawn with replacement, pairs weighted by the product of counts
    count = np.bincount(np.random.default_rng(7).integers(0, n, n), minlength=n).astype(float)
    w = count[pairs[:, 0]] * count[pairs[:, 1]]
    cov = np.cov(a, b, aweights=w, bias=True)
    assert reps[0] == pytest.approx(cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]))
    # the claim judges a random subset of the pairs by this interval, not "not tested"
    from symlib.experiments.judging import claims
    summary = {"pairs": keep.size, "networks": n, "pair_index": pairs.tolist(), "mi_id_pairs": a.tolist(),
               "mi_ood_pairs": b.tolist(), "pearson_r": r, "spearman_rho": r, "mean_id": 1.0, "std_id": 1.0,
               "mean_ood": 1.0, "std_ood": 1.0, "below_half_id": 0.0}
    outcome = next(o for o in claims.evaluate("functional_collapse", summary) if o.claim.name == "positive_correlation")
    assert "bootstrap resamples of networks; 150 of the 435 pairs" in outcome.evidence.units
    lo, hi = np.quantile(network_bootstrap_pearson(pairs, a, b, n)[1], [0.025, 0.975])
    assert (outcome.evidence.low, outcome.evidence.high) == pytest.approx((min(lo, r), max(hi, r)))
    assert lo > 0 and outcome.verdict.value == "holds"


def test_mi_and_accuracy_relate_the_pairs_to_their_weaker_network():
    from symlib.experiments.laurent.collapse import collapse_summary, mi_and_accuracy
    rng = np.random.default_rng(5)
    i, j = np.triu_indices(8, k=1)
    bank_acc = np.linspace(0.3, 0.9, 10)  # networks 0 and 9 of the bank are not in any pair
    pairs = np.stack([i, j], 1) + 1
    lower = np.minimum(bank_acc[pairs[:, 0]], bank_acc[pairs[:, 1]])
    mi_id = 1 - lower + 0.01 * rng.normal(size=lower.size)
    mi_ood = 0.5 + 0.1 * rng.normal(size=lower.size)
    s = collapse_summary({"pairs": pairs, "mi_id": mi_id, "mi_ood": mi_ood, "bank_accuracy": bank_acc})
    assert s["network_accuracy"] == pytest.approx(bank_acc[1:9].tolist())
    out = mi_and_accuracy(s)
    assert out["r_id_lower"] == pytest.approx(np.corrcoef(mi_id, lower)[0, 1]) and out["r_id_lower"] < -0.9
    above = lower >= np.median(bank_acc[1:9])
    assert out["pairs_both_above"] == above.sum() == 6  # the 4 networks at or above the median, all pairs
    assert out["r_both_above"] == pytest.approx(np.corrcoef(mi_id[above], mi_ood[above])[0, 1])
    assert out["mean_id_others"] == pytest.approx(mi_id[~above].mean())
    with pytest.raises(ValueError, match="no network_accuracy"):
        mi_and_accuracy({k: v for k, v in s.items() if k != "network_accuracy"})
    # nothing depends on the order of the keys
    art = {"bank_accuracy": bank_acc, "mi_ood": mi_ood, "mi_id": mi_id, "pairs": pairs}
    assert collapse_summary(art) == s
    assert mi_and_accuracy(dict(reversed(list(s.items())))) == out


def test_mmd_scores_jackknife_over_reference_and_sample_groups():
    import jax
    from symlib.core.cnn import optunet_init
    from symlib.experiments.laurent.posteriors import mmd_scores, sample_groups
    nets = [jax.tree_util.tree_map(np.asarray, optunet_init(jax.random.key(i))) for i in range(10)]
    ref, smp = stack_trees(nets[:6]), stack_trees(nets[6:])
    scores, jack = mmd_scores(ref, {"multi-SWAG": smp}, nets[0], groups={"multi-SWAG": sample_groups("multi-SWAG", 4, 2)},
                              reference_groups=np.array([0, 0, 1, 1, 2, 2]))
    assert set(jack) == {"MMD", "NS", "NS min-mass", "NS re-basin"}
    for variant, per in jack.items():
        assert len(per["multi-SWAG"]["reference"]) == 3 and len(per["multi-SWAG"]["samples"]) == 2, variant
    assert np.isfinite(scores["MMD"]["multi-SWAG"]["median"])
    assert mmd_scores(ref, {"multi-SWAG": smp}, nets[0]).keys() == scores.keys()  # without groups: the scores only


def test_optunet_block_size_follows_the_backend_unless_the_profile_fixes_it(monkeypatch):
    """Blocks of 32 OptuNets on a CPU (cache-friendly), 256 on an accelerator; network i is the
    same either way (its keys come from its index), so only the speed changes; a profile's
    optunet_block (the GPU queue's job) fixes the size on every backend."""
    import jax

    from symlib.experiments.laurent import optunet
    from symlib.experiments.profiles import get_profile, reduced

    paper = get_profile("paper")
    fixed = reduced(paper, {"optunet_block": "256"}, "paper-fixed")
    assert jax.default_backend() == "cpu" and optunet.optunet_block(paper) == optunet.OPTUNET_BLOCK == 32
    assert optunet.optunet_block(fixed) == 256
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert optunet.optunet_block(paper) == optunet.OPTUNET_BLOCK_ACCELERATOR == 256
    assert optunet.optunet_block(reduced(paper, {"optunet_block": "64"}, "paper-64")) == 64
    with pytest.raises(ValueError, match="optunet_block must be 0 .* got -1"):
        optunet.optunet_block(reduced(paper, {"optunet_block": "-1"}, "paper-neg"))


def test_bank_more_continues_the_banks_networks(tmp_path, monkeypatch):
    """bank_more: networks bank_nets.. of the bank's key sequence, the ones a larger bank
    trains there; optunet_bank joins them after the bank's own (which do not change), and
    bank_used leaves them out."""
    import jax

    from symlib.experiments import registry
    from symlib.experiments.laurent import posteriors
    from symlib.experiments.profiles import get_profile, reduced

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    tiny = {"bank_nets": "2", "bank_block": "2", "bank_epochs": "1", "n_train": "600"}
    profile = reduced(get_profile("quick"), {**tiny, "bank_more": "2"}, "quick-tiny-more")
    larger = reduced(get_profile("quick"), {**tiny, "bank_nets": "4"}, "quick-tiny-4")
    more, whole = posteriors.bank_more_blocks(profile), posteriors.bank_blocks(larger)
    assert len(more.starts) == 1
    for got, want in ((more.init_keys, whole.init_keys[2:]), (more.data_keys, whole.data_keys[2:])):
        np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(want))
    bank = registry.run("optunet_bank", profile, verbose=False).artifact
    alone = registry.run("optunet_bank", reduced(get_profile("quick"), tiny, "quick-tiny"), verbose=False).artifact
    assert len(bank["test_accuracy"]) == 4
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_array_equal(a[:2], b), bank["params"], alone["params"])
    used = registry.run("optunet_bank", reduced(profile, {"bank_used": "2"}, "quick-tiny-more-used"), verbose=False)
    assert len(used.artifact["test_accuracy"]) == 2
    with pytest.raises(ValueError, match="bank_more must be at least 1"):
        posteriors.bank_more_blocks(reduced(get_profile("quick"), tiny, "quick-tiny"))


def test_bank_min_mass_reads_the_banks_networks(tmp_path, monkeypatch):
    """bank_min_mass: min_mass_summary of the bank's networks (its own artifact holds the bank's
    parameters and accuracies), judged by laurent_optunets's four min-mass claims; the order of
    the layers in the parameters does not change the summary."""
    from symlib.experiments import registry
    from symlib.experiments.laurent import optunet
    from symlib.experiments.laurent.bank_min_mass import MIN_MASS_CLAIMS
    from symlib.experiments.profiles import get_profile, reduced

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    monkeypatch.setattr(optunet, "CONVERGED_ACCURACY", 0.0)  # one epoch on 600 images: none reaches 15%
    profile = reduced(get_profile("quick"), {"bank_nets": "2", "bank_block": "2", "bank_epochs": "1",
                                             "n_train": "600"}, "quick-tiny")
    art = registry.run("bank_min_mass", profile, verbose=False).artifact
    bank = registry.run("optunet_bank", profile, verbose=False).artifact
    np.testing.assert_array_equal(art["test_accuracy"], bank["test_accuracy"])
    summary = SUMMARIES["bank_min_mass"](art)
    assert summary["nets"] == summary["converged"] == 2 and len(summary["min_mass"]["mass_before"]) == 2
    shuffled = {layer: art["params"][layer] for layer in reversed(list(art["params"]))}
    assert json.dumps(optunet.min_mass_summary(shuffled, art["test_accuracy"]), sort_keys=True) == json.dumps(
        summary, sort_keys=True)
    assert sorted(o.claim.name for o in claims.evaluate("bank_min_mass", summary)) == sorted(MIN_MASS_CLAIMS)
