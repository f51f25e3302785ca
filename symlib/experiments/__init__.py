"""Expensive experiments of the book: one function each, cached on disk.

A notebook calls :func:`run`; a GPU batch job calls ``python -m symlib run NAME``. Both
go through the artifact cache, so the notebook loads what the batch job computed.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from symlib.experiments import cache
from symlib import data
from symlib.experiments.profiles import Profile, get_profile
from symlib.core.models import mlp_init
from symlib.inference.training import TrainConfig, evaluate, fit_map

Experiment = Callable[[Profile], dict[str, Any]]
EXPERIMENTS: dict[str, tuple[Experiment, Callable[[Profile], dict[str, Any]], str]] = {}
#: experiment name -> function turning its artifact into a small JSON-able summary
SUMMARIES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def register(name: str, config_of: Callable[[Profile], dict[str, Any]], doc: str,
             summary: Callable[[dict[str, Any]], dict[str, Any]] | None = None):
    """Register ``fn(profile) -> artifact`` under ``name``; ``config_of(profile)`` is the part
    of the profile the result depends on (it goes into the cache key); ``summary`` turns the
    artifact into the numbers saved under ``book/results/`` by ``python -m symlib run --out``."""

    def wrap(fn: Experiment) -> Experiment:
        EXPERIMENTS[name] = (fn, config_of, doc)
        if summary is not None:
            SUMMARIES[name] = summary
        return fn

    return wrap


def run(name: str, profile: Profile | str | None = None, *, verbose: bool = True) -> dict[str, Any]:
    """Result of experiment ``name`` under ``profile`` (default: the active one), from the
    artifact cache when present."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    profile = profile if isinstance(profile, Profile) else get_profile(profile)
    fn, config_of, _ = EXPERIMENTS[name]
    return cache.cached(name, config_of(profile), lambda: fn(profile), verbose=verbose)


def load_data(profile: Profile, dataset: str = "mnist") -> dict[str, np.ndarray]:
    """The profile's deterministic train/validation/test split of ``dataset``."""
    return data.load_split(dataset, source=profile.data_source, n_train=profile.n_train,
                           n_val=profile.n_val, n_test=profile.n_test, seed=0)


def _data_config(profile: Profile) -> dict[str, Any]:
    return {k: getattr(profile, k) for k in ("data_source", "n_train", "n_val", "n_test")}


def _mlp_config(profile: Profile) -> dict[str, Any]:
    keys = ("hidden", "epochs", "batch_size", "learning_rate", "prior_std")
    return {**_data_config(profile), **{k: getattr(profile, k) for k in keys}}


MLP_SEEDS = (0, 1)


@register("mlp_map_pair", _mlp_config,
          "two one-hidden-layer MLPs trained by MAP/Adam from independent seeds (0 and 1)")
def mlp_map_pair(profile: Profile) -> dict[str, Any]:
    d = load_data(profile)
    cfg = TrainConfig.from_profile(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    out: dict[str, Any] = {}
    for seed in MLP_SEEDS:
        init_key, data_key = jax.random.split(jax.random.key(seed))
        params, losses = fit_map(mlp_init(init_key, sizes), data_key, d["x_train"], d["y_train"], cfg)
        test = evaluate(params, d["x_test"], d["y_test"])
        out[f"seed{seed}"] = {"params": jax.device_get(params), "epoch_loss": np.asarray(losses),
                              "test_nll": test["nll"], "test_accuracy": test["accuracy"]}
    return out


def _barriers_summary(res: dict[str, Any]) -> dict[str, Any]:
    out = {f"barrier_{split}": {m: float(v) for m, v in b.items()} for split, b in res["barrier"].items()}
    out.update({f"not_{k}": int(v) for k, v in res["not"].items()})
    out.update({f"endpoint_test_accuracy_{k}": float(v) for k, v in res["endpoint_test_accuracy"].items()})
    out["test_accuracy_mid"] = {m: float(c["accuracy"][len(c["accuracy"]) // 2])
                                for m, c in res["curves"]["test"].items()}
    return out


MATCHING_METHODS = ("no matching", "weight matching", "activation matching")


def _barrier_config(profile: Profile) -> dict[str, Any]:
    return {**_mlp_config(profile), "n_lambdas": profile.n_lambdas}


@register("rebasin_barriers", _barrier_config,
          "Xiao et al. Fig. 1: interpolation W_0 -> W_1 before and after weight / activation matching",
          summary=_barriers_summary)
def rebasin_barriers(profile: Profile) -> dict[str, Any]:
    from symlib.evaluation.interpolation import interpolation_curve, loss_barrier
    from symlib.symmetry.matching import activation_matching, weight_matching
    from symlib.symmetry.permutations import num_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

    d = load_data(profile)
    pair = run("mlp_map_pair", profile)
    w0, w1 = pair["seed0"]["params"], pair["seed1"]["params"]
    spec = mlp_permutation_spec(1)
    matches = {"weight matching": weight_matching(jax.random.key(0), spec, w0, w1),
               "activation matching": activation_matching(spec, w0, w1, d["x_train"])}
    targets = {"no matching": w1, **{m: apply_permutation(spec, r.perms, w1) for m, r in matches.items()}}
    curves: dict[str, Any] = {"train": {}, "test": {}}
    barrier: dict[str, dict[str, float]] = {"train": {}, "test": {}}
    for split in curves:
        for method, target in targets.items():
            c = interpolation_curve(w0, target, d[f"x_{split}"], d[f"y_{split}"], profile.n_lambdas)
            curves[split][method] = c
            barrier[split][method] = loss_barrier(c["lambda"], c["loss"])
    return {"curves": curves, "barrier": barrier,
            "not": {m: num_transpositions(r.perms["P_0"]) for m, r in matches.items()},
            "perms": {m: np.asarray(r.perms["P_0"]) for m, r in matches.items()},
            "endpoint_test_accuracy": {s: pair[s]["test_accuracy"] for s in ("seed0", "seed1")}}


def _ensemble_config(profile: Profile) -> dict[str, Any]:
    return {**_mlp_config(profile), "ensemble_members": profile.ensemble_members, "bnn_n_train": profile.bnn_n_train,
            "bnn_epochs": profile.bnn_epochs}


def load_bnn_data(profile: Profile) -> dict[str, np.ndarray]:
    """The profile's split with the training set cut to the ``bnn_n_train`` examples that
    every posterior approximation (HMC, VI, ensemble) is fitted to."""
    d = dict(load_data(profile))
    n = profile.bnn_n_train
    if n > len(d["x_train"]):
        raise ValueError(f"bnn_n_train={n} exceeds the {len(d['x_train'])} training examples of profile {profile.name!r}")
    d["x_train"], d["y_train"] = d["x_train"][:n], d["y_train"][:n]
    return d


def _predictive_summary(res: dict[str, Any]) -> dict[str, Any]:
    return {k: float(v) for k, v in res["test"].items()}


def _test_metrics(probs: np.ndarray, y: np.ndarray) -> dict[str, float]:
    probs = np.asarray(probs, np.float64)
    return {"accuracy": float(np.mean(probs.argmax(1) == y)),
            "nll": float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, None))))}


@register("ensemble", _ensemble_config, "deep ensemble: K MAP/Adam members trained at once (Xiao et al. App. A)",
          summary=_predictive_summary)
def ensemble(profile: Profile) -> dict[str, Any]:
    from symlib.inference.ensembles import train_ensemble
    from symlib.evaluation.predictive import predict_from_samples

    d = load_bnn_data(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    cfg = TrainConfig.from_profile(profile)._replace(epochs=profile.bnn_epochs)
    res = train_ensemble(jax.random.key(0), sizes, d["x_train"], d["y_train"], cfg, profile.ensemble_members)
    probs = predict_from_samples(res.params, d["x_test"])
    return {"params": jax.device_get(res.params), "epoch_loss": np.asarray(res.epoch_losses),
            "test_probs": np.asarray(probs), "test": _test_metrics(probs, d["y_test"])}


def _vi_config(profile: Profile) -> dict[str, Any]:
    keys = ("bnn_epochs", "vi_batch_size", "vi_learning_rate", "vi_std_init", "mc_samples")
    return {**_data_config(profile), "hidden": profile.hidden, "prior_std": profile.prior_std,
            "bnn_n_train": profile.bnn_n_train, **{k: getattr(profile, k) for k in keys}}


@register("vi", _vi_config, "mean-field Gaussian VI (Bayes by backprop, Flax NNX) of the MLP",
          summary=_predictive_summary)
def vi(profile: Profile) -> dict[str, Any]:
    from symlib.evaluation.predictive import predict_from_gaussian
    from symlib.inference.vi import fit_mlp_vi

    d = load_bnn_data(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    res = fit_mlp_vi(jax.random.key(0), sizes, d["x_train"], d["y_train"], prior_var=profile.prior_std**2,
                     std_init=profile.vi_std_init, epochs=profile.bnn_epochs, batch_size=profile.vi_batch_size,
                     learning_rate=profile.vi_learning_rate)
    probs = predict_from_gaussian(jax.random.key(1), res.mu, res.sigma, d["x_test"], profile.mc_samples)
    return {"mu": jax.device_get(res.mu), "sigma": jax.device_get(res.sigma),
            "elbo_history": np.asarray(res.elbo_history), "test_probs": np.asarray(probs),
            "test": _test_metrics(probs, d["y_test"])}


def _hmc_config(profile: Profile) -> dict[str, Any]:
    keys = ("bnn_n_train", "hmc_chains", "hmc_step_size", "hmc_adapt", "hmc_leapfrog", "hmc_burnin",
            "hmc_samples", "hmc_thin")
    return {**_data_config(profile), "hidden": profile.hidden, "prior_std": profile.prior_std,
            **{k: getattr(profile, k) for k in keys}}


def hmc_run_dir(profile: Profile) -> Path:
    """Where the HMC chains of ``profile`` are written chunk by chunk (and resumed from)."""
    return cache.cache_dir() / f"hmc_chains-{cache.cache_key('hmc', _hmc_config(profile))}"


def _hmc_summary(res: dict[str, Any]) -> dict[str, Any]:
    out = _predictive_summary(res)
    out.update({k: np.asarray(v).tolist() for k, v in res["diagnostics"].items()})
    return out


@register("hmc", _hmc_config, "full-batch HMC (BlackJAX) on the BNN posterior, chains written to disk and resumable",
          summary=_hmc_summary)
def hmc(profile: Profile) -> dict[str, Any]:
    """Chains start from independent random initialisations; samples stay in
    :func:`hmc_run_dir` (load them with :func:`hmc_samples`); the artifact holds the
    per-iteration statistics, diagnostics and the test predictive."""
    from symlib.inference.diagnostics import function_space_diagnostics
    from symlib.inference.hmc import HMCConfig, load_samples, make_logdensity, run_hmc
    from symlib.evaluation.predictive import predict_from_samples

    d = load_bnn_data(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    cfg = HMCConfig(step_size=profile.hmc_step_size, num_leapfrog=profile.hmc_leapfrog, num_burnin=profile.hmc_burnin,
                    num_samples=profile.hmc_samples, thin=profile.hmc_thin, num_chains=profile.hmc_chains,
                    adapt_step_size=profile.hmc_adapt)
    inits = [mlp_init(k, sizes) for k in jax.random.split(jax.random.key(0), cfg.num_chains)]
    init = jax.tree_util.tree_map(lambda *a: jax.numpy.stack(a), *inits)
    logdensity = make_logdensity(d["x_train"], d["y_train"], prior_var=profile.prior_std**2)
    result = run_hmc(jax.random.key(1), init, logdensity, cfg, out_dir=hmc_run_dir(profile), init_per_chain=True)
    samples = load_samples(hmc_run_dir(profile))
    flat = jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), samples)  # (chains * samples, ...)
    probs = predict_from_samples(flat, d["x_test"])
    diag = function_space_diagnostics(samples, d["x_test"], d["y_test"])
    return {"stats": {k: np.asarray(v) for k, v in result.stats.items()}, "step_size": np.asarray(result.step_size),
            "test_probs": np.asarray(probs), "test": _test_metrics(probs, d["y_test"]),
            "diagnostics": {"mean_acceptance": result.mean_acceptance, "num_divergences": result.num_divergences,
                            **{f"{stat}_{q}": np.asarray(diag[q][stat]) for q in ("test_loglik", "true_class_prob")
                               for stat in ("rhat", "ess")}}}


def hmc_samples(profile: Profile) -> dict[str, Any]:
    """The kept HMC samples of ``profile`` (runs the experiment first if needed), as a
    pytree with leading (chains, samples) axes, read from disk."""
    from symlib.inference.hmc import load_samples

    run("hmc", profile)
    return load_samples(hmc_run_dir(profile))


def _compact_config(profile: Profile) -> dict[str, Any]:
    return {**_hmc_config(profile), **_ensemble_config(profile), **_vi_config(profile)}


#: Xiao et al. (2023), Table 1, quoted: agreement and TV to HMC samples, test accuracy (%) of the
#: samples' predictive and of the mean network. Columns as in the paper.
XIAO_TABLE1 = {
    "columns": ["HMC sample", "HMC q_d", "HMC q_r", "Ensemble sample", "Ensemble q_d", "Ensemble q_r", "VI q"],
    "agreement": [1.0, 0.1212, 0.8249, 0.9931, 0.5239, 0.9868, 0.9885],
    "tv": [0.0, 0.8641, 0.6570, 0.0229, 0.7210, 0.0495, 0.0235],
    "accuracy_samples": [98.43, 11.11, 82.34, 98.66, 52.25, 97.72, 98.11],
    "accuracy_mean": [None, 28.06, 92.25, None, 86.40, 97.97, 98.04],
}

PRUNE_FRACTIONS = (1.0, 0.8, 0.6, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05)


def _compact_summary(res: dict[str, Any]) -> dict[str, Any]:
    return {"table": {col: {k: float(v) for k, v in m.items()} for col, m in res["table"].items()},
            "pruning": {k: np.asarray(v).tolist() for k, v in res["pruning"].items()},
            "median_sigma": {k: float(v) for k, v in res["median_sigma"].items()}}


@register("compact_representation", _compact_config,
          "Xiao et al. Table 1 and Fig. 3: q_d vs q_r for HMC and ensembles, VI, sigma histograms, pruning, stitching",
          summary=_compact_summary)
def compact_representation(profile: Profile) -> dict[str, Any]:
    from symlib.evaluation import metrics
    from symlib.evaluation import pruning
    from symlib.evaluation import summaries
    from symlib.evaluation.predictive import predict_from_gaussian, predict_from_samples, predict_single
    from symlib.symmetry.specs import mlp_permutation_spec

    d = load_bnn_data(profile)
    # activation statistics for matching: at most 5,000 training examples (enough for a
    # stable correlation estimate; matching 1,000 samples over 50,000 would take an hour on a CPU)
    x, y, x_match = d["x_test"], d["y_test"], d["x_train"][:5000]
    spec = mlp_permutation_spec(1)
    hmc_res, ens_res, vi_res = run("hmc", profile), run("ensemble", profile), run("vi", profile)
    stack = jax.tree_util.tree_map(lambda a: np.asarray(a).reshape((-1,) + a.shape[2:]), hmc_samples(profile))
    sample_sets = {"HMC": stack, "Ensemble": ens_res["params"]}
    p_hmc = np.asarray(hmc_res["test_probs"])

    def row(probs, mean_params=None):
        out = {"agreement": metrics.agreement(probs, p_hmc), "tv": metrics.total_variation(probs, p_hmc),
               "accuracy_samples": 100 * metrics.accuracy_from_probs(probs, y)}
        if mean_params is not None:
            out["accuracy_mean"] = 100 * metrics.accuracy_from_probs(np.asarray(predict_single(mean_params, x)), y)
        return out

    table, fitted, key = {}, {}, jax.random.key(5)
    for name, samples in sample_sets.items():
        table[f"{name} sample"] = row(np.asarray(predict_from_samples(samples, x)))
        fitted[f"{name} q_d"] = summaries.direct_summary(samples)
        fitted[f"{name} q_r"] = summaries.rebasin_summary(samples, spec, method="activation", data=x_match)
        fitted[f"{name} q_r (weight)"] = summaries.rebasin_summary(samples, spec, method="weight")
        cols = [f"{name} q_d", f"{name} q_r", f"{name} q_r (weight)"]
        if name == "HMC":  # one permutation per chain (a chain does not hop between permutation modes)
            chains = np.repeat(np.arange(profile.hmc_chains), profile.hmc_samples)
            fitted["HMC q_r (per chain)"] = summaries.grouped_rebasin_summary(samples, chains, spec, method="weight")
            cols.append("HMC q_r (per chain)")
        for col in cols:
            key, sub = jax.random.split(key)
            probs = predict_from_gaussian(sub, fitted[col].mu, fitted[col].sigma, x, profile.mc_samples)
            table[col] = row(np.asarray(probs), fitted[col].mu)
    table["VI q"] = row(np.asarray(vi_res["test_probs"]), vi_res["mu"])

    stitched_mu, stitched_sigma = pruning.stitch(fitted["Ensemble q_r"], fitted["HMC q_r"], spec)
    curves = {"ensemble": (fitted["Ensemble q_r"].mu, fitted["Ensemble q_r"].sigma),
              "hmc": (fitted["HMC q_r"].mu, fitted["HMC q_r"].sigma),
              "ensemble mu + hmc sigma": (stitched_mu, stitched_sigma),
              "vi": (vi_res["mu"], vi_res["sigma"])}
    prune = {"keep_fraction": np.asarray(PRUNE_FRACTIONS)}
    for name, (mu, sigma) in curves.items():
        prune[name] = np.asarray(pruning.pruning_curve(mu, sigma, x, y, PRUNE_FRACTIONS)["accuracy"])

    def leaves(tree):
        return np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(tree)])

    sigmas = {col: leaves(fitted[col].sigma)
              for col in ("HMC q_d", "HMC q_r", "HMC q_r (per chain)", "Ensemble q_d", "Ensemble q_r")}
    sigmas["VI q"] = leaves(vi_res["sigma"])
    return {"table": table, "pruning": prune, "sigma": sigmas,
            "median_sigma": {k: float(np.median(v)) for k, v in sigmas.items()},
            "hmc_test": hmc_res["test"], "hmc_diagnostics": hmc_res["diagnostics"]}


ALIGN_DATASETS = ("mnist", "fashion_mnist")


def _align_config(profile: Profile) -> dict[str, Any]:
    keys = ("align_widths", "align_depth", "align_epochs", "align_prior_var", "align_samples", "align_n_eval",
            "n_lambdas", "learning_rate")
    return {**_data_config(profile), **{k: getattr(profile, k) for k in keys}}


def load_align_data(profile: Profile, dataset: str) -> dict[str, np.ndarray]:
    """The split used by the alignment experiments (Fashion-MNIST's shipped subset has 5,000
    training images, so its train + validation sizes are capped there)."""
    n_train, n_val = profile.n_train, profile.n_val
    if profile.data_source == "subset" and dataset == "fashion_mnist":
        n_train, n_val = min(n_train, 4_500), min(n_val, 500)
    return data.load_split(dataset, source=profile.data_source, n_train=n_train, n_val=n_val,
                           n_test=profile.n_test, seed=0)


def _align_summary(res: dict[str, Any]) -> dict[str, Any]:
    return {ds: {w: {k: {m: float(v) for m, v in b.items()} for k, b in r["barrier"].items()}
                 for w, r in per_w.items()} for ds, per_w in res.items()}


@register("vi_alignment", _align_config,
          "Rossi et al.: two mean-field VI MLPs per width and dataset, Wasserstein alignment, marginalised barriers",
          summary=_align_summary)
def vi_alignment(profile: Profile) -> dict[str, Any]:
    import time

    from symlib.symmetry.alignment import apply_alignment, marginal_barrier, marginal_loss_curve, midpoint_barrier, \
        wasserstein_alignment
    from symlib.symmetry.specs import mlp_permutation_spec
    from symlib.inference.vi import fit_mlp_vi

    out: dict[str, Any] = {}
    spec = mlp_permutation_spec(profile.align_depth)
    for dataset in ALIGN_DATASETS:
        d = load_align_data(profile, dataset)
        evals = {s: (d[f"x_{s}"][: profile.align_n_eval], d[f"y_{s}"][: profile.align_n_eval]) for s in ("train", "test")}
        out[dataset] = {}
        for width in profile.align_widths:
            sizes = [d["x_train"].shape[1], *[width] * profile.align_depth, 10]
            fits = [fit_mlp_vi(jax.random.key(100 * seed + width), sizes, d["x_train"], d["y_train"],
                               prior_var=profile.align_prior_var, std_init=0.01, epochs=profile.align_epochs,
                               batch_size=500, learning_rate=profile.learning_rate, temperature=1.0)
                    for seed in (0, 1)]
            q0, q1 = (fits[0].mu, fits[0].sigma), (fits[1].mu, fits[1].sigma)
            start = time.perf_counter()
            match = wasserstein_alignment(jax.random.key(0), spec, q0, q1)
            seconds = time.perf_counter() - start
            q1_aligned = apply_alignment(spec, match.perms, q1)
            curves: dict[str, Any] = {}
            barrier: dict[str, dict[str, float]] = {"marginal": {}, "midpoint": {}}
            for split, (x, y) in evals.items():
                for name, target in (("naive", q1), ("aligned", q1_aligned)):
                    c = marginal_loss_curve(jax.random.key(7), q0, target, x, y, taus=profile.n_lambdas,
                                            num_samples=profile.align_samples)
                    curves[f"{split} {name}"] = c
                    barrier["marginal"][f"{split} {name}"] = marginal_barrier(c)
                    barrier["midpoint"][f"{split} {name}"] = midpoint_barrier(c)
            out[dataset][f"w{width}"] = {"curves": curves, "barrier": barrier, "alignment_seconds": seconds,
                                         "elbo_final": np.asarray([f.elbo_history[-1] for f in fits])}
    return out


TOY_MAX_LOSS = 0.1  # networks whose final training loss exceeds this are dropped (App. A: "not trained successfully")


@register("toy_perceptrons", lambda profile: {"nets": 10_000, "max_loss": TOY_MAX_LOSS},
          "Laurent et al. Fig. 1 / App. A: 10,000 2-2-1 ReLU perceptrons; output weights raw, unscaled, canonical")
def toy_perceptrons(profile: Profile) -> dict[str, Any]:
    from symlib.symmetry.scaling import check_function_unchanged, unit_norm
    from symlib.experiments.toy import sort_by_output_weight, train_perceptrons, two_gaussians

    x, y = two_gaussians()
    params, loss = train_perceptrons(jax.random.key(0), x, y, 10_000)
    keep = np.flatnonzero(loss < TOY_MAX_LOSS)
    out = {k: [] for k in ("raw", "unit_norm", "canonical")}
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


def describe() -> str:
    """One line per registered experiment."""
    return "\n".join(f"{name:24s} {doc}" for name, (_, _, doc) in sorted(EXPERIMENTS.items()))


def not_grid(profile: Profile) -> np.ndarray:
    """The NoT values of the Fig. 2 sweep: ``not_points`` evenly spaced in [0, hidden-1]
    (every value when ``not_points`` is 0)."""
    n = profile.hidden
    if profile.not_points <= 0 or profile.not_points >= n:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, profile.not_points).round().astype(int))


def _not_config(profile: Profile) -> dict[str, Any]:
    return {**_mlp_config(profile), "n_lambdas": profile.n_lambdas, "not_points": profile.not_points,
            "not_runs": profile.not_runs}


@register("not_sweep", _not_config,
          "Xiao et al. Fig. 2: train P W_init for permutations P of every NoT, rebasin to the unpermuted net")
def not_sweep(profile: Profile) -> dict[str, Any]:
    from symlib.evaluation.interpolation import barrier
    from symlib.symmetry.matching import weight_matching
    from symlib.symmetry.permutations import num_transpositions, random_permutation_with_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec, param_distance
    from symlib.inference.training import fit_map_many

    d = load_data(profile)
    cfg = TrainConfig.from_profile(profile)
    spec = mlp_permutation_spec(1)
    ks = not_grid(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    x, y = d["x_train"], d["y_train"]
    rows: dict[str, list] = {k: [] for k in ("run", "not_p", "not_p_prime", "distance_raw", "distance_matched",
                                             "barrier_raw", "barrier_matched")}
    for run in range(profile.not_runs):
        init = mlp_init(jax.random.key(1000 + run), sizes)
        perms = [random_permutation_with_transpositions(jax.random.key(10_000 * (run + 1) + int(k)), profile.hidden, int(k))
                 for k in ks]
        inits = [init] + [apply_permutation(spec, {"P_0": p}, init) for p in perms]
        stacked = jax.tree_util.tree_map(lambda *a: jax.numpy.stack(a), *inits)
        data_keys = jax.random.split(jax.random.key(2000 + run), len(inits))  # own minibatch order per net
        trained, _ = fit_map_many(stacked, data_keys, x, y, cfg)
        trained = jax.device_get(trained)
        ref = jax.tree_util.tree_map(lambda a: a[0], trained)
        for i, (k, p) in enumerate(zip(ks, perms), start=1):
            net = jax.tree_util.tree_map(lambda a: a[i], trained)
            match = weight_matching(jax.random.key(run), spec, ref, net)
            matched = apply_permutation(spec, match.perms, net)
            rows["run"].append(run)
            rows["not_p"].append(num_transpositions(p))
            rows["not_p_prime"].append(num_transpositions(match.perms["P_0"]))
            rows["distance_raw"].append(param_distance(ref, net))
            rows["distance_matched"].append(param_distance(ref, matched))
            rows["barrier_raw"].append(barrier(ref, net, x, y, profile.n_lambdas))
            rows["barrier_matched"].append(barrier(ref, matched, x, y, profile.n_lambdas))
    return {k: np.asarray(v) for k, v in rows.items()}


def _not_over_training(spec, init_0, init_1, traj_0, traj_1, epochs: int) -> np.ndarray:
    """NoT of the permutation matching net 1 to net 0 at initialisation and after each epoch."""
    from symlib.symmetry.matching import weight_matching
    from symlib.symmetry.permutations import num_transpositions

    at = lambda traj, e: jax.tree_util.tree_map(lambda a: a[e], traj)  # noqa: E731
    pairs = [(init_0, init_1)] + [(at(traj_0, e), at(traj_1, e)) for e in range(epochs)]
    return np.asarray([num_transpositions(weight_matching(jax.random.key(e), spec, a, b).perms["P_0"])
                       for e, (a, b) in enumerate(pairs)])


def _not_along_path(spec, w0, w1, lambdas: np.ndarray) -> np.ndarray:
    """NoT of the permutation matching W_lambda = (1 - lambda) W_0 + lambda W_1 to W_0."""
    from symlib.evaluation.interpolation import interpolate
    from symlib.symmetry.matching import weight_matching
    from symlib.symmetry.permutations import num_transpositions

    return np.asarray([num_transpositions(weight_matching(jax.random.key(0), spec, w0,
                                                          interpolate(w0, w1, float(t))).perms["P_0"])
                       for t in lambdas])


@register("not_paths", _not_config,
          "Xiao et al. Fig. 2 right: NoT of rebasin along the interpolation path and over training epochs")
def not_paths(profile: Profile) -> dict[str, Any]:
    from symlib.symmetry.permutations import num_transpositions, random_permutation_with_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

    d = load_data(profile)
    cfg = TrainConfig.from_profile(profile)
    spec = mlp_permutation_spec(1)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    k = (profile.hidden - 1) // 2  # a permutation of intermediate size
    p = random_permutation_with_transpositions(jax.random.key(7), profile.hidden, k)
    init = mlp_init(jax.random.key(1000), sizes)
    inits = {"reference": init,
             "permuted": apply_permutation(spec, {"P_0": p}, init),  # P W_init
             "independent": mlp_init(jax.random.key(1001), sizes)}   # a fresh random init
    traj = {}
    for seed, (name, net_init) in enumerate(inits.items()):
        _, _, t = fit_map(net_init, jax.random.key(3000 + seed), d["x_train"], d["y_train"], cfg,
                          keep_trajectory=True)
        traj[name] = jax.device_get(t)
    lambdas = np.linspace(0.0, 1.0, 2 * profile.n_lambdas - 1)
    last = lambda t: jax.tree_util.tree_map(lambda a: a[-1], t)  # noqa: E731
    out: dict[str, Any] = {"not_p": np.asarray(num_transpositions(p)), "epochs": np.arange(cfg.epochs + 1),
                           "lambda": lambdas}
    for name in ("permuted", "independent"):
        out[name] = {
            "not_epochs": _not_over_training(spec, inits["reference"], inits[name], traj["reference"], traj[name],
                                             cfg.epochs),
            "not_lambda": _not_along_path(spec, last(traj["reference"]), last(traj[name]), lambdas),
        }
    return out


def laurent_train_config(profile: Profile, n_train: int) -> TrainConfig:
    """Laurent et al.'s OptuNet recipe (App. B.1) for ``profile.laurent_epochs`` epochs: SGD,
    learning rate halved after a quarter and after half of training, weight decay as a
    Gaussian prior on ``n_train`` examples."""
    e = profile.laurent_epochs
    return TrainConfig(e, profile.laurent_batch_size, profile.laurent_learning_rate,
                       TrainConfig.prior_std_for_weight_decay(profile.laurent_weight_decay, n_train),
                       optimizer="sgd", lr_milestones=tuple(sorted({max(1, e // 4), max(2, e // 2)})))


def _laurent_config(profile: Profile) -> dict[str, Any]:
    return {**_data_config(profile), **{k: v for k, v in profile.to_dict().items() if k.startswith("laurent_")}}


def _laurent_summary(res: dict[str, Any]) -> dict[str, Any]:
    return {"nets": int(len(res["test_accuracy"])), "test_accuracy_mean": float(np.mean(res["test_accuracy"])),
            "swapped_pairs_per_step": float(np.mean(res["swaps"]))}


@register("laurent_mlps", _laurent_config,
          "Laurent et al.: many ReLU MLPs trained at once with the OptuNet recipe (SGD, weight decay, "
          "learning rate halved twice), counting swaps of sorted units at every step", summary=_laurent_summary)
def laurent_mlps(profile: Profile) -> dict[str, Any]:
    from symlib.evaluation.metrics import accuracy
    from symlib.core.models import mlp_apply
    from symlib.symmetry.neuron_order import statistics_observer, swap_counter
    from symlib.inference.training import fit_map_many, learning_rate_at

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
