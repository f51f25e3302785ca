"""Laurent et al. (2024) Sec. 4 and 5.1 at ResNet-18 scale: CIFAR-100 and TinyImageNet.

The OptuNet experiments of :mod:`symlib.experiments.laurent.posteriors` (Table 1's MNIST block)
carried to the paper's other two tasks, for the paper profile on a GPU (the quick profile
never runs them). Registered experiments, one set per task (``cifar100``,
``tiny_imagenet``):

- ``rn18_bank_<task>``: ``rn18_nets`` independently trained ResNet-18 (the reference
  posterior's pool), trained ``rn18_chunk`` at once with the authors' recipe
  (:func:`resnet_train_config`), batch norm in training mode
  (:func:`~symlib.core.resnet.resnet18_apply_train`), the running statistics set afterwards
  from ``rn18_bn_images`` training images (:func:`~symlib.core.resnet.resnet18_running_statistics`).
  The networks are written chunk by chunk to a :func:`weight store <symlib.experiments.weights.open_weights>` of
  memory-mapped ``.npy`` files (1,100 ResNet-18 are 49 GB): a killed run resumes at the
  next chunk, and nothing downstream holds the bank in memory.
- ``rn18_posteriors_<task>``: the method zoo of Table 1 at ResNet-18 scale, each
  ``rn18_samples`` samples written to the weight store: MC dropout on the head's input
  (p = 0.5, at training and test), Bayes by backprop (3 ELBO samples, no weight decay; the
  paper could not train it on TinyImageNet, so it is not run there), SGHMC, SWAG (rank 20,
  20 snapshots, scale 0.1, twice the training epochs), last-layer Kronecker-factored
  Laplace (:func:`~symlib.inference.laplace.last_layer_kfac`: the full Hessian does not
  fit), their multi-mode versions over ``rn18_modes`` networks, and the deep ensemble.
  Every sample whose feature extractor differs from a trained network's (BNN, SGHMC, SWAG)
  gets its batch-norm statistics re-estimated, as SWAG's ``bn_update`` does. Scored by
  the layer-wise MMD (every convolution, norm and the head is a layer; the running
  statistics are state, not parameters, and are left out) to the reference, raw and after
  the paper's NS (unit-norm + sorting, :func:`~symlib.symmetry.remove_symmetries`,
  canonicalised chunk by chunk into the store), and by the Table 1 metrics on
  ``rn18_n_eval`` test images and at most as many OOD images (:func:`ood_images`): SVHN's
  test set for CIFAR-100 (the paper's fixed 10,000 images), Textures (DTD, all 5,640
  images of its three subsets at 64x64, :func:`~symlib.data.load_textures`) for
  TinyImageNet.
- ``rn18_collapse_<task>``: Sec. 5.1, Fig. 3 (CIFAR-100 vs SVHN) and App. D.2, Fig. 8
  (TinyImageNet vs Textures): the mutual information of two-member ensembles of bank
  networks in and out of distribution.

Missing data raise the data module's :class:`~symlib.data.DataNotFoundError` (what was
searched, and how to get the files). Not reproduced: min-mass and re-basin NS variants
(the OptuNet chapter's "beyond the paper"; at this scale they would dominate the run),
the authors' scale-adapted SGHMC, and BNN's KL weight (App. B.1: "We weigh the KLD with a
coefficient", whose value it does not give; ours is 1, the ELBO's).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.experiments.judging.claims import Evidence, claim, not_tested, untrained_limit
from symlib.experiments.judging.thresholds import threshold
from symlib.experiments.laurent.collapse import (collapse_pairs, collapse_summary, correlation_evidence,
                                                 ood_more_dispersed, ood_variance_larger)
from symlib.experiments.laurent.posterior_claims import (ensemble_closest, in_regime, multi_mode_better_ood,
                                                         multi_mode_closer, multi_mode_higher_mi, regime_gate,
                                                         single_mode_better_ece)
from symlib.experiments.laurent.posteriors import (BNN_PRIOR_STD, MULTI, SINGLE, TABLE1_COLUMNS, ZOO_GROUPS, ZOO_KEYS,
                                                   ZooMethod, sample_groups, uncertainty_metrics, zoo_step)
from symlib.experiments.profiles import Profile
from symlib.experiments.recipes import StepDecay, cosine_sgd, ramp_sgd, step_sgd
from symlib.experiments.registry import register, run
from symlib.experiments.weights import create_weights, open_weights, resume_weights, store_dir, write_weights

#: the ResNet-18 tasks: classes, the image side, the OOD set (:func:`ood_images`)
#: and the authors' recipe (App. B.1; TinyImageNet's weight decay is lost from the paper's
#: text, 5e-4 is ours)
TASKS = {
    "cifar100": {"classes": 100, "side": 32, "ood": "svhn", "learning_rate": 0.1, "nesterov": True,
                 "schedule": "step", "weight_decay": 5e-4, "epochs_field": "rn18_epochs_cifar100"},
    "tiny_imagenet": {"classes": 200, "side": 64, "ood": "textures", "learning_rate": 0.2, "nesterov": False,
                      "schedule": "cosine", "weight_decay": 5e-4, "epochs_field": "rn18_epochs_tiny_imagenet"},
}
#: Table 1 of Laurent et al. (2024), ResNet-18 blocks (``None``: "/", not run by the authors):
#: method -> (MMD, NS, Acc, ECE, Brier, AUPR, FPR95, ID MI, OOD MI)
TABLE1 = {
    "cifar100": {
        "Dropout": (4.5, 7.5, 69.3, 12.1, 44.3, 80.1, 64.0, 6.0, 9.6),
        "BNN": (9.0, 10.2, 57.6, 21.8, 62.5, 81.7, 62.6, 0.8, 2.2),
        "SGHMC": (7.5, 7.9, 69.3, 4.3, 41.5, 87.5, 41.4, 0.0, 0.1),
        "SWAG": (6.7, 7.2, 66.7, 1.7, 43.8, 30.7, 17.1, 2.7, 14.7),
        "Laplace": (5.7, 7.0, 70.7, 1.4, 40.0, 84.5, 40.6, 31.3, 70.6),
        "multi-Dropout": (0.7, 4.5, 75.5, 4.8, 64.2, 93.5, 23.7, 23.8, 77.0),
        "multi-BNN": (6.1, 5.6, 66.3, 1.3, 45.6, 91.0, 30.9, 44.5, 110.4),
        "multi-SWAG": (5.0, 5.4, 68.4, 2.3, 42.1, 97.9, 17.1, 7.5, 33.0),
        "multi-Laplace": (0.6, 4.3, 75.2, 7.8, 35.2, 95.1, 20.1, 50.5, 128.3),
        "DE": (0.0, 0.0, 75.9, 2.3, 33.3, 97.1, 16.1, 26.5, 90.1),
    },
    "tiny_imagenet": {
        "Dropout": (9.5, 4.9, 56.4, 14.2, 60.3, 70.8, 87.6, 9.5, 13.5),
        "BNN": (None,) * 9,
        "SGHMC": (9.8, 5.3, 54.4, 2.3, 58.9, 78.1, 74.4, 0.1, 0.2),
        "SWAG": (9.1, 3.9, 61.7, 10.0, 51.8, 84.6, 66.7, 3.3, 9.0),
        "Laplace": (5.5, 6.1, 29.7, 7.4, 81.3, 62.3, 82.3, 211.7, 254.8),
        "multi-Dropout": (4.3, 1.8, 65.3, 10.5, 48.2, 90.9, 57.7, 41.9, 93.2),
        "multi-BNN": (None,) * 9,
        "multi-SWAG": (6.7, 5.4, 64.8, 2.3, 46.6, 98.4, 53.6, 20.5, 55.2),
        "multi-Laplace": (0.5, 3.1, 34.4, 13.0, 79.3, 64.4, 77.2, 227.4, 267.2),
        "DE": (0.0, 0.0, 65.4, 8.5, 47.3, 94.2, 41.6, 44.7, 108.5),
    },
}

#: App. B.4, ResNet-18 blocks: method -> (MMD median, mean, max, NS median, mean, max)
APPENDIX_B4 = {
    "cifar100": {
        "Dropout": (4.5, 4.6, 7.2, 7.4, 7.5, 12.0), "BNN": (9.0, 9.2, 14.6, 10.0, 10.2, 16.0),
        "SGHMC": (7.5, 7.3, 11.0, 7.9, 8.0, 13.0), "SWAG": (6.7, 7.0, 11.2, 7.2, 7.5, 12.3),
        "Laplace": (5.7, 6.0, 9.7, 7.0, 7.2, 11.7), "multi-Dropout": (0.7, 0.7, 1.2, 4.4, 4.5, 7.5),
        "multi-BNN": (6.1, 6.3, 10.6, 5.6, 5.8, 10.0), "multi-SWAG": (5.0, 5.2, 8.4, 5.4, 5.6, 9.2),
        "multi-Laplace": (0.6, 0.6, 1.0, 4.3, 4.4, 7.2), "DE": (0.0,) * 6,
    },
    "tiny_imagenet": {
        "Dropout": (9.5, 9.6, 15.0, 4.9, 5.0, 7.8), "BNN": (None,) * 6,
        "SGHMC": (9.8, 10.0, 15.7, 5.3, 5.2, 7.9), "SWAG": (9.1, 9.5, 15.6, 5.4, 5.6, 9.5),
        "Laplace": (5.5, 5.8, 9.6, 6.1, 6.3, 10.1), "multi-Dropout": (4.3, 4.4, 7.4, 1.8, 1.8, 3.0),
        "multi-BNN": (None,) * 6, "multi-SWAG": (6.7, 6.9, 11.3, 3.9, 4.2, 7.3),
        "multi-Laplace": (0.6, 0.6, 9.9, 3.1, 3.2, 5.3), "DE": (0.0,) * 6,
    },
}

#: the settings of the methods at ResNet-18 scale (App. B.1; shared notes): last-layer dropout
#: rate; BNN's ELBO samples, and its SGD (App. B.1: "with SGD for 150 epochs, with a starting
#: learning rate of 0.01, which we decay once after 80 epochs": at 80/150 of its epochs, by a
#: factor of ours, as the paper gives none, without momentum, as it names none), its prior
#: (Blitz's default, N(0, 0.1^2), as for the OptuNets) and its initial sigma (ours); SWAG's rank,
#: snapshots and scale; SGHMC's step size, friction and minibatch steps between momentum
#: refreshes: plain SGHMC at a step of ours (the OptuNet zoo runs the authors' scale-adapted
#: sampler, :func:`~symlib.experiments.laurent.posteriors.sghmc_config`; not measured at this scale)
SETTINGS = {"dropout_rate": 0.5, "bnn_num_mc": 3, "bnn_learning_rate": 0.01, "bnn_decay_at": 80 / 150,
            "bnn_decay_factor": 0.1, "bnn_std_init": 1e-3, "swag_rank": 20, "swag_snapshots": 20, "swag_scale": 0.1,
            "sghmc_step_size": 1e-3, "sghmc_friction": 0.05, "sghmc_momentum_refresh": 50, "batch_size": 128}

#: the MMD variants computed at this scale (the paper's two)
VARIANTS = ("MMD", "NS")
#: networks canonicalised (NS) or refreshed at a time
CHUNK = 32


def methods_of(task: str) -> tuple[str, ...]:
    """Table 1's rows run for ``task`` (no BNN on TinyImageNet, as in the paper)."""
    skip = ("BNN", "multi-BNN") if task == "tiny_imagenet" else ()
    return tuple(m for m in SINGLE + MULTI if m not in skip)


# ------------------------------------------------------------------ data


def resnet_data(profile: Profile, task: str, ood: bool = True) -> dict[str, Any]:
    """The task's training and test images, standardised per channel with the training
    set's mean and std, and the OOD images standardised the same way.

    Args:
        profile: the run profile (``rn18_n_train``: the first training images, 0 for all;
            ``rn18_n_eval``: test and OOD images).
        task: a key of :data:`TASKS`.
        ood: load the OOD images too (their dataset must then be present).

    Returns:
        ``x_train`` float32 NHWC, ``y_train`` int32, ``x_test``, ``y_test``, ``x_ood``
        (:func:`ood_images`; only with ``ood``), ``mean`` and ``std``.

    Raises:
        DataNotFoundError: from :mod:`symlib.data` when a dataset is not present and cannot
            be downloaded (it says what was searched and where to get the files).
    """
    from symlib import data

    if task == "cifar100":
        (xtr, ytr), (xte, yte) = data.load_cifar100("train"), data.load_cifar100("test")
    elif task == "tiny_imagenet":
        (xtr, ytr), (xte, yte) = data.load_tiny_imagenet("train"), data.load_tiny_imagenet("val")
    else:
        raise ValueError(f"unknown task {task!r}; expected one of {list(TASKS)}")
    n, m = profile.rn18_n_train or len(xtr), profile.rn18_n_eval
    xtr, ytr = xtr[:n], ytr[:n]
    mean = xtr.reshape(-1, 3).mean(0, dtype=np.float64) / 255.0
    std = xtr.reshape(-1, 3).std(0, dtype=np.float64) / 255.0
    std = np.where(std > 0, std, 1.0)
    scale = lambda x: ((x.astype(np.float32) / 255.0 - mean) / std).astype(np.float32)  # noqa: E731
    out = {"x_train": scale(xtr), "y_train": ytr.astype(np.int32), "x_test": scale(xte[:m]),
           "y_test": yte[:m].astype(np.int32), "mean": mean, "std": std}
    return {**out, "x_ood": scale(ood_images(task, m))} if ood else out


def ood_images(task: str, m: int) -> np.ndarray:
    """The task's OOD images, at most ``m`` of them, as :mod:`symlib.data` loads them.

    SVHN (CIFAR-100's): the test set, its first ``m`` images (the paper's "fixed set of
    10,000"). Textures (TinyImageNet's): all 5,640 images of DTD, train, val and test of
    split 1 concatenated as torch-uncertainty does (App. B.3), resized and centre-cropped
    to the task's side by :func:`~symlib.data.load_textures`; its lists are sorted by
    class, so where ``m`` is smaller, ``m`` evenly spaced images are taken.

    Args:
        task: a key of :data:`TASKS`.
        m: the most images wanted (``rn18_n_eval``).

    Returns:
        uint8 ``(min(m, n), side, side, 3)`` for a set of ``n`` images.

    Raises:
        DataNotFoundError: from :mod:`symlib.data` when the set is not present and cannot be
            downloaded.
    """
    from symlib import data

    if TASKS[task]["ood"] == "svhn":
        x, spread = data.load_svhn("test")[0], False
    else:
        x, spread = data.load_textures("all", image_size=TASKS[task]["side"])[0], True
    if len(x) <= m:
        return x
    return x[np.linspace(0, len(x) - 1, m).round().astype(int)] if spread else x[:m]


def resnet_decay(profile: Profile, task: str) -> StepDecay:
    """The learning rate of the ResNet-18 recipe (:func:`resnet_train_config`) in epochs: on
    CIFAR-100 0.1 divided by 10 at epochs 25 and 50 of 75 (at a third and two thirds of other
    lengths); TinyImageNet's cosine annealing has no steps (its initial rate, 0.2).

    Args:
        profile: the run profile (``rn18_epochs_<task>``).
        task: a key of :data:`TASKS`.
    """
    t = TASKS[task]
    if t["schedule"] != "step":
        return StepDecay(t["learning_rate"])
    epochs = getattr(profile, t["epochs_field"])
    milestones = (25, 50) if epochs == 75 else tuple(sorted({epochs // 3, 2 * epochs // 3} - {0}))
    return StepDecay(t["learning_rate"], milestones, 0.1)


def resnet_train_config(profile: Profile, task: str, n_train: int):
    """The authors' recipe for ResNet-18 (App. B.1) as a :class:`~symlib.inference.training.TrainConfig`.

    CIFAR-100: SGD with Nesterov momentum 0.9, learning rate 0.1 divided by 10 at epochs 25
    and 50 of 75 (at a third and two thirds of other lengths; :func:`resnet_decay`), weight decay 5e-4, batch
    128, random crops with 4-pixel padding and horizontal flips. TinyImageNet: SGD with
    momentum 0.9, learning rate 0.2 with cosine annealing, 200 epochs, batch 128, the same
    augmentation, weight decay 5e-4 (the paper's value is lost from its text). Weight
    decay is the prior of the MAP objective
    (:meth:`~symlib.inference.training.TrainConfig.prior_std_for_weight_decay`); the crops
    pad with 0 in standardised units (the mean pixel; PyTorch pads black before
    normalising).

    Args:
        profile: the run profile (``rn18_epochs_<task>``).
        task: a key of :data:`TASKS`.
        n_train: training images (the data the config trains on: the batch is at most
            this, the schedules count its steps).

    Returns:
        The training configuration.
    """
    from symlib.inference.training import TrainConfig

    t = TASKS[task]
    epochs = getattr(profile, t["epochs_field"])
    batch = min(SETTINGS["batch_size"], n_train)
    steps = n_train // batch
    if t["schedule"] == "step":
        opt = step_sgd(resnet_decay(profile, task), steps, 0.9, t["nesterov"])
    else:
        opt = cosine_sgd(t["learning_rate"], epochs * steps, 0.9, t["nesterov"])
    return TrainConfig(epochs, batch, opt, TrainConfig.prior_std_for_weight_decay(t["weight_decay"], n_train),
                       "crop_flip", 0.0)


def bnn_decay(epochs: int) -> StepDecay:
    """BNN's learning rate at ResNet-18 scale over ``epochs`` (App. B.1: SGD from 0.01, "which
    we decay once after 80 epochs" of 150: at the same fraction of ``epochs``, by
    ``SETTINGS["bnn_decay_factor"]``, ours)."""
    return StepDecay(SETTINGS["bnn_learning_rate"], (max(1, round(SETTINGS["bnn_decay_at"] * epochs)),),
                     SETTINGS["bnn_decay_factor"])


def resnet_bnn_config(epochs: int, n_train: int, batch_size: int):
    """BNN's :class:`~symlib.inference.VIConfig` at ResNet-18 scale: :func:`bnn_decay`'s SGD,
    Blitz's default prior (:data:`~symlib.experiments.laurent.posteriors.BNN_PRIOR_STD`), and
    :data:`SETTINGS`' ELBO samples and initial sigma."""
    from symlib.inference import VIConfig

    return VIConfig(epochs=epochs, batch_size=batch_size, optimizer=step_sgd(bnn_decay(epochs), n_train // batch_size),
                    prior_var=BNN_PRIOR_STD ** 2, std_init=SETTINGS["bnn_std_init"], num_mc=SETTINGS["bnn_num_mc"])


def resnet_swag_config(profile: Profile, task: str, n_train: int):
    """Laurent et al.'s SWAG phase after the ResNet-18 recipe (:func:`resnet_train_config`).

    Twice the recipe's epochs with its batch, prior and augmentation, SGD with momentum 0.9
    (no Nesterov), the rate ramped linearly from the rate of the recipe's last epoch
    (:func:`resnet_decay`; TinyImageNet: its initial rate) up to its initial rate over a
    fifth of the recipe's epochs (at least one; none for a one-epoch recipe; the ramp's
    length is not given in the paper), then held; ``min(20, 2 epochs)`` snapshots, rank
    ``min(20, snapshots)``, scale 0.1 (:data:`SETTINGS`).

    Args:
        profile: the run profile (``rn18_epochs_<task>``).
        task: a key of :data:`TASKS`.
        n_train: training images (the data the config trains on).

    Returns:
        The :class:`~symlib.inference.swag.SWAGConfig`.
    """
    from symlib.inference import SWAGConfig

    cfg, decay = resnet_train_config(profile, task, n_train), resnet_decay(profile, task)
    snaps = min(SETTINGS["swag_snapshots"], 2 * cfg.epochs)
    ramp = max(1, cfg.epochs // 5) if cfg.epochs > 1 else 0
    opt = ramp_sgd(float(decay.at_epoch(cfg.epochs - 1)), decay.learning_rate, ramp * (n_train // cfg.batch_size), 0.9)
    return SWAGConfig(2 * cfg.epochs, cfg.batch_size, opt, cfg.prior_std, snaps, min(SETTINGS["swag_rank"], snaps),
                      SETTINGS["swag_scale"], augment=cfg.augment, crop_fill=cfg.crop_fill)


def _rows(stack: dict, start: int, stop: int) -> dict:
    return jax.tree_util.tree_map(lambda a: np.asarray(a[start:stop], np.float32), stack)


def _size(stack: dict) -> int:
    return int(np.shape(jax.tree_util.tree_leaves(stack)[0])[0])


# ------------------------------------------------------------------ training mode


def batch_stats_apply(params, x, key):
    """ResNet-18 in training mode (batch statistics), the ``stochastic_apply`` of the bank."""
    from symlib.core.resnet import resnet18_apply_train

    del key
    return resnet18_apply_train(params, x)


def _train_apply(params, x):
    from symlib.core.resnet import resnet18_apply_train

    return resnet18_apply_train(params, x)


@dataclass(frozen=True)
class LastLayerDropoutTrain:
    """ResNet-18 in training mode with dropout (rate ``rate``) on the head's input, a fresh
    mask per image: the training objective of the MC-dropout networks."""

    rate: float

    def __call__(self, params, x, key):
        from symlib.core.resnet import resnet18_features
        from symlib.inference.dropout import dropout_masks

        f = resnet18_features(params, x, train=True)
        f = f * dropout_masks(key, self.rate, f.shape, f.dtype)
        return f @ params["head"]["kernel"] + params["head"]["bias"]


def refresh_statistics(stack: dict, x: np.ndarray) -> dict:
    """Every network of a stack with its batch-norm running statistics re-estimated on ``x``
    (:func:`~symlib.core.resnet.resnet18_running_statistics`, batches of 128)."""
    from symlib.core.resnet import resnet18_running_statistics

    bs = min(SETTINGS["batch_size"], len(x))
    nets = [resnet18_running_statistics(jax.tree_util.tree_map(lambda a: np.asarray(a[i], np.float32), stack), x,
                                        batch_size=bs) for i in range(_size(stack))]
    return jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(v, np.float32) for v in a]), *nets)


# ------------------------------------------------------------------ the bank


def _bank_config(profile: Profile, task: str) -> dict[str, Any]:
    keys = ("rn18_base_width", "rn18_n_train", "rn18_nets", "rn18_chunk", "rn18_bn_images", TASKS[task]["epochs_field"])
    return {"task": task, **{k: getattr(profile, k) for k in keys}}


def _collapse_config(profile: Profile, task: str) -> dict[str, Any]:
    return {**_bank_config(profile, task), "rn18_n_eval": profile.rn18_n_eval, "pairs": profile.collapse_pairs}


def _init_fn(task: str, width: int):
    from symlib.core.resnet import resnet18_init

    return partial(resnet18_init, num_classes=TASKS[task]["classes"], base_width=width)


def stacked_init(task: str, width: int, key, n: int) -> dict:
    """``n`` ResNet-18 of the task's head and ``width``, initialised from keys split from
    ``key`` one by one (``resnet18_init`` is not ``vmap``-able) and stacked."""
    init = _init_fn(task, width)
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[init(k) for k in jax.random.split(key, n)])


def train_resnets(key, task: str, width: int, n: int, x, y, cfg, stochastic_apply) -> dict:
    """``n`` ResNet-18 trained at once (:func:`~symlib.inference.fit_ensemble`) from
    :func:`stacked_init` with keys split from ``key``, the objective evaluated with
    ``stochastic_apply`` (training mode).

    Returns:
        The stacked trained networks (numpy), running statistics not yet set.
    """
    from symlib.core.resnet import resnet18_apply
    from symlib.inference import Data, Model, fit_ensemble

    init_key, data_key = jax.random.split(key)
    nets = fit_ensemble(data_key, stacked_init(task, width, init_key, n),
                        Model(resnet18_apply, train_apply_fn=stochastic_apply), Data(x, y), cfg).samples
    return jax.tree_util.tree_map(np.asarray, nets)


def resnet_bank(profile: Profile, task: str) -> dict[str, Any]:
    """Train the bank of ``rn18_nets`` ResNet-18 (module docstring), resuming a killed run.

    Args:
        profile: the run profile.
        task: a key of :data:`TASKS`.

    Returns:
        ``test_accuracy`` per network and ``seconds`` of this call's training; the weights
        are in :func:`bank_weights`.
    """
    from symlib.core.resnet import resnet18_apply
    from symlib.evaluation import member_probs

    d = resnet_data(profile, task)
    cfg = resnet_train_config(profile, task, len(d["y_train"]))
    config = _bank_config(profile, task)
    where = store_dir(f"rn18_bank_{task}", config)
    n, chunk, width = profile.rn18_nets, profile.rn18_chunk, profile.rn18_base_width
    template = _init_fn(task, width)(jax.random.key(0))
    store = resume_weights(where)
    if store is None:
        store = create_weights(where, template, n)
    x_bn = d["x_train"][:profile.rn18_bn_images]
    t0 = time.perf_counter()
    for start in range(0, n, chunk):
        done = where / f"done_{start}"
        if done.exists():
            continue
        k = min(chunk, n - start)
        nets = train_resnets(jax.random.fold_in(jax.random.key(21), start), task, width, k,
                             jnp.asarray(d["x_train"]), jnp.asarray(d["y_train"]), cfg, batch_stats_apply)
        write_weights(store, start, refresh_statistics(nets, x_bn))
        done.write_text("")
    (where / "complete").write_text("")
    seconds = time.perf_counter() - t0
    bank = open_weights(where)
    probs = member_probs(bank, d["x_test"], apply_fn=resnet18_apply, batch_size=500)
    acc = np.mean(probs.argmax(-1) == d["y_test"][None], axis=1)
    return {"test_accuracy": acc, "seconds": seconds}


def bank_weights(profile: Profile, task: str) -> dict:
    """The trained bank (running ``rn18_bank_<task>`` if needed) as read-only memmaps."""
    run(f"rn18_bank_{task}", profile, verbose=False)
    return open_weights(store_dir(f"rn18_bank_{task}", _bank_config(profile, task)))


# ------------------------------------------------------------------ the methods


def _post_config(profile: Profile, task: str) -> dict[str, Any]:
    keys = ("rn18_reference", "rn18_samples", "rn18_modes", "rn18_n_eval")
    return {**_bank_config(profile, task), **{k: getattr(profile, k) for k in keys}, "settings": SETTINGS}


def bank_split_resnet(n_nets: int, n_reference: int, n_ensemble: int) -> dict[str, np.ndarray]:
    """The first ``n_reference`` bank networks are the reference posterior, the next
    ``n_ensemble`` the deep ensemble (the authors train every network to the last step and
    keep all of them).

    Raises:
        ValueError: if the bank is too small.
    """
    if n_reference + n_ensemble > n_nets:
        raise ValueError(f"the split needs rn18_reference + rn18_samples = {n_reference + n_ensemble} networks, "
                         f"the bank has {n_nets} (rn18_nets)")
    return {"reference": np.arange(n_reference), "ensemble": np.arange(n_reference, n_reference + n_ensemble)}


@jax.jit
def _features_jit(params, x):
    from symlib.core.resnet import resnet18_features

    return resnet18_features(params, x)


def _features(params, x, batch: int = 500) -> np.ndarray:
    """The head's inputs on ``x``, ``batch`` images at a time (running statistics)."""
    return np.concatenate([np.asarray(_features_jit(params, jnp.asarray(x[i:i + batch])))
                           for i in range(0, len(x), batch)])


def resnet_method_samples(profile: Profile, task: str, bank: dict, split: dict, d: dict,
                          write) -> dict[str, float]:
    """Every method's samples at ResNet-18 scale, handed to ``write(method, stack)`` as
    they come, and its seconds.

    Args:
        profile: the run profile.
        task: a key of :data:`TASKS`.
        bank: the bank's stack (memmaps).
        split: :func:`bank_split_resnet`'s indices.
        d: :func:`resnet_data`.
        write: ``write(method, stack)``, e.g. into a weight store.

    Returns:
        Seconds per method.
    """
    from symlib.inference import (Data, DropoutPosterior, LastLayerLaplace, Model, Samples, SGHMCConfig,
                                  fit_sghmc, fit_swag, fit_vi, sample)
    from symlib.inference.laplace import last_layer_kfac

    x, y = jnp.asarray(d["x_train"]), jnp.asarray(d["y_train"])
    model, data = Model(_train_apply), Data(x, y)
    S, M = profile.rn18_samples, profile.rn18_modes
    cfg = resnet_train_config(profile, task, len(y))
    bs = cfg.batch_size
    x_bn = d["x_train"][:profile.rn18_bn_images]
    ens = split["ensemble"]
    modes = [jax.tree_util.tree_map(lambda a: np.asarray(a[i], np.float32), bank) for i in ens[:M]]
    seconds: dict[str, float] = {}

    def refreshed(draw_fn):  # a sampler whose samples get their batch-norm statistics re-estimated
        return lambda k, p, n: refresh_statistics(jax.tree_util.tree_map(np.asarray, draw_fn(k, p, n)), x_bn)

    rate = SETTINGS["dropout_rate"]

    def dropout(key):
        nets = refresh_statistics(train_resnets(key, task, profile.rn18_base_width, M, x, y, cfg,
                                                LastLayerDropoutTrain(rate)), x_bn)
        return [DropoutPosterior(jax.tree_util.tree_map(lambda a: a[i], nets), rate, "head") for i in range(M)]

    def bnn(key):
        vcfg = resnet_bnn_config(2 * cfg.epochs, len(y), bs)  # the paper's 150 epochs for CIFAR-100's 75
        return [fit_vi(k, m, model, data, vcfg) for k, m in zip(jax.random.split(key, M), modes)]

    def sghmc(key):
        epochs = max(cfg.epochs, -(-2 * S // (len(y) // bs)))  # at least 2 S draws (burn-in: the first half)
        hcfg = SGHMCConfig(step_size=SETTINGS["sghmc_step_size"], epochs=epochs, batch_size=bs, num_samples=S,
                           prior_std=cfg.prior_std, friction=SETTINGS["sghmc_friction"],
                           momentum_refresh=SETTINGS["sghmc_momentum_refresh"])
        draws = fit_sghmc(key, modes[0], model, data, hcfg).samples
        return Samples(refresh_statistics(jax.tree_util.tree_map(np.asarray, draws), x_bn))

    def swag(key):
        scfg = resnet_swag_config(profile, task, len(y))
        return [fit_swag(k, m, model, data, scfg) for k, m in zip(jax.random.split(key, M), modes)]

    def laplace(_):  # last-layer KFAC: a posterior of the head, drawn into copies of the mode
        return [LastLayerLaplace(m, last_layer_kfac(_features(m, d["x_train"]), m["head"]["kernel"], m["head"]["bias"],
                                                    prior_precision=1.0 / cfg.prior_std ** 2), "head") for m in modes]

    zoo = {"dropout": ZooMethod(dropout), "bnn": ZooMethod(bnn, refreshed(sample)), "sghmc": ZooMethod(sghmc),
           "swag": ZooMethod(swag, refreshed(sample)),
           "laplace": ZooMethod(laplace)}
    keys = jax.random.split(jax.random.key(31), ZOO_KEYS)
    for group, method in zoo.items():
        if ZOO_GROUPS[group][0][0] in methods_of(task):
            step = zoo_step(group, method, keys, S, M)
            seconds.update(step["seconds"])
            for name, stack in step["samples"].items():
                write(name, stack)
    write("DE", jax.tree_util.tree_map(lambda a: np.asarray(a[ens], np.float32), bank))
    seconds["DE"] = 0.0
    return seconds


# ------------------------------------------------------------------ scores


def layer_view(stack: dict) -> dict[str, dict]:
    """A stack of ResNet-18 as the MMD's layers: every convolution, norm and the head is a
    layer (``"stage_0/block_0/conv_0"``: its kernel; a norm: its ``scale`` and ``bias``);
    the running statistics (state, not parameters) are left out."""
    from symlib.core.pytree import flatten_dict

    out: dict[str, dict] = {}
    for path, leaf in flatten_dict(stack, "/").items():
        layer, name = path.rsplit("/", 1)
        if name not in ("mean", "var"):
            out.setdefault(layer, {})[name] = leaf
    return out


def canonical_weights(stack: dict, directory: Path) -> dict:
    """The paper's NS form (unit norm + sorting) of every network of ``stack``, computed
    :data:`CHUNK` networks at a time into a weight store at ``directory``; returned as memmaps."""
    from symlib.symmetry import remove_symmetries, resnet18_permutation_spec, resnet18_scaling_spec

    sspec, pspec = resnet18_scaling_spec(), resnet18_permutation_spec()
    n = _size(stack)
    store = create_weights(directory, jax.tree_util.tree_map(lambda a: np.asarray(a[0]), stack), n)
    for start in range(0, n, CHUNK):
        part = _rows(stack, start, min(n, start + CHUNK))
        write_weights(store, start, remove_symmetries(part, sspec, pspec, "unit_norm_sort"))
    (directory / "complete").write_text("")
    return open_weights(directory)


def resnet_posteriors(profile: Profile, task: str) -> dict[str, Any]:
    """Every method's samples, scored against the reference sample (module docstring).

    Args:
        profile: the run profile.
        task: a key of :data:`TASKS`.

    Returns:
        The artifact: ``metrics[method]``,
        ``mmd[variant][method] = {"median", "mean", "max"}``, ``seconds[method]`` and
        ``reference_accuracy``.
    """
    from symlib.core.resnet import resnet18_apply
    from symlib.evaluation import member_probs, posterior_mmd

    bank = bank_weights(profile, task)
    acc = run(f"rn18_bank_{task}", profile, verbose=False).artifact["test_accuracy"]
    split = bank_split_resnet(_size(bank), profile.rn18_reference, profile.rn18_samples)
    d = resnet_data(profile, task)
    where = store_dir(f"rn18_posteriors_{task}", _post_config(profile, task))

    def write(method, stack):
        store = create_weights(where / method, jax.tree_util.tree_map(lambda a: np.asarray(a[0]), stack), _size(stack))
        for start in range(0, _size(stack), CHUNK):
            write_weights(store, start, _rows(stack, start, start + CHUNK))
        (where / method / "complete").write_text("")

    seconds = resnet_method_samples(profile, task, bank, split, d, write)
    methods = methods_of(task)
    reference = jax.tree_util.tree_map(lambda a: a[: profile.rn18_reference], bank)
    canon_ref = canonical_weights(reference, where / "NS-reference")
    metrics, mmd, metrics_jk, groups = {}, {v: {} for v in VARIANTS}, {}, {}
    for name in methods:
        smp = open_weights(where / name)
        p_id = np.asarray(member_probs(smp, d["x_test"], apply_fn=resnet18_apply, batch_size=500))
        p_ood = np.asarray(member_probs(smp, d["x_ood"], apply_fn=resnet18_apply, batch_size=500))
        metrics[name] = uncertainty_metrics(p_id, d["y_test"], p_ood)
        # delete-a-group jackknife of the metrics over the method's independent units (the
        # Sec. 4.3 claims' interval; the MMD is not jackknifed at this scale)
        g = groups[name] = sample_groups(name, p_id.shape[0], profile.rn18_modes)
        reps = [uncertainty_metrics(p_id[g != u], d["y_test"], p_ood[g != u]) for u in np.unique(g)]
        metrics_jk[name] = {k: np.asarray([float(r[k]) for r in reps]) for k in metrics[name]}
        for variant, (ref, s) in (("MMD", (reference, smp)),
                                  ("NS", (canon_ref, canonical_weights(smp, where / f"NS-{name}")))):
            r = posterior_mmd(layer_view(ref), layer_view(s))
            mmd[variant][name] = {"median": r.median, "mean": r.mean, "max": r.max}
    return {"metrics": metrics, "mmd": mmd, "seconds": seconds,
            "reference_accuracy": np.asarray(acc)[split["reference"]], "metrics_jackknife": metrics_jk,
            "sample_groups": groups}


def table1_row(summary: dict[str, Any], method: str) -> list[float | None]:
    """One method's row of Table 1 in the paper's units (percent, MI x 100; MMD and NS as
    our MMD², the median over kernels); ``None`` where a value is missing."""
    mm, me = summary["mmd"], summary["metrics"][method]
    vals = [mm["MMD"][method]["median"], mm["NS"][method]["median"]] + \
           [None if me[k] is None else 100 * me[k] for k in ("acc", "ece", "brier", "aupr", "fpr95", "mi_id", "mi_ood")]
    return vals


def resnet_summary(art: dict[str, Any], task: str) -> dict[str, Any]:
    """The numbers of Table 1 / App. B.4 for a task (JSON-friendly; NaN becomes ``None``)."""
    clean = lambda x: None if x is None or not np.isfinite(x) else float(x)  # noqa: E731
    methods = [m for m in methods_of(task) if m in art["metrics"]]
    summary = {"task": task, "methods": methods, "columns": list(TABLE1_COLUMNS),
               "ood": TASKS[task]["ood"],
               "metrics": {m: {k: clean(x) for k, x in art["metrics"][m].items()} for m in methods},
               "mmd": {v: {m: {k: clean(x) for k, x in art["mmd"][v][m].items()} for m in methods} for v in art["mmd"]},
               "seconds": {m: float(s) for m, s in art["seconds"].items()},
               "reference_size": int(len(art["reference_accuracy"])),
               "reference_accuracy": float(np.mean(art["reference_accuracy"]))}
    summary["table1"] = {m: dict(zip(TABLE1_COLUMNS, table1_row(summary, m))) for m in methods}
    if "metrics_jackknife" in art:
        summary["metrics_jackknife"] = {m: {k: [clean(x) for x in np.asarray(v, float)] for k, v in
                                            art["metrics_jackknife"][m].items()} for m in methods}
        summary["sample_groups"] = {m: int(len(np.unique(art["sample_groups"][m]))) for m in methods}
    return summary


# ------------------------------------------------------------------ Sec. 5.1


def resnet_collapse(profile: Profile, task: str) -> dict[str, Any]:
    """Sec. 5.1 / Fig. 3 (CIFAR-100) and App. D.2 / Fig. 8 (TinyImageNet): the mean over the
    test set of the two-member ensemble's mutual information, for ``collapse_pairs`` pairs
    of bank networks, ID and OOD (:func:`ood_images`).

    Returns:
        ``pairs`` (bank indices), ``mi_id`` and ``mi_ood`` per pair (nats), and
        ``bank_accuracy`` (every bank network's test accuracy, by bank index), the layout
        :func:`~symlib.experiments.laurent.collapse.collapse_summary` reads.
    """
    from symlib.core.resnet import resnet18_apply
    from symlib.evaluation import member_probs, pairwise_mutual_information

    bank = bank_weights(profile, task)
    accuracy = run(f"rn18_bank_{task}", profile, verbose=False).artifact["test_accuracy"]
    d = resnet_data(profile, task)
    pairs = collapse_pairs(_size(bank), profile.collapse_pairs)
    out = {"pairs": pairs, "bank_accuracy": np.asarray(accuracy)}
    for part, x in (("id", d["x_test"]), ("ood", d["x_ood"])):
        out[f"mi_{part}"] = pairwise_mutual_information(member_probs(bank, x, apply_fn=resnet18_apply,
                                                                     batch_size=500), pairs)
    return out


for _task in TASKS:
    register(f"rn18_bank_{_task}", partial(_bank_config, task=_task),
             f"Laurent et al. Sec. 4: a bank of independently trained ResNet-18 on {_task} (GPU; weights memory-mapped)"
             )(partial(resnet_bank, task=_task))
    register(f"rn18_posteriors_{_task}", partial(_post_config, task=_task),
             f"Laurent et al. Table 1, {_task} / ResNet-18: posterior estimates against a reference of independently "
             "trained networks (MMD with and without symmetries, uncertainty metrics; GPU)",
             summary=partial(resnet_summary, task=_task))(partial(resnet_posteriors, task=_task))
#: the figure of each task's functional-collapse panel and its ID / OOD pair, for the registry
COLLAPSE_FIGURES = {"cifar100": "Sec. 5.1 / Fig. 3: CIFAR-100 (ID) vs SVHN (OOD)",
                    "tiny_imagenet": "App. D.2 / Fig. 8: TinyImageNet (ID) vs Textures (OOD)"}
for _task in TASKS:
    register(f"rn18_collapse_{_task}",
             partial(_collapse_config, task=_task),
             f"Laurent et al. {COLLAPSE_FIGURES[_task]}: mutual information of two-member ensembles of bank "
             "ResNet-18 (GPU)", summary=collapse_summary)(partial(resnet_collapse, task=_task))

def resnet_regime_gate(summary: dict[str, Any], task: str) -> list[str]:
    """The regime gate of Table 1's ``task`` block (``gate.laurent_resnet18_regime``): the run's
    deep ensemble against the paper's (:func:`~symlib.experiments.laurent.posterior_claims.regime_gate`)."""
    return regime_gate(summary, TABLE1[task]["DE"][TABLE1_COLUMNS.index("Acc")], "gate.laurent_resnet18_regime",
                       f"{task}, ResNet-18")


# The paper's claims of Sec. 4 and 5.1 hold for every task: the checks of the OptuNet
# experiments, registered again on the ResNet-18 ones (they read the same summary layout),
# each behind its task's regime gate.
for _task in TASKS:
    _gate = partial(resnet_regime_gate, task=_task)
    claim(f"rn18_posteriors_{_task}", "multi_mode_closer", f"Laurent et al. Sec. 4.3, Table 1 ({_task})",
          "multi-mode techniques are closer to the reference posterior (MMD) than their single-mode counterparts "
          "(each method X against multi-X), with and without symmetries")(in_regime(multi_mode_closer, _gate))
    claim(f"rn18_posteriors_{_task}", "ensemble_closest", f"Laurent et al. Table 1 ({_task})",
          "deep ensembles (other networks of the same pool) are the closest to the reference (MMD 0.0)")(
        in_regime(ensemble_closest, _gate))
    for _name, _check, _text in (
            ("single_mode_better_ece", single_mode_better_ece,
             "single-mode techniques often exhibit a better (lower) ECE than multi-mode ones: lower than its "
             "multi-mode counterpart for at least one method"),
            ("multi_mode_better_ood_detection", multi_mode_better_ood,
             "multi-mode techniques outperform the others in OOD detection: higher AUPR and lower FPR95"),
            ("multi_mode_higher_mi", multi_mode_higher_mi,
             "mono-mode methods yield lower in- and out-of-distribution mutual information than multi-mode methods")):
        claim(f"rn18_posteriors_{_task}", _name, f"Laurent et al. Sec. 4.3, Table 1 ({_task})", _text)(
            in_regime(_check, _gate))

# Functional collapse (Sec. 5.1 for CIFAR-100, App. D.2 for TinyImageNet): what the paper says of
# each task's figure. Of Fig. 8 it says only that the dispersion is lower than on SVHN (no ID/OOD
# comparison) and that the correlation is significant, positive and very low.
def collapse_untrained(summary: dict[str, Any], task: str) -> str | None:
    """Why a ResNet-18 collapse summary cannot test the paper's words (statements about
    trained networks): a pair's network at most twice chance (``gate.untrained_accuracy``),
    else None."""
    acc = np.asarray(summary["network_accuracy"], float)
    limit = untrained_limit(float(acc.min()), TASKS[task]["classes"])
    if limit is None:
        return None
    return (f"a network of the pairs has not learned: the lowest test accuracy is {acc.min():.3f} (at most "
            f"{limit:g}, twice chance), and the paper's statements are about trained networks")


def _trained_only(check, key: str, task: str):
    """``check`` behind :func:`collapse_untrained`: not tested whichever way the MI points."""
    def judged(summary: dict[str, Any]) -> Evidence:
        why = collapse_untrained(summary, task)
        return not_tested(threshold(key), why) if why else check(summary)
    return judged


claim("rn18_collapse_cifar100", "ood_more_dispersed", f"Laurent et al. {COLLAPSE_FIGURES['cifar100']}",
      "the pairwise mutual information varies more out of distribution than in distribution ('the variance of "
      "the out-of-distribution MI is higher'); read as: a larger coefficient of variation")(
    _trained_only(ood_more_dispersed, "functional_collapse.ood_more_dispersed", "cifar100"))
claim("rn18_collapse_cifar100", "ood_variance_larger", f"Laurent et al. {COLLAPSE_FIGURES['cifar100']}",
      "the variance of the out-of-distribution MI is higher than that of the in-distribution MI, read literally "
      "(the raw spread)")(_trained_only(ood_variance_larger, "functional_collapse.ood_variance_larger", "cifar100"))
claim("rn18_collapse_cifar100", "no_correlation", f"Laurent et al. {COLLAPSE_FIGURES['cifar100']}",
      "no significant correlation between the in-distribution and the out-of-distribution MI; read as: Pearson's "
      "r below 0.1")(_trained_only(lambda s: correlation_evidence(s, threshold("rn18_collapse.no_correlation")),
                                   "rn18_collapse.no_correlation", "cifar100"))
claim("rn18_collapse_tiny_imagenet", "positive_correlation", f"Laurent et al. {COLLAPSE_FIGURES['tiny_imagenet']}",
      "the in-distribution and the OOD mutual information are positively correlated, significantly, with a very "
      "low coefficient")(_trained_only(
          lambda s: correlation_evidence(s, threshold("rn18_collapse.positive_correlation")),
          "rn18_collapse.positive_correlation", "tiny_imagenet"))
