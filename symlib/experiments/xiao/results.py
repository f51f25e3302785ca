"""Xiao et al. (2023): the typed results of the experiments (frozen dataclasses read from
their artifacts)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from symlib.experiments.registry import ExperimentResult, pick
from symlib.experiments.xiao.settings import MLP_SEEDS



# ---------------------------------------------------------------------------------------
# Typed results
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PredictiveScore:
    """Test-set score of a predictive distribution.

    Attributes:
        accuracy: share of test examples whose most probable class is the label.
        nll: mean negative log-probability of the label (nats).
    """

    accuracy: float
    nll: float

    @classmethod
    def from_dict(cls, scores: dict[str, Any]) -> PredictiveScore:
        """Build from the artifact's ``{"accuracy": ..., "nll": ...}`` dict.

        Args:
            scores: the stored scores.

        Returns:
            The score with plain floats.
        """
        return cls(accuracy=np.float64(scores["accuracy"]), nll=np.float64(scores["nll"]))


@dataclass(frozen=True, eq=False)
class TrainedNet:
    """One MAP-trained MLP.

    Attributes:
        params: the trained parameters (``dense_0`` ... with ``kernel`` and ``bias``).
        epoch_loss: training objective at the end of each epoch.
        test_nll: negative log-likelihood on the test set.
        test_accuracy: accuracy on the test set.
    """

    params: dict[str, Any]
    epoch_loss: np.ndarray
    test_nll: float
    test_accuracy: float


@dataclass(frozen=True, eq=False)
class MapPairResult(ExperimentResult):
    """``mlp_map_pair``: two MLPs trained from independent seeds.

    Attributes:
        nets: the trained networks by seed (``MLP_SEEDS``).
    """

    nets: dict[int, TrainedNet]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> MapPairResult:
        nets = {}
        for seed in MLP_SEEDS:
            a = artifact[f"seed{seed}"]
            nets[seed] = TrainedNet(params=a["params"], epoch_loss=a["epoch_loss"], test_nll=np.float64(a["test_nll"]),
                                    test_accuracy=np.float64(a["test_accuracy"]))
        return cls(artifact=artifact, nets=nets)

    def net(self, seed: int) -> TrainedNet:
        """The network trained from ``seed``.

        Args:
            seed: one of ``MLP_SEEDS``.

        Returns:
            The trained network.

        Raises:
            ValueError: for a seed that was not trained.
        """
        return pick(self.nets, seed, "seed")


@dataclass(frozen=True, eq=False)
class RebasinResult(ExperimentResult):
    """``rebasin_barriers``: interpolation from net 0 to net 1, raw and after matching.

    Attributes:
        curves: ``curves[split][method]`` is a dict of arrays ``lambda``, ``loss`` and
            ``accuracy`` along the path (split ``"train"`` or ``"test"``, method one of
            ``MATCHING_METHODS``).
        barriers: ``barriers[split][method]``, the loss barrier of that path (nats).
        num_transpositions: NoT of the matching permutation, by matching method.
        permutations: the matching permutation of the hidden units, by matching method.
        endpoint_test_accuracy: test accuracy of the two networks, by seed.
    """

    curves: dict[str, dict[str, dict[str, np.ndarray]]]
    barriers: dict[str, dict[str, float]]
    num_transpositions: dict[str, int]
    permutations: dict[str, np.ndarray]
    endpoint_test_accuracy: dict[int, float]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> RebasinResult:
        return cls(artifact=artifact, curves=artifact["curves"],
                   barriers={s: {m: np.float64(v) for m, v in b.items()} for s, b in artifact["barrier"].items()},
                   num_transpositions={m: int(v) for m, v in artifact["not"].items()},
                   permutations=dict(artifact["perms"]),
                   endpoint_test_accuracy={s: np.float64(artifact["endpoint_test_accuracy"][f"seed{s}"])
                                           for s in MLP_SEEDS})

    def curve(self, split: str, method: str) -> dict[str, np.ndarray]:
        """The interpolation curve on ``split`` towards net 1 matched by ``method``.

        Args:
            split: ``"train"`` or ``"test"``.
            method: one of ``MATCHING_METHODS``.

        Returns:
            Dict of arrays ``lambda``, ``loss`` and ``accuracy``.

        Raises:
            ValueError: for an unknown split or method.
        """
        return pick(pick(self.curves, split, "split"), method, "matching method")

    def barrier(self, split: str, method: str) -> float:
        """The loss barrier (nats) on ``split`` after matching by ``method``.

        Args:
            split: ``"train"`` or ``"test"``.
            method: one of ``MATCHING_METHODS``.

        Returns:
            The barrier.

        Raises:
            ValueError: for an unknown split or method.
        """
        return pick(pick(self.barriers, split, "split"), method, "matching method")


@dataclass(frozen=True, eq=False)
class NoTSweepResult(ExperimentResult):
    """``not_sweep`` (Fig. 2 a-c): one row per (run, planted NoT), in run-major order.

    Attributes:
        run: index of the random initialisation.
        not_p: NoT of the planted permutation P.
        not_p_prime: NoT of the permutation P' matching the trained pair.
        distance_raw: parameter distance between the trained pair.
        distance_matched: the same after matching.
        barrier_raw: training loss barrier between the trained pair (nats).
        barrier_matched: the same after matching.
    """

    run: np.ndarray
    not_p: np.ndarray
    not_p_prime: np.ndarray
    distance_raw: np.ndarray
    distance_matched: np.ndarray
    barrier_raw: np.ndarray
    barrier_matched: np.ndarray

    COLUMNS = ("run", "not_p", "not_p_prime", "distance_raw", "distance_matched", "barrier_raw", "barrier_matched")

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> NoTSweepResult:
        return cls(artifact=artifact, **{k: np.asarray(artifact[k]) for k in cls.COLUMNS})

    def per_run(self, column: str) -> np.ndarray:
        """A column as a ``(runs, NoT values)`` float array.

        Args:
            column: one of ``NoTSweepResult.COLUMNS``.

        Returns:
            The column, one row per random initialisation.

        Raises:
            ValueError: for an unknown column.
        """
        values = pick({k: getattr(self, k) for k in self.COLUMNS}, column, "column")
        return np.asarray(values, float).reshape(len(np.unique(self.run)), -1)


@dataclass(frozen=True, eq=False)
class NoTTrace:
    """NoT of the permutation matching a partner network to the reference.

    Attributes:
        not_epochs: at initialisation and after each epoch of training.
        not_lambda: along the interpolation path between the trained pair (matching
            ``W_lambda`` to ``W_0``).
    """

    not_epochs: np.ndarray
    not_lambda: np.ndarray


@dataclass(frozen=True, eq=False)
class NoTPathsResult(ExperimentResult):
    """``not_paths`` (Fig. 2 d): NoT along the interpolation path and over training.

    Attributes:
        not_p: NoT of the planted permutation of the ``permuted`` partner.
        epochs: ``0 .. epochs`` (0 is the initialisation).
        lambdas: the interpolation coefficients.
        partners: the traces by partner: ``"permuted"`` (trained from P W_init) and
            ``"independent"`` (trained from a fresh initialisation).
    """

    not_p: int
    epochs: np.ndarray
    lambdas: np.ndarray
    partners: dict[str, NoTTrace]

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> NoTPathsResult:
        partners = {name: NoTTrace(not_epochs=artifact[name]["not_epochs"], not_lambda=artifact[name]["not_lambda"])
                    for name in ("permuted", "independent")}
        return cls(artifact=artifact, not_p=int(artifact["not_p"]), epochs=artifact["epochs"],
                   lambdas=artifact["lambda"], partners=partners)

    def partner(self, name: str) -> NoTTrace:
        """The trace of one partner.

        Args:
            name: ``"permuted"`` or ``"independent"``.

        Returns:
            Its NoT over epochs and along the path.

        Raises:
            ValueError: for an unknown partner.
        """
        return pick(self.partners, name, "partner")

    def repaired(self) -> dict[str, Any]:
        """Which units of the reference the permuted partner is matched to differently after
        training than at initialisation, and how active they are: :func:`repaired_units_summary`.

        Raises:
            KeyError: for an artifact computed before this was recorded.
        """
        return repaired_units_summary(self.artifact["permuted"]["repaired"])


@dataclass(frozen=True, eq=False)
class EnsembleRun(ExperimentResult):
    """``ensemble``: a deep ensemble of MAP-trained MLPs.

    Attributes:
        params: the members' parameters, stacked on a leading axis.
        epoch_loss: training objective per epoch and member.
        test_probs: ``(n_test, 10)`` predictive probabilities (mean over members).
        test: the predictive's test score.
    """

    params: dict[str, Any]
    epoch_loss: np.ndarray
    test_probs: np.ndarray
    test: PredictiveScore

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> EnsembleRun:
        return cls(artifact=artifact, params=artifact["params"], epoch_loss=artifact["epoch_loss"],
                   test_probs=artifact["test_probs"], test=PredictiveScore.from_dict(artifact["test"]))


@dataclass(frozen=True, eq=False)
class VIRun(ExperimentResult):
    """``vi``: a mean-field Gaussian variational posterior.

    Attributes:
        mu: the posterior means (a parameter tree).
        sigma: the posterior standard deviations (same tree).
        elbo_history: the ELBO per epoch.
        test_probs: ``(n_test, 10)`` Monte-Carlo predictive probabilities.
        test: the predictive's test score.
    """

    mu: dict[str, Any]
    sigma: dict[str, Any]
    elbo_history: np.ndarray
    test_probs: np.ndarray
    test: PredictiveScore

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> VIRun:
        return cls(artifact=artifact, mu=artifact["mu"], sigma=artifact["sigma"],
                   elbo_history=artifact["elbo_history"], test_probs=artifact["test_probs"],
                   test=PredictiveScore.from_dict(artifact["test"]))


@dataclass(frozen=True, eq=False)
class HMCDiagnostics:
    """Sampler and function-space diagnostics of the HMC chains.

    Attributes:
        mean_acceptance: mean acceptance rate of the kept iterations.
        num_divergences: divergent transitions among the kept iterations.
        rhat_test_loglik: R-hat of the test log-likelihood across chains.
        ess_test_loglik: its effective sample size.
        rhat_true_class_prob: R-hat of the predictive probability of the true class of
            ten fixed test points.
        ess_true_class_prob: their effective sample sizes.
    """

    mean_acceptance: float
    num_divergences: int
    rhat_test_loglik: np.ndarray
    ess_test_loglik: np.ndarray
    rhat_true_class_prob: np.ndarray
    ess_true_class_prob: np.ndarray

    @classmethod
    def from_dict(cls, diagnostics: dict[str, Any]) -> HMCDiagnostics:
        """Build from the artifact's diagnostics dict.

        Args:
            diagnostics: the stored diagnostics.

        Returns:
            The typed diagnostics.
        """
        return cls(mean_acceptance=np.float64(diagnostics["mean_acceptance"]),
                   num_divergences=int(diagnostics["num_divergences"]),
                   **{f"{stat}_{q}": np.asarray(diagnostics[f"{stat}_{q}"])
                      for stat in ("rhat", "ess") for q in ("test_loglik", "true_class_prob")})


@dataclass(frozen=True, eq=False)
class HMCRun(ExperimentResult):
    """``hmc``: full-batch HMC on the BNN posterior (samples stay on disk, see
    :func:`hmc_samples`).

    Attributes:
        stats: per-iteration sampler statistics, ``(chains, iterations)`` arrays by name.
        step_size: the (adapted) step size of each chain.
        test_probs: ``(n_test, 10)`` predictive probabilities (mean over samples).
        test: the predictive's test score.
        diagnostics: sampler and function-space diagnostics.
    """

    stats: dict[str, np.ndarray]
    step_size: np.ndarray
    test_probs: np.ndarray
    test: PredictiveScore
    diagnostics: HMCDiagnostics

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> HMCRun:
        return cls(artifact=artifact, stats=artifact["stats"], step_size=artifact["step_size"],
                   test_probs=artifact["test_probs"], test=PredictiveScore.from_dict(artifact["test"]),
                   diagnostics=HMCDiagnostics.from_dict(artifact["diagnostics"]))


@dataclass(frozen=True, eq=False)
class Table1Row:
    """One approximation in Table 1, scored against the HMC predictive.

    Attributes:
        agreement: share of test points where its most probable class is HMC's.
        tv: mean total variation distance to the HMC predictive.
        accuracy_samples: test accuracy (%) of its predictive.
        accuracy_mean: test accuracy (%) of its mean network (None for sample sets).
    """

    agreement: float
    tv: float
    accuracy_samples: float
    accuracy_mean: float | None


@dataclass(frozen=True, eq=False)
class PruningCurves:
    """Test accuracy of the mean network when only the lowest-sigma weights are kept.

    Attributes:
        keep_fraction: fractions of weights kept (``PRUNE_FRACTIONS``).
        accuracy: accuracy at each fraction, by curve: ``"ensemble"``, ``"hmc"``,
            ``"ensemble mu + hmc sigma"`` and ``"vi"``.
    """

    keep_fraction: np.ndarray
    accuracy: dict[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class CompactRun:
    """One independent run of ``compact_representation``: one group of HMC chains, one deep
    ensemble and one VI fit.

    Attributes:
        table: Table 1 by approximation (``"HMC sample"``, ``"HMC q_d"``, ``"HMC q_r"``,
            ``"HMC q_r (weight)"``, ``"HMC q_r (per chain)"``, the same for ``"Ensemble"``
            without the per-chain row, and ``"VI q"``), scored against this run's HMC predictive.
        pruning: the pruning curves of Fig. 3 (right).
        sigma: all per-weight standard deviations, flattened, by approximation.
        median_sigma: their medians, by approximation.
    """

    table: dict[str, Table1Row]
    pruning: PruningCurves
    sigma: dict[str, np.ndarray]
    median_sigma: dict[str, float]

    @classmethod
    def from_artifact(cls, rep: Mapping[str, Any]) -> CompactRun:
        table = {col: Table1Row(agreement=np.float64(m["agreement"]), tv=np.float64(m["tv"]),
                                accuracy_samples=np.float64(m["accuracy_samples"]),
                                accuracy_mean=np.float64(m["accuracy_mean"]) if "accuracy_mean" in m else None)
                 for col, m in rep["table"].items()}
        prune = rep["pruning"]
        pruning = PruningCurves(keep_fraction=np.asarray(prune["keep_fraction"]),
                                accuracy={k: np.asarray(v) for k, v in prune.items() if k != "keep_fraction"})
        return cls(table=table, pruning=pruning, sigma=dict(rep["sigma"]),
                   median_sigma={k: np.float64(v) for k, v in rep["median_sigma"].items()})


def runs_in_order(replicates: Mapping[str, Any]) -> list[Any]:
    """The runs of a ``compact_representation`` artifact (stored by their index ``"0"``,
    ``"1"``, ...), in index order whatever the order of the keys."""
    return [replicates[k] for k in sorted(replicates, key=int)]


def _mean_se(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """Mean and standard error over runs (``None`` for a quantity a column lacks; SE ``None``
    with one run)."""
    if values[0] is None:
        return None, None
    v = np.asarray(values, np.float64)
    return float(v.mean()), (float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else None)


@dataclass(frozen=True, eq=False)
class CompactResult(ExperimentResult):
    """``compact_representation`` (Table 1, Fig. 3) over independent runs (the profile's
    ``xiao_replicates``).

    Attributes:
        replicates: the runs (:class:`CompactRun`), each with its own chains, ensemble and VI fit.
        chains_per_replicate: HMC chains pooled in each run.
        hmc_test: test score of the predictive of all the HMC chains pooled.
        hmc_diagnostics: the diagnostics of all the HMC chains.
    """

    replicates: tuple[CompactRun, ...]
    chains_per_replicate: int
    hmc_test: PredictiveScore
    hmc_diagnostics: HMCDiagnostics

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> CompactResult:
        return cls(artifact=artifact, replicates=tuple(CompactRun.from_artifact(r) for r in runs_in_order(artifact["replicates"])),
                   chains_per_replicate=int(artifact["chains_per_replicate"]),
                   hmc_test=PredictiveScore.from_dict(artifact["hmc_test"]),
                   hmc_diagnostics=HMCDiagnostics.from_dict(artifact["hmc_diagnostics"]))

    def table(self) -> dict[str, dict[str, tuple[float | None, float | None]]]:
        """Table 1 over the runs: by approximation and metric (``agreement``, ``tv``,
        ``accuracy_samples``, ``accuracy_mean``), the mean and its standard error."""
        cols = self.replicates[0].table
        return {col: {m: _mean_se([getattr(r.table[col], m) for r in self.replicates])
                      for m in ("agreement", "tv", "accuracy_samples", "accuracy_mean")} for col in cols}

    def pruning(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The pruning curves over the runs: by curve, the mean accuracy at each kept fraction
        and its standard error (zeros with one run); ``"keep_fraction"`` maps to the fractions."""
        curves = self.replicates[0].pruning.accuracy
        out = {"keep_fraction": (self.replicates[0].pruning.keep_fraction,) * 2}
        for k in curves:
            a = np.stack([r.pruning.accuracy[k] for r in self.replicates])
            se = a.std(0, ddof=1) / np.sqrt(len(a)) if len(a) > 1 else np.zeros(a.shape[1])
            out[k] = (a.mean(0), se)
        return out


def repaired_units_summary(rep: Mapping[str, Any]) -> dict[str, Any]:
    """How the units that weight matching re-pairs over training differ from those it keeps.

    Args:
        rep: ``m_init``, ``m_final``, ``active_fraction`` and ``out_norm`` (see
            :func:`_repaired_units`, the ``repaired`` entry of a ``not_paths`` artifact).

    Returns:
        ``units``; ``repaired`` (count); ``dead_repaired`` / ``dead_kept`` (never active on the
        images, among re-paired / kept units); ``median_active_repaired`` / ``_kept`` and
        ``median_out_norm_repaired`` / ``_kept``; ``active_half`` (units active at least as
        often as the median unit) and ``active_half_kept`` (of them, kept).
    """
    moved = np.asarray(rep["m_final"]) != np.asarray(rep["m_init"])
    act, norm = np.asarray(rep["active_fraction"]), np.asarray(rep["out_norm"])
    dead = act == 0
    active_half = act >= np.median(act)
    med = lambda v, m: float(np.median(v[m])) if m.any() else float("nan")  # noqa: E731
    return {"units": int(moved.size), "repaired": int(moved.sum()),
            "dead_repaired": int((dead & moved).sum()), "dead_kept": int((dead & ~moved).sum()),
            "median_active_repaired": med(act, moved), "median_active_kept": med(act, ~moved),
            "median_out_norm_repaired": med(norm, moved), "median_out_norm_kept": med(norm, ~moved),
            "active_half": int(active_half.sum()), "active_half_kept": int((active_half & ~moved).sum())}
