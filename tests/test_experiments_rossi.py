"""symlib.experiments.rossi: the summaries of vi_alignment and vi_alignment_timings, the
paper's claims registered on them (each shown to fail when the paper's effect is absent),
and the timing helper."""
import dataclasses

import numpy as np
import pytest

from symlib import experiments
from symlib.experiments import cache, claims, rossi
from symlib.experiments.profiles import get_profile
from symlib.experiments.registry import SUMMARIES
from symlib.testing.reference import random_gaussian_posterior

WIDTHS = [32, 64, 128, 256]


def _barriers(naive, aligned):
    return {split: {"naive": list(naive), "aligned": list(aligned)} for split in ("train", "test")}


def _align_summary(mnist=((1.5, 1.4, 1.3, 1.2), (0.6, 0.3, 0.2, 0.1)),
                   fashion=((1.5, 1.4, 1.3, 1.2), (0.8, 0.6, 0.5, 0.4))):
    return {"widths": {"mnist": WIDTHS, "fashion_mnist": WIDTHS},
            "marginal": {"mnist": _barriers(*mnist), "fashion_mnist": _barriers(*fashion)}}


def _verdicts(experiment, summary):
    return {o.claim.name: o for o in claims.evaluate(experiment, summary)}


def test_vi_alignment_claims_hold_on_the_papers_picture():
    v = _verdicts("vi_alignment", _align_summary())
    assert set(v) == {"alignment_lowers_every_barrier", "alignment_removes_barrier_mnist",
                      "alignment_removes_barrier_fashion_mnist", "barrier_falls_with_width_mnist",
                      "barrier_falls_with_width_fashion_mnist"}
    assert all(o.holds for o in v.values()), {k: o.detail for k, o in v.items()}


def test_vi_alignment_claims_fail_when_the_effect_is_absent():
    # alignment raises one barrier
    v = _verdicts("vi_alignment", _align_summary(mnist=((1.5, 1.4, 1.3, 1.2), (0.6, 1.5, 0.2, 0.1))))
    assert not v["alignment_lowers_every_barrier"].holds
    # alignment removes only 40% at the widest width (0.72 of 1.2 left)
    v = _verdicts("vi_alignment", _align_summary(fashion=((1.5, 1.4, 1.3, 1.2), (0.9, 0.8, 0.75, 0.72))))
    assert not v["alignment_removes_barrier_fashion_mnist"].holds
    assert "0.720 aligned (0.60)" in v["alignment_removes_barrier_fashion_mnist"].detail
    assert v["alignment_removes_barrier_mnist"].holds
    # the aligned barrier rises with width (naive still falls)
    v = _verdicts("vi_alignment", _align_summary(mnist=((1.5, 1.4, 1.3, 1.2), (0.1, 0.2, 0.3, 0.35))))
    assert not v["barrier_falls_with_width_mnist"].holds
    assert "aligned 0.100, 0.200, 0.300, 0.350 (does not fall)" in v["barrier_falls_with_width_mnist"].detail
    # widest below narrowest but the slope is positive: does not fall
    v = _verdicts("vi_alignment", _align_summary(fashion=((1.5, 1.4, 1.3, 1.2), (0.5, 0.3, 1.2, 0.45))))
    assert not v["barrier_falls_with_width_fashion_mnist"].holds


def test_vi_alignment_claim_names_a_missing_key():
    with pytest.raises(ValueError, match=r"summary of 'vi_alignment' lacks \['marginal'\]"):
        claims.evaluate("vi_alignment", {"widths": {}})


def _entry(scale):
    keys = [f"{s} {k}" for s in ("train", "test") for k in ("naive", "aligned")]
    return {"barrier": {"marginal": {k: scale * (i + 1) for i, k in enumerate(keys)},
                        "midpoint": {k: -scale for k in keys}}}


def test_align_summary_orders_widths_and_lists_barriers():
    s = SUMMARIES["vi_alignment"]({"mnist": {"w16": _entry(10.0), "w8": _entry(1.0)}})
    assert s["widths"] == {"mnist": [8, 16]}
    assert s["marginal"]["mnist"]["test"] == {"naive": [3.0, 30.0], "aligned": [4.0, 40.0]}
    assert s["midpoint"]["mnist"]["train"]["naive"] == [-1.0, -10.0]


def _timing_summary(w2_cpu=(0.01, 0.02, 0.05, 0.2), wm_cpu=(0.005, 0.01, 0.03, 0.1), w2_wall=(0.01, 0.02, 0.05, 0.2)):
    cols = {"w2_seconds": list(w2_wall), "wm_seconds": list(wm_cpu), "w2_cpu_seconds": list(w2_cpu),
            "wm_cpu_seconds": list(wm_cpu), "w2_sweeps": [5] * 4, "wm_sweeps": [5] * 4,
            "w2_sq_identity": [2.0] * 4, "w2_sq": [1.0] * 4}
    return {"widths": {"mnist": WIDTHS}, "table": {"mnist": cols}, "repeats": 5}


def test_timing_claims_hold_and_fail():
    v = _verdicts("vi_alignment_timings", _timing_summary())
    assert all(o.holds for o in v.values()), {k: o.detail for k, o in v.items()}
    v = _verdicts("vi_alignment_timings", _timing_summary(w2_wall=(70.0, 80.0, 0.1, 90.0)))
    assert not v["within_a_minute"].holds and "1 of 4 under 60 s" in v["within_a_minute"].detail
    v = _verdicts("vi_alignment_timings", _timing_summary(w2_cpu=(0.01, 0.03, 0.02, 0.2)))
    assert not v["time_grows_with_width"].holds
    v = _verdicts("vi_alignment_timings", _timing_summary(w2_cpu=(0.01, 0.02, 0.05, 0.09)))
    assert not v["vi_costlier_than_weight_matching"].holds and "(0.90x)" in v["vi_costlier_than_weight_matching"].detail


def test_time_alignments_on_planted_posteriors():
    sizes = [6, 4, 4, 3]
    posteriors = {}
    for width in (4, 5):
        q0 = random_gaussian_posterior(0, [6, width, width, 3])
        q1 = random_gaussian_posterior(1, [6, width, width, 3])
        posteriors[width] = {"mu0": q0[0], "sigma0": q0[1], "mu1": q1[0], "sigma1": q1[1]}
    out = rossi.time_alignments(posteriors, depth=len(sizes) - 2, repeats=2)
    assert out["width"] == [4, 5]
    assert all(s > 0 for s in out["w2_seconds"] + out["wm_cpu_seconds"])
    assert all(a <= b for a, b in zip(out["w2_sq"], out["w2_sq_identity"]))
    with pytest.raises(ValueError, match="repeats must be at least 1"):
        rossi.time_alignments(posteriors, depth=2, repeats=0)
    with pytest.raises(ValueError, match="posteriors is empty"):
        rossi.time_alignments({}, depth=2)


def test_vi_alignment_keeps_posteriors_and_timings_read_them(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    tiny = dataclasses.replace(get_profile("quick"), name="tiny", n_train=600, n_val=0, n_test=100,
                               align_widths=(4, 8), align_depth=2, align_epochs=1, align_samples=2,
                               align_n_eval=50, n_lambdas=3)
    pairs = experiments.run("vi_alignment", tiny, verbose=False)
    post = pairs.artifact["mnist"]["w8"]["posteriors"]
    assert np.shape(post["mu1"]["dense_0"]["kernel"]) == (784, 8) and np.all(np.asarray(
        post["sigma0"]["dense_0"]["kernel"]) > 0)
    t = experiments.run("vi_alignment_timings", tiny, verbose=False)
    assert t.widths == {"mnist": [4, 8], "fashion_mnist": [4, 8]}
    assert t.column("mnist", "w2_sweeps").shape == (2,)
    s = SUMMARIES["vi_alignment_timings"](t.artifact)
    assert len(claims.evaluate("vi_alignment_timings", s)) == 3
    with pytest.raises(ValueError, match="unknown column 'seconds'"):
        t.column("mnist", "seconds")


def test_vi_alignment_resumes_after_an_interrupted_run(tmp_path, monkeypatch):
    """A run killed after k (dataset, width) steps continues from step k + 1 and gives the
    uninterrupted run's numbers (the alignment's wall time excepted)."""
    import symlib.inference.vi as vi_mod

    tiny = dataclasses.replace(get_profile("quick"), name="tiny", n_train=500, n_val=0, n_test=60,
                               align_widths=(4, 6), align_depth=1, align_epochs=1, align_samples=2,
                               align_n_eval=30, n_lambdas=3)
    real_fit, calls = vi_mod.fit_mlp_vi, []

    def fit(*args, fail_after=None, **kwargs):
        if fail_after is not None and len(calls) >= fail_after:
            raise KeyboardInterrupt("killed")
        calls.append(1)
        return real_fit(*args, **kwargs)

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "whole"))
    whole = experiments.run("vi_alignment", tiny, verbose=False).artifact
    assert len(list((tmp_path / "whole").glob("vi_alignment.step-*.npz"))) == 4  # 2 datasets x 2 widths

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "pieces"))
    monkeypatch.setattr(vi_mod, "fit_mlp_vi", lambda *a, **k: fit(*a, fail_after=5, **k))
    with pytest.raises(KeyboardInterrupt):  # two fits per step: killed during the third step
        experiments.run("vi_alignment", tiny, verbose=False)
    assert len(list((tmp_path / "pieces").glob("vi_alignment.step-*.npz"))) == 2
    calls.clear()
    monkeypatch.setattr(vi_mod, "fit_mlp_vi", lambda *a, **k: fit(*a, **k))
    resumed = experiments.run("vi_alignment", tiny, verbose=False).artifact
    assert len(calls) == 4  # only the two missing steps were fitted
    flat_w, flat_r = cache._flatten(whole), cache._flatten(resumed)
    assert flat_w.keys() == flat_r.keys()
    for k in flat_w:
        if not k.endswith("alignment_seconds"):
            np.testing.assert_array_equal(flat_r[k], flat_w[k], err_msg=k)
