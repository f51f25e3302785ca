"""Laurent et al. (2024) Sec. 5.1 and App. D.2: do independently trained networks collapse onto
the same function? (registered experiment ``functional_collapse``)

For pairs of the converged networks of the OptuNet bank
(:mod:`symlib.experiments.laurent.posteriors`, ``optunet_bank``), the mean over the test set
of the two-member ensemble's mutual information on MNIST (in distribution) and on
Fashion-MNIST (OOD). Its claims (Sec. 5.1, App. D.2) are judged over the networks (a
bootstrap of networks, a network-level permutation test, a matching of disjoint pairs),
never over pairs that share networks.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from symlib.experiments.judging.claims import Evidence, Verdict, claim, difference, interval_evidence, not_tested
from symlib.experiments.laurent.optunet import CONVERGED_ACCURACY
from symlib.experiments.laurent.posteriors import bank_config, ood_data, take_nets
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import register, run
from symlib.experiments.judging.thresholds import threshold


def _collapse_config(profile: Profile) -> dict[str, Any]:
    return {**bank_config(profile), "post_n_eval": profile.post_n_eval, "pairs": profile.collapse_pairs}


def collapse_pairs(n: int, n_pairs: int, seed: int = 0) -> np.ndarray:
    """Pairs ``(i, j)``, ``i < j``, of ``n`` networks: all of them (``n_pairs = 0`` or at
    least their number), else ``n_pairs`` distinct ones drawn at random."""
    i, j = np.triu_indices(n, k=1)
    pairs = np.stack([i, j], axis=1)
    if 0 < n_pairs < len(pairs):
        pairs = pairs[np.sort(np.random.default_rng(seed).choice(len(pairs), n_pairs, replace=False))]
    return pairs


@register("functional_collapse", _collapse_config,
          "Laurent et al. Sec. 5.1 / App. D.2: mutual information of two-member ensembles of bank OptuNets, "
          "MNIST (ID) vs Fashion-MNIST (OOD)", summary=lambda art: collapse_summary(art))
def functional_collapse(profile: Profile) -> dict[str, Any]:
    """The mean over the test set of the two-member ensemble's mutual information, for
    pairs of converged bank networks, on MNIST and on Fashion-MNIST.

    Args:
        profile: the run profile.

    Returns:
        ``pairs`` (bank indices), ``mi_id`` and ``mi_ood`` per pair (nats), and
        ``bank_accuracy`` (every bank network's test accuracy, by bank index).
    """
    from symlib.core.cnn import optunet_apply
    from symlib.evaluation import member_probs, pairwise_mutual_information

    bank = run("optunet_bank", profile, verbose=False).artifact
    conv = np.flatnonzero(np.asarray(bank["test_accuracy"]) >= CONVERGED_ACCURACY)
    nets = take_nets(bank["params"], conv)
    ev = ood_data(profile)
    pairs = collapse_pairs(len(conv), profile.collapse_pairs)
    out = {"pairs": conv[pairs], "bank_accuracy": np.asarray(bank["test_accuracy"])}
    for part in ("id", "ood"):
        probs = member_probs(nets, ev[f"x_{part}"], apply_fn=optunet_apply)
        out[f"mi_{part}"] = pairwise_mutual_information(probs, pairs)
    return out


def collapse_summary(art: dict[str, Any]) -> dict[str, Any]:
    """Spread of the pairwise MI in and out of distribution and their correlation."""
    from scipy import stats

    a, b = np.asarray(art["mi_id"], np.float64), np.asarray(art["mi_ood"], np.float64)
    r = stats.pearsonr(a, b)
    rho = stats.spearmanr(a, b)
    nets, index = np.unique(np.asarray(art["pairs"]), return_inverse=True)
    return {"pairs": int(len(a)), "mean_id": float(a.mean()), "std_id": float(a.std()), "mean_ood": float(b.mean()),
            "std_ood": float(b.std()), "cv_id": float(a.std() / a.mean()), "cv_ood": float(b.std() / b.mean()),
            "pearson_r": float(r.statistic), "pearson_p": float(r.pvalue), "spearman_rho": float(rho.statistic),
            "below_half_id": float(np.mean(a < a.mean() / 2)),
            # per pair, with its two networks numbered 0 .. networks - 1: the claims' units are
            # the networks (pairs that share one are not independent)
            "networks": int(len(nets)), "pair_index": index.reshape(-1, 2).tolist(),
            "mi_id_pairs": a.tolist(), "mi_ood_pairs": b.tolist(),
            "network_accuracy": np.asarray(art["bank_accuracy"], np.float64)[nets].tolist()}


def mi_and_accuracy(summary: dict[str, Any]) -> dict[str, float]:
    """How the pairwise MI goes with the pair's weaker network (a description of one run, not a
    claim): Pearson's r of the ID and of the OOD MI with the lower test accuracy of the pair's
    two networks, and the ID-OOD correlation over the pairs whose two networks both reach the
    median accuracy of the networks, and over the others.

    Args:
        summary: a :func:`collapse_summary` with ``network_accuracy``.

    Returns:
        ``r_id_lower``, ``r_ood_lower``, ``median_accuracy``, ``r_both_above``,
        ``pairs_both_above``, ``r_others``, ``mean_id_both_above`` and ``mean_id_others``.

    Raises:
        ValueError: if the summary has no ``network_accuracy`` (saved before 2026-11-29).
    """
    if "network_accuracy" not in summary:
        raise ValueError("the summary has no network_accuracy (saved before 2026-11-29): rerun the experiment")
    acc = np.asarray(summary["network_accuracy"], np.float64)
    pairs = np.asarray(summary["pair_index"], int)
    a, b = np.asarray(summary["mi_id_pairs"], np.float64), np.asarray(summary["mi_ood_pairs"], np.float64)
    lower = acc[pairs].min(axis=1)
    median = float(np.median(acc))
    above = lower >= median
    r = lambda x, y: float(np.corrcoef(x, y)[0, 1])  # noqa: E731
    return {"r_id_lower": r(a, lower), "r_ood_lower": r(b, lower), "median_accuracy": median,
            "r_both_above": r(a[above], b[above]), "pairs_both_above": int(above.sum()),
            "r_others": r(a[~above], b[~above]), "mean_id_both_above": float(a[above].mean()),
            "mean_id_others": float(a[~above].mean())}


_NO_PAIRS = ("the summary keeps the spread and the correlation over pairs, not the pairs with their networks (it "
             "predates 2026-11-25), so there is no interval over networks")


def _pair_data(summary: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    if "pair_index" not in summary:
        return None
    return (np.asarray(summary["pair_index"], int), np.asarray(summary["mi_id_pairs"], float),
            np.asarray(summary["mi_ood_pairs"], float), int(summary["networks"]))


def network_bootstrap(pairs: np.ndarray, n: int, statistic, resamples: int = 2000,
                      seed: int = 0) -> tuple[float, np.ndarray]:
    """``statistic(w)`` of values on pairs of networks, with pair weights ``w``, and its
    replicates over bootstrap resamples of the *networks*: a resample draws ``n`` networks with
    replacement and keeps every pair (of ``pairs``: all of them, or any subset) of two distinct
    drawn networks, weighted by the product of their multiplicities (pairs that share a network
    are not independent, so pairs are never resampled alone). Resamples keeping fewer than 3
    pairs are skipped.

    Args:
        pairs: ``(pairs, 2)`` network indices of each pair.
        n: the number of networks.
        statistic: ``statistic(w) -> float`` of the pairs' weights (all ones for the estimate).
        resamples: bootstrap resamples.
        seed: the resampling seed.
    """
    pairs = np.asarray(pairs, int)
    est = statistic(np.ones(len(pairs)))
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(resamples):
        count = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        w = count[pairs[:, 0]] * count[pairs[:, 1]]
        if np.count_nonzero(w) >= 3:
            reps.append(statistic(w))
    return float(est), np.asarray(reps)


def _weighted_moments(w: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    m = np.sum(w * v) / np.sum(w)
    return m, np.sqrt(np.sum(w * (v - m) ** 2) / np.sum(w))


def network_bootstrap_ratio(pairs: np.ndarray, a: np.ndarray, b: np.ndarray, n: int, spread: str = "cv",
                            resamples: int = 2000, seed: int = 0) -> tuple[float, np.ndarray]:
    """spread(b) / spread(a) of values on pairs of networks, and its replicates over bootstrap
    resamples of the networks (:func:`network_bootstrap`).

    Args:
        pairs: ``(pairs, 2)`` network indices of each pair.
        a: a value per pair (the denominator's).
        b: a value per pair (the numerator's).
        n: the number of networks.
        spread: ``"cv"`` (standard deviation over mean, scale-free) or ``"std"`` (standard deviation).
        resamples: bootstrap resamples.
        seed: the resampling seed.

    Raises:
        ValueError: for another ``spread``.
    """
    if spread not in ("cv", "std"):
        raise ValueError(f"spread must be 'cv' or 'std', got {spread!r}")

    def ratio(w):
        def measure(v):
            m, sd = _weighted_moments(w, v)
            return sd / m if spread == "cv" else sd
        return measure(b) / measure(a)

    return network_bootstrap(pairs, n, ratio, resamples, seed)


def network_bootstrap_pearson(pairs: np.ndarray, a: np.ndarray, b: np.ndarray, n: int, resamples: int = 2000,
                              seed: int = 0) -> tuple[float, np.ndarray]:
    """Pearson's r of ``a`` and ``b`` over pairs of networks, and its replicates over bootstrap
    resamples of the networks (:func:`network_bootstrap`): the interval of the correlation when
    the pairs are a random subset of all pairs, where a permutation test that relabels the
    networks cannot be run (it needs the value of every pair)."""
    def pearson(w):
        (ma, sa), (mb, sb) = _weighted_moments(w, a), _weighted_moments(w, b)
        return np.sum(w * (a - ma) * (b - mb)) / np.sum(w) / (sa * sb)

    return network_bootstrap(pairs, n, pearson, resamples, seed)


def _spread_ratio_evidence(summary: dict[str, Any], t, spread: str, detail: str) -> Evidence:
    data = _pair_data(summary)
    if data is None:
        return not_tested(t, _NO_PAIRS, detail)
    pairs, a, b, n = data
    est, reps = network_bootstrap_ratio(pairs, a, b, n, spread)
    alpha = (1 - t.level) / 2
    lo, hi = np.quantile(reps, [alpha, 1 - alpha]) if reps.size else (-np.inf, np.inf)
    return interval_evidence(est, min(lo, est), max(hi, est), t, f"{n} networks ({reps.size} bootstrap resamples "
                             "of networks)", detail + f"; {'CV' if spread == 'cv' else 'std'} ratio OOD / ID {est:.3f}")


#: where the two spread claims come from: Sec. 5.1 says it of ResNet-18 on CIFAR-100 / SVHN; App. D.2
#: compares OptuNet's dispersions with ResNet-18's, not OOD with ID, so on OptuNet they are the
#: Sec. 5.1 statement carried over (chapter 14 lists them under Figure 3, not Figure 7)
CARRIED = "Laurent et al. Sec. 5.1, Fig. 3 (said of ResNet-18; carried to OptuNet)"


@claim("functional_collapse", "ood_more_dispersed", CARRIED,
       "the pairwise mutual information varies more out of distribution than in distribution; read as: a larger "
       "coefficient of variation (scale-free)")
def ood_more_dispersed(summary: dict[str, Any]) -> Evidence:
    t = threshold("functional_collapse.ood_more_dispersed")
    cv_id = summary.get("cv_id", summary["std_id"] / summary["mean_id"])
    cv_ood = summary.get("cv_ood", summary["std_ood"] / summary["mean_ood"])
    detail = (f"over {summary['pairs']} pairs: CV OOD {cv_ood:.3f} vs ID {cv_id:.3f} (std {summary['std_ood']:.4f} "
              f"vs {summary['std_id']:.4f} nats, means {summary['mean_ood']:.4f} vs {summary['mean_id']:.4f})")
    return _spread_ratio_evidence(summary, t, "cv", detail)


@claim("functional_collapse", "ood_variance_larger", CARRIED,
       "the variance of the out-of-distribution MI is higher than that of the in-distribution MI, as the paper "
       "words it (the raw spread; ood_more_dispersed is the scale-free reading)")
def ood_variance_larger(summary: dict[str, Any]) -> Evidence:
    t = threshold("functional_collapse.ood_variance_larger")
    detail = (f"over {summary['pairs']} pairs: std OOD {summary['std_ood']:.4f} vs ID {summary['std_id']:.4f} nats "
              f"(means {summary['mean_ood']:.4f} vs {summary['mean_id']:.4f})")
    return _spread_ratio_evidence(summary, t, "std", detail)


@claim("functional_collapse", "positive_correlation", "Laurent et al. App. D.2, Fig. 7 (OptuNet)",
       "for OptuNet, some positive correlation between the in-distribution and the OOD mutual information")
def _positive_correlation(summary: dict[str, Any]) -> Evidence:
    return correlation_evidence(summary, threshold("functional_collapse.positive_correlation"))


def correlation_evidence(summary: dict[str, Any], t) -> Evidence:
    """Pearson's r between the pairwise ID and OOD MI of a collapse summary, judged on ``t``
    over the networks: a network-level permutation (Mantel) test when every pair is there, a
    bootstrap over the networks when the pairs are a random subset."""
    from symlib.evaluation.stats import mantel_null, mantel_test

    detail = (f"Pearson r = {summary['pearson_r']:.3f} (Spearman {summary['spearman_rho']:.3f}) over "
              f"{summary['pairs']} pairs")
    data = _pair_data(summary)
    if data is None:
        return not_tested(t, _NO_PAIRS, detail)
    pairs, a, b, n = data
    alpha = (1 - t.level) / 2
    if len(a) != n * (n - 1) // 2:  # a random subset of the pairs: the permutation test needs them all
        r, reps = network_bootstrap_pearson(pairs, a, b, n)
        lo, hi = np.quantile(reps, [alpha, 1 - alpha]) if reps.size else (-np.inf, np.inf)
        return interval_evidence(r, min(lo, r), max(hi, r), t,
                                 f"{n} networks ({reps.size} bootstrap resamples of networks; {len(a)} of the "
                                 f"{n * (n - 1) // 2} pairs, too few for the permutation test)", detail)
    r, p = mantel_test(pairs, a, b)
    null = mantel_null(pairs, a, b, seed=1)
    q_lo, q_hi = np.quantile(null, [alpha, 1 - alpha])
    return interval_evidence(r, min(r, r - q_hi), max(r, r - q_lo), t,
                             f"{n} networks (network-level permutation test, {null.size} relabellings)",
                             detail + f"; network-level permutation p = {p:.3f} (one-sided)")


@claim("functional_collapse", "collapse_frequency", "Laurent et al. App. D.2, Fig. 7 (OptuNet)",
       "a non-negligible share of pairs of small networks collapse functionally: their in-distribution mutual "
       "information is less than half the mean over pairs")
def _collapse_frequency(summary: dict[str, Any]) -> Evidence:
    from symlib.experiments.judging.claims import share_of_units

    t = threshold("functional_collapse.collapse_frequency")
    detail = f"{100 * summary['below_half_id']:.1f}% of all {summary['pairs']} pairs below half the mean ID MI"
    data = _pair_data(summary)
    if data is None:
        return not_tested(t, _NO_PAIRS, detail)
    pairs, a, _, n = data
    collapsed = a < a.mean() / 2
    disjoint = disjoint_pairs(pairs)
    k = int(np.sum(collapsed[disjoint]))
    return share_of_units(k, len(disjoint), t, "disjoint pairs of networks (no network in two)",
                          detail + f"; {k} of {len(disjoint)} disjoint pairs (a matching of the {n} networks)")


def disjoint_pairs(pairs: np.ndarray) -> list[int]:
    """Indices of a greedy matching among ``pairs``: in order, every pair whose two networks
    are in no pair taken before (all pairs present: (0, 1), (2, 3), ...)."""
    used, out = set(), []
    for k, (i, j) in enumerate(np.asarray(pairs, int)):
        if i not in used and j not in used:
            used.update((int(i), int(j)))
            out.append(k)
    return out



# The paper-profile reduction (24 OptuNets x 60 epochs with the authors' recipe on 50,000
# images, 21 converged, 210 pairs; rerun on 2026-11-26 with the per-pair values), judged
# over networks.
difference("functional_collapse", "paper-24nets", "ood_more_dispersed",
           "the OOD MI's standard deviation over pairs is twice the ID one, but so is its mean: the coefficients "
           "of variation are equal within noise (the claims table gives both and their ratio), so the OOD MI is "
           "not more dispersed relative to its size on these 21 networks; the ratio's interval over networks "
           "spans 1: opposite direction, not significant", verdict=Verdict.OPPOSITE_DIRECTION)
difference("functional_collapse", "paper-24nets", "positive_correlation",
           "the correlation of ID and OOD MI over the 210 pairs is positive but small, and the network-level "
           "permutation test (the claims table gives r and p) does not reject zero: the paper's direction, not "
           "significant once the pairs' shared networks are accounted for", verdict=Verdict.SAME_DIRECTION)
difference("functional_collapse", "paper-24nets", "collapse_frequency",
           "one of the 210 pairs has an ID MI below half the mean, and none of the disjoint pairs (the claims table "
           "gives the counts): no evidence of a non-negligible collapse frequency among 21 converged networks "
           "(the paper does not give its share either); with 10 disjoint pairs the share's interval reaches 0.3: "
           "opposite direction, not significant", verdict=Verdict.OPPOSITE_DIRECTION)

# The reduction that reads the first 1,024 networks of the paper profile's bank (the 8 of its 9
# blocks the GPU queue has trained with the authors' recipe), 948 converged, 20,000 random
# pairs (the paper profile's collapse_pairs), judged over networks; run 2026-11-29.
difference("functional_collapse", "paper-1024nets", "ood_more_dispersed",
           "the OOD MI's standard deviation over pairs is twice the ID one (ood_variance_larger holds), but its mean "
           "is 2.4 times the ID one: relative to its size the OOD MI is less dispersed, the ratio of the "
           "coefficients of variation 0.83 with its interval over the 948 networks wholly below 1 (the claims "
           "table gives the numbers); the paper's words, a higher variance, hold only for the raw spread",
           verdict=Verdict.DIFFERS)
difference("functional_collapse", "paper-1024nets", "collapse_frequency",
           "55 of the 20,000 pairs (0.3%) have an ID MI below half the mean, and 1 of the 468 disjoint pairs; the "
           "share's interval over disjoint pairs reaches 1.2%, so it cannot exclude the 1% threshold: below it, not "
           "significant (the paper does not give its share)", verdict=Verdict.OPPOSITE_DIRECTION)

# What the quick profile finds (chapter 13 shows the numbers; the runs are seeded, so these
# verdicts are reproducible): the converged OptuNets of the quick bank (Adam on the quick MNIST
# subset), all their pairs (chapter 13 gives the counts).
difference("functional_collapse", "quick", "ood_more_dispersed",
           "on the quick bank's converged networks the OOD MI's coefficient of variation is larger than the ID one, "
           "but the bootstrap interval of their ratio over networks reaches below 1 (the claims table gives both): "
           "the paper's direction, not significant at this size", verdict=Verdict.SAME_DIRECTION)
difference("functional_collapse", "quick", "positive_correlation",
           "the correlation over the pairs of the quick bank's networks is positive, but the network-level "
           "permutation test (the claims table gives r and p) does not reject zero: the paper's direction, not "
           "significant once the pairs' shared networks are accounted for", verdict=Verdict.SAME_DIRECTION)
difference("functional_collapse", "quick", "collapse_frequency",
           "under one percent of the pairs of the quick bank's networks have an ID MI below half the mean, and none "
           "of the disjoint pairs (the claims table gives the counts): no evidence of a non-negligible collapse "
           "frequency at this size (the paper does not give its share either); the share's interval over the "
           "disjoint pairs still reaches far above the threshold: opposite direction, not significant",
           verdict=Verdict.OPPOSITE_DIRECTION)
