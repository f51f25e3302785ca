"""The registered experiments end to end, on a tiny profile (seconds, not minutes)."""
import copy
import dataclasses

import numpy as np
import pytest

from symlib import experiments
from symlib.experiments.profiles import get_profile

TINY = dataclasses.replace(
    get_profile("quick"), name="tiny", n_train=300, n_val=0, n_test=200, hidden=8, epochs=2, batch_size=50,
    n_lambdas=3, not_points=3, not_runs=2, bnn_n_train=100, hmc_chains=2, hmc_leapfrog=3, hmc_burnin=4,
    hmc_samples=4, hmc_thin=1, bnn_epochs=2, vi_batch_size=50, ensemble_members=2, mc_samples=4,
    xiao_replicates=2)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))


def _probs_ok(res):
    p = np.asarray(res.test_probs)
    assert p.shape == (TINY.n_test, 10) and np.allclose(p.sum(1), 1, atol=1e-5)
    assert 0 <= res.test.accuracy <= 1 and res.test.nll > 0


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_ensemble_and_vi():
    ens = experiments.run("ensemble", TINY, verbose=False)
    assert isinstance(ens, experiments.EnsembleRun)
    assert ens.params["dense_0"]["kernel"].shape == (2, 784, 8)
    _probs_ok(ens)
    vi = experiments.run("vi", TINY, verbose=False)
    assert vi.mu["dense_0"]["kernel"].shape == vi.sigma["dense_0"]["kernel"].shape == (784, 8)
    assert np.all(vi.sigma["dense_1"]["bias"] > 0)
    assert vi.artifact["test_probs"] is vi.test_probs  # the raw artifact stays available
    _probs_ok(vi)


def test_hmc_writes_resumable_chains_and_diagnostics():
    res = experiments.run("hmc", TINY, verbose=False)
    _probs_ok(res)
    samples = experiments.hmc_samples(TINY)
    assert samples["dense_1"]["kernel"].shape == (2, 4, 8, 10)
    assert res.stats["acceptance_rate"].shape == (2, TINY.hmc_burnin + TINY.hmc_samples * TINY.hmc_thin)
    assert res.diagnostics.rhat_true_class_prob.shape == (10,)
    assert 0 <= res.diagnostics.mean_acceptance <= 1
    assert any(experiments.hmc_run_dir(TINY).glob("samples_*.npz"))


def test_hmc_run_dir_ignores_the_code_version(monkeypatch):
    from symlib.experiments import cache

    before = experiments.hmc_run_dir(TINY)
    monkeypatch.setattr(cache, "code_version", lambda: "0.0.0+edited")
    assert experiments.hmc_run_dir(TINY) == before
    assert cache.cache_key("hmc", {"a": 1}) != cache.cache_key("hmc", {"a": 1}, version="0.0.0+other")
    assert experiments.hmc_run_dir(dataclasses.replace(TINY, hmc_leapfrog=4)) != before  # the config still counts
    assert before.name.startswith("hmc_chains-")


def test_not_experiments():
    sweep = experiments.run("not_sweep", TINY, verbose=False)
    assert sweep.not_p.shape == (TINY.not_runs * 3,)
    assert sweep.per_run("not_p").shape == (TINY.not_runs, 3)
    paths = experiments.run("not_paths", TINY, verbose=False)
    assert paths.partner("permuted").not_lambda[0] == 0
    assert paths.lambdas.shape == (2 * TINY.n_lambdas - 1,) and list(paths.epochs) == list(range(TINY.epochs + 1))
    # the re-pairing analysis uses the same matchings as the epochs trace: at initialisation the
    # planted permutation, at the end the last epoch's
    from symlib.symmetry.permutations import num_transpositions

    rep = paths.artifact["permuted"]["repaired"]
    assert num_transpositions(rep["m_init"]) == paths.not_p
    assert num_transpositions(rep["m_final"]) == paths.partner("permuted").not_epochs[-1]
    summary = paths.repaired()
    assert summary["units"] == TINY.hidden and 0 <= summary["repaired"] <= TINY.hidden
    assert summary["dead_repaired"] + summary["dead_kept"] == int(np.sum(rep["active_fraction"] == 0))


def test_repaired_units_summary_counts_by_hand():
    from symlib.experiments.xiao import repaired_units_summary

    rep = {"m_init": np.array([1, 0, 2, 3]), "m_final": np.array([1, 0, 3, 2]),  # units 2 and 3 re-paired
           "active_fraction": np.array([0.5, 0.4, 0.0, 0.1]), "out_norm": np.array([2.0, 1.0, 0.1, 0.3])}
    s = repaired_units_summary(rep)
    assert (s["units"], s["repaired"], s["dead_repaired"], s["dead_kept"]) == (4, 2, 1, 0)
    assert s["median_active_repaired"] == pytest.approx(0.05) and s["median_active_kept"] == pytest.approx(0.45)
    assert s["median_out_norm_repaired"] == pytest.approx(0.2)
    assert (s["active_half"], s["active_half_kept"]) == (2, 2)  # median 0.25: units 0 and 1


def test_bnn_n_train_too_large_is_an_error():
    with pytest.raises(ValueError, match="bnn_n_train"):
        experiments.run("hmc", dataclasses.replace(TINY, bnn_n_train=10_000), verbose=False)


def test_toy_helpers():
    from symlib.experiments.laurent.toy import count_modes, sort_by_output_weight, two_gaussians

    x, y = two_gaussians(n_per_class=50)
    assert x.shape == (100, 2) and np.all((x.sum(1) > 0) == (y == 1))
    rng = np.random.default_rng(0)
    assert len(count_modes(rng.normal(size=2000))) == 1
    assert len(count_modes(np.concatenate([rng.normal(-5, 1, 2000), rng.normal(5, 1, 2000)]))) == 2
    net = {"dense_0": {"kernel": rng.normal(size=(2, 2)), "bias": rng.normal(size=2)},
           "dense_1": {"kernel": np.array([[-1.0], [2.0]]), "bias": np.zeros(1)}}
    sorted_net, perm = sort_by_output_weight(net)
    assert list(perm) == [1, 0] and sorted_net["dense_1"]["kernel"][0, 0] == 2.0


@pytest.mark.parametrize("n", [2, 50, 5_000])
def test_kde_on_grid_is_scipys_gaussian_kde(n):
    from scipy.stats import gaussian_kde

    from symlib.experiments.laurent.toy import kde_on_grid

    rng = np.random.default_rng(n)
    v = np.concatenate([rng.normal(-2, 0.5, n - n // 2), rng.normal(3, 1.5, n // 2)])
    g, f, h = kde_on_grid(v, grid=301)
    ref = gaussian_kde(v)
    np.testing.assert_array_equal(g, np.linspace(v.min(), v.max(), 301))
    assert h == pytest.approx(ref.factor * np.std(v, ddof=1), rel=1e-12)
    np.testing.assert_allclose(f, ref(g), rtol=2e-5)
    with pytest.raises(ValueError, match="1-D sample"):
        kde_on_grid(v[:1])


def test_unregistered_result_type_keeps_the_artifact(monkeypatch):
    monkeypatch.setitem(experiments.EXPERIMENTS, "plain",
                        experiments.registry.Experiment("plain", lambda p: {"v": np.arange(2.0)}, lambda p: {}, "doc"))
    res = experiments.run("plain", TINY, verbose=False)
    assert type(res) is experiments.ExperimentResult
    np.testing.assert_array_equal(res.artifact["v"], [0.0, 1.0])


def _curve(offset):
    return {"tau": np.linspace(0, 1, 3), "loss": np.arange(3.0) + offset, "accuracy": np.ones(3)}


def _align_entry(scale):
    names = [f"{s} {k}" for s in ("train", "test") for k in ("naive", "aligned")]
    return {"curves": {n: _curve(i) for i, n in enumerate(names)},
            "barrier": {"marginal": {n: scale * (i + 1) for i, n in enumerate(names)},
                        "midpoint": {n: -scale * (i + 1) for i, n in enumerate(names)}},
            "alignment_seconds": np.asarray(0.5), "elbo_final": np.zeros(2)}


def test_vi_alignment_result_reads_named_fields():
    artifact = {"mnist": {"w8": _align_entry(1.0), "w16": _align_entry(10.0)}}
    res = experiments.VIAlignmentResult.from_artifact(artifact)
    assert res.widths("mnist") == [8, 16]
    pair = res.run("mnist", 16)
    assert pair.marginal_barrier(split="test", aligned=True) == artifact["mnist"]["w16"]["barrier"]["marginal"][
        "test aligned"] == 40.0
    assert pair.midpoint_barrier(split="train", aligned=False) == -10.0
    assert pair.curve(split="test", aligned=False) is artifact["mnist"]["w16"]["curves"]["test naive"]
    assert pair.alignment_seconds == 0.5
    with pytest.raises(ValueError, match="unknown width 32"):
        res.run("mnist", 32)
    with pytest.raises(ValueError, match="unknown dataset 'cifar'"):
        res.widths("cifar")
    with pytest.raises(ValueError, match=r"unknown \(split, aligned\) \('val', True\)"):
        pair.marginal_barrier(split="val", aligned=True)


def test_rebasin_and_compact_results_read_named_fields():
    methods = experiments.MATCHING_METHODS
    curves = {s: {m: {"lambda": np.zeros(3), "loss": np.zeros(3), "accuracy": np.zeros(3)} for m in methods}
              for s in ("train", "test")}
    rebasin = experiments.RebasinResult.from_artifact({
        "curves": curves, "barrier": {s: {m: np.asarray(0.1 * i) for i, m in enumerate(methods)} for s in curves},
        "not": {m: np.asarray(3) for m in methods[1:]}, "perms": {m: np.arange(4) for m in methods[1:]},
        "endpoint_test_accuracy": {"seed0": np.float32(0.5), "seed1": np.float32(0.75)}})
    assert rebasin.barrier("test", "weight matching") == pytest.approx(0.1)
    assert rebasin.curve("train", "no matching") is curves["train"]["no matching"]
    assert rebasin.endpoint_test_accuracy == {0: 0.5, 1: 0.75} and rebasin.num_transpositions["weight matching"] == 3
    with pytest.raises(ValueError, match="unknown matching method 'optimal'"):
        rebasin.barrier("test", "optimal")

    diag = {"mean_acceptance": np.asarray(0.8), "num_divergences": np.asarray(2),
            **{f"{s}_{q}": np.ones(1) for s in ("rhat", "ess") for q in ("test_loglik", "true_class_prob")}}
    run = {"table": {"HMC sample": {"agreement": 1.0, "tv": 0.0, "accuracy_samples": 90.0},
                     "VI q": {"agreement": 0.9, "tv": 0.1, "accuracy_samples": 89.0, "accuracy_mean": 88.0}},
           "pruning": {"keep_fraction": np.asarray([1.0, 0.5]), "vi": np.asarray([0.9, 0.8])},
           "sigma": {"VI q": np.ones(4)}, "median_sigma": {"VI q": 1.0}}
    later = copy.deepcopy(run)
    later["table"]["VI q"]["agreement"], later["pruning"]["vi"] = 0.8, np.asarray([0.9, 0.6])
    # stored by run index; read in index order whatever the key order ("10" after "9")
    runs = {str(i): copy.deepcopy(run) for i in range(11)}
    runs["10"] = later
    compact = experiments.CompactResult.from_artifact({
        "replicates": dict(reversed(list(runs.items()))), "chains_per_replicate": 5,
        "hmc_test": {"accuracy": 0.9, "nll": 0.3}, "hmc_diagnostics": diag})
    assert compact.replicates[-1].table["VI q"].agreement == 0.8 and len(compact.replicates) == 11
    first = compact.replicates[0]
    assert first.table["HMC sample"].accuracy_mean is None and first.table["VI q"].accuracy_mean == 88.0
    assert list(first.pruning.accuracy) == ["vi"] and first.pruning.keep_fraction[1] == 0.5
    assert compact.hmc_diagnostics.num_divergences == 2 and compact.hmc_test.nll == 0.3
    table = compact.table()
    assert table["VI q"]["agreement"][0] == pytest.approx((10 * 0.9 + 0.8) / 11)
    assert table["VI q"]["agreement"][1] == pytest.approx(np.std([0.9] * 10 + [0.8], ddof=1) / np.sqrt(11))
    assert table["HMC sample"]["accuracy_mean"] == (None, None)
    mean, se = compact.pruning()["vi"]
    assert mean[1] == pytest.approx((10 * 0.8 + 0.6) / 11) and se[0] == pytest.approx(0, abs=1e-12)


@pytest.mark.slow  # about 10 s on 2 cores
def test_compact_representation_runs_over_disjoint_chain_groups():
    res = experiments.run("compact_representation", TINY, verbose=False)
    assert len(res.replicates) == TINY.xiao_replicates and res.chains_per_replicate == 1
    assert {"HMC q_d", "HMC q_r", "Ensemble q_r", "VI q"} <= set(res.replicates[1].table)
    # each run is scored against its own chains' predictive, so the runs differ
    assert res.replicates[0].median_sigma["HMC q_d"] != res.replicates[1].median_sigma["HMC q_d"]
    s = experiments.SUMMARIES["compact_representation"](res.artifact)
    assert len(s["replicates"]) == 2 and s["chains_per_replicate"] == 1
    assert s["table"]["VI q"]["agreement"] == pytest.approx(np.mean([r["table"]["VI q"]["agreement"]
                                                                     for r in s["replicates"]]))
    with pytest.raises(ValueError, match="xiao_replicates must be a positive divisor of hmc_chains"):
        experiments.run("compact_representation", dataclasses.replace(TINY, xiao_replicates=3), verbose=False)


def test_map_pair_and_laurent_results_read_named_fields():
    net = {"params": {"dense_0": {"kernel": np.ones((2, 2)), "bias": np.zeros(2)}}, "epoch_loss": np.ones(2),
           "test_nll": np.float32(0.25), "test_accuracy": np.float32(0.5)}
    pair = experiments.MapPairResult.from_artifact({"seed0": net, "seed1": net})
    assert pair.net(1).test_accuracy == 0.5 and pair.net(0).params is net["params"]
    with pytest.raises(ValueError, match="unknown seed 2"):
        pair.net(2)
    stats = np.zeros((2, 3, 4, 5))  # two hidden layers of 5 units, stacked by the cache
    mlps = experiments.LaurentMLPsResult.from_artifact({
        "params": {}, "epoch_loss": np.ones(3), "swaps": np.zeros((3, 4, 2, 2)), "test_accuracy": np.ones(3),
        "epoch_stats": stats, "lr": np.ones(4), "milestones": np.asarray([1, 2]), "prior_std": np.asarray(2.0),
        "sizes": np.asarray([784, 5, 5, 10])})
    assert [s.shape for s in mlps.epoch_stats] == [(3, 4, 5), (3, 4, 5)] and mlps.prior_std == 2.0
    toy = experiments.ToyPerceptronsResult.from_artifact({
        "x": np.zeros((4, 2)), "y": np.zeros(4), "loss": np.zeros(4), "kept": np.arange(4), "max_logit_diff": 0.0,
        **{form: np.full((4, 2), i) for i, form in enumerate(experiments.OUTPUT_WEIGHT_FORMS)}})
    assert toy.weights("canonical")[0, 0] == 2
    with pytest.raises(ValueError, match="unknown form 'scaled'"):
        toy.weights("scaled")


def test_paper_constants_are_quoted_unchanged():
    assert experiments.XIAO_TABLE1["agreement"][2] == 0.8249  # Table 1, HMC q_r
    assert experiments.XIAO_FIG1_CLAIMS == {"barrier_no_matching": "clearly > 0", "barrier_matched": "about 0"}
    assert experiments.ROSSI_VI_SETTINGS == {"std_init": 0.01, "batch_size": 500, "temperature": 1.0}
    assert experiments.LAURENT_FIG1_CLAIMS["dropped_networks"] == "less than 1%"


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_laurent_optunets_trains_counts_swaps_and_reloads():
    tiny = dataclasses.replace(TINY, optunet_nets=2, optunet_epochs=4)
    res = experiments.run("laurent_optunets", tiny, verbose=False)
    assert isinstance(res, experiments.OptuNetsResult)
    assert res.params["conv_1"]["kernel"].shape == (2, 5, 5, 1, 10)
    steps = tiny.n_train // 64
    assert res.swaps.shape == (2, 4, steps, 2) and res.swaps.min() >= 0
    assert [s.shape for s in res.epoch_stats] == [(2, 4, 10), (2, 4, 3)]
    assert res.perm_names == ["P_conv_1", "P_dense_0"] and res.blocks.tolist() == [2, 1]
    assert res.lr.tolist() == [0.04, 0.02, 0.01, 0.01] and res.milestones.tolist() == [1, 2]
    assert np.all((0 <= res.test_accuracy) & (res.test_accuracy <= 1))
    again = experiments.run("laurent_optunets", tiny, verbose=False)  # from the cache
    np.testing.assert_array_equal(again.swaps, res.swaps)
    d = experiments.optunet_data(tiny)
    assert d["x_train"].shape == (300, 28, 28, 1) and abs(float(d["x_train"].mean())) < 0.2


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_vi_alignment_resnet20_runs_and_keeps_the_vi_alignment_layout():
    tiny = dataclasses.replace(TINY, resnet_n_train=128, resnet_epochs=1, resnet_n_eval=32, resnet_batch_size=64,
                               resnet_n_lambdas=3, resnet_samples=2)
    res = experiments.run("vi_alignment_resnet20", tiny, verbose=False)
    assert isinstance(res, experiments.VIAlignmentResult) and res.widths("fashion_mnist") == [1]
    pair = res.run("fashion_mnist", 1)
    for split in ("train", "test"):
        for aligned in (False, True):
            c = pair.curve(split=split, aligned=aligned)
            assert len(c["loss"]) == 3 and np.all(np.isfinite(c["loss"]))
            assert np.isfinite(pair.marginal_barrier(split=split, aligned=aligned))
    summary = experiments.SUMMARIES["vi_alignment_resnet20"](res.artifact)
    assert summary["widths"] == {"fashion_mnist": [1]}
    from symlib.experiments.judging import claims
    outcomes = claims.evaluate("vi_alignment_resnet20", summary)
    assert [o.claim.name for o in outcomes] == ["alignment_lowers_every_barrier", "wider_lower_only_after_alignment"]
    # Fig. A2 for ResNet20: the timings each width's step took, as vi_alignment_timings' table
    t = experiments.run("vi_alignment_resnet20_timings", tiny, verbose=False)
    assert t.widths == {"fashion_mnist": [1]}
    assert t.column("fashion_mnist", "w2_seconds_repeats").shape == (1, experiments.rossi.TIMING_REPEATS)
    assert t.column("fashion_mnist", "w2_sq")[0] <= t.column("fashion_mnist", "w2_sq_identity")[0]
    assert t.column("fashion_mnist", "w2_seconds")[0] > 0 and t.column("fashion_mnist", "wm_sweeps")[0] >= 1
    timing_summary = experiments.SUMMARIES["vi_alignment_resnet20_timings"](t.artifact)
    assert timing_summary["endpoint_accuracy"] == summary["endpoint_accuracy"]
    by_name = {o.claim.name: o for o in claims.evaluate("vi_alignment_resnet20_timings", timing_summary)}
    assert list(by_name) == ["within_a_minute", "time_grows_with_width", "vi_costlier_than_weight_matching"]
    assert "one width" in by_name["time_grows_with_width"].evidence.untested or "not learned" in by_name[
        "time_grows_with_width"].evidence.untested
    with pytest.raises(ValueError, match=r"resnet_dataset must be one of \['cifar10', 'cifar100', 'fashion_mnist'\]"):
        experiments.rossi.load_resnet_data(dataclasses.replace(tiny, resnet_dataset="svhn"))


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_blocks_resume_and_match_fit_ensemble(tmp_path, monkeypatch):
    """registry.run_blocks of blocks_of / fit_many_blocks: the networks of one fit_ensemble call (member i
    from split(init_key, K)[i], data key split(data_key, K)[i], init_key, data_key = split(key)),
    trained in cached blocks, with the observers' outputs; a run killed after the first block
    resumes with the second; one block is that fit_ensemble call itself."""
    import functools

    import jax

    import symlib.inference.training as training
    from symlib.core.models import mlp_apply, mlp_init
    from symlib.experiments import registry
    import optax
    from symlib.inference import Data, Model, fit_ensemble
    from symlib.inference import training as inference_training
    from symlib.symmetry import mlp_permutation_spec, mlp_scaling_spec
    from symlib.symmetry.neuron_order import statistics_observer, swap_counter

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(96, 6)).astype(np.float32), rng.integers(0, 3, 96)
    cfg = training.TrainConfig(epochs=2, batch_size=32, optimizer=optax.adam(0.01))
    init = functools.partial(mlp_init, sizes=[6, 5, 4, 3])
    specs = mlp_scaling_spec(2), mlp_permutation_spec(2)
    obs = {"observe": swap_counter(*specs), "observe_epoch": statistics_observer(*specs)}
    init_key, data_key = jax.random.split(jax.random.key(3))
    ens = fit_ensemble(data_key, jax.vmap(init)(jax.random.split(init_key, 4)), Model(mlp_apply), Data(x, y), cfg,
                       **obs)
    want = ens.samples, ens.info["epoch_loss"], ens.info["observed"]
    real, calls = inference_training._train_map_many, []

    def killed_after_one_block(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt("killed")
        calls.append(1)
        return real(*args, **kwargs)

    args = ("toy", {"a": 1}, jax.random.key(3), init, mlp_apply, 4, x, y, cfg)  # two blocks of 2
    monkeypatch.setattr(inference_training, "_train_map_many", killed_after_one_block)
    with pytest.raises(KeyboardInterrupt):
        registry.run_blocks(registry.blocks_of(*args, block_size=2, **obs))
    monkeypatch.setattr(inference_training, "_train_map_many", real)
    assert len(list(tmp_path.glob("toy.step-*.npz"))) == 1
    got = registry.run_blocks(registry.blocks_of(*args, block_size=2, **obs))
    assert len(list(tmp_path.glob("toy.step-*.npz"))) == 2
    close = lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)  # noqa: E731
    jax.tree_util.tree_map(close, got[0], want[0])
    close(got[1], want[1])
    np.testing.assert_array_equal(got[2]["step"], want[2]["step"])
    assert len(got[2]["epoch"]) == len(want[2]["epoch"]) == 2
    for a, b in zip(got[2]["epoch"], want[2]["epoch"]):
        close(a, b)
    one = registry.run_blocks(registry.blocks_of("toy1", {}, jax.random.key(3), init, mlp_apply, 4, x, y, cfg, block_size=4,
                                                **obs))
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_array_equal(a, np.asarray(b)), one[0], want[0])
    with pytest.raises(ValueError, match="block_size"):
        registry.fit_many_blocks("toy", {}, init, jax.random.split(jax.random.key(0), 2),
                                 jax.random.split(jax.random.key(1), 2), x, y, cfg, block_size=0, apply_fn=mlp_apply)


def test_pick_reports_an_unknown_key_as_the_data_loaders_do():
    from symlib.data.files import check_choice
    from symlib.experiments.registry import pick

    assert pick({"train": 1, "test": 2}, "test", "split") == 2
    with pytest.raises(ValueError) as want:
        check_choice("split", "val", ("train", "test"))
    with pytest.raises(ValueError) as got:
        pick({"train": 1, "test": 2}, "val", "split")
    assert str(got.value) == str(want.value) == "unknown split 'val'; valid values: 'train', 'test'"
