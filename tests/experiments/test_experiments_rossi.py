"""symlib.experiments.rossi: the summaries of vi_alignment, vi_alignment_robustness and
vi_alignment_timings, the replicated pairs, and the timing helper (the claims are tested in
tests/experiments/test_claims_rossi.py)."""
import dataclasses

import numpy as np
import pytest

from symlib import experiments
from symlib.experiments import cache, rossi
from symlib.experiments.judging import claims
from symlib.experiments.profiles import get_profile
from symlib.experiments.registry import SUMMARIES
from symlib.symmetry.specs import mlp_permutation_spec
from symlib.testing.reference import random_gaussian_posterior

def _entry(scale):
    keys = [f"{s} {k}" for s in ("train", "test") for k in ("naive", "aligned")]
    return {"barrier": {"marginal": {k: scale * (i + 1) for i, k in enumerate(keys)},
                        "midpoint": {k: -scale for k in keys}},
            "elbo_final": np.asarray([-0.4, -0.6]),
            "curves": {"test naive": {"loss": np.asarray([1.0, 3.0, 2.0]), "accuracy": np.asarray([0.9, 0.5, 0.8])}}}


def test_align_summary_orders_widths_and_lists_barriers():
    s = SUMMARIES["vi_alignment"]({"mnist": {"w16": _entry(10.0), "w8": _entry(1.0)}})
    assert s["widths"] == {"mnist": [8, 16]}
    assert s["marginal"]["mnist"]["test"] == {"naive": [3.0, 30.0], "aligned": [4.0, 40.0]}
    assert s["midpoint"]["mnist"]["train"]["naive"] == [-1.0, -10.0]
    assert s["marginal_pairs"]["mnist"]["test"]["naive"] == [[3.0], [30.0]]
    assert s["elbo"]["mnist"] == [[-0.5], [-0.5]] and s["endpoint_loss"]["mnist"] == [[1.5], [1.5]]
    assert s["endpoint_accuracy"]["mnist"] == [[0.8], [0.8]]


def test_align_summary_keeps_every_pair_and_averages_them():
    s = SUMMARIES["vi_alignment"]({"mnist": {"w8": {"pair1": _entry(3.0), "pair0": _entry(1.0)}}})
    assert s["marginal_pairs"]["mnist"]["train"]["naive"] == [[1.0, 3.0]]
    assert s["marginal"]["mnist"]["train"]["naive"] == [2.0]
    with pytest.raises(ValueError, match="'barrier' or 'pair<k>'"):
        SUMMARIES["vi_alignment"]({"mnist": {"w8": {"other": 1}}})


def test_time_alignments_on_planted_posteriors():
    sizes = [6, 4, 4, 3]
    posteriors = {}
    for width in (4, 5):
        q0 = random_gaussian_posterior(0, [6, width, width, 3])
        q1 = random_gaussian_posterior(1, [6, width, width, 3])
        posteriors[width] = {"mu0": q0[0], "sigma0": q0[1], "mu1": q1[0], "sigma1": q1[1]}
    spec = mlp_permutation_spec(len(sizes) - 2)
    out = rossi.time_alignments(posteriors, spec, repeats=2)
    assert out["width"] == [4, 5]
    assert all(s > 0 for s in out["w2_seconds"] + out["wm_cpu_seconds"])
    assert all(a <= b for a, b in zip(out["w2_sq"], out["w2_sq_identity"]))
    assert [len(r) for r in out["w2_cpu_seconds_repeats"]] == [2, 2]
    assert out["w2_cpu_seconds"][0] == pytest.approx(float(np.median(out["w2_cpu_seconds_repeats"][0])))
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        rossi.time_alignments(posteriors, spec, repeats=0)
    with pytest.raises(ValueError, match="posteriors is empty"):
        rossi.time_alignments({}, spec)


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_vi_alignment_keeps_posteriors_and_timings_read_them(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    tiny = dataclasses.replace(get_profile("quick"), name="tiny", n_train=600, n_val=0, n_test=100,
                               align_widths=(4, 8), align_depth=2, align_epochs=1, align_samples=2,
                               align_n_eval=50, n_lambdas=3, align_pairs=2, align_sweep_width=4)
    pairs = experiments.run("vi_alignment", tiny, verbose=False)
    assert len(pairs.replicates("mnist", 8)) == 2
    assert pairs.run("mnist", 8, pair=1).marginal_barrier(split="test", aligned=True) >= 0
    with pytest.raises(ValueError, match=r"pair must be in \[0, 2\)"):
        pairs.run("mnist", 8, pair=2)
    post = pairs.artifact["mnist"]["w8"]["pair0"]["posteriors"]
    assert np.shape(post["mu1"]["dense_0"]["kernel"]) == (784, 8) and np.all(np.asarray(
        post["sigma0"]["dense_0"]["kernel"]) > 0)
    t = experiments.run("vi_alignment_timings", tiny, verbose=False)
    assert t.widths == {"mnist": [4, 8], "fashion_mnist": [4, 8]}
    assert t.column("mnist", "w2_sweeps").shape == (2,)
    s = SUMMARIES["vi_alignment_timings"](t.artifact)
    assert len(claims.evaluate("vi_alignment_timings", s)) == 3
    assert t.column("mnist", "w2_cpu_seconds_repeats").shape == (2, rossi.TIMING_REPEATS)
    with pytest.raises(ValueError, match="unknown column 'seconds'"):
        t.column("mnist", "seconds")
    sweep = experiments.run("vi_alignment_robustness", tiny, verbose=False)
    rs = SUMMARIES["vi_alignment_robustness"](sweep.artifact)
    assert rs["width"] == 4 and len(rs["settings"]) == 4
    assert [len(v) for v in rs["marginal_pairs"]["test"]["aligned"]] == [2, 2, 2, 2]
    base = SUMMARIES["vi_alignment"](pairs.artifact)["marginal_pairs"]["mnist"]["test"]["aligned"][0]
    assert rs["marginal_pairs"]["test"]["aligned"][0] == base  # the paper's setting is vi_alignment's
    bare = dataclasses.replace(tiny, name="tiny-bare", align_keep_posteriors=False)  # the GPU queue's steps
    assert "posteriors" not in experiments.run("vi_alignment", bare, verbose=False).artifact["mnist"]["w8"]["pair0"]
    with pytest.raises(ValueError, match="does not keep: set align_keep_posteriors=true"):
        experiments.run("vi_alignment_timings", bare, verbose=False)


def test_vi_alignment_resumes_after_an_interrupted_run(tmp_path, monkeypatch):
    """A run killed after k (dataset, width) steps continues from step k + 1 and gives the
    uninterrupted run's numbers (the alignment's wall time excepted)."""
    import symlib.inference as inference_pkg  # fit_and_align_pair imports fit_vi from it at every call

    tiny = dataclasses.replace(get_profile("quick"), name="tiny", n_train=500, n_val=0, n_test=60,
                               align_widths=(4, 6), align_depth=1, align_epochs=1, align_samples=2,
                               align_n_eval=30, n_lambdas=3, align_pairs=1)
    real_fit, calls = inference_pkg.fit_vi, []

    def fit(*args, fail_after=None, **kwargs):
        if fail_after is not None and len(calls) >= fail_after:
            raise KeyboardInterrupt("killed")
        calls.append(1)
        return real_fit(*args, **kwargs)

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "whole"))
    whole = experiments.run("vi_alignment", tiny, verbose=False).artifact
    assert len(list((tmp_path / "whole").glob("vi_alignment.step-*.npz"))) == 4  # 2 datasets x 2 widths

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "pieces"))
    monkeypatch.setattr(inference_pkg, "fit_vi", lambda *a, **k: fit(*a, fail_after=5, **k))
    with pytest.raises(KeyboardInterrupt):  # two fits per step: killed during the third step
        experiments.run("vi_alignment", tiny, verbose=False)
    assert len(list((tmp_path / "pieces").glob("vi_alignment.step-*.npz"))) == 2
    calls.clear()
    monkeypatch.setattr(inference_pkg, "fit_vi", lambda *a, **k: fit(*a, **k))
    resumed = experiments.run("vi_alignment", tiny, verbose=False).artifact
    assert len(calls) == 4  # only the two missing steps were fitted
    flat_w, flat_r = cache._flatten(whole), cache._flatten(resumed)
    assert flat_w.keys() == flat_r.keys()
    for k in flat_w:
        if not k.endswith("alignment_seconds"):
            np.testing.assert_array_equal(flat_r[k], flat_w[k], err_msg=k)


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_vi_alignment_cifar10_runs_the_mlp_on_flattened_cifar10(tmp_path, monkeypatch):
    """The CIFAR-10 MLP (paper profile only) end to end on synthetic archives in the official
    format (500 training and 100 test images: one batch of the paper's 500): 3,072 inputs, the paper's CIFAR-10 prior
    variance, vi_alignment's layout and claims; without the archive, the data module's error."""
    import _rgb_files
    from _helpers import unreachable_url
    from symlib import data
    from symlib.core.models import mlp_init

    root = tmp_path / "data" / "cifar10"
    root.mkdir(parents=True)
    monkeypatch.setattr(_rgb_files, "N", 100)  # images per batch file
    written = _rgb_files.write_cifar10(np.random.default_rng(0), root)
    monkeypatch.setitem(data.MD5, "cifar10", {n: data.md5_file(root / n) for n in data.MD5["cifar10"]})
    monkeypatch.setitem(data.MIRRORS, "cifar10", [unreachable_url()])
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    flat = rossi.load_cifar10_flat()
    assert flat["x_train"].shape == (500, 3072) and flat["x_test"].shape == (100, 3072)
    np.testing.assert_allclose(flat["x_train"][3], written["train"][0][3].reshape(-1) / 255.0, rtol=1e-6)

    seen = []
    real_init = mlp_init
    monkeypatch.setattr(rossi.runs, "_mlp_init", lambda key, sizes: seen.append(sizes) or real_init(key, sizes))
    priors = []
    real_fit = rossi.runs.fit_and_align_pair
    monkeypatch.setattr(rossi.runs, "fit_and_align_pair", lambda *a, prior_var=None, **k: priors.append(prior_var)
                        or real_fit(*a, prior_var=prior_var, **k))
    tiny = dataclasses.replace(get_profile("quick"), name="tiny", align_widths=(4, 8), align_depth=1, align_epochs=1,
                               align_samples=2, align_n_eval=50, n_lambdas=3, align_pairs=2, align_n_train=None)
    res = experiments.run("vi_alignment_cifar10", tiny, verbose=False)
    assert isinstance(res, experiments.VIAlignmentResult) and res.widths("cifar10") == [4, 8]
    assert {sizes[0] for sizes in seen} == {3072} and set(priors) == {rossi.CIFAR10_MLP_PRIOR_VAR}
    assert len(res.replicates("cifar10", 8)) == 2 and "posteriors" not in res.artifact["cifar10"]["w8"]["pair0"]
    summary = SUMMARIES["vi_alignment_cifar10"](res.artifact)
    assert summary["widths"] == {"cifar10": [4, 8]}
    assert all(np.isfinite(v) for per in summary["marginal_pairs"]["cifar10"]["test"].values() for w in per for v in w)
    outcomes = claims.evaluate("vi_alignment_cifar10", summary)
    assert [o.claim.name for o in outcomes] == [
        "alignment_lowers_every_barrier", "alignment_removes_barrier_cifar10", "aligned_barrier_nearly_zero_cifar10",
        "barrier_falls_with_width_cifar10"]

    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache2"))
    with pytest.raises(data.DataNotFoundError, match="cifar-10-python.tar.gz"):
        experiments.run("vi_alignment_cifar10", tiny, verbose=False)


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_vi_alignment_resnet20_cifar100_reads_cifar100_with_its_100_classes(tmp_path, monkeypatch):
    """Fig. A3 (paper profile only) end to end on a synthetic CIFAR-100 archive in the official
    format (20 training and 20 test images): a 100-way ResNet20 head, vi_alignment's layout
    under "cifar100" whatever resnet_dataset says, and its claim."""
    from _helpers import unreachable_url
    from _rgb_files import write_cifar100
    from symlib import data
    from symlib.core import resnet

    root = tmp_path / "data" / "cifar100"
    root.mkdir(parents=True)
    write_cifar100(np.random.default_rng(0), root)
    monkeypatch.setitem(data.MD5, "cifar100", {n: data.md5_file(root / n) for n in data.MD5["cifar100"]})
    monkeypatch.setitem(data.MIRRORS, "cifar100", [unreachable_url()])
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    heads = []
    real_init = resnet.resnet20_init
    monkeypatch.setattr(resnet, "resnet20_init", lambda *a: heads.append(a[2]) or real_init(*a))
    tiny = dataclasses.replace(get_profile("quick"), name="tiny", resnet_dataset="fashion_mnist", resnet_widths=(1,),
                               resnet_n_train=20, resnet_epochs=1, resnet_batch_size=10, resnet_n_eval=20,
                               resnet_n_lambdas=3, resnet_samples=2)
    res = experiments.run("vi_alignment_resnet20_cifar100", tiny, verbose=False)
    assert res.widths("cifar100") == [1] and heads == [100, 100]
    summary = SUMMARIES["vi_alignment_resnet20_cifar100"](res.artifact)
    assert summary["widths"] == {"cifar100": [1]}
    assert np.isfinite(res.run("cifar100", 1).marginal_barrier(split="test", aligned=True))
    outcomes = claims.evaluate("vi_alignment_resnet20_cifar100", summary)
    assert [o.claim.name for o in outcomes] == ["barrier_remains_after_alignment"]


def _two_width_summary(naive, aligned, elbo, widths=(128, 1024)):
    """A vi_alignment summary for one dataset: per width, one barrier per pair."""
    return {"widths": {"mnist": list(widths)},
            "marginal_pairs": {"mnist": {split: {"naive": naive, "aligned": aligned} for split in ("train", "test")}},
            "elbo": {"mnist": elbo}}


def test_training_length_rows_pair_the_same_seeds_and_widths():
    short = _two_width_summary([[1.8, 1.7, 1.9], [2.4, 2.5, 2.3]], [[0.06, 0.07, 0.05], [0.03, 0.02, 0.04]],
                               [[-0.40, -0.41, -0.42], [-0.66, -0.65, -0.67]])
    long = _two_width_summary([[1.9, 1.8], [2.2, 2.3]], [[0.05, 0.13], [0.04, 0.02]], [[-0.33, -0.34], [-0.52, -0.53]],
                              widths=(128, 1024))
    rows = rossi.training_length_rows(short, long)
    assert len(rows) == 4 and len(rows[0]) == len(rossi.TRAINING_LENGTH_HEADERS)
    assert rows[0] == ("mnist", 128, 0, 1.8, 1.9, 0.06, 0.05, -0.40, -0.33)
    assert rows[3] == ("mnist", 1024, 1, 2.5, 2.3, 0.02, 0.02, -0.65, -0.53)
    # a width only one run has is left out
    wider = _two_width_summary([[1.9], [2.2], [2.6]], [[0.1], [0.1], [0.1]], [[-1], [-1], [-1]], widths=(128, 1024, 2048))
    assert {r[1] for r in rossi.training_length_rows(short, wider)} == {128, 1024}
    with pytest.raises(ValueError, match="split must be one of"):
        rossi.training_length_rows(short, long, split="validation")


def test_width_gaps_per_pair():
    s = _two_width_summary([[1.8, 1.7, 1.9], [2.4, 2.5, 2.3]], [[0.06, 0.07, 0.05], [0.03, 0.02, 0.04]],
                           [[-0.4] * 3, [-0.6] * 3])
    np.testing.assert_allclose(rossi.width_gaps(s, "mnist", 128, 1024), [0.6, 0.8, 0.4])
    np.testing.assert_allclose(rossi.width_gaps(s, "mnist", 128, 1024, kind="aligned"), [-0.03, -0.05, -0.01])
    with pytest.raises(ValueError, match="width 256 is not in the summary's widths"):
        rossi.width_gaps(s, "mnist", 256, 1024)
    with pytest.raises(ValueError, match="kind must be"):
        rossi.width_gaps(s, "mnist", 128, 1024, kind="both")
