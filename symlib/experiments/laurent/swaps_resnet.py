"""Laurent et al. (2024), Sec. 5.2, Fig. 4 (right): do the sorted channels of ResNet-18
change places during training?

``rn18_swaps_cifar100`` trains ``rn18_swap_nets`` ResNet-18 on CIFAR-100 with the authors'
recipe (:func:`~symlib.experiments.laurent.posteriors_resnet.resnet_train_config`: the
learning rate divided by 10 after epochs 25 and 50 of 75), ``rn18_chunk`` at once, counting
at every SGD step the pairs of channels of every permutation whose order by their largest
unit-normed weight changed (:func:`~symlib.symmetry.neuron_order.swap_counter`, the
OptuNets' counter of ``laurent_optunets``), and keeping each epoch's sorting statistics.
Each chunk is a step of the artifact cache: a killed run resumes at the next chunk. The
summary is the OptuNets' (:func:`~symlib.experiments.laurent.mlps.swap_summary`), and the
paper's two statements about the right panel are registered on it with the MLPs' checks and
thresholds: the ordering changes mostly while the learning rate is high, and hardly at all
in the last part of training. Paper profile only: it needs the CIFAR-100 archive and a GPU.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np

from symlib.experiments.cache import cached_steps
from symlib.experiments.judging.claims import CLAIMS, Evidence, claim, not_tested, untrained_limit
from symlib.experiments.judging.thresholds import threshold
from symlib.experiments.laurent.mlps import swap_summary
from symlib.experiments.laurent.posteriors_resnet import (TASKS, batch_stats_apply, refresh_statistics, resnet_data,
                                                          resnet_decay, resnet_train_config, stacked_init)
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import register


def _swaps_config(profile: Profile, task: str) -> dict[str, Any]:
    keys = ("rn18_base_width", "rn18_n_train", "rn18_n_eval", "rn18_swap_nets", "rn18_chunk", "rn18_bn_images",
            TASKS[task]["epochs_field"])
    return {"task": task, **{k: getattr(profile, k) for k in keys}}


def train_counting_swaps(key, task: str, width: int, n: int, x, y, cfg) -> tuple[dict, dict]:
    """``n`` ResNet-18 trained at once (:func:`~symlib.inference.fit_ensemble`, batch norm in
    training mode) from :func:`~symlib.experiments.laurent.posteriors_resnet.stacked_init`,
    counting swaps of sorted channels at every step and keeping the sorting statistics at the
    end of every epoch.

    Returns:
        The stacked trained networks (numpy, running statistics not yet set) and the
        observations: ``"step"``, ``(n, epochs, steps, permutations)`` swapped pairs, and
        ``"epoch"``, per permutation ``(n, epochs, channels)`` statistics.
    """
    from symlib.core.resnet import resnet18_apply
    from symlib.inference import Data, Model, fit_ensemble
    from symlib.symmetry.architectures import resnet18_permutation_spec, resnet18_scaling_spec
    from symlib.symmetry.neuron_order import statistics_observer, swap_counter

    sspec, pspec = resnet18_scaling_spec(), resnet18_permutation_spec()
    init_key, data_key = jax.random.split(key)
    post = fit_ensemble(data_key, stacked_init(task, width, init_key, n),
                        Model(resnet18_apply, train_apply_fn=batch_stats_apply), Data(x, y), cfg,
                        observe=swap_counter(sspec, pspec), observe_epoch=statistics_observer(sspec, pspec))
    return jax.tree_util.tree_map(np.asarray, post.samples), post.info["observed"]


def rn18_swaps(profile: Profile, task: str) -> dict[str, Any]:
    """Train ``rn18_swap_nets`` ResNet-18 counting the swaps of their sorted channels
    (module docstring), ``rn18_chunk`` at once, each chunk a cached step.

    Args:
        profile: the run profile (``rn18_*`` settings).
        task: a key of :data:`~symlib.experiments.laurent.posteriors_resnet.TASKS`.

    Returns:
        The artifact: ``swaps`` ``(nets, epochs, steps, permutations)``, ``epoch_stats``
        (per permutation name, ``(nets, epochs, channels)``), ``test_accuracy`` per network
        (running statistics re-estimated on ``rn18_bn_images`` training images), and
        ``perm_names``, ``units``, ``blocks``, ``lr`` (per epoch), ``milestones``.

    Raises:
        ValueError: if ``rn18_swap_nets`` is below 1.
    """
    from symlib.core.resnet import resnet18_apply
    from symlib.evaluation import member_probs
    from symlib.symmetry.architectures import resnet18_permutation_spec

    n, chunk = int(profile.rn18_swap_nets), int(profile.rn18_chunk)
    if n < 1:
        raise ValueError(f"rn18_swap_nets must be at least 1, got {n}")
    d = resnet_data(profile, task, ood=False)
    cfg = resnet_train_config(profile, task, len(d["y_train"]))
    pspec = resnet18_permutation_spec()
    names = list(pspec.perm_names)

    def step(start: int) -> dict[str, Any]:
        nets, seen = train_counting_swaps(jax.random.fold_in(jax.random.key(52), start), task,
                                          profile.rn18_base_width, min(chunk, n - start), d["x_train"],
                                          d["y_train"], cfg)
        nets = refresh_statistics(nets, d["x_train"][:profile.rn18_bn_images])
        probs = member_probs(nets, d["x_test"], apply_fn=resnet18_apply, batch_size=500)
        return {"swaps": np.asarray(seen["step"]), "test_accuracy": np.mean(probs.argmax(-1) == d["y_test"], axis=1),
                "epoch_stats": {name: np.asarray(s) for name, s in zip(names, seen["epoch"])}}

    done = cached_steps(f"rn18_swaps_{task}", _swaps_config(profile, task), list(range(0, n, chunk)), step, label=int)
    decay = resnet_decay(profile, task)
    epochs = getattr(profile, TASKS[task]["epochs_field"])
    stats = {name: np.concatenate([np.asarray(c["epoch_stats"][name]) for c in done]) for name in names}
    return {"swaps": np.concatenate([np.asarray(c["swaps"]) for c in done]),
            "test_accuracy": np.concatenate([np.asarray(c["test_accuracy"]) for c in done]),
            "epoch_stats": stats, "perm_names": np.asarray(names),
            "units": np.asarray([stats[name].shape[-1] for name in names]),
            "blocks": np.asarray([int(pspec.blocks.get(name, 1)) for name in names]),
            "lr": np.asarray([decay.at_epoch(e) for e in range(epochs)]), "milestones": np.asarray(decay.milestones)}


def rn18_swaps_summary(art: dict[str, Any]) -> dict[str, Any]:
    """``test_accuracy`` per network and ``swaps``: the OptuNets' summary of Sec. 5.2
    (:func:`~symlib.experiments.laurent.mlps.swap_summary`) with ``perm_names``, ``units``,
    ``blocks`` and ``lr``, over every network (the claims' gate reads the accuracies)."""
    names = [str(n) for n in np.asarray(art["perm_names"])]
    units, blocks = [int(u) for u in np.asarray(art["units"])], [int(b) for b in np.asarray(art["blocks"])]
    swaps = swap_summary(np.asarray(art["swaps"]), [np.asarray(art["epoch_stats"][n]) for n in names],
                         np.asarray(art["milestones"]), units, blocks)
    return {"test_accuracy": np.asarray(art["test_accuracy"], float).tolist(),
            "swaps": {"perm_names": names, "units": units, "blocks": blocks,
                      "lr": np.asarray(art["lr"], float).tolist(), **swaps}}


def _untrained(summary: dict[str, Any], task: str) -> str | None:
    acc = np.asarray(summary["test_accuracy"], float)
    limit = untrained_limit(float(acc.min()), TASKS[task]["classes"])
    if limit is not None:
        return (f"the ResNet-18 have not learned: the lowest test accuracy is {acc.min():.3f} (at most {limit:g}, "
                "twice chance), and the paper's statements are about trained networks")
    return None


def _gated(check, name: str, task: str):
    def judged(summary: dict[str, Any]) -> Evidence:
        why = _untrained(summary, task)
        return not_tested(threshold(f"laurent.{name}"), why) if why else check(summary)
    return judged


#: the right panel's two statements (Sec. 5.2), judged by the MLPs' checks on the same thresholds
_FIG4_RIGHT = {
    "swaps_in_high_lr_phases": "we see a lot of variation during the phases with a high learning rate (reduced "
                               "after 25 and 50 epochs)",
    "ordering_freezes": "as for the first case, we do not see any particular sign of permutations in the last part "
                        "of the training",
}

for _task in ("cifar100",):
    register(f"rn18_swaps_{_task}", partial(_swaps_config, task=_task),
             f"Laurent et al. Sec. 5.2, Fig. 4 (right): ResNet-18 trained on {_task} with the authors' recipe, "
             "counting swaps of sorted channels at every step (GPU)",
             summary=rn18_swaps_summary)(partial(rn18_swaps, task=_task))
    for _mlp_claim in CLAIMS["laurent_mlps"]:
        if _mlp_claim.name in _FIG4_RIGHT:
            claim(f"rn18_swaps_{_task}", _mlp_claim.name, "Laurent et al. (2024), Sec. 5.2, Fig. 4 (right)",
                  _FIG4_RIGHT[_mlp_claim.name])(_gated(_mlp_claim.check, _mlp_claim.name, _task))
