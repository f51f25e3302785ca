"""Laurent et al. (2024) Fig. 1 and App. A: the registered experiment ``toy_perceptrons``
(:class:`ToyPerceptronsResult`), many 2-2-1 ReLU perceptrons trained on two Gaussian classes
(the problem and its densities: :mod:`symlib.experiments.laurent.toy`), and its claims:
a symmetric raw posterior by valid tests, a duplicated highest mode, regrouping by scaling
removal, few dropped networks, functions unchanged. Each claim returns
:class:`~symlib.experiments.judging.claims.Evidence` over the networks (a bootstrap over the
perceptrons, :func:`toy_bootstrap`) against a threshold of the Laurent section of
:mod:`symlib.experiments.judging.thresholds`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.experiments.judging.claims import Evidence, claim, exact, interval_evidence, not_tested, share_of_units
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import ExperimentResult, pick, register
from symlib.experiments.judging.thresholds import threshold


#: App. A: networks whose final training loss exceeds this are dropped ("not trained
#: successfully"; the threshold is ours, the paper does not give one).
TOY_MAX_LOSS = 0.1


#: App. A: the number of 2-2-1 perceptrons trained.
TOY_NETS = 10_000


#: Fig. 1 and App. A (figures without numbers, and the share of dropped networks): notebook 09.
LAURENT_FIG1_CLAIMS = {
    "dropped_networks": "less than 1%",
    "raw_density": "symmetric about the diagonal, mirrored modes",
    "canonical_density": "one copy of the structure",
}


#: The three forms of the toy perceptrons' output weights, in the order of Fig. 1.
OUTPUT_WEIGHT_FORMS = ("raw", "unit_norm", "canonical")


@dataclass(frozen=True, eq=False)
class ToyPerceptronsResult(ExperimentResult):
    """``toy_perceptrons``: output weights of many trained 2-2-1 perceptrons.

    Attributes:
        x: ``(n, 2)`` training inputs (two Gaussian classes).
        y: ``(n,)`` labels.
        loss: final training loss of every trained network.
        kept: indices of the networks with loss below ``TOY_MAX_LOSS``.
        max_logit_diff: largest logit change from removing the symmetries, over the kept networks.
        output_weights: ``(kept, 2)`` output weights of the kept networks, by form
            (``OUTPUT_WEIGHT_FORMS``: raw, unit-norm incoming weights, and also sorted).
    """

    x: np.ndarray
    y: np.ndarray
    loss: np.ndarray
    kept: np.ndarray
    max_logit_diff: float
    output_weights: dict[str, np.ndarray]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> ToyPerceptronsResult:
        return cls(artifact=artifact, x=artifact["x"], y=artifact["y"], loss=artifact["loss"], kept=artifact["kept"],
                   max_logit_diff=np.float64(artifact["max_logit_diff"]),
                   output_weights={form: artifact[form] for form in OUTPUT_WEIGHT_FORMS})

    def weights(self, form: str) -> np.ndarray:
        """The output weights in one form.

        Args:
            form: one of ``OUTPUT_WEIGHT_FORMS``.

        Returns:
            ``(kept, 2)`` output weights.

        Raises:
            ValueError: for an unknown form.
        """
        return pick(self.output_weights, form, "form")


def _toy_summary(art: dict[str, Any]) -> dict[str, Any]:
    """Summary of ``toy_perceptrons`` (see :func:`toy_symmetry_tests` for the tests)."""
    loss = np.asarray(art["loss"])
    return {"nets": int(len(loss)), "kept": int(len(art["kept"])),
            "dropped_fraction": float(1 - len(art["kept"]) / len(loss)),
            "max_logit_diff": float(art["max_logit_diff"]),
            **toy_symmetry_tests({form: np.asarray(art[form]) for form in OUTPUT_WEIGHT_FORMS},
                                 bootstrap=art["bootstrap"])}


def toy_symmetry_tests(weights: dict[str, np.ndarray], resamples: int | None = None,
                       bootstrap: dict[str, Any] | None = None) -> dict[str, Any]:
    """Tests and modes of the output-weight difference ``d = w1 - w2`` of the toy perceptrons.

    * **Sign test** (two-sided binomial): H0 ``P(w1 > w2) = 1/2`` on the raw weights
      (networks with ``w1 == w2`` left out).
    * **Split-half KS test**: H0 ``d`` is symmetric about 0, i.e. ``d`` and ``-d`` have one
      distribution; two-sample Kolmogorov-Smirnov test of ``d`` over the first half of the
      networks against ``-d`` over the second half, two independent samples (the networks
      are trained independently). Testing ``d`` against ``-d`` of the *same* networks would
      compare a sample with a transform of itself, and its p-value would mean nothing.
    * **Modes** of a Gaussian KDE of ``d`` (:func:`symlib.experiments.laurent.toy.count_modes`),
      the KDE's bandwidth (Scott's rule), the highest mode, and the **concentration**:
      the share of networks whose ``d`` lies within a tenth of ``d``'s interquartile range
      of the highest mode (scale-free, so raw and unit-norm weights compare).

    And the bootstrap over networks of the mode and regrouping statistics (:func:`toy_bootstrap`).

    Args:
        weights: ``(networks, 2)`` output weights by form (``OUTPUT_WEIGHT_FORMS``).
        resamples: bootstrap resamples (default :data:`TOY_BOOTSTRAP`).
        bootstrap: :func:`toy_bootstrap` of these weights, computed before (the experiment
            stores it in its artifact, so that every summary of it does not repeat the
            resampling, about half a minute); computed here when None.

    Returns:
        JSON-able dict: ``sign_test_p``, ``split_half_ks_p``, ``fraction_w1_gt_w2`` (raw),
        and per form ``modes``, ``highest_mode``, ``bandwidth``, ``concentration``.

    Raises:
        ValueError: if a form is missing or is not ``(networks, 2)`` with at least 8 networks.
    """
    from scipy import stats

    from symlib.evaluation.marginals import ks_pvalue
    from symlib.experiments.laurent.toy import kde_on_grid, modes_of_density

    out: dict[str, Any] = {"modes": {}, "highest_mode": {}, "bandwidth": {}, "concentration": {}}
    for form in OUTPUT_WEIGHT_FORMS:
        if form not in weights:
            raise ValueError(f"weights must hold the form {form!r}; got {sorted(weights)}")
        w = np.asarray(weights[form], np.float64)
        if w.ndim != 2 or w.shape[1] != 2 or w.shape[0] < 8:
            raise ValueError(f"weights[{form!r}] must have shape (networks >= 8, 2), got {w.shape}")
        d = w[:, 0] - w[:, 1]
        g, f, h = kde_on_grid(d)
        out["modes"][form] = [float(m) for m in modes_of_density(g, f)]
        out["highest_mode"][form] = float(g[np.argmax(f)])
        out["bandwidth"][form] = h
        out["concentration"][form] = _concentration(d, g, f)
    d = np.asarray(weights["raw"], np.float64) @ np.array([1.0, -1.0])
    nonzero = d[d != 0]
    half = len(d) // 2
    out["sign_test_p"] = float(stats.binomtest(int(np.sum(nonzero > 0)), len(nonzero)).pvalue)
    out["split_half_ks_p"] = ks_pvalue(d[:half], -d[half: 2 * half])
    out["fraction_w1_gt_w2"] = float(np.mean(d > 0))
    out["w1_gt_w2"] = int(np.sum(d > 0))
    out["networks"] = int(len(d))
    if bootstrap is None:
        bootstrap = toy_bootstrap(weights, TOY_BOOTSTRAP if resamples is None else resamples)
    out.update({"mode_margin": float(bootstrap["mode_margin"]), "regroup_gain": float(bootstrap["regroup_gain"]),
                "bootstrap": {k: [float(v) for v in np.asarray(r)] for k, r in bootstrap["bootstrap"].items()}})
    return out


#: bootstrap resamples of the networks in the toy summary (the mode and regrouping claims'
#: intervals over networks)
TOY_BOOTSTRAP = 200


def _mode_margin(g: np.ndarray, f: np.ndarray, h: float) -> float:
    """How clearly the highest mode of a KDE density ``f`` on points ``g`` (bandwidth ``h``,
    :func:`symlib.experiments.laurent.toy.kde_on_grid`) is duplicated: the smaller of
    ``|mode| / bandwidth - 1`` (off the diagonal by more than a bandwidth) and
    ``1 - distance(-mode, nearest mode) / bandwidth`` (a mode within a bandwidth of its
    mirror); positive when both hold."""
    from symlib.experiments.laurent.toy import modes_of_density

    top = float(g[np.argmax(f)])
    modes = modes_of_density(g, f)
    mirror = float(np.min(np.abs(modes + top))) if modes.size else np.inf
    return float(min(abs(top) / h - 1.0, 1.0 - mirror / h))


def _concentration(d: np.ndarray, g: np.ndarray, f: np.ndarray) -> float:
    """Share of ``d`` within a tenth of its interquartile range of the highest point of its
    density ``f`` on ``g``."""
    top = g[np.argmax(f)]
    iqr = float(np.subtract(*np.percentile(d, [75, 25])))
    return float(np.mean(np.abs(d - top) <= 0.1 * iqr))


def _toy_statistics(raw: np.ndarray, unit: np.ndarray) -> tuple[float, float]:
    """``(mode_margin, regroup_gain)`` of the raw and unit-norm differences (one KDE of each)."""
    from symlib.experiments.laurent.toy import kde_on_grid

    g, f, h = kde_on_grid(raw)
    gu, fu, _ = kde_on_grid(unit)
    return _mode_margin(g, f, h), _concentration(unit, gu, fu) - _concentration(raw, g, f)


def toy_bootstrap(weights: dict[str, np.ndarray], resamples: int = TOY_BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """The mode and regrouping statistics of the toy perceptrons and their replicates over
    ``resamples`` bootstrap resamples of the networks (the independent units).

    * ``mode_margin``: :func:`_mode_margin` of the raw ``d = w1 - w2`` (> 0: the highest
      mode is off the diagonal and mirrored).
    * ``regroup_gain``: the concentration (:func:`toy_symmetry_tests`) of the unit-norm ``d``
      minus that of the raw ``d``, on the same networks (> 0: removing the scaling regroups).

    Returns:
        ``{"mode_margin": float, "regroup_gain": float, "bootstrap": {name: [replicates]}}``.
    """
    raw = np.asarray(weights["raw"], np.float64) @ np.array([1.0, -1.0])
    unit = np.asarray(weights["unit_norm"], np.float64) @ np.array([1.0, -1.0])
    rng = np.random.default_rng(seed)
    boot = {"mode_margin": [], "regroup_gain": []}
    for _ in range(resamples):
        i = rng.integers(0, len(raw), len(raw))
        margin, gain = _toy_statistics(raw[i], unit[i])
        boot["mode_margin"].append(margin)
        boot["regroup_gain"].append(gain)
    margin, gain = _toy_statistics(raw, unit)
    return {"mode_margin": margin, "regroup_gain": gain, "bootstrap": boot}


@register("toy_perceptrons", lambda profile: {"nets": TOY_NETS, "max_loss": TOY_MAX_LOSS},
          "Laurent et al. Fig. 1 / App. A: 10,000 2-2-1 ReLU perceptrons; output weights raw, unscaled, canonical",
          summary=_toy_summary, result=ToyPerceptronsResult)
def toy_perceptrons(profile: Profile) -> dict[str, Any]:
    """Train ``TOY_NETS`` perceptrons and remove their scaling and permutation symmetries.

    Args:
        profile: the run profile (unused: the sizes are the paper's in every profile).

    Returns:
        The artifact: ``x``, ``y``, ``loss``, ``kept``, ``max_logit_diff``, the output
        weights in each of ``OUTPUT_WEIGHT_FORMS`` and ``bootstrap`` (:func:`toy_bootstrap`
        of those weights).
    """
    from symlib.experiments.laurent.toy import sort_by_output_weight, train_perceptrons, two_gaussians
    from symlib.core.models import mlp_apply
    from symlib.symmetry.scaling import function_change, mlp_scaling_spec, unit_norm

    x, y = two_gaussians()
    params, loss = train_perceptrons(jax.random.key(0), x, y, TOY_NETS)
    keep = np.flatnonzero(loss < TOY_MAX_LOSS)
    out = {k: [] for k in OUTPUT_WEIGHT_FORMS}
    max_diff = 0.0
    for i in keep:
        net = jax.tree_util.tree_map(lambda a: np.asarray(a[i], np.float64), params)
        scaled = unit_norm(mlp_scaling_spec(1), net)
        canonical, _ = sort_by_output_weight(scaled)
        inputs = np.random.default_rng(int(i)).normal(size=(64, net["dense_0"]["kernel"].shape[0]))
        max_diff = max(max_diff, function_change(mlp_apply, net, canonical, inputs))
        for k, v in (("raw", net), ("unit_norm", scaled), ("canonical", canonical)):
            out[k].append(v["dense_1"]["kernel"][:, 0])
    forms = {k: np.asarray(v) for k, v in out.items()}
    return {"x": x, "y": y, "loss": loss, "kept": keep, "max_logit_diff": max_diff, **forms,
            "bootstrap": toy_bootstrap(forms)}


#: a KS or sign test p-value below this rejects the symmetry (level 1% per test; shown in
#: the raw_symmetric claim's detail)
SYMMETRY_TEST_LEVEL = 0.01


_APP_A = "Laurent et al. (2024), App. A"


def _bootstrap_evidence(summary: dict[str, Any], key: str, t, units: str, detail: str) -> Evidence:
    """Evidence from a toy statistic and its bootstrap replicates over networks (percentile
    interval at the threshold's level); not tested for a summary without replicates."""
    boot = summary.get("bootstrap", {}).get(key)
    if boot is None or key not in summary:
        return not_tested(t, "the summary keeps no bootstrap over networks (it predates 2026-11-25), so the "
                             "statistic has no interval", detail)
    est, b = float(summary[key]), np.asarray(boot, float)
    alpha = (1 - t.level) / 2
    lo, hi = np.quantile(b, [alpha, 1 - alpha])
    return interval_evidence(est, min(lo, est), max(hi, est), t, f"{summary.get('networks', summary.get('kept'))} "
                             f"networks ({len(b)} bootstrap resamples)", detail)


@claim("toy_perceptrons", "few_dropped", f"{_APP_A}.1",
       "less than 1% of the 10,000 networks were not trained successfully (dropped)")
def _toy_few_dropped(summary: dict[str, Any]) -> Evidence:
    t = threshold("toy_perceptrons.few_dropped")
    n, kept = int(summary["nets"]), int(summary["kept"])
    return share_of_units(n - kept, n, t, "networks",
                          f"{n - kept} of {n} dropped ({100 * (n - kept) / n:.2f}%; final loss > {TOY_MAX_LOSS}, "
                          "our threshold)")


@claim("toy_perceptrons", "functions_unchanged", f"{_APP_A}.2",
       "removing the symmetries does not alter the networks (checked on random inputs)")
def _toy_functions_unchanged(summary: dict[str, Any]) -> Evidence:
    m = summary["max_logit_diff"]
    return exact(m, threshold("exact_zero"), f"all {summary['kept']} kept networks (worst case)",
                 f"largest logit change {m:.1e} over {summary['kept']} networks (float64)")


@claim("toy_perceptrons", "raw_symmetric", "Laurent et al. (2024), Sec. 3.1, Fig. 1 (left); Prop. 1",
       "the permutation symmetry symmetrises the posterior of the output weights about the diagonal")
def _toy_raw_symmetric(summary: dict[str, Any]) -> Evidence:
    """|P(w1 > w2) - 1/2| with the Clopper-Pearson interval of the share over networks; the
    sign and split-half KS tests (:func:`toy_symmetry_tests`) are in the detail."""
    from symlib.evaluation.stats import proportion_interval

    t = threshold("toy_perceptrons.raw_symmetric")
    n = int(summary.get("networks", summary["kept"]))
    k = int(summary["w1_gt_w2"]) if "w1_gt_w2" in summary else int(round(summary["fraction_w1_gt_w2"] * n))
    share, lo, hi = proportion_interval(k, n, t.level)
    far = max(abs(lo - 0.5), abs(hi - 0.5))
    near = 0.0 if lo <= 0.5 <= hi else min(abs(lo - 0.5), abs(hi - 0.5))
    return interval_evidence(abs(share - 0.5), near, far, t, f"{n} networks",
                             f"w1 > w2 in {k} of {n} networks ({100 * share:.1f}%, interval {100 * lo:.1f}-"
                             f"{100 * hi:.1f}%); sign test p = {summary['sign_test_p']:.3f}, KS of d (first half) "
                             f"vs -d (second half) p = {summary['split_half_ks_p']:.3f}")


@claim("toy_perceptrons", "mode_duplicated", "Laurent et al. (2024), Sec. 3.1, Fig. 1 (left)",
       "the most important mode is duplicated by the permutation symmetry")
def _toy_mode_duplicated(summary: dict[str, Any]) -> Evidence:
    """The highest mode of the KDE of d = w1 - w2 (raw) is off the diagonal and mirrored
    (:func:`_mode_margin`), with a bootstrap over the networks."""
    top, h = summary["highest_mode"]["raw"], summary["bandwidth"]["raw"]
    modes = np.asarray(summary["modes"]["raw"])
    mirror = float(np.min(np.abs(modes + top))) if modes.size else np.inf
    return _bootstrap_evidence(summary, "mode_margin", threshold("toy_perceptrons.mode_duplicated"), "networks",
                               f"highest mode of w1 - w2 at {top:.2f} (bandwidth {h:.2f}); nearest mode to its mirror "
                               f"{-top:.2f} is {mirror:.2f} away; modes {np.round(modes, 2).tolist()}; effect: the "
                               "smaller of |mode| / bandwidth - 1 (off the diagonal) and 1 - that distance / "
                               "bandwidth (mirrored), positive when both hold")


@claim("toy_perceptrons", "scaling_regroups", "Laurent et al. (2024), Sec. 3.1, Fig. 1 (left vs middle)",
       "the scaling symmetries spread points that removing them regroups around the modes")
def _toy_scaling_regroups(summary: dict[str, Any]) -> Evidence:
    """Unit-norm minus raw share of networks near the highest mode of d (scale-free), with a
    bootstrap over the networks."""
    c = summary["concentration"]
    return _bootstrap_evidence(summary, "regroup_gain", threshold("toy_perceptrons.scaling_regroups"), "networks",
                               f"share within 0.1 IQR of the highest mode: raw {c['raw']:.3f}, unit-norm "
                               f"{c['unit_norm']:.3f}")
