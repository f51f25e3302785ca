"""Laurent et al. (2024) on their own network: many OptuNets trained at once (Fig. 2, Sec. 3.6).

Registered experiment ``laurent_optunets``: ``optunet_nets`` OptuNets
(:func:`symlib.core.cnn.optunet_init`, 355 parameters) trained with ``vmap`` by the authors'
recipe (:func:`optunet_train_config`: SGD 0.04, weight
decay 2e-4, learning rate halved at a quarter and half of training, batch 64, random
crops) for ``optunet_epochs`` epochs on the profile's MNIST training split. Its summary
solves the min-mass problem of every network through OptuNet's scaling spec
(:func:`symlib.symmetry.scaling.min_mass`) and carries the numbers of the
Fig. 2 / Prop. 2 / Cor. 1 claims, which are the claims of ``laurent_mlps`` registered for
this experiment too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.experiments.laurent import mlps  # noqa: F401  (registers the laurent_mlps claims first)
from symlib.experiments.judging.claims import CLAIMS, Verdict, claim, difference
from symlib.experiments.laurent.mlps import LINE_T, min_mass_entry, swap_summary
from symlib.experiments.profiles import Profile
from symlib.experiments.recipes import StepDecay, step_sgd
from symlib.experiments.registry import (Blocks, ExperimentResult, blocks_of, data_config, load_data, register,
                                        run_blocks)

#: Laurent et al.'s OptuNet recipe (their ``optumnist-v1.py``): SGD without momentum
LAURENT_OPTUNET = {"batch_size": 64, "learning_rate": 0.04, "weight_decay": 2e-4, "epochs": 60,
                   "lr_milestones": (15, 30), "lr_factor": 0.5}


def optunet_decay(epochs: int = 60) -> StepDecay:
    """The learning rate of Laurent et al.'s OptuNet recipe (:data:`LAURENT_OPTUNET`) in epochs:
    0.04, halved at epochs 15 and 30 of 60; with ``epochs != 60`` at ``epochs // 4`` and
    ``epochs // 2`` (those in ``1..epochs-1``).

    Raises:
        ValueError: if ``epochs`` is not a positive integer.
    """
    from symlib.core.checks import positive_int

    r = LAURENT_OPTUNET
    epochs = positive_int(epochs, "epochs")
    milestones = r["lr_milestones"] if epochs == r["epochs"] else tuple(sorted({epochs // 4, epochs // 2} - {0}))
    return StepDecay(r["learning_rate"], milestones, r["lr_factor"])


def optunet_train_config(n_train: int, epochs: int = 60, augment: str | None = "crop", crop_fill: float = 0.0):
    """Laurent et al.'s recipe for OptuNet (:data:`LAURENT_OPTUNET`).

    SGD with learning rate 0.04 and no momentum, batch 64, weight decay 2e-4, learning
    rate halved at epochs 15 and 30 of 60 (:func:`optunet_decay`; its optax schedule
    counts the ``n_train // 64`` steps of an epoch), random 28x28 crops of the images padded by
    4 black pixels. The authors standardise MNIST with mean 0.1307 and standard deviation
    0.3081 after the crop; with images standardised beforehand
    (:func:`symlib.data.standardize`), pass ``crop_fill=standardize(0.0, "mnist")``.
    With ``epochs != 60`` the milestones move to ``epochs // 4`` and
    ``epochs // 2`` (those in ``1..epochs-1``).

    The weight decay becomes the Gaussian prior of
    :func:`~symlib.inference.training.map_objective`: with ``prior_std = 1 / sqrt(wd N)``
    (:meth:`~symlib.inference.training.TrainConfig.prior_std_for_weight_decay`, ``N = n_train``) the prior term ``||W||^2 / (2 prior_std^2 N) = wd ||W||^2 / 2`` has gradient
    ``W / (prior_std^2 N) = wd * W``, added to the gradient of the *mean*
    cross-entropy. That is exactly PyTorch's ``SGD(lr, weight_decay=wd)`` on
    ``CrossEntropyLoss()`` (mean reduction), which steps ``W <- W - lr (g + wd W)``;
    as there, every parameter (biases included) is decayed.

    Args:
        n_train: number of training examples ``N``, >= 1 (the data the config trains on).
        epochs: passes over the training set (60 in the paper).
        augment: ``"crop"`` (the paper) or ``None``.
        crop_fill: value of the padded pixels (see above).

    Returns:
        The :class:`~symlib.inference.training.TrainConfig`.

    Raises:
        ValueError: if ``n_train < 1`` or ``epochs`` is not a positive integer.
    """
    from symlib.inference.training import TrainConfig

    r = LAURENT_OPTUNET
    decay = optunet_decay(epochs)
    return TrainConfig(int(epochs), r["batch_size"], step_sgd(decay, n_train // r["batch_size"]),
                       TrainConfig.prior_std_for_weight_decay(r["weight_decay"], n_train), augment, float(crop_fill))


#: OptuNet's layers with weights, input to output, and their weight counts (kernels only)
OPTUNET_LAYERS = ("conv_0", "conv_1", "dense_0", "dense_1")


#: Laurent et al.'s non-convergence rule (optuMNIST's ``NonConvergence`` callback): a run
#: whose validation accuracy is below this after epoch 3 is stopped and left out. We keep
#: every run, report how many fall below it at the end, and leave those out of the analyses.
CONVERGED_ACCURACY = 0.15


@dataclass(frozen=True, eq=False)
class OptuNetsResult(ExperimentResult):
    """``laurent_optunets``: OptuNets trained at once with Laurent et al.'s recipe.

    Attributes:
        params: the networks' parameters, stacked on a leading axis.
        epoch_loss: training objective per network and epoch.
        test_accuracy: test accuracy of each network.
        converged: networks at or above :data:`CONVERGED_ACCURACY` test accuracy.
        swaps: ``(nets, epochs, steps, permutations)`` pairs of sorted units that changed
            places in each step (:func:`symlib.symmetry.neuron_order.swap_counter`).
        epoch_stats: per permutation, ``(nets, epochs, units)`` sorting statistics at the end
            of every epoch.
        perm_names: the permutations of :func:`symlib.symmetry.architectures.optunet_permutation_spec`.
        units: units per permutation.
        blocks: blocks per permutation (units are ordered within blocks).
        lr: learning rate per epoch.
        milestones: epochs where the learning rate was halved.
        weight_decay: the recipe's weight decay.
    """

    params: dict[str, Any]
    epoch_loss: np.ndarray
    test_accuracy: np.ndarray
    converged: np.ndarray
    swaps: np.ndarray
    epoch_stats: list
    perm_names: list
    units: np.ndarray
    blocks: np.ndarray
    lr: np.ndarray
    milestones: np.ndarray
    weight_decay: float

    @classmethod
    def from_artifact(cls, artifact: dict[str, Any]) -> OptuNetsResult:
        acc = np.asarray(artifact["test_accuracy"])
        names = [str(n) for n in artifact["perm_names"]]
        return cls(artifact=artifact, params=artifact["params"], epoch_loss=artifact["epoch_loss"],
                   test_accuracy=acc, converged=acc >= CONVERGED_ACCURACY, swaps=np.asarray(artifact["swaps"]),
                   epoch_stats=[np.asarray(artifact["epoch_stats"][n]) for n in names], perm_names=names, units=np.asarray(artifact["units"]),
                   blocks=np.asarray(artifact["blocks"]), lr=np.asarray(artifact["lr"]),
                   milestones=np.asarray(artifact["milestones"]), weight_decay=float(artifact["weight_decay"]))


#: networks per cached block on a CPU (the paper profile's 256 in 8 blocks of about 45 minutes each on 2 CPU cores)
OPTUNET_BLOCK = 32
#: networks per cached block on an accelerator, where a larger vmapped stack trains faster per
#: network (an H100: 4.6 million images/s at 256 networks, 3.4 million at 64;
#: ``benchmarks/bench_train_many.py``). Network ``i`` is the same whatever the block size.
OPTUNET_BLOCK_ACCELERATOR = 256


def optunet_block(profile: Profile) -> int:
    """Networks per cached block of ``laurent_optunets``: ``profile.optunet_block``, or with 0
    :data:`OPTUNET_BLOCK` on a CPU and :data:`OPTUNET_BLOCK_ACCELERATOR` on JAX's other backends.

    Raises:
        ValueError: if ``profile.optunet_block`` is negative.
    """
    if profile.optunet_block < 0:
        raise ValueError(f"optunet_block must be 0 (by the backend) or a number of networks, got {profile.optunet_block}")
    if profile.optunet_block:
        return int(profile.optunet_block)
    return OPTUNET_BLOCK if jax.default_backend() == "cpu" else OPTUNET_BLOCK_ACCELERATOR


def _blocks_config(profile: Profile) -> dict[str, Any]:
    """The config of the OptuNets' blocks in the cache: the same for every ``optunet_used``."""
    return {**data_config(profile), "nets": profile.optunet_nets, "epochs": profile.optunet_epochs}


def _config(profile: Profile) -> dict[str, Any]:
    return {**_blocks_config(profile), "used": profile.optunet_used}


def optunet_accuracies(params, d: dict[str, np.ndarray]) -> np.ndarray:
    """The test accuracy of each of the stacked OptuNets ``params`` on ``d``'s test split
    (:func:`optunet_data`), from one compiled pass (:func:`symlib.evaluation.member_probs`)."""
    from symlib.core.cnn import optunet_apply
    from symlib.evaluation import member_probs

    probs = member_probs(params, d["x_test"], apply_fn=optunet_apply)
    return np.mean(probs.argmax(-1) == np.asarray(d["y_test"])[None], axis=1)


def optunet_data(profile: Profile) -> dict[str, np.ndarray]:
    """The profile's MNIST split as OptuNet sees it: NHWC images standardised as in the
    authors' code (:func:`symlib.data.standardize`), labels unchanged."""
    from symlib.core.cnn import as_images
    from symlib.data import standardize

    d = load_data(profile)
    return {k: (np.asarray(as_images(standardize(v, "mnist"))) if k.startswith("x_") and len(v) else v)
            for k, v in d.items()}


def optunet_blocks(profile: Profile, data: dict[str, np.ndarray] | None = None) -> Blocks:
    """The ``profile.optunet_nets`` OptuNets of ``laurent_optunets`` as cached blocks of
    :func:`optunet_block` networks, with their swap counter (every step) and sorting
    statistics (every epoch): what the experiment trains, and what the GPU queue's job
    ``laurent-fig2-1000`` trains a block a step (:mod:`symlib.experiments.gpu_queue`).

    Args:
        profile: the run profile.
        data: the profile's data as :func:`optunet_data` gives it (default: loaded here).

    Returns:
        The :class:`~symlib.experiments.registry.Blocks` (with ``optunet_used``, its first
        ``optunet_used`` networks, in the same blocks with the same keys).

    Raises:
        ValueError: if ``optunet_used`` is not 0 or a multiple of the block size up to ``optunet_nets``.
    """
    from symlib.core.cnn import optunet_apply, optunet_init
    from symlib.data import standardize
    from symlib.symmetry.architectures import optunet_permutation_spec, optunet_scaling_spec
    from symlib.symmetry.neuron_order import statistics_observer, swap_counter

    d = optunet_data(profile) if data is None else data
    cfg = optunet_train_config(len(d["y_train"]), epochs=profile.optunet_epochs, crop_fill=standardize(0.0, "mnist"))
    sspec, pspec = optunet_scaling_spec(), optunet_permutation_spec()
    blocks = blocks_of("laurent_optunets", _blocks_config(profile), jax.random.key(2024), optunet_init, optunet_apply,
                       profile.optunet_nets, d["x_train"], d["y_train"], cfg, block_size=optunet_block(profile),
                       observe=swap_counter(sspec, pspec), observe_epoch=statistics_observer(sspec, pspec))
    return blocks.first(profile.optunet_used, "optunet_used", "optunet_block")


@register("laurent_optunets", _config,
          "Laurent et al. Fig. 2 and Sec. 5.2: many OptuNets (355 parameters) trained at once with the authors' "
          "MNIST recipe, counting swaps of sorted units at every step",
          summary=lambda art: optunet_summary(art), result=OptuNetsResult)
def laurent_optunets(profile: Profile) -> dict[str, Any]:
    """Train ``profile.optunet_nets`` OptuNets for ``profile.optunet_epochs`` epochs, at once,
    counting at every step the pairs of sorted units that change places.

    Args:
        profile: the run profile (data split, ``optunet_*`` settings).

    Returns:
        The artifact: the fields of :class:`OptuNetsResult` by name (``converged`` excepted).
    """
    from symlib.symmetry.architectures import optunet_permutation_spec

    d = optunet_data(profile)
    pspec = optunet_permutation_spec()
    decay = optunet_decay(profile.optunet_epochs)
    # blocks of optunet_block(profile) networks, each kept in the artifact cache: a killed run resumes
    blocks = optunet_blocks(profile, d)
    params, losses, seen = run_blocks(blocks)
    acc = optunet_accuracies(params, d)
    sizes = [int(s.shape[-1]) for s in seen["epoch"]]
    return {"params": jax.tree_util.tree_map(np.asarray, params), "epoch_loss": np.asarray(losses),
            "test_accuracy": acc, "swaps": np.asarray(seen["step"]),
            "epoch_stats": {n: np.asarray(s) for n, s in zip(pspec.perm_names, seen["epoch"])}, "perm_names": np.asarray(list(pspec.perm_names)),
            "units": np.asarray(sizes), "blocks": np.asarray([int(pspec.blocks.get(n, 1)) for n in pspec.perm_names]),
            "lr": np.asarray([decay.at_epoch(e) for e in range(profile.optunet_epochs)]),
            "milestones": np.asarray(decay.milestones), "weight_decay": float(LAURENT_OPTUNET["weight_decay"])}


def random_unit_direction(log_scales: dict, rng: np.random.Generator) -> dict:
    """A direction in log-scale space drawn uniformly on the unit sphere (over all groups together).

    Args:
        log_scales: group name -> log-scales (only their shapes are used).
        rng: the generator (one normal draw per group, in the mapping's order).

    Returns:
        Group name -> the direction's part, of the same shapes, with unit norm over all groups.
    """
    v = {n: rng.normal(size=u.shape) for n, u in log_scales.items()}
    norm = np.sqrt(sum(np.sum(x**2) for x in v.values()))
    return {n: x / norm for n, x in v.items()}


def _lines(spec, net, log_scales: dict, rng: np.random.Generator, count: int) -> tuple[int, int]:
    """Of ``count`` random lines through the optimum: how many are convex, how many smallest there."""
    from symlib.symmetry.scaling import mass_along

    at_optimum = convex = 0
    for _ in range(count):
        m = mass_along(spec, net, log_scales, random_unit_direction(log_scales, rng), LINE_T)
        at_optimum += int(np.argmin(m) == len(LINE_T) // 2)
        convex += int(np.all(np.diff(m, 2) >= -1e-12 * m.max()))
    return at_optimum, convex


def min_mass_summary(params: dict[str, Any], test_accuracy) -> dict[str, Any]:
    """The Fig. 2 / Prop. 2 / Cor. 1 part of an OptuNet summary: accuracy, and per converged
    network (test accuracy at least :data:`CONVERGED_ACCURACY`) the min-mass problem (masses,
    hidden-bias sums of squares, Hessian eigenvalues, random lines, largest weights) in the
    layout of the ``laurent_mlps`` summary's ``min_mass`` entry. Any set of trained OptuNets
    (``laurent_optunets``'s, or the bank's: ``bank_min_mass``).

    Args:
        params: the networks' parameters, stacked on a leading axis.
        test_accuracy: each network's test accuracy.

    Returns:
        A JSON-able dict: ``nets``, ``converged``, ``converged_accuracy``, the converged
        networks' mean and lowest accuracy, the best accuracy, and ``min_mass``.

    Raises:
        ValueError: if no network converged (nothing to analyse).
    """
    from symlib.core.cnn import OPTUNET_SHAPES, optunet_apply
    from symlib.core.models import unstack
    from symlib.symmetry.architectures import optunet_scaling_spec
    from symlib.symmetry.scaling import function_change, mass_hessian, min_mass

    acc = np.asarray(test_accuracy)
    keep = np.flatnonzero(acc >= CONVERGED_ACCURACY)
    if keep.size == 0:
        raise ValueError(f"none of the {len(acc)} OptuNets reached {CONVERGED_ACCURACY:.0%} test accuracy "
                         f"(best {acc.max():.3f}); train longer (optunet_epochs)")
    spec = optunet_scaling_spec()
    nets = [unstack(params, np.float64)[i] for i in keep]
    solved = [min_mass(spec, net) for net in nets]
    x = np.random.default_rng(0).normal(size=(64, 28, 28, 1))
    change = max(function_change(optunet_apply, n, s.params, x) for n, s in zip(nets, solved))
    rng = np.random.default_rng(0)
    eig = {"trained": [], "halfway": [], "min-mass": []}
    at_opt = convex = lines = 0
    for net, s in zip(nets, solved):
        logs = {n: np.log(v) for n, v in s.scales.items()}
        for where, u in (("trained", None), ("halfway", {n: v / 2 for n, v in logs.items()}), ("min-mass", logs)):
            ev = np.linalg.eigvalsh(mass_hessian(spec, net, u))
            eig[where].append(ev[0] / ev[-1])
        a, c = _lines(spec, net, logs, rng, 8)
        at_opt, convex, lines = at_opt + a, convex + c, lines + 8
    return {"nets": len(acc), "converged": int(keep.size), "converged_accuracy": CONVERGED_ACCURACY,
            "test_accuracy_mean": float(np.mean(acc[keep])), "test_accuracy_min": float(np.min(acc[keep])),
            "test_accuracy_max": float(np.max(acc)),
            "min_mass": min_mass_entry(
                nets, solved, layers=OPTUNET_LAYERS, bias_layers=("dense_0",),
                layer_weights=[int(np.prod(OPTUNET_SHAPES[f"{layer}/kernel"])) for layer in OPTUNET_LAYERS],
                layer_params=[sum(int(np.prod(s)) for p, s in OPTUNET_SHAPES.items() if p.startswith(layer + "/"))
                              for layer in OPTUNET_LAYERS],
                eig=eig, lines=(lines, at_opt, convex), max_logit_change=change)}


def optunet_summary(art: dict[str, Any]) -> dict[str, Any]:
    """Summary of ``laurent_optunets``: :func:`min_mass_summary`, and the swaps of Sec. 5.2
    (:func:`swap_summary`) of the converged networks.

    Args:
        art: the experiment's artifact.

    Returns:
        A JSON-able dict.

    Raises:
        ValueError: if no network converged (nothing to analyse).
    """
    res = OptuNetsResult.from_artifact(art)
    out = min_mass_summary(art["params"], res.test_accuracy)
    keep = np.flatnonzero(res.converged)
    return {**out, "swaps": {"perm_names": res.perm_names, "units": res.units.tolist(), "blocks": res.blocks.tolist(),
                             "lr": res.lr.tolist(),
                             **swap_summary(res.swaps[keep], [s[keep] for s in res.epoch_stats], res.milestones,
                                            res.units.tolist(), res.blocks.tolist())}}


# The Fig. 2 / Prop. 2 / Cor. 1 and Sec. 5.2 claims of laurent_mlps read the same summary entries.
for _mlp_claim in CLAIMS["laurent_mlps"]:
    if _mlp_claim.name in ("above_min_mass", "min_mass_convex", "corollary1_lower_loss", "largest_weight",
                           "swaps_scarce", "swaps_gathered", "swaps_in_high_lr_phases", "ordering_freezes"):
        claim("laurent_optunets", _mlp_claim.name, _mlp_claim.source, _mlp_claim.statement)(_mlp_claim.check)



# largest_weight, re-read on 2026-11-27 as every smaller-than-average layer (issue 43).
difference("laurent_optunets", "quick", "largest_weight",
           "read as every layer smaller than the average, the quick profile's few OptuNets raise the smallest "
           "layer's largest weight but not clearly the other small layers' (the claims table gives the least clear "
           "layer): opposite direction, not significant", verdict=Verdict.OPPOSITE_DIRECTION)
for _label in ("paper", "paper-8nets", "paper-16nets", "paper-768nets"):
    difference("laurent_optunets", _label, "largest_weight",
               "read as the paper's plural, 'the layers with fewer parameters' (every layer smaller than the "
               "average: conv_0, dense_0, dense_1), the claim differs: the min-mass rescaling raises the largest "
               "weight of conv_0 (about x1.4 to x1.6) and lowers that of the largest layer conv_1 (about x0.6), but "
               "it lowers that of dense_0 (about x0.9) and leaves dense_1's about where it was; the earlier "
               "reading (the smallest layer alone) holds")

# The MNIST panel's own claims (registered on 2026-11-27, issue 43) need the per-run share of
# changing steps and their clustering, which the summaries saved on 2026-11-26 do not keep.
_BEFORE_BURSTS = ("the summary was saved on 2026-11-26, before this claim and its per-run counts existed "
                  "(symlib.symmetry.neuron_order.swap_bursts); a rerun at paper scale (the GPU queue) judges it")
for _label in ("paper", "paper-8nets", "paper-16nets"):
    for _name in ("swaps_scarce", "swaps_gathered"):
        difference("laurent_optunets", _label, _name, _BEFORE_BURSTS, verdict=Verdict.NOT_TESTED)

# The quick profile's OptuNets (registered after its first run, 2026-11-27; the thresholds were
# set before it).
difference("laurent_optunets", "quick", "swaps_scarce",
           "the quick profile's OptuNets change their ordering at fewer than one step in ten on average (the claims "
           "table gives the share), the paper's direction, but with 3 runs the interval reaches past the bound: "
           "same direction, not significant", verdict=Verdict.SAME_DIRECTION)
difference("laurent_optunets", "quick", "swaps_gathered",
           "within each learning-rate phase the steps that change the ordering are barely more often within 10 steps "
           "of one another than at random (the claims table gives the ratio), and the interval over the 3 runs lies "
           "below twice chance: at this scale the changes are spread over each phase, not gathered in bursts")

# The 8-network run (rerun on 2026-11-26): ordering_freezes in the paper's direction only.
# The 16-network run, rerun on 2026-11-26, tests and holds all six claims.
difference("laurent_optunets", "paper-8nets", "ordering_freezes",
           "over the last tenth of the 60 epochs the 8 OptuNets' net swaps per epoch are a small fraction of those "
           "of the first phase in both permutations (the paper's direction), but the spread between the runs makes "
           "the interval over the 8 runs reach past the registered 0.15: not significant with 8 runs",
           verdict=Verdict.SAME_DIRECTION)

# The paper profile's 256 OptuNets (run on an H100 on 2026-11-26; 231 converged): five claims
# hold; Corollary 1, judged on the whole penalty, fails on 3 networks.
difference("laurent_optunets", "paper", "corollary1_lower_loss",
           "the min-mass rescaling (kernels only, the paper's mass) lowers the kernels' sum of squares of every one "
           "of the 231 converged OptuNets, but it also multiplies the hidden biases, which the authors' weight decay "
           "(and ours) penalises too: in 228 networks the whole penalty falls, in 3 the hidden biases' sum of "
           "squares more than doubles (for the worst, +47.2 against -23.2 for the kernels). There the kernel-only "
           "point cannot witness Corollary 1 (a lower-loss equivalent network exists) nor refute it, and the saved "
           "summary keeps no weights to compute the minimiser of the whole penalty: not tested",
           verdict=Verdict.NOT_TESTED)

# The first 768 of the 1,000 OptuNets of the GPU queue's laurent-fig2-1000 (three blocks trained
# on an H200 on 2026-11-29, summarised here; 705 converged): the first run at this scale to keep
# the per-run counts of the MNIST panel's claims. Registered after that run; the thresholds were
# set on 2026-11-27.
difference("laurent_optunets", "paper-768nets", "corollary1_lower_loss",
           "as on the 256 networks of the paper run: the kernel-only min-mass rescaling lowers the kernels' sum of "
           "squares of all 705 converged OptuNets and the whole penalty of 697, but in 8 the hidden biases' sum of "
           "squares grows by more than the kernels' falls (for the worst, +92.8 against -39.7): there the kernel-only "
           "point can neither witness nor refute Corollary 1, and the summary keeps no weights to compute the "
           "minimiser of the whole penalty: not tested", verdict=Verdict.NOT_TESTED)
difference("laurent_optunets", "paper-768nets", "swaps_gathered",
           "the changes of the dense layer's 3 units come in bursts (another change within 10 steps 6.2 times as "
           "often as at random, mean over the 690 runs with two changes or more there), but those of conv_1's 10 "
           "channels only 1.39 times (interval over the 705 runs 1.37 to 1.42), below the registered twice chance: "
           "the claim, read as both permutations, differs; the changes are rare (5.1% of steps for conv_1, "
           "swaps_scarce holds) and, for the channels, spread over each phase rather than gathered")

# The quick profile trains 3 OptuNets (chapter 11 shows their swaps). Until 2026-12-01 both ratios
# were judged by a percentile bootstrap over runs, from 5 runs on (set on 2026-11-29: before it,
# these two read "same direction, not significant" on one CPU and ordering_freezes "opposite
# direction, not significant" on another, from float rounding alone). Since 2026-12-01, after an
# audit of coverage (the bootstrap covered about 85% at a nominal 95% over 5 runs), they are judged
# by the delta-method interval symlib.evaluation.stats.ratio_interval, still from
# mlps.MIN_RATIO_RUNS = 5 runs on, for the same reason.
for _name, _what in (("swaps_in_high_lr_phases", "swaps per step in the last learning-rate phase over the first"),
                     ("ordering_freezes", "net swaps per epoch over the last tenth over the first phase")):
    difference("laurent_optunets", "quick", _name,
               f"the quick profile's 3 OptuNets give the {_what} (the claims table gives the rates), but over 3 runs "
               "float rounding alone turned the ratio's direction between machines, so it is judged from 5 runs on: "
               "not tested at this scale (the paper profile's runs judge it)", verdict=Verdict.NOT_TESTED)
