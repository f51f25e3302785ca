"""Xiao et al. (2023), App. A, Table 1 and Fig. 3: the posterior approximations (deep
ensemble, mean-field VI, full-batch HMC and its paper run in pieces), the compact Gaussian
summaries q_d and q_r, and their agreement by number of chains."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from symlib.core.models import mlp_apply, mlp_init
from symlib.experiments import cache
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import (Steps, data_config, load_bnn_data, map_train_config, mlp_config, register,
                                        run)
from symlib.inference.hmc import SAMPLER_VERSION
from symlib.experiments.xiao.results import CompactResult, EnsembleRun, HMCRun, VIRun, runs_in_order
from symlib.experiments.xiao.settings import PRUNE_FRACTIONS

#: the MLP initialiser, compiled once per layout: the initial means of the VI fits here
_mlp_init = jax.jit(mlp_init, static_argnums=1)



# ---------------------------------------------------------------------------------------
# Posterior approximations (App. A): ensemble, VI, HMC
# ---------------------------------------------------------------------------------------

def _ensemble_config(profile: Profile) -> dict[str, Any]:
    return {**mlp_config(profile), "ensemble_members": profile.ensemble_members, "bnn_n_train": profile.bnn_n_train,
            "bnn_epochs": profile.bnn_epochs}


def _setup(profile: Profile, d: Mapping[str, Any]) -> dict[str, int]:
    """The network and data a posterior approximation saw: its ``hidden`` width and ``n_train``
    training images (what ``gate.xiao_mlp_setup`` compares with Table 1's)."""
    return {"hidden": int(profile.hidden), "n_train": int(len(d["x_train"]))}


def _predictive_summary(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {**{k: float(v) for k, v in res["test"].items()}, **res["setup"]}
    if "test_probs" in res:
        out["n_test"] = int(np.asarray(res["test_probs"]).shape[0])
    return out


def _test_metrics(probs: np.ndarray, y: np.ndarray) -> dict[str, float]:
    probs = np.asarray(probs, np.float64)
    return {"accuracy": float(np.mean(probs.argmax(1) == y)),
            "nll": float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, None))))}


def _fit_mlp_ensemble(profile: Profile, d: Mapping[str, Any], key: jax.Array, members: int):
    """``members`` MLPs trained at once (:func:`symlib.inference.fit_ensemble`) from ``key``:
    every member has its own initialisation and minibatch order
    (:func:`symlib.inference.ensembles.member_keys`)."""
    from symlib.inference import Data, Model, fit_ensemble
    from symlib.inference.ensembles import member_keys

    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    cfg = map_train_config(profile)._replace(epochs=profile.bnn_epochs)
    init_keys, data_keys = member_keys(key, members)
    starts = jax.vmap(lambda k: mlp_init(k, sizes))(init_keys)
    return fit_ensemble(data_keys, starts, Model(mlp_apply), Data(d["x_train"], d["y_train"]), cfg)


def _train_ensembles(profile: Profile, d: Mapping[str, Any], key: jax.Array, ensembles: int) -> list[Any]:
    """``ensembles`` independent deep ensembles of ``profile.ensemble_members`` MLPs, trained at
    once from ``key`` (every member has its own initialisation and minibatch order)."""
    m = profile.ensemble_members
    params = jax.device_get(_fit_mlp_ensemble(profile, d, key, m * ensembles).samples)
    return [jax.tree_util.tree_map(lambda a, i=i: a[i * m:(i + 1) * m], params) for i in range(ensembles)]


@register("ensemble", _ensemble_config, "deep ensemble: K MAP/Adam members trained at once (Xiao et al. App. A)",
          summary=_predictive_summary, result=EnsembleRun)
def ensemble(profile: Profile) -> dict[str, Any]:
    """Train ``ensemble_members`` MLPs at once on the ``bnn_n_train`` examples.

    Args:
        profile: the run profile.

    Returns:
        The artifact: ``params`` (stacked), ``epoch_loss``, ``test_probs``, ``test`` and ``setup``
        (hidden width and training images).
    """
    from symlib.evaluation.predictive import predict_from_samples

    d = load_bnn_data(profile)
    post = _fit_mlp_ensemble(profile, d, jax.random.key(0), profile.ensemble_members)
    probs = predict_from_samples(post.samples, d["x_test"], apply_fn=mlp_apply)
    return {"params": jax.device_get(post.samples), "epoch_loss": np.asarray(post.info["epoch_loss"]),
            "test_probs": np.asarray(probs), "test": _test_metrics(probs, d["y_test"]), "setup": _setup(profile, d)}


def _vi_config(profile: Profile) -> dict[str, Any]:
    keys = ("vi_epochs", "vi_batch_size", "vi_learning_rate", "vi_std_init", "mc_samples")
    return {**data_config(profile), "hidden": profile.hidden, "prior_std": profile.prior_std,
            "bnn_n_train": profile.bnn_n_train, **{k: getattr(profile, k) for k in keys}}


def _fit_vi(profile: Profile, d: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """One mean-field VI fit of the MLP (training key ``2 seed``, predictive key ``2 seed + 1``)."""
    from symlib.evaluation.predictive import predict_from_gaussian
    from symlib.experiments.recipes import constant_adam
    from symlib.inference import Data, Model, VIConfig, fit_vi

    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    init_key, fit_key = jax.random.split(jax.random.key(2 * seed))
    config = VIConfig(epochs=profile.vi_epochs, batch_size=profile.vi_batch_size,
                      optimizer=constant_adam(profile.vi_learning_rate), prior_var=profile.prior_std**2,
                      std_init=profile.vi_std_init)
    q = fit_vi(fit_key, _mlp_init(init_key, tuple(sizes)), Model(mlp_apply), Data(d["x_train"], d["y_train"]),
               config)
    probs = predict_from_gaussian(jax.random.key(2 * seed + 1), q.mean, q.std, d["x_test"], profile.mc_samples,
                                  apply_fn=mlp_apply)
    return {"mu": jax.device_get(q.mean), "sigma": jax.device_get(q.std),
            "elbo_history": np.asarray(q.info["elbo"]), "test_probs": np.asarray(probs),
            "test": _test_metrics(probs, d["y_test"]), "setup": _setup(profile, d)}


@register("vi", _vi_config, "mean-field Gaussian VI (Bayes by backprop, Flax NNX) of the MLP",
          summary=_predictive_summary, result=VIRun)
def vi(profile: Profile) -> dict[str, Any]:
    """Fit mean-field Gaussian VI to the ``bnn_n_train`` examples (seed 0).

    Args:
        profile: the run profile.

    Returns:
        The artifact: ``mu``, ``sigma``, ``elbo_history``, ``test_probs``, ``test`` and ``setup``.
    """
    return _fit_vi(profile, load_bnn_data(profile), seed=0)


def _hmc_config(profile: Profile) -> dict[str, Any]:
    keys = ("bnn_n_train", "hmc_chains", "hmc_step_size", "hmc_adapt", "hmc_leapfrog", "hmc_burnin",
            "hmc_samples", "hmc_thin")
    return {**data_config(profile), "hidden": profile.hidden, "prior_std": profile.prior_std,
            **{k: getattr(profile, k) for k in keys}}


@dataclass(frozen=True)
class HMCBudget:
    """The HMC run of a profile, read from its fields (the one place that states it).

    Attributes:
        images: training images the posterior conditions on (``bnn_n_train``).
        chains: independent chains (``hmc_chains``), each from its own initialisation.
        samples_per_chain: kept samples per chain (``hmc_samples``).
        warmup: burn-in (warm-up) iterations per chain, step size adapted if ``adapt``.
        thin: iterations per kept sample.
        leapfrog: leapfrog steps per iteration.
        adapt: whether the step size adapts during warm-up.
    """

    images: int
    chains: int
    samples_per_chain: int
    warmup: int
    thin: int
    leapfrog: int
    adapt: bool

    @property
    def samples(self) -> int:
        """Kept samples over all chains."""
        return self.chains * self.samples_per_chain

    @property
    def gradients(self) -> int:
        """Full-batch gradient evaluations over all chains (warm-up included)."""
        return self.chains * (self.warmup + self.samples_per_chain * self.thin) * self.leapfrog

    def __str__(self) -> str:
        return (f"full-batch HMC on {self.images:,} images of the training set: {self.chains} chains x {self.samples_per_chain:,} "
                f"kept samples = {self.samples:,} samples (one every {self.thin} iterations) after {self.warmup:,} "
                f"warm-up iterations per chain{' (step size adapted)' if self.adapt else ''}, {self.leapfrog} leapfrog "
                f"steps per iteration, about {_about(self.gradients)} full-batch gradients")


def _about(n: int) -> str:
    """``"8 million"`` or ``"11,200"``."""
    return f"{n / 1e6:.2g} million" if n >= 1e6 else f"{n:,}"


def hmc_budget(profile: Profile) -> HMCBudget:
    """The HMC budget of ``profile`` (images, chains, kept samples, warm-up), from its
    ``bnn_n_train`` and ``hmc_*`` fields; ``str()`` of it is the sentence the manifest,
    the chapters and ``book/running.md`` show. The paper (App. A) keeps 1,000 samples after
    600 burn-in epochs, one every 10, of 500 leapfrog steps; it does not give its chains.

    Args:
        profile: the run profile.

    Returns:
        The :class:`HMCBudget`.
    """
    return HMCBudget(images=profile.bnn_n_train, chains=profile.hmc_chains, samples_per_chain=profile.hmc_samples,
                     warmup=profile.hmc_burnin, thin=profile.hmc_thin, leapfrog=profile.hmc_leapfrog,
                     adapt=bool(profile.hmc_adapt))


def hmc_run_dir(profile: Profile) -> Path:
    """Where the HMC chains of ``profile`` are written chunk by chunk (and resumed from).

    The folder is keyed by the experiment's config and ``SAMPLER_VERSION`` only, not by
    the code version, so editing unrelated code does not orphan finished chains.

    Args:
        profile: the run profile.

    Returns:
        ``<cache dir>/hmc_chains-<key>``.
    """
    key = cache.config_key("hmc", {**_hmc_config(profile), "sampler_version": SAMPLER_VERSION})
    return cache.cache_dir() / f"hmc_chains-{key}"


def _hmc_summary(res: dict[str, Any]) -> dict[str, Any]:
    out = _predictive_summary(res)
    out.update({k: np.asarray(v).tolist() for k, v in res["diagnostics"].items()})
    return out


def _hmc_setup(profile: Profile, chains: int, samples: int):
    """The data, HMC config and initial positions (one per chain, from key 0) of the ``hmc``
    experiment, with ``chains`` x ``samples`` kept samples."""
    from symlib.inference.hmc import HMCConfig

    d = load_bnn_data(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    cfg = HMCConfig(step_size=profile.hmc_step_size, num_leapfrog=profile.hmc_leapfrog, num_burnin=profile.hmc_burnin,
                    num_samples=samples, thin=profile.hmc_thin, num_chains=chains, adapt_step_size=profile.hmc_adapt)
    inits = [mlp_init(k, sizes) for k in jax.random.split(jax.random.key(0), chains)]
    init = jax.tree_util.tree_map(lambda *a: jax.numpy.stack(a), *inits)
    return d, cfg, init


def _hmc_target(profile: Profile, d: Mapping[str, Any]):
    """The ``hmc`` experiment's log density (:func:`~symlib.inference.fit_hmc`'s for the same
    data and prior), for the runs that drive the sampler themselves."""
    from symlib.inference.hmc import make_logdensity

    return make_logdensity(d["x_train"], d["y_train"], prior_var=profile.prior_std**2, apply_fn=mlp_apply)


@register("hmc", _hmc_config, "full-batch HMC (BlackJAX) on the BNN posterior, chains written to disk and resumable",
          summary=_hmc_summary, result=HMCRun)
def hmc(profile: Profile) -> dict[str, Any]:
    """Full-batch HMC on the ``bnn_n_train`` examples.

    Chains start from independent random initialisations; samples stay in
    :func:`hmc_run_dir` (load them with :func:`hmc_samples`).

    Args:
        profile: the run profile.

    Returns:
        The artifact: per-iteration ``stats``, ``step_size``, ``test_probs``, ``test``, ``setup`` and
        ``diagnostics``.
    """
    from symlib.evaluation.predictive import predict_from_samples
    from symlib.inference import Data, Model, fit_hmc
    from symlib.inference.diagnostics import function_space_diagnostics

    d, cfg, init = _hmc_setup(profile, profile.hmc_chains, profile.hmc_samples)
    post = fit_hmc(jax.random.key(1), init, Model(mlp_apply), Data(d["x_train"], d["y_train"]), cfg,
                   prior_var=profile.prior_std**2, out_dir=hmc_run_dir(profile), init_per_chain=True)
    result, samples = post.info, post.samples
    flat = jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), samples)  # (chains * samples, ...)
    probs = predict_from_samples(flat, d["x_test"], apply_fn=mlp_apply)
    diag = function_space_diagnostics(samples, d["x_test"], d["y_test"], apply_fn=mlp_apply)
    return {"stats": {k: np.asarray(v) for k, v in result.stats.items()}, "step_size": np.asarray(result.step_size),
            "test_probs": np.asarray(probs), "test": _test_metrics(probs, d["y_test"]), "setup": _setup(profile, d),
            "diagnostics": {"mean_acceptance": result.mean_acceptance, "num_divergences": result.num_divergences,
                            **{f"{stat}_{q}": np.asarray(diag[q][stat]) for q in ("test_loglik", "true_class_prob")
                               for stat in ("rhat", "ess")}}}


def hmc_samples(profile: Profile) -> dict[str, Any]:
    """The kept HMC samples of ``profile`` (runs the experiment first if needed).

    Args:
        profile: the run profile.

    Returns:
        A parameter tree with leading ``(chains, samples)`` axes, read from disk.
    """
    from symlib.inference.hmc import load_samples

    run("hmc", profile)
    return load_samples(hmc_run_dir(profile))


def weight_rhat(samples: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """R-hat of every kernel weight of HMC samples (each chain stays in its own permutation mode,
    so in weight space R-hat is large even for chains that mixed in function space).

    Args:
        samples: layer -> ``{"kernel": (chains, samples, ...)}`` (:func:`hmc_samples`).

    Returns:
        Layer -> the R-hat of each of its kernel's weights, flattened.
    """
    from symlib.inference.diagnostics import rhat

    return {name: np.ravel(rhat(layer["kernel"].reshape(layer["kernel"].shape[:2] + (-1,))))
            for name, layer in samples.items()}


def hmc_sigma_inspection(profile: Profile, match_examples: int = 5000) -> dict[str, Any]:
    """HMC's sigma_d and sigma_r recomputed from all the stored samples (every chain pooled), to look
    inside them (Sec. 3.2): the first-layer sigmas (and VI's) by whether their pixel is zero in every
    training image (their exact posterior is then the prior), how consistently per-sample matching
    permutes the samples of one chain, and both summaries from one sample per chain.

    Args:
        profile: the run profile (its HMC samples and VI fit are loaded, or run first).
        match_examples: training images for activation matching.

    Returns:
        ``k_d``, ``k_r``, ``k_vi``: first-layer kernel sigmas (HMC direct, HMC re-basin, VI);
        ``out_d``, ``out_r``: the output layer's (HMC); ``const``: the always-zero pixels (mask);
        ``same``: per chain, the median share of hidden units permuted like the chain's first sample;
        ``one_d``, ``one_r``: median sigma over all weights from one sample per chain; ``chains``,
        ``n_weights`` (per network), ``n_train`` and ``n_features`` (of the training images).
    """
    from symlib.evaluation import summaries
    from symlib.symmetry.specs import mlp_permutation_spec

    x_match = load_bnn_data(profile)["x_train"]
    spec = mlp_permutation_spec(1)
    chains, kept = profile.hmc_chains, profile.hmc_samples
    stack = jax.tree_util.tree_map(lambda a: np.asarray(a).reshape((-1,) + a.shape[2:]), hmc_samples(profile))
    q_d = summaries.direct_summary(stack)
    q_r = summaries.rebasin_summary(stack, spec, method="activation", data=x_match[:match_examples])
    perm = q_r.perms["P_0"]
    one = jax.tree_util.tree_map(lambda a: a[::kept], stack)
    one_r = summaries.rebasin_summary(one, spec, method="activation", data=x_match[:match_examples])
    return {"k_d": q_d.sigma["dense_0"]["kernel"], "k_r": q_r.sigma["dense_0"]["kernel"],
            "k_vi": np.asarray(run("vi", profile).sigma["dense_0"]["kernel"]),
            "out_d": q_d.sigma["dense_1"]["kernel"], "out_r": q_r.sigma["dense_1"]["kernel"],
            "const": np.asarray(x_match.std(0) == 0),
            "same": [float(np.median((perm[c * kept:(c + 1) * kept] == perm[c * kept]).mean(1))) for c in range(chains)],
            "one_d": np.median(summaries.flatten_summary(summaries.direct_summary(one))[1]),
            "one_r": np.median(summaries.flatten_summary(one_r)[1]), "chains": chains,
            "n_weights": sum(np.size(v) for v in jax.tree_util.tree_leaves(stack)) // (chains * kept),
            "n_train": len(x_match), "n_features": x_match.shape[1]}


#: the precision study's HMC runs (:func:`hmc_precision`): the profile's sampler (its step
#: size adapted during burn-in, its leapfrog steps, data and network) with 2 chains of 30
#: burn-in and 70 kept iterations each, at every precision: 100 iterations, 100,000 gradients
#: per chain at the paper's 500 leapfrog steps (about 4 minutes at float32 on an H100)
PRECISION_CHAINS, PRECISION_BURNIN, PRECISION_KEPT = 2, 30, 70


def _precision_config(profile: Profile) -> dict[str, Any]:
    return {**_hmc_config(profile), "chains": PRECISION_CHAINS, "burnin": PRECISION_BURNIN, "kept": PRECISION_KEPT}


def _precision_summary(art: dict[str, Any]) -> dict[str, Any]:
    from symlib.inference.hmc import choose_precision

    study = {"precisions": [str(p) for p in np.atleast_1d(art["precisions"])], "at_start": art["at_start"], "at_end": art["at_end"],
             "runs": art["runs"]}
    chosen, reasons = choose_precision(study)

    def errors(part):
        return {p: {"logdensity_abs_error_max": float(np.max(v["logdensity_abs_error"])),
                    "grad_rel_error_max": float(np.max(v["grad_rel_error"])),
                    "seconds_per_gradient": float(v["seconds_per_gradient"])} for p, v in art[part].items()}

    return {"chosen": chosen, "reasons": reasons, "at_start": errors("at_start"), "at_end": errors("at_end"),
            "runs": {p: {**{k: np.asarray(v).tolist() for k, v in r.items() if k != "warnings"},
                         "warnings": [str(np.asarray(w)) for _, w in sorted(r.get("warnings", {}).items(), key=lambda kv: int(kv[0]))]}
                     for p, r in art["runs"].items()}}


def _precision_setup(profile: Profile) -> tuple[Any, Any, Any]:
    """The precision study's ``(target, starts, HMC config)``: the ``hmc`` experiment's target
    and config under ``profile``, ``PRECISION_CHAINS`` starts (the data loaded once)."""
    d, cfg, init = _hmc_setup(profile, PRECISION_CHAINS, PRECISION_KEPT)
    return _hmc_target(profile, d), init, cfg


def precision_steps(profile: Profile, setup: tuple[Any, Any, Any] | None = None) -> Steps:
    """The precision study's runs (:func:`~symlib.inference.hmc.precision_run`), one precision a
    step (cached as ``hmc_precision`` steps): what :func:`hmc_precision` runs and what the GPU
    queue's job ``hmc-precision`` runs a step at a time (at the paper profile float32's run
    alone takes about 4 GPU-minutes). Every precision runs the ``hmc`` experiment's target from
    ``PRECISION_CHAINS`` of its starts with the same key, ``PRECISION_BURNIN`` +
    ``PRECISION_KEPT`` iterations (thinning 1, the step size adapted during burn-in); only the
    reference (``"highest"``) keeps its chains' final positions, where :func:`hmc_precision`
    measures the errors.

    Args:
        profile: the run profile.
        setup: its :func:`_precision_setup`, when the caller has it (default: made here).

    Returns:
        The steps, labelled by precision; nothing runs until a step's ``train`` is called.
    """
    from dataclasses import replace

    from symlib.inference.hmc import precision_run
    from symlib.inference.hmc.precision import PRECISIONS

    target, init, cfg = _precision_setup(profile) if setup is None else setup
    cfg = replace(cfg, num_burnin=PRECISION_BURNIN, thin=1, adapt_step_size=True)

    def train(precision: str) -> dict[str, Any]:
        out = precision_run(jax.random.key(0), init, target, cfg, precision)
        if precision != "highest":
            del out["last"]
        return {**out, "warnings": {str(i): w for i, w in enumerate(out["warnings"])}}

    return Steps("hmc_precision", _precision_config(profile), list(PRECISIONS), train)


@register("hmc_precision", _precision_config,
          "HMC at float32, TF32 and bfloat16 matrix products on the same chains: log-density and gradient errors, "
          "acceptance, energy errors (issue 44's precision study; decides the GPU's precision)",
          summary=_precision_summary)
def hmc_precision(profile: Profile) -> dict[str, Any]:
    """The precision study: its runs (:func:`precision_steps`, each kept in the artifact cache,
    where the GPU queue's steps are found), then the log density's and gradient's errors at
    the starts and at float32's final positions, timed here
    (:func:`~symlib.inference.hmc.study_of_runs`).

    Args:
        profile: the run profile.

    Returns:
        The study: ``precisions``, ``at_start``, ``at_end`` and ``runs`` (their warnings as
        ``{index: text}``).
    """
    from symlib.inference.hmc import study_of_runs

    target, init, cfg = setup = _precision_setup(profile)
    steps = precision_steps(profile, setup)
    runs = cache.cached_steps(steps.name, steps.cache_config, steps.starts, steps.train)
    runs = {p: {**r, "warnings": r.get("warnings", {})} for p, r in zip(steps.starts, runs)}
    return study_of_runs(target, init, cfg, runs)


#: Xiao et al.'s HMC run in pieces (issue 17): 2 chains x 500 kept samples, 1,000 in all as
#: in the paper (App. A), with the paper profile's other settings (500 leapfrog steps,
#: 600 burn-in iterations, thinning 10, 784-512-10 on 50,000 images)
PIECES_CHAINS, PIECES_SAMPLES = 2, 500

#: kept samples per segment of the pieced run (a piece ends at a segment boundary): 50
#: iterations, about 25,000 gradients per chain
PIECES_CHUNK = 5

#: training examples over which activations are correlated for q_r (activation matching):
#: enough for a stable correlation estimate; matching 1,000 samples over 50,000 would take
#: an hour on a CPU
MATCH_EXAMPLES = 5000


def hmc_pieces_run(profile: Profile, chains: int = PIECES_CHAINS, samples: int = PIECES_SAMPLES,
                   chunk_size: int = PIECES_CHUNK):
    """The pieced HMC run of ``profile`` (:mod:`symlib.experiments.xiao.hmc_pieces`): the chains of
    the ``hmc`` experiment (same data, initialisations, key and sampler settings) with
    ``chains`` x ``samples`` kept samples, summarised on the fly against the test set, with
    q_r by weight and by activation matching (the first ``MATCH_EXAMPLES`` training images).

    Args:
        profile: the run profile.
        chains: number of chains.
        samples: kept samples per chain.
        chunk_size: kept samples per segment.

    Returns:
        A :class:`symlib.experiments.xiao.hmc_pieces.PiecedHMC` (advance it with
        :func:`symlib.experiments.xiao.hmc_pieces.advance`).
    """
    from symlib.experiments.xiao.hmc_pieces import PiecedHMC

    d, cfg, init = _hmc_setup(profile, chains, samples)
    return PiecedHMC(jax.random.key(1), init, _hmc_target(profile, d), cfg, d["x_test"], d["y_test"],
                     x_match=d["x_train"][:MATCH_EXAMPLES], chunk_size=chunk_size, init_per_chain=True)


def hmc_pieces_summary(profile: Profile, state_dir) -> dict[str, Any]:
    """Table 1's HMC columns, the test score and the diagnostics of a pieced run so far.

    The columns are those of ``compact_representation``: ``"HMC sample"`` (the exact
    predictive of the kept samples), ``"HMC q_d"``, ``"HMC q_r"`` (activation matching, the
    paper's), ``"HMC q_r (weight)"`` and ``"HMC q_r (per chain)"``, each Gaussian's
    predictive from ``profile.mc_samples`` draws (the same keys as there).

    Args:
        profile: the run profile (for the test data and ``mc_samples``).
        state_dir: the pieced run's state directory.

    Returns:
        A JSON-friendly dict: ``table``, ``test``, ``diagnostics``, ``median_sigma``,
        ``near_prior``, ``progress`` and ``pieces`` (provenance of every piece).

    Raises:
        ValueError: if the state was sampled against other test labels than ``profile``'s.
    """
    from symlib.experiments.xiao.hmc_pieces import summaries
    from symlib.evaluation.predictive import predict_from_gaussian

    d = load_bnn_data(profile)
    s = summaries(state_dir)
    x, y, p_hmc = d["x_test"], d["y_test"], s.test_probs
    if np.shape(y) != np.shape(s.y_test) or not np.array_equal(np.asarray(y), s.y_test):
        raise ValueError(f"{state_dir} was sampled against other test data ({len(s.y_test)} test images) than "
                         f"profile {profile.name!r} gives ({len(y)}): summarize it with the profile it was run with")
    table = {"HMC sample": table1_row(p_hmc, p_hmc, x, y)}
    fits = {"HMC q_d": s.q_d, "HMC q_r": s.q_r.get("activation"), "HMC q_r (weight)": s.q_r["weight"],
            "HMC q_r (per chain)": s.q_r["weight (per chain)"]}
    fits = {col: fit for col, fit in fits.items() if fit is not None}
    key = jax.random.key(5)
    for col, fit in fits.items():
        key, sub = jax.random.split(key)
        probs = predict_from_gaussian(sub, fit.mu, fit.sigma, x, profile.mc_samples, apply_fn=mlp_apply)
        table[col] = table1_row(np.asarray(probs), p_hmc, x, y, fit.mu)
    sigma = {col: np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(fit.sigma)])
             for col, fit in fits.items()}
    progress = {k: v for k, v in s.progress.items() if k != "pieces"}
    return {"table": {col: {k: float(v) for k, v in row.items()} for col, row in table.items()},
            "test": s.test, "n_test": len(y), "prior_std": profile.prior_std,
            "diagnostics": {k: np.asarray(v).tolist() for k, v in s.diagnostics.items()},
            "median_sigma": {col: float(np.median(v)) for col, v in sigma.items()},
            "near_prior": {col: near_prior_fraction(v, profile.prior_std) for col, v in sigma.items()},
            "progress": progress, "pieces": s.progress["pieces"]}


# ---------------------------------------------------------------------------------------
# The compact representation (Sec. 3, Table 1, Fig. 3)
# ---------------------------------------------------------------------------------------

def table1_row(probs, p_hmc, x, y, mean_params=None) -> dict[str, float]:
    """One column of Table 1: a predictive scored against the HMC predictive.

    Args:
        probs: ``(n, classes)`` predictive probabilities on the test inputs ``x``.
        p_hmc: the HMC predictive on ``x``.
        x: the test inputs.
        y: the test labels.
        mean_params: the mean network, if any (for ``accuracy_mean``).

    Returns:
        ``agreement``, ``tv``, ``accuracy_samples`` (%) and, with ``mean_params``,
        ``accuracy_mean`` (%).
    """
    from symlib.evaluation import metrics
    from symlib.evaluation.predictive import predict_single

    out = {"agreement": metrics.agreement(probs, p_hmc), "tv": metrics.total_variation(probs, p_hmc),
           "accuracy_samples": 100 * metrics.accuracy_from_probs(probs, y)}
    if mean_params is not None:
        mean_probs = predict_single(mean_params, x, apply_fn=mlp_apply)
        out["accuracy_mean"] = 100 * metrics.accuracy_from_probs(np.asarray(mean_probs), y)
    return out


def _compact_config(profile: Profile) -> dict[str, Any]:
    return {**_hmc_config(profile), **_ensemble_config(profile), **_vi_config(profile),
            "xiao_replicates": profile.xiao_replicates}


#: "close to the prior's sigma" in Fig. 3 (ii): within this factor of ``prior_std``
NEAR_PRIOR_FACTOR = 1.5


def near_prior_fraction(sigma: np.ndarray, prior_std: float) -> float:
    """Share of the weights whose sigma lies within a factor ``NEAR_PRIOR_FACTOR`` of the prior's.

    Args:
        sigma: per-weight standard deviations (any shape).
        prior_std: the prior's standard deviation.

    Returns:
        The share of entries with ``|log(sigma / prior_std)| < log(NEAR_PRIOR_FACTOR)``.

    Raises:
        ValueError: if ``prior_std`` is not positive or ``sigma`` is empty or holds a
            negative or NaN entry.
    """
    sigma = np.asarray(sigma, np.float64)
    if not prior_std > 0:
        raise ValueError(f"prior_std must be positive, got {prior_std!r}")
    if sigma.size == 0 or np.isnan(sigma).any() or (sigma < 0).any():
        raise ValueError("sigma must be a non-empty array of non-negative standard deviations")
    with np.errstate(divide="ignore"):
        return float(np.mean(np.abs(np.log(sigma / prior_std)) < np.log(NEAR_PRIOR_FACTOR)))


def always_zero_pixels(x_train) -> np.ndarray:
    """Indices of the input pixels that are 0 in every training image.

    The likelihood does not depend on the first-layer weights of such a pixel, so under an
    isotropic Gaussian prior their exact posterior is the prior: a sampler that reached the
    posterior gives them the prior's standard deviation (the known-posterior check of
    ``compact_representation.bayesian_sigma_near_prior``).

    Args:
        x_train: ``(n, pixels)`` training inputs (the images the posterior conditions on).

    Returns:
        The sorted pixel indices.
    """
    x = np.asarray(x_train)
    return np.flatnonzero(np.all(x.reshape(x.shape[0], -1) == 0, axis=0))


def unit_sigma_medians(sigma: Mapping[str, Any]) -> np.ndarray:
    """Per hidden unit of a one-hidden-layer MLP, the median sigma of its weights (its
    incoming kernel column, its bias and its outgoing kernel row).

    Args:
        sigma: per-weight standard deviations in the MLP layout (``dense_0``, ``dense_1``).

    Returns:
        ``(hidden,)`` medians.
    """
    k0, b0 = np.asarray(sigma["dense_0"]["kernel"]), np.asarray(sigma["dense_0"]["bias"])
    k1 = np.asarray(sigma["dense_1"]["kernel"])
    return np.median(np.concatenate([k0, b0[None, :], k1.T], axis=0), axis=0)


def pixel_sigma_medians(sigma: Mapping[str, Any], pixels: np.ndarray) -> np.ndarray:
    """Per input pixel in ``pixels``, the median sigma of its first-layer weights (one per
    hidden unit)."""
    return np.median(np.asarray(sigma["dense_0"]["kernel"])[np.asarray(pixels, int)], axis=1)


def _replicate_summary(rep: Mapping[str, Any], prior_std: float) -> dict[str, Any]:
    """The JSON summary of one independent run of ``compact_representation``."""
    diag = rep["hmc_diagnostics"]
    return {"table": {col: {k: float(v) for k, v in m.items()} for col, m in rep["table"].items()},
            "pruning": {k: np.asarray(v).tolist() for k, v in rep["pruning"].items()},
            "median_sigma": {k: float(v) for k, v in rep["median_sigma"].items()},
            "near_prior": {k: near_prior_fraction(v, prior_std) for k, v in rep["sigma"].items()},
            # the HMC convergence gate (claims: gate.hmc_rhat, gate.hmc_ess) over this run's chains
            "hmc_convergence": {"rhat_test_loglik": float(np.max(diag["rhat_test_loglik"])),
                                "ess_test_loglik": float(np.min(diag["ess_test_loglik"]))},
            "first_chain_qd_agreement": float(rep["first_chain_qd_agreement"]),
            # per hidden unit and per always-zero pixel (rebasin_shrinks_sigma, bayesian_sigma_near_prior)
            "unit_log_sigma": {k: np.log(np.asarray(v, np.float64)).tolist() for k, v in rep["unit_sigma"].items()},
            "zero_pixel_sigma": {k: np.asarray(v, np.float64).tolist() for k, v in rep["zero_pixel_sigma"].items()}}


def _mean_over(dicts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean over runs of nested dicts of numbers with the same keys."""
    first = dicts[0]
    if isinstance(first, Mapping):
        return {k: _mean_over([d[k] for d in dicts]) for k in first}
    return float(np.mean([float(v) for v in dicts]))


def _compact_summary(res: dict[str, Any]) -> dict[str, Any]:
    prior_std = float(res["prior_std"])
    reps = [_replicate_summary(rep, prior_std) for rep in runs_in_order(res["replicates"])]
    return {"replicates": reps, "chains_per_replicate": int(res["chains_per_replicate"]),
            "n_test": int(res["n_test"]), "prior_std": prior_std,
            # the headline numbers (the reproduction report's values): means over the runs
            **{k: _mean_over([r[k] for r in reps]) for k in ("table", "median_sigma", "near_prior")}}


def chain_groups(profile: Profile) -> list[np.ndarray]:
    """The HMC chains of ``profile`` split into ``xiao_replicates`` disjoint groups, in order:
    each group is an independent HMC run (its chains have their own initialisations and keys).

    Args:
        profile: the run profile.

    Returns:
        ``xiao_replicates`` arrays of chain indices.

    Raises:
        ValueError: if ``xiao_replicates`` is not a positive divisor of ``hmc_chains``.
    """
    r, c = profile.xiao_replicates, profile.hmc_chains
    if not (isinstance(r, int) and r >= 1 and c % r == 0):
        raise ValueError(f"xiao_replicates must be a positive divisor of hmc_chains ({c}), got {r!r}")
    return list(np.arange(c).reshape(r, c // r))


def _compact_run(key: jax.Array, profile: Profile, d: Mapping[str, Any], chains: Any, ens_params: Any,
                 vi_fit: Mapping[str, Any], zero: np.ndarray) -> dict[str, Any]:
    """Table 1 and Fig. 3 for one independent run: the HMC samples of one group of chains
    (leading ``(chains, samples)`` axes), one deep ensemble and one VI fit."""
    from symlib.evaluation import metrics, pruning, summaries
    from symlib.evaluation.predictive import predict_from_gaussian, predict_from_samples
    from symlib.inference.diagnostics import function_space_diagnostics
    from symlib.symmetry.specs import mlp_permutation_spec

    # activation statistics for matching: at most MATCH_EXAMPLES training examples
    x, y, x_match = d["x_test"], d["y_test"], d["x_train"][:MATCH_EXAMPLES]
    spec = mlp_permutation_spec(1)
    n_chains, n_samples = jax.tree_util.tree_leaves(chains)[0].shape[:2]
    stack = jax.tree_util.tree_map(lambda a: np.asarray(a).reshape((-1,) + a.shape[2:]), chains)
    p_hmc = np.asarray(predict_from_samples(stack, x, apply_fn=mlp_apply))

    def row(probs, mean_params=None):
        return table1_row(probs, p_hmc, x, y, mean_params)

    table, fitted = {}, {}
    for name, samples in {"HMC": stack, "Ensemble": ens_params}.items():
        probs = p_hmc if name == "HMC" else np.asarray(predict_from_samples(samples, x, apply_fn=mlp_apply))
        table[f"{name} sample"] = row(probs)
        fitted[f"{name} q_d"] = summaries.direct_summary(samples)
        fitted[f"{name} q_r"] = summaries.rebasin_summary(samples, spec, method="activation", data=x_match)
        fitted[f"{name} q_r (weight)"] = summaries.rebasin_summary(samples, spec, method="weight")
        cols = [f"{name} q_d", f"{name} q_r", f"{name} q_r (weight)"]
        if name == "HMC":  # one permutation per chain (a chain does not hop between permutation modes)
            fitted["HMC q_r (per chain)"] = summaries.grouped_rebasin_summary(
                samples, np.repeat(np.arange(n_chains), n_samples), spec, method="weight")
            cols.append("HMC q_r (per chain)")
        for col in cols:
            key, sub = jax.random.split(key)
            probs = predict_from_gaussian(sub, fitted[col].mu, fitted[col].sigma, x, profile.mc_samples,
                                          apply_fn=mlp_apply)
            table[col] = row(np.asarray(probs), fitted[col].mu)
    table["VI q"] = row(np.asarray(vi_fit["test_probs"]), vi_fit["mu"])

    stitched_mu, stitched_sigma = pruning.stitch(fitted["Ensemble q_r"], fitted["HMC q_r"], spec)
    curves = {"ensemble": (fitted["Ensemble q_r"].mu, fitted["Ensemble q_r"].sigma),
              "hmc": (fitted["HMC q_r"].mu, fitted["HMC q_r"].sigma),
              "ensemble mu + hmc sigma": (stitched_mu, stitched_sigma),
              "vi": (vi_fit["mu"], vi_fit["sigma"])}
    prune = {"keep_fraction": np.asarray(PRUNE_FRACTIONS)}
    for name, (mu, sigma) in curves.items():
        curve = pruning.pruning_curve(mu, sigma, x, y, PRUNE_FRACTIONS, apply_fn=mlp_apply)
        prune[name] = np.asarray(curve["accuracy"])

    sigma_trees = {col: fitted[col].sigma
                   for col in ("HMC q_d", "HMC q_r", "HMC q_r (per chain)", "Ensemble q_d", "Ensemble q_r")}
    sigma_trees["VI q"] = vi_fit["sigma"]
    sigmas = {col: np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(t)])
              for col, t in sigma_trees.items()}
    diag = function_space_diagnostics(chains, x, y, apply_fn=mlp_apply)["test_loglik"]
    # q_d of the run's first chain alone against that chain's predictive (claim qd_falls_with_chains)
    first = jax.tree_util.tree_map(lambda a: np.asarray(a)[0], chains)
    fit = summaries.direct_summary(first)
    probs = np.asarray(predict_from_gaussian(key, fit.mu, fit.sigma, x, profile.mc_samples, apply_fn=mlp_apply))
    single = metrics.agreement(probs, np.asarray(predict_from_samples(first, x, apply_fn=mlp_apply)))
    return {"table": table, "pruning": prune, "sigma": sigmas, "first_chain_qd_agreement": float(single),
            "median_sigma": {k: float(np.median(v)) for k, v in sigmas.items()},
            "unit_sigma": {col: unit_sigma_medians(t) for col, t in sigma_trees.items()},
            "zero_pixel_sigma": {col: pixel_sigma_medians(t, zero) for col, t in sigma_trees.items()},
            "hmc_diagnostics": {"rhat_test_loglik": np.asarray(diag["rhat"]), "ess_test_loglik": np.asarray(diag["ess"])}}


@register("compact_representation", _compact_config,
          "Xiao et al. Table 1 and Fig. 3: q_d vs q_r for HMC and ensembles, VI, sigma histograms, pruning, stitching",
          summary=_compact_summary, result=CompactResult)
def compact_representation(profile: Profile) -> dict[str, Any]:
    """Table 1 and Fig. 3 over ``profile.xiao_replicates`` independent runs.

    Run ``r`` takes the ``r``-th group of :func:`chain_groups` of the ``hmc`` experiment's
    chains, its own deep ensemble (run 0: the ``ensemble`` experiment's; the others trained
    here at once from key 1) and its own VI fit (run 0: the ``vi`` experiment's; run ``r``:
    seed ``r``), and scores every approximation against the predictive of that run's HMC
    samples, as Table 1 does.

    Args:
        profile: the run profile.

    Returns:
        The artifact: ``replicates`` (by run index ``"0"``, ``"1"``, ...: ``table``, ``pruning``, ``sigma``,
        ``median_sigma``, ``unit_sigma``, ``zero_pixel_sigma``, ``hmc_diagnostics``),
        ``chains_per_replicate``, ``n_test``, ``prior_std``, ``zero_pixels``, and the pooled
        ``hmc_test`` and ``hmc_diagnostics`` of all the chains (see :class:`CompactResult`).
    """
    d = load_bnn_data(profile)
    groups = chain_groups(profile)
    hmc_res, ens_res, vi_res = (run(name, profile).artifact for name in ("hmc", "ensemble", "vi"))
    chains = hmc_samples(profile)
    r = len(groups)
    ensembles = [ens_res["params"]] + (_train_ensembles(profile, d, jax.random.key(1), r - 1) if r > 1 else [])
    vi_fits = [vi_res] + [_fit_vi(profile, d, seed=i) for i in range(1, r)]
    zero = always_zero_pixels(d["x_train"])
    reps = []
    for i, (group, ens, fit) in enumerate(zip(groups, ensembles, vi_fits)):
        group_chains = jax.tree_util.tree_map(lambda a, g=group: np.asarray(a)[g], chains)
        reps.append(_compact_run(jax.random.fold_in(jax.random.key(5), i), profile, d, group_chains, ens, fit, zero))
    return {"replicates": {str(i): rep for i, rep in enumerate(reps)}, "chains_per_replicate": len(groups[0]),
            "n_test": len(d["y_test"]),
            "prior_std": profile.prior_std, "zero_pixels": zero,
            "hmc_test": hmc_res["test"], "hmc_diagnostics": hmc_res["diagnostics"]}


#: numbers of HMC chains of :func:`agreement_by_chains` (beyond the paper: issue 28, item 5)
CHAIN_COUNTS = (1, 3, 9)


def agreement_by_chains(profile: Profile, counts: Sequence[int] = CHAIN_COUNTS) -> dict[str, np.ndarray]:
    """Agreement of q_d and q_r with the HMC predictive as a function of the number of chains.

    Beyond the paper (which does not say how many chains it ran): a chain does not cross
    permutation modes, so q_d fails only when the samples come from several chains. This
    runs the ``hmc`` experiment of ``profile`` with ``max(counts)`` chains (cached like any
    run) and, for each ``n`` in ``counts``, fits q_d and q_r (activation matching, as in
    Table 1) to the samples of the first ``n`` chains and scores their predictives against
    the predictive of those same samples (:func:`table1_row`, as Table 1 does).

    Args:
        profile: the run profile (its other HMC settings are kept).
        counts: numbers of chains, each at most ``max(counts)``.

    Returns:
        Arrays over ``counts``: ``chains``, ``samples`` (kept samples used),
        ``agreement_q_d``, ``agreement_q_r``, ``tv_q_d``, ``tv_q_r``, ``accuracy_mean_q_d``,
        ``accuracy_mean_q_r`` (%) and ``accuracy_samples`` (% of the samples' predictive).
    """
    import dataclasses

    from symlib.evaluation import summaries
    from symlib.evaluation.predictive import predict_from_gaussian, predict_from_samples
    from symlib.symmetry.specs import mlp_permutation_spec

    counts = [int(n) for n in counts]
    if not counts or min(counts) < 1:
        raise ValueError(f"counts must be positive numbers of chains, got {counts}")
    big = dataclasses.replace(profile, hmc_chains=max(counts))
    samples = hmc_samples(big)  # (chains, samples, ...)
    d = load_bnn_data(profile)
    x, y, x_match = d["x_test"], d["y_test"], d["x_train"][:MATCH_EXAMPLES]
    spec = mlp_permutation_spec(1)
    out: dict[str, list] = {k: [] for k in ("chains", "samples", "agreement_q_d", "agreement_q_r", "tv_q_d", "tv_q_r",
                                            "accuracy_mean_q_d", "accuracy_mean_q_r", "accuracy_samples")}
    key = jax.random.key(5)
    for n in counts:
        sub = jax.tree_util.tree_map(lambda a: np.asarray(a[:n]).reshape((-1,) + a.shape[2:]), samples)
        p_hmc = np.asarray(predict_from_samples(sub, x, apply_fn=mlp_apply))
        fits = {"q_d": summaries.direct_summary(sub),
                "q_r": summaries.rebasin_summary(sub, spec, method="activation", data=x_match)}
        out["chains"].append(n)
        out["samples"].append(int(jax.tree_util.tree_leaves(sub)[0].shape[0]))
        out["accuracy_samples"].append(table1_row(p_hmc, p_hmc, x, y)["accuracy_samples"])
        for name, fit in fits.items():
            key, sub_key = jax.random.split(key)
            probs = np.asarray(predict_from_gaussian(sub_key, fit.mu, fit.sigma, x, profile.mc_samples,
                                                     apply_fn=mlp_apply))
            row = table1_row(probs, p_hmc, x, y, fit.mu)
            out[f"agreement_{name}"].append(row["agreement"])
            out[f"tv_{name}"].append(row["tv"])
            out[f"accuracy_mean_{name}"].append(row["accuracy_mean"])
    return {k: np.asarray(v) for k, v in out.items()}
