"""Laurent et al. (2024) Sec. 4: posterior estimates of OptuNet against a reference
posterior of independently trained networks, with and without symmetries (Sec. 5.1,
``functional_collapse`` on the same bank, is :mod:`symlib.experiments.laurent.collapse`).

Registered experiments:

- ``optunet_bank``: ``bank_nets`` OptuNets trained at once, and ``bank_more`` after them (the
  reference posterior's pool).
- ``laurent_posteriors``: the method zoo of Table 1 (MC dropout, Bayes by backprop, SGHMC,
  SWAG, Laplace, their multi-mode versions, deep ensembles), each ``post_samples``
  samples in the network's layout, scored by the layer-wise MMD to the reference sample
  (raw, and after removing symmetries: the paper's "NS" and our variants) and by the
  uncertainty metrics of Table 1 on MNIST (in distribution) and Fashion-MNIST (OOD).

The claims (Sec. 4.3, Table 1; :mod:`symlib.experiments.laurent.posterior_claims`) return
:class:`~symlib.experiments.judging.claims.Evidence` over their independent units: the MMD
orderings and the metric orderings with a delete-a-group jackknife over the reference
networks and each method's units (a multi-mode method's modes, the ensemble's members, a
single-mode method's draws), which ``laurent_posteriors`` computes.

The networks of the bank that pass the authors' convergence rule
(:data:`~symlib.experiments.laurent.optunet.CONVERGED_ACCURACY`) are split in order: the first
``post_reference`` are the reference posterior, the next ``post_samples`` the deep
ensemble (never in the reference: its MMD is not 0 by construction but an estimate of 0);
the first ``post_modes`` ensemble members are the modes of the multi-mode methods, and the
first of them is the mode of the single-mode ones (so a single-mode method's posterior is
the first mode's posterior of its multi-mode version).
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import jax
import numpy as np

from symlib.core.checks import positive_int
from symlib.experiments.cache import cached_steps
from symlib.experiments.laurent.optunet import (CONVERGED_ACCURACY, optunet_accuracies, optunet_data, optunet_decay,
                                              optunet_train_config)
from symlib.experiments.profiles import Profile
from symlib.experiments.recipes import StepDecay, constant_adam, constant_sgd, step_adam
from symlib.experiments.registry import (Blocks, Steps, blocks_of, data_config, load_align_data, pick, register, run,
                                         run_blocks)

if TYPE_CHECKING:
    from symlib.inference import SGHMCConfig

#: Table 1's rows, in the paper's order; ``MULTI`` are the multi-mode estimates and DE.
SINGLE = ("Dropout", "BNN", "SGHMC", "SWAG", "Laplace")
MULTI = ("multi-Dropout", "multi-BNN", "multi-SWAG", "multi-Laplace", "DE")
METHODS = SINGLE + MULTI

#: Table 1 of Laurent et al. (2024), MNIST / OptuNet block, as printed (percent; MMD and NS
#: in the paper's unstated units): method -> (MMD, NS, Acc, ECE, Brier, AUPR, FPR95, ID MI, OOD MI)
TABLE1_MNIST = {
    "Dropout": (15.0, 14.3, 83.3, 33.4, 26.1, 96.4, 98.6, 26.1, 22.2),
    "BNN": (18.8, 17.1, 78.1, 7.4, 30.9, 67.9, 93.7, 0.1, 0.1),
    "SGHMC": (16.7, 17.7, 95.1, 7.6, 2.8, 73.7, 98.4, 4.3, 14.5),
    "SWAG": (16.0, 14.6, 88.3, 17.7, 4.9, 73.4, 68.6, 4.0, 8.7),
    "Laplace": (10.6, 9.5, 87.9, 18.1, 4.8, 48.2, 74.6, 6.2, 5.9),
    "multi-Dropout": (2.1, 2.1, 92.1, 29.2, 36.8, 97.2, 78.2, 36.6, 52.5),
    "multi-BNN": (2.8, 2.5, 86.5, 17.5, 24.4, 96.9, 27.2, 21.1, 52.3),
    "multi-SWAG": (1.8, 1.3, 95.0, 13.1, 17.5, 88.7, 24.6, 27.6, 62.2),
    "multi-Laplace": (1.8, 0.8, 94.8, 12.8, 15.8, 95.4, 32.1, 21.1, 52.2),
    "DE": (0.0, 0.0, 95.3, 10.7, 13.5, 95.7, 12.8, 19.3, 62.6),
}
TABLE1_COLUMNS = ("MMD", "NS", "Acc", "ECE", "Brier", "AUPR", "FPR95", "ID MI", "OOD MI")

#: App. B.4 of the paper, MNIST: method -> (MMD median, mean, max, NS median, mean, max)
APPENDIX_B4_MNIST = {
    "Dropout": (14.9, 14.6, 22.9, 14.3, 14.3, 22.5), "BNN": (18.8, 18.3, 29.5, 17.1, 17.0, 27.4),
    "SGHMC": (16.7, 16.6, 27.8, 17.7, 18.3, 32.2), "SWAG": (15.9, 15.8, 25.9, 14.6, 13.8, 21.6),
    "Laplace": (10.6, 10.5, 19.1, 9.5, 9.4, 16.4), "multi-Dropout": (2.1, 2.3, 4.1, 2.1, 2.0, 3.5),
    "multi-BNN": (2.8, 2.9, 5.8, 2.5, 2.4, 4.3), "multi-SWAG": (1.8, 2.0, 4.1, 1.3, 1.3, 2.5),
    "multi-Laplace": (1.8, 2.0, 4.1, 0.8, 0.8, 1.5), "DE": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
}

#: the symmetry-removal variants of the MMD: the paper's NS and ours (:func:`symlib.symmetry.remove_symmetries`)
NS_VARIANTS = {"NS": "unit_norm_sort", "NS min-mass": "min_mass_sort", "NS re-basin": "rebasin"}

#: Laurent et al.'s settings of the methods (App. B.1; shared notes): dropout rate of the
#: last layer, ELBO samples of Bayes by backprop, SWAG's rank, snapshots and scale, and SGHMC
#: as the MNIST script of the library they ran it from sets it (J. Antorán's
#: Bayesian-Neural-Networks, ``train_SGHMC_MNIST.py`` with ``H_SA_SGHMC``): learning rate,
#: friction, minibatches between momentum refreshes, epochs of scale adaptation (its burn-in),
#: the Gamma hyper-prior's shape and rate and the minibatches between its Gibbs draws, and the
#: epochs between kept draws (its ``sample_freq``); see :func:`sghmc_config`
SETTINGS = {"dropout_rate": 0.2, "bnn_num_mc": 3, "bnn_learning_rate": 1e-3, "bnn_std_init": 1e-3,
            "swag_rank": 20, "swag_snapshots": 20, "swag_scale": 0.1, "swag_learning_rate": 0.04,
            "sghmc_step_size": 1e-2, "sghmc_friction": 0.05, "sghmc_momentum_refresh": 50,
            "sghmc_adapt_epochs": 20, "sghmc_prior_gamma": (10.0, 10.0), "sghmc_prior_refresh": 15,
            "sghmc_keep_every_epochs": 2, "batch_size": 64}


#: the BNN's prior standard deviation: App. B.1, "we use the default priors from Bayesian
#: layers in torch zoo (Blitz)"; Blitz's BayesianLinear and BayesianConv2d default to a scale
#: mixture with prior_sigma_1 = 0.1 and prior_pi = 1, that is N(0, 0.1^2). The KL weight App.
#: B.1 names has lost its value in the text ("a Kullback-Leibler divergence (KLD) of ."): ours
#: is 1, the ELBO's.
BNN_PRIOR_STD = 0.1


def sghmc_config(epochs: int, n_train: int, num_samples: int, prior_std: float) -> SGHMCConfig:
    """The zoo's SGHMC: the authors' scale-adapted sampler at :data:`SETTINGS`, run ``epochs``
    epochs on ``n_train`` images in minibatches of ``SETTINGS["batch_size"]``, keeping
    ``num_samples`` draws.

    The preconditioner adapts for ``SETTINGS["sghmc_adapt_epochs"]`` epochs (at most half the
    run), which are the burn-in; the kept draws end with the last and lie
    ``SETTINGS["sghmc_keep_every_epochs"]`` epochs apart, or closer when the run after the
    adaptation is too short for that (the library keeps the last 100 of its draws saved every
    2 epochs after its 20 of adaptation). ``prior_std`` is where the prior precision starts
    until the hyper-prior's first Gibbs draw, at draw 0.

    Measured 2026-11-30 on the paper profile's 50,000 images from a bank network of 77.5% test
    accuracy (the bank's network 14; 6 epochs, 2 of adaptation, 8 kept draws, 32 s on 2 cores):
    the kept draws are at 80.7% to 83.2%, at the library's learning rate 1e-2. Without the
    preconditioner (plain SGHMC, the sampler here before) that rate left the network at chance
    (10% to 11%) within one epoch, and the step had to shrink to 3.2e-4. The whole paper-profile
    chain from the same network (``sghmc_config(250, 50_000, 100, prior_std)`` with the bank's
    ``prior_std``, key 0; 879 s on 2 cores) kept 100 draws at 86.5% to 89.5% test accuracy
    (median 88.6%; the first five 86.7% to 87.9%, the last five 87.9% to 89.5%), their averaged
    predictive at 89.6% (Table 1's SGHMC: 95.1%, from the authors' better-trained modes).

    Raises:
        ValueError: naming ``epochs`` (fewer than 2: no room for a burn-in), ``n_train`` or
            ``num_samples`` (below 1), or as :func:`~symlib.inference.fit_sghmc` does.
    """
    from symlib.inference import SGHMCConfig

    if positive_int(epochs, "epochs") < 2:
        raise ValueError(f"epochs={epochs}: SGHMC needs at least 2 epochs, its adaptation (burn-in) and its draws")
    steps = positive_int(n_train, "n_train") // SETTINGS["batch_size"]
    adapt = min(SETTINGS["sghmc_adapt_epochs"], epochs // 2)
    thinning = min(SETTINGS["sghmc_keep_every_epochs"] * steps,
                   (epochs - adapt) * steps // positive_int(num_samples, "num_samples"))
    return SGHMCConfig(step_size=SETTINGS["sghmc_step_size"], epochs=epochs, batch_size=SETTINGS["batch_size"],
                       num_samples=num_samples, burn_in=adapt * steps, thinning=thinning, prior_std=prior_std,
                       friction=SETTINGS["sghmc_friction"], momentum_refresh=SETTINGS["sghmc_momentum_refresh"],
                       adapt_epochs=adapt, prior_gamma=SETTINGS["sghmc_prior_gamma"],
                       prior_refresh=SETTINGS["sghmc_prior_refresh"])


# ------------------------------------------------------------------ the bank

#: the seed of the bank's key sequence (:func:`bank_blocks`, :func:`bank_more_blocks`)
BANK_SEED = 4


def bank_config(profile: Profile) -> dict[str, Any]:
    """The part of ``profile`` that decides the OptuNet bank (its cache config): the networks
    trained (:func:`bank_blocks_config`) and how many of them are used."""
    return {**bank_blocks_config(profile), "used": profile.bank_used,
            "more": 0 if profile.bank_used else profile.bank_more}


def bank_blocks_config(profile: Profile) -> dict[str, Any]:
    """The config of the bank's blocks in the cache: the same for every ``bank_used``, so a
    reduction finds the blocks of the whole bank."""
    return {**data_config(profile), "nets": profile.bank_nets, "epochs": profile.bank_epochs,
            "recipe": profile.bank_recipe, "block": profile.bank_block}


def bank_decay(profile: Profile, epochs: int | None = None) -> StepDecay:
    """The learning rate of the bank's recipe (:func:`bank_train_config`) in epochs: the
    authors' (:func:`~symlib.experiments.laurent.optunet.optunet_decay`) or, for
    ``bank_recipe="adam"``, the same halvings from 1e-2.

    Raises:
        ValueError: for another recipe.
    """
    decay = optunet_decay(profile.bank_epochs if epochs is None else epochs)
    if profile.bank_recipe == "laurent":
        return decay
    if profile.bank_recipe == "adam":
        return decay._replace(learning_rate=1e-2)
    raise ValueError(f"bank_recipe must be 'laurent' or 'adam', got {profile.bank_recipe!r}")


def bank_train_config(profile: Profile, n_train: int, epochs: int | None = None):
    """The bank's training recipe: the authors' (``bank_recipe="laurent"``:
    :func:`~symlib.experiments.laurent.optunet.optunet_train_config` with crops) or the quick
    profile's (``"adam"``: the same weight decay, batch and learning-rate halvings, with Adam
    at 1e-2 and no crops).

    Args:
        profile: the run profile.
        n_train: training examples (the data the config trains on: the steps of an epoch).
        epochs: the number of epochs (default: ``profile.bank_epochs``); the learning-rate
            halvings move with it (:func:`bank_decay`).

    Returns:
        The :class:`~symlib.inference.training.TrainConfig`.

    Raises:
        ValueError: for another recipe.
    """
    from symlib.data import standardize

    epochs = profile.bank_epochs if epochs is None else epochs
    if profile.bank_recipe == "laurent":
        return optunet_train_config(n_train, epochs=epochs, crop_fill=standardize(0.0, "mnist"))
    if profile.bank_recipe == "adam":
        cfg = optunet_train_config(n_train, epochs=epochs, augment=None)
        return cfg._replace(optimizer=step_adam(bank_decay(profile, epochs), n_train // cfg.batch_size))
    raise ValueError(f"bank_recipe must be 'laurent' or 'adam', got {profile.bank_recipe!r}")


def bank_blocks(profile: Profile, data: dict[str, np.ndarray] | None = None) -> Blocks:
    """The bank's ``bank_nets`` OptuNets (:func:`bank_train_config`) as blocks of
    ``bank_block`` networks: what :func:`optunet_bank` trains, and what the GPU queue's job
    ``laurent-bank`` trains a block at a time (:mod:`symlib.experiments.gpu_queue`). With
    ``bank_used`` only the first ``bank_used`` networks, in the same blocks with the same keys.

    Args:
        profile: the run profile.
        data: the profile's data as :func:`~symlib.experiments.laurent.optunet.optunet_data`
            gives it (default: loaded here).

    Returns:
        The :class:`~symlib.experiments.registry.Blocks`.

    Raises:
        ValueError: if ``bank_used`` is not 0 or a multiple of ``bank_block`` up to ``bank_nets``.
    """
    return _bank_sequence(profile, data, "optunet_bank", bank_blocks_config(profile), profile.bank_nets,
                          slice(0, profile.bank_nets)).first(profile.bank_used, "bank_used", "bank_block")


def bank_more_blocks(profile: Profile, data: dict[str, np.ndarray] | None = None) -> Blocks:
    """The ``bank_more`` OptuNets that continue the bank (:func:`bank_blocks`), in blocks of
    ``bank_block``: networks ``bank_nets`` to ``bank_nets + bank_more - 1`` of the bank's key
    sequence (``jax.random.split`` of a key into more keys begins with the same keys, so
    network ``i`` is the one a bank of ``bank_nets + bank_more`` would train). What the GPU
    queue's ``laurent-bank-more`` trains when too few of the bank's networks converged.
    Arguments and result as for :func:`bank_blocks`.

    Raises:
        ValueError: if ``bank_more`` is below 1.
    """
    if profile.bank_more < 1:
        raise ValueError(f"bank_more must be at least 1 for the bank's further networks, got {profile.bank_more}")
    n, more = profile.bank_nets, profile.bank_more
    return _bank_sequence(profile, data, "optunet_bank_more", {**bank_blocks_config(profile), "more": more}, n + more,
                          slice(n, n + more))


def _bank_sequence(profile: Profile, data: dict[str, np.ndarray] | None, name: str, config: dict[str, Any],
                   n_keys: int, part: slice) -> Blocks:
    """The networks ``part`` of the first ``n_keys`` of the bank's key sequence, cached as ``name``."""
    from symlib.core.cnn import optunet_apply, optunet_init

    d = optunet_data(profile) if data is None else data
    blocks = blocks_of(name, config, jax.random.key(BANK_SEED), optunet_init, optunet_apply, n_keys, d["x_train"],
                       d["y_train"], bank_train_config(profile, len(d["y_train"])), block_size=profile.bank_block)
    return dataclasses.replace(blocks, init_keys=blocks.init_keys[part], data_keys=blocks.data_keys[part])


@register("optunet_bank", bank_config,
          "Laurent et al. Sec. 4: a bank of independently trained OptuNets (the reference posterior's pool)")
def optunet_bank(profile: Profile) -> dict[str, Any]:
    """Train ``bank_nets`` OptuNets at once and the ``bank_more`` that continue them
    (:func:`bank_more_blocks`), or the first ``bank_used`` of the bank (:func:`bank_blocks`).

    Args:
        profile: the run profile.

    Returns:
        ``params`` (stacked), ``test_accuracy`` per network, ``seconds``.
    """
    d = optunet_data(profile)
    t0 = time.perf_counter()
    # blocks of bank_block networks, each kept in the artifact cache: a killed run resumes
    params, _ = run_blocks(bank_blocks(profile, d))
    if profile.bank_more and not profile.bank_used:
        more, _ = run_blocks(bank_more_blocks(profile, d))
        params = jax.tree_util.tree_map(lambda a, b: np.concatenate([a, b]), params, more)
    params = jax.tree_util.tree_map(np.asarray, params)
    seconds = time.perf_counter() - t0
    return {"params": params, "test_accuracy": optunet_accuracies(params, d), "seconds": seconds}


def bank_split(accuracy: np.ndarray, n_reference: int, n_ensemble: int) -> dict[str, np.ndarray]:
    """Indices of the reference networks and of the deep ensemble among the converged ones.

    Args:
        accuracy: test accuracy of every bank network.
        n_reference: networks in the reference posterior.
        n_ensemble: networks in the deep ensemble.

    Returns:
        ``reference``, ``ensemble`` and ``converged`` index arrays.

    Raises:
        ValueError: if fewer than ``n_reference + n_ensemble`` networks converged.
    """
    converged = np.flatnonzero(np.asarray(accuracy) >= CONVERGED_ACCURACY)
    need = n_reference + n_ensemble
    if len(converged) < need:
        raise ValueError(f"only {len(converged)} of {len(accuracy)} bank networks reach {CONVERGED_ACCURACY:.0%} test "
                         f"accuracy; the split needs {need} (post_reference + post_samples): train more (bank_more), "
                         "or use more of them (bank_used)")
    return {"reference": converged[:n_reference], "ensemble": converged[n_reference:need], "converged": converged}


def take_nets(stack, idx):
    """The networks ``idx`` of a stack (numpy leaves)."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[np.asarray(idx)], stack)


def ood_data(profile: Profile) -> dict[str, np.ndarray]:
    """MNIST test images (in distribution) and Fashion-MNIST test images (OOD), the first
    ``post_n_eval`` of each, standardised with MNIST's statistics as OptuNet sees them."""
    from symlib.core.cnn import as_images
    from symlib.data import standardize

    n = profile.post_n_eval
    d = optunet_data(profile)
    f = load_align_data(profile, "fashion_mnist")  # the shipped subset has fewer training images
    return {"x_id": d["x_test"][:n], "y_id": np.asarray(d["y_test"][:n]),
            "x_ood": np.asarray(as_images(standardize(f["x_test"][:n], "mnist")))}


# ------------------------------------------------------------------ the methods


def single_and_multi(name: str, posteriors: list, sample: Callable, key, n_samples: int, n_modes: int) -> dict:
    """``name`` from the first posterior (``n_samples`` samples) and ``multi-name`` from all
    (``n_samples / n_modes`` each, in mode order)."""
    from symlib.inference import multi_mode_samples

    k1, k2 = jax.random.split(key)
    return {name: sample(k1, posteriors[0], n_samples),
            f"multi-{name}": multi_mode_samples(k2, sample, posteriors, n_samples // n_modes)}


#: Table 1's methods as the zoo fits them, group -> (its names, its slice of the zoo's keys).
#: A group draws its keys from its own slice (the first to fit, the last to sample, as they were
#: once drawn from one shared sequence), so a group loaded from the cache, or skipped, leaves the
#: others' keys unchanged.
ZOO_GROUPS: dict[str, tuple[tuple[str, ...], tuple[int, int]]] = {
    "dropout": (("Dropout", "multi-Dropout"), (0, 2)), "bnn": (("BNN", "multi-BNN"), (2, 4)),
    "sghmc": (("SGHMC",), (4, 5)), "swag": (("SWAG", "multi-SWAG"), (5, 7)),
    "laplace": (("Laplace", "multi-Laplace"), (7, 8))}
#: keys of the zoo's sequence (``jax.random.split(key, ZOO_KEYS)``)
ZOO_KEYS = 16


class ZooMethod(NamedTuple):
    """How one architecture fits one group of the zoo (:func:`zoo_step`).

    Attributes:
        fit: ``fit(key) -> posteriors``: one posterior per mode (a list) for a group with a
            multi-mode variant, else one :class:`~symlib.inference.Samples`; ``key`` is
            None for a group whose slice holds only the sampling key (Laplace, deterministic).
        draw: ``draw(key, posterior, n)``, default :func:`symlib.inference.sample` (e.g. one
            that re-estimates the batch-norm statistics of the draws).
    """

    fit: Callable
    draw: Callable | None = None


def zoo_step(group: str, method: ZooMethod, keys, n_samples: int, n_modes: int) -> dict[str, Any]:
    """One group of the method zoo, the same for every architecture: fit, then draw ``name``
    from the first posterior and ``multi-name`` from all (:func:`single_and_multi`), timed.

    Args:
        group: a key of :data:`ZOO_GROUPS`.
        method: the architecture's :class:`ZooMethod` for it.
        keys: the zoo's ``ZOO_KEYS`` keys; the group takes its slice.
        n_samples: samples per method.
        n_modes: modes of the multi-mode variants.

    Returns:
        ``samples`` (name -> stacked networks, numpy) and ``seconds`` (name -> seconds, the
        group's time shared by its names). Warnings of the fits (Laplace's clipped
        eigenvalues, which are recorded in the posterior) are silenced.
    """
    from symlib.inference import sample

    names, (lo, hi) = pick(ZOO_GROUPS, group, "zoo group")
    ks = list(keys[lo:hi])
    multi = len(names) == 2
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=Warning)
        posteriors = method.fit(ks.pop(0) if len(ks) > int(multi) else None)
        out = (single_and_multi(names[0], posteriors, method.draw or sample, ks[0], n_samples, n_modes) if multi
               else {names[0]: posteriors.samples})
        jax.block_until_ready(out)
    return {"samples": jax.tree_util.tree_map(np.asarray, out),
            "seconds": {n: (time.perf_counter() - t0) / len(names) for n in names}}


def zoo_steps(profile: Profile, bank: dict | None = None, split: dict | None = None,
              d: dict | None = None) -> Steps:
    """Every method group of Table 1 on OptuNet as a step (a
    :class:`~symlib.experiments.registry.Steps` of ``posterior_samples``, one group of
    :data:`ZOO_GROUPS` a step): what :func:`method_samples` runs and what the GPU queue's job
    ``laurent-table1`` runs a group at a time.

    Args:
        profile: the run profile (``post_*``, ``laplace_hessian``, ``laplace_n_data``).
        bank: the ``optunet_bank`` artifact (default: run, or loaded from the cache, here).
        split: :func:`bank_split`'s indices (default: from ``bank``).
        d: the training data (default: :func:`~symlib.experiments.laurent.optunet.optunet_data`).

    Returns:
        The steps; nothing is fitted until a step's ``train`` is called.
    """
    from symlib.core.cnn import optunet_apply, optunet_init
    from symlib.inference import (Data, DropoutPosterior, LaplaceConfig, Model, SWAGConfig, VIConfig,
                                  dropout_apply, fit_ensemble, fit_laplace, fit_modes, fit_sghmc)

    bank = run("optunet_bank", profile, verbose=False).artifact if bank is None else bank
    split = bank_split(bank["test_accuracy"], profile.post_reference, profile.post_samples) if split is None else split
    d = optunet_data(profile) if d is None else d
    x, y = d["x_train"], d["y_train"]
    model, data = Model(optunet_apply), Data(x, y)
    S, M, E = profile.post_samples, profile.post_modes, profile.post_method_epochs
    cfg = bank_train_config(profile, len(y))
    modes = take_nets(bank["params"], split["ensemble"][:M])
    starts = modes if profile.post_warm_start else jax.tree_util.tree_map(
        np.asarray, jax.vmap(optunet_init)(jax.random.split(jax.random.key(7), M)))
    rate = SETTINGS["dropout_rate"]

    def dropout(key):  # M networks trained with last-layer dropout and the bank's recipe: continued from
        # the modes for E epochs when post_warm_start (as BNN, SWAG and SGHMC), else from scratch
        dropout_model = Model(optunet_apply, train_apply_fn=dropout_apply(optunet_apply, rate))
        if profile.post_warm_start:
            nets = fit_ensemble(key, modes, dropout_model, data, bank_train_config(profile, len(y), E)).samples
        else:  # the starts from init_key, the minibatch orders from data_key (as the bank's networks)
            init_key, data_key = jax.random.split(key)
            nets = fit_ensemble(data_key, jax.vmap(optunet_init)(jax.random.split(init_key, M)), dropout_model, data,
                                cfg).samples
        return [DropoutPosterior(take_nets(nets, i), rate) for i in range(M)]

    def bnn(key):
        vcfg = VIConfig(epochs=E, batch_size=SETTINGS["batch_size"],
                        optimizer=constant_adam(SETTINGS["bnn_learning_rate"]),
                        prior_var=BNN_PRIOR_STD ** 2, std_init=SETTINGS["bnn_std_init"], num_mc=SETTINGS["bnn_num_mc"])
        return fit_modes(key, starts, model, data, vcfg)  # every mode in one compiled loop

    def sghmc(key):  # a single chain from the first mode
        return fit_sghmc(key, take_nets(starts, 0), model, data,
                         sghmc_config(profile.post_sghmc_epochs, len(y), S, cfg.prior_std))

    def swag(key):
        snaps, swag_epochs = swag_schedule(E)
        scfg = SWAGConfig(epochs=swag_epochs, batch_size=SETTINGS["batch_size"],
                          optimizer=constant_sgd(SETTINGS["swag_learning_rate"]), prior_std=cfg.prior_std,
                          num_snapshots=snaps, rank=min(SETTINGS["swag_rank"], snaps), scale=SETTINGS["swag_scale"])
        return fit_modes(key, modes, model, data, scfg)

    def laplace(_):
        n = len(y) if profile.laplace_n_data is None else min(profile.laplace_n_data, len(y))
        sub = np.sort(np.random.default_rng(3).permutation(len(y))[:n])  # a random subsample (all: every image)
        lcfg = LaplaceConfig(prior_precision=1.0 / cfg.prior_std ** 2, hessian=profile.laplace_hessian,
                             batch_size=32 if profile.laplace_hessian == "full" else 128, num_data=len(y))
        return [fit_laplace(None, take_nets(modes, i), model, Data(x[sub], y[sub]), lcfg) for i in range(M)]

    zoo = {"dropout": ZooMethod(dropout), "bnn": ZooMethod(bnn), "sghmc": ZooMethod(sghmc), "swag": ZooMethod(swag),
           "laplace": ZooMethod(laplace)}
    keys = jax.random.split(jax.random.key(11), ZOO_KEYS)
    return Steps("posterior_samples", _post_config(profile), list(zoo),
                 lambda label: zoo_step(label, zoo[label], keys, S, M))


#: SWAG's fewest snapshots in the zoo: K snapshots span K - 1 directions around their mean,
#: so two would leave the low-rank part a single direction
SWAG_MIN_SNAPSHOTS = 4


def swag_schedule(epochs: int) -> tuple[int, int]:
    """SWAG's snapshots and epochs when Dropout, BNN and SGHMC run ``epochs``
    epochs: one snapshot per epoch over twice ``epochs``, at least :data:`SWAG_MIN_SNAPSHOTS`
    and at most ``SETTINGS["swag_snapshots"]`` snapshots.

    Returns:
        ``(snapshots, epochs)``.
    """
    snaps = min(SETTINGS["swag_snapshots"], max(SWAG_MIN_SNAPSHOTS, 2 * epochs))
    return snaps, max(snaps, 2 * epochs)


def method_samples(profile: Profile, bank: dict, split: dict, d: dict) -> tuple[dict, dict]:
    """Every method's samples (stacked OptuNet parameters) and its seconds: the deep
    ensemble from the bank, the other methods from :func:`zoo_steps`, one group a step kept
    in the artifact cache (a killed run resumes; steps computed on a lent GPU are found there).

    Args:
        profile: the run profile.
        bank: the ``optunet_bank`` artifact.
        split: :func:`bank_split`'s indices.
        d: the training data (:func:`~symlib.experiments.laurent.optunet.optunet_data`).

    Returns:
        ``(samples, seconds)``, both keyed by method (:data:`METHODS`).
    """
    samples, seconds = {"DE": take_nets(bank["params"], split["ensemble"])}, {"DE": 0.0}
    steps = zoo_steps(profile, bank, split, d)
    for step in cached_steps(steps.name, steps.cache_config, steps.starts, steps.train):
        samples.update(step["samples"])
        seconds.update({n: float(v) for n, v in step["seconds"].items()})
    return {m: jax.tree_util.tree_map(np.asarray, samples[m]) for m in METHODS}, seconds


# ------------------------------------------------------------------ scores


def uncertainty_metrics(probs_id: np.ndarray, y_id: np.ndarray, probs_ood: np.ndarray) -> dict[str, float]:
    """Table 1's metrics of one method from its per-sample probabilities ``(S, n, C)``.

    Returns:
        ``acc``, ``ece``, ``brier``, ``nll`` of the predictive (the mean over samples) on
        the in-distribution set; ``aupr`` and ``fpr95`` (OOD positive); ``mi_id`` and
        ``mi_ood``, the mutual information in nats. Percentages are the caller's business.
    """
    from symlib.evaluation import (accuracy_from_probs, brier, ece, fpr95, mutual_information, nll_from_probs,
                                   ood_aupr)

    p_id, p_ood = probs_id.mean(0), probs_ood.mean(0)
    return {"acc": accuracy_from_probs(p_id, y_id), "ece": ece(p_id, y_id), "brier": brier(p_id, y_id),
            "nll": nll_from_probs(p_id, y_id), "aupr": ood_aupr(p_id, p_ood), "fpr95": fpr95(p_id, p_ood),
            "mi_id": mutual_information(probs_id), "mi_ood": mutual_information(probs_ood)}


def mmd_scores(reference: dict, samples: dict, reference_net: dict, groups: dict | None = None,
               reference_groups: np.ndarray | None = None) -> dict[str, dict[str, float]] | tuple[dict, dict]:
    """The layer-wise MMD of ``samples`` to ``reference``: raw and after each of :data:`NS_VARIANTS`.

    Args:
        reference: the reference sample (stacked OptuNets).
        samples: every method's sample, by method.
        reference_net: the network the re-basin variant matches every sample to.
        groups: optional, per method, the group of each sample (its independent unit: the
            mode of a multi-mode method's sample, else the sample itself); with
            ``reference_groups`` (the group of each reference network) it turns on the
            delete-a-group jackknife.
        reference_groups: see ``groups``.

    Returns:
        ``scores[variant][method] = {"median", "mean", "max"}`` (:class:`~symlib.evaluation.PosteriorMMD`);
        NaN where the variant is undefined: min-mass scaling has no minimiser for a unit
        with no outgoing weight, which MC dropout's samples have. With ``groups``:
        ``(scores, jackknife)``, ``jackknife[variant][method] = {"reference": [median MMD
        without reference group g, for each g], "samples": [median MMD without the
        method's sample group u, for each u]}`` (NaN where undefined).
    """
    from symlib.evaluation import posterior_mmd, posterior_mmd_jackknife
    from symlib.symmetry import optunet_permutation_spec, optunet_scaling_spec, remove_symmetries

    sspec, pspec = optunet_scaling_spec(), optunet_permutation_spec()
    out: dict[str, dict[str, Any]] = {}
    jack: dict[str, dict[str, Any]] = {}
    for variant, method in (("MMD", None), *NS_VARIANTS.items()):
        canon = (lambda s: s) if method is None else (
            lambda s: remove_symmetries(s, sspec, pspec, method, reference=reference_net if method == "rebasin" else None))
        ref = canon(reference)
        out[variant], jack[variant] = {}, {}
        for name, smp in samples.items():
            try:
                c = canon(smp)
                if groups is None:
                    r = posterior_mmd(ref, c)
                else:
                    jk = posterior_mmd_jackknife(ref, c, reference_groups, groups[name])
                    r = jk.full
            except ValueError as e:  # min-mass of a unit whose outgoing weights dropout zeroed: no minimiser
                if "degenerate" not in str(e):
                    raise
                out[variant][name] = {"median": np.nan, "mean": np.nan, "max": np.nan}
                if groups is not None:
                    jack[variant][name] = {"reference": np.full(len(np.unique(reference_groups)), np.nan),
                                           "samples": np.full(len(np.unique(groups[name])), np.nan)}
                continue
            out[variant][name] = {"median": r.median, "mean": r.mean, "max": r.max}
            if groups is not None:
                jack[variant][name] = {"reference": jk.without_x, "samples": jk.without_y}
    return out if groups is None else (out, jack)


def sample_groups(method: str, n: int, modes: int, max_groups: int = 20) -> np.ndarray:
    """The jackknife group of each of a method's ``n`` samples: its mode for a multi-mode
    method (:func:`~symlib.inference.multi_mode_samples` is mode-major), else the sample
    itself (the deep ensemble's members, and the draws of a single-mode method given its
    fitted posterior), gathered in at most ``max_groups`` contiguous groups of independent
    samples (the paper profile's 100 samples in 20 groups of 5)."""
    if method.startswith("multi-") and modes > 1:
        return np.arange(n) // max(1, n // modes)
    return np.arange(n) * min(n, max_groups) // n


#: the reference networks are jackknifed in at most this many groups (all 1,000 of the paper
#: profile one at a time would take a thousand MMDs per method and variant)
REFERENCE_JACKKNIFE_GROUPS = 20


def reference_groups(n: int, groups: int = REFERENCE_JACKKNIFE_GROUPS) -> np.ndarray:
    """Contiguous groups of the ``n`` reference networks (independent of each other), at
    most ``groups`` of them."""
    g = min(n, groups)
    return np.arange(n) * g // n


def _post_config(profile: Profile) -> dict[str, Any]:
    keys = ("post_reference", "post_samples", "post_modes", "post_method_epochs", "post_sghmc_epochs",
            "post_warm_start", "laplace_hessian", "laplace_n_data")
    return {**bank_config(profile), **{k: getattr(profile, k) for k in keys}, "settings": SETTINGS}


@register("posterior_samples", _post_config,
          "Laurent et al. Sec. 4: every posterior estimate of Table 1 as samples of OptuNet, and the reference sample")
def posterior_samples(profile: Profile) -> dict[str, Any]:
    """Every method's samples (:func:`method_samples`) and the bank's split.

    Args:
        profile: the run profile.

    Returns:
        ``samples[method]`` (stacked OptuNets), ``seconds[method]``, ``split`` (bank
        indices: ``reference``, ``ensemble``, ``converged``), ``reference`` (the reference
        sample) and ``reference_accuracy``.
    """
    bank = run("optunet_bank", profile, verbose=False).artifact
    split = bank_split(bank["test_accuracy"], profile.post_reference, profile.post_samples)
    samples, seconds = method_samples(profile, bank, split, optunet_data(profile))
    return {"samples": samples, "seconds": seconds, "split": {k: np.asarray(v) for k, v in split.items()},
            "reference": take_nets(bank["params"], split["reference"]),
            "reference_accuracy": np.asarray(bank["test_accuracy"])[split["reference"]]}


@register("laurent_posteriors", lambda p: {**_post_config(p), "post_n_eval": p.post_n_eval},
          "Laurent et al. Sec. 4 / Table 1: posterior estimates of OptuNet against a reference of independently "
          "trained networks (MMD with and without symmetries, uncertainty metrics)",
          summary=lambda art: posteriors_summary(art))
def laurent_posteriors(profile: Profile) -> dict[str, Any]:
    """Every method's samples (``posterior_samples``), scored against the reference sample.

    Args:
        profile: the run profile.

    Returns:
        The artifact: ``metrics[method]``, ``mmd[variant][method]``, ``seconds[method]``,
        ``split`` and ``reference_accuracy`` (as in ``posterior_samples``).
    """
    from symlib.core.cnn import optunet_apply
    from symlib.evaluation import member_probs

    post = run("posterior_samples", profile, verbose=False).artifact
    ev = ood_data(profile)
    groups = {name: sample_groups(name, int(jax.tree_util.tree_leaves(smp)[0].shape[0]), profile.post_modes)
              for name, smp in post["samples"].items()}
    metrics, metrics_jk = {}, {}
    for name, smp in post["samples"].items():
        p_id = np.asarray(member_probs(smp, ev["x_id"], apply_fn=optunet_apply))
        p_ood = np.asarray(member_probs(smp, ev["x_ood"], apply_fn=optunet_apply))
        metrics[name] = uncertainty_metrics(p_id, ev["y_id"], p_ood)
        # delete-a-group jackknife over the method's independent units (modes or samples)
        g = groups[name]
        reps = [uncertainty_metrics(p_id[g != u], ev["y_id"], p_ood[g != u]) for u in np.unique(g)]
        metrics_jk[name] = {k: np.asarray([float(r[k]) for r in reps]) for k in metrics[name]}
    n_ref = int(jax.tree_util.tree_leaves(post["reference"])[0].shape[0])
    mmd, mmd_jk = mmd_scores(post["reference"], post["samples"], take_nets(post["reference"], 0), groups=groups,
                             reference_groups=reference_groups(n_ref))
    return {"metrics": metrics, "mmd": mmd, "seconds": post["seconds"], "split": post["split"],
            "reference_accuracy": post["reference_accuracy"], "metrics_jackknife": metrics_jk,
            "mmd_jackknife": mmd_jk, "sample_groups": {m: np.asarray(g) for m, g in groups.items()}}


def posteriors_summary(art: dict[str, Any]) -> dict[str, Any]:
    """The numbers of Table 1 / App. B.4 and of the claims (JSON-friendly)."""
    mmd = {v: {m: {k: (None if np.isnan(x) else float(x)) for k, x in s.items()} for m, s in per.items()}
           for v, per in art["mmd"].items()}
    out = {"methods": list(METHODS), "single": list(SINGLE), "multi": list(MULTI),
           "metrics": {m: {k: float(x) for k, x in s.items()} for m, s in art["metrics"].items()},
           "mmd": mmd, "seconds": {m: float(s) for m, s in art["seconds"].items()},
           "reference_size": int(len(art["split"]["reference"])),
           "reference_accuracy": float(np.mean(art["reference_accuracy"]))}
    if "mmd_jackknife" in art:
        def clean(v):
            return None if v is None else [None if not np.isfinite(x) else float(x) for x in np.asarray(v, float)]
        out["mmd_jackknife"] = {v: {m: {k: clean(x) for k, x in per.items()} for m, per in by.items()}
                                for v, by in art["mmd_jackknife"].items()}
        out["metrics_jackknife"] = {m: {k: clean(x) for k, x in per.items()}
                                    for m, per in art["metrics_jackknife"].items()}
        out["sample_groups"] = {m: int(len(np.unique(g))) for m, g in art["sample_groups"].items()}
    return out
