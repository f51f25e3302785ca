"""Experiments of Laurent et al. (2024), "A symmetry-aware exploration of Bayesian neural
network posteriors", and the paper's reference claims.

Registered experiments: ``toy_perceptrons`` (Fig. 1, App. A; helpers in
:mod:`symlib.experiments.toy`) and ``laurent_mlps`` (Fig. 2, Fig. 4, App. D.3: many ReLU
MLPs trained with the OptuNet recipe). :func:`symlib.experiments.run` returns a
:class:`ToyPerceptronsResult` or a :class:`LaurentMLPsResult`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.core.models import mlp_init
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import ExperimentResult, data_config, load_data, pick, register
from symlib.inference.training import TrainConfig

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

#: Fig. 2 (OptuNets, Sec. 3.6, Corollary 1), Fig. 9 and App. D.3 (figures without printed
#: numbers): notebook 10.
LAURENT_FIG2_CLAIMS = {
    "above_min_mass": "yes, with weight decay",
    "largest_weight_after_min_mass": "raised in the layers with fewest parameters",
    "marginals_before_removal": "KS tests cannot rule out identical",
    "marginals_after_removal": "marginals differ",
}

#: Sec. 5.2 and Fig. 4 (a figure without printed numbers): notebook 11.
LAURENT_FIG4_CLAIMS = {
    "where_units_swap": "around instabilities, high learning-rate phases",
    "last_phase": "weights nearly never permute",
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


@dataclass(frozen=True, eq=False)
class LaurentMLPsResult(ExperimentResult):
    """``laurent_mlps``: ReLU MLPs trained at once with the OptuNet recipe.

    Attributes:
        params: the networks' parameters, stacked on a leading axis.
        epoch_loss: training objective per network and epoch.
        swaps: ``(nets, epochs, steps per epoch, hidden layers)`` pairs of sorted units that
            traded places in each step.
        test_accuracy: test accuracy of each network.
        epoch_stats: per hidden layer, ``(nets, epochs, units)`` sorting statistic at the
            end of every epoch.
        lr: learning rate of each epoch.
        milestones: epochs at which the learning rate is halved.
        prior_std: std of the Gaussian prior equivalent to the weight decay.
        sizes: layer sizes, input to output.
    """

    params: dict[str, Any]
    epoch_loss: np.ndarray
    swaps: np.ndarray
    test_accuracy: np.ndarray
    epoch_stats: tuple[np.ndarray, ...]
    lr: np.ndarray
    milestones: np.ndarray
    prior_std: float
    sizes: np.ndarray

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> LaurentMLPsResult:
        return cls(artifact=artifact, params=artifact["params"], epoch_loss=artifact["epoch_loss"],
                   swaps=artifact["swaps"], test_accuracy=artifact["test_accuracy"],
                   epoch_stats=tuple(np.asarray(s) for s in artifact["epoch_stats"]), lr=artifact["lr"],
                   milestones=artifact["milestones"], prior_std=np.float64(artifact["prior_std"]), sizes=artifact["sizes"])


@register("toy_perceptrons", lambda profile: {"nets": TOY_NETS, "max_loss": TOY_MAX_LOSS},
          "Laurent et al. Fig. 1 / App. A: 10,000 2-2-1 ReLU perceptrons; output weights raw, unscaled, canonical",
          result=ToyPerceptronsResult)
def toy_perceptrons(profile: Profile) -> dict[str, Any]:
    """Train ``TOY_NETS`` perceptrons and remove their scaling and permutation symmetries.

    Args:
        profile: the run profile (unused: the sizes are the paper's in every profile).

    Returns:
        The artifact: ``x``, ``y``, ``loss``, ``kept``, ``max_logit_diff`` and the output
        weights in each of ``OUTPUT_WEIGHT_FORMS``.
    """
    from symlib.experiments.toy import sort_by_output_weight, train_perceptrons, two_gaussians
    from symlib.symmetry.scaling import check_function_unchanged, unit_norm

    x, y = two_gaussians()
    params, loss = train_perceptrons(jax.random.key(0), x, y, TOY_NETS)
    keep = np.flatnonzero(loss < TOY_MAX_LOSS)
    out = {k: [] for k in OUTPUT_WEIGHT_FORMS}
    max_diff = 0.0
    for i in keep:
        net = jax.tree_util.tree_map(lambda a: np.asarray(a[i], np.float64), params)
        scaled = unit_norm(net)
        canonical, _ = sort_by_output_weight(scaled)
        max_diff = max(max_diff, check_function_unchanged(net, canonical, key=int(i), n=64))
        for k, v in (("raw", net), ("unit_norm", scaled), ("canonical", canonical)):
            out[k].append(v["dense_1"]["kernel"][:, 0])
    return {"x": x, "y": y, "loss": loss, "kept": keep, "max_logit_diff": max_diff,
            **{k: np.asarray(v) for k, v in out.items()}}


def laurent_train_config(profile: Profile, n_train: int) -> TrainConfig:
    """Laurent et al.'s OptuNet recipe (App. B.1) for ``profile.laurent_epochs`` epochs.

    SGD, learning rate halved after a quarter and after half of training, weight decay
    as a Gaussian prior on ``n_train`` examples.

    Args:
        profile: the run profile (``laurent_*`` settings).
        n_train: training examples (turns the weight decay into a prior std).

    Returns:
        The training configuration.
    """
    e = profile.laurent_epochs
    return TrainConfig(e, profile.laurent_batch_size, profile.laurent_learning_rate,
                       TrainConfig.prior_std_for_weight_decay(profile.laurent_weight_decay, n_train),
                       optimizer="sgd", lr_milestones=tuple(sorted({max(1, e // 4), max(2, e // 2)})))


def _laurent_config(profile: Profile) -> dict[str, Any]:
    return {**data_config(profile), **{k: v for k, v in profile.to_dict().items() if k.startswith("laurent_")}}


def _laurent_summary(res: dict[str, Any]) -> dict[str, Any]:
    return {"nets": int(len(res["test_accuracy"])), "test_accuracy_mean": float(np.mean(res["test_accuracy"])),
            "swapped_pairs_per_step": float(np.mean(res["swaps"]))}


@register("laurent_mlps", _laurent_config,
          "Laurent et al.: many ReLU MLPs trained at once with the OptuNet recipe (SGD, weight decay, "
          "learning rate halved twice), counting swaps of sorted units at every step", summary=_laurent_summary,
          result=LaurentMLPsResult)
def laurent_mlps(profile: Profile) -> dict[str, Any]:
    """Train ``laurent_nets`` MLPs at once, counting swaps of sorted units at every step.

    Args:
        profile: the run profile (``laurent_*`` settings).

    Returns:
        The artifact: the fields of :class:`LaurentMLPsResult` by name.
    """
    from symlib.core.models import mlp_apply
    from symlib.evaluation.metrics import accuracy
    from symlib.inference.training import fit_map_many, learning_rate_at
    from symlib.symmetry.neuron_order import statistics_observer, swap_counter

    d = load_data(profile)
    x, y = d["x_train"], d["y_train"]
    cfg = laurent_train_config(profile, x.shape[0])
    sizes = [x.shape[1], *profile.laurent_hidden, 10]
    n = profile.laurent_nets
    inits = jax.vmap(lambda k: mlp_init(k, sizes))(jax.random.split(jax.random.key(5000), n))
    data_keys = jax.random.split(jax.random.key(6000), n)
    params, losses, seen = fit_map_many(inits, data_keys, x, y, cfg, observe=swap_counter("max", "unit_norm"),
                                        observe_epoch=statistics_observer("max", "unit_norm"))
    acc = jax.vmap(lambda p: accuracy(mlp_apply(p, d["x_test"]), d["y_test"]))(params)
    return {"params": jax.device_get(params), "epoch_loss": np.asarray(losses),
            "swaps": np.asarray(seen["step"]), "test_accuracy": np.asarray(acc),
            # per hidden layer: (nets, epochs, units) sorting statistic at the end of every epoch
            "epoch_stats": [np.asarray(s) for s in seen["epoch"]],
            "lr": np.asarray([learning_rate_at(cfg, e) for e in range(cfg.epochs)]),
            "milestones": np.asarray(cfg.lr_milestones), "prior_std": np.asarray(cfg.prior_std),
            "sizes": np.asarray(sizes)}
