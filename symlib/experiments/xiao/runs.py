"""Xiao et al. (2023), Fig. 1-2: MAP-trained MLP pairs, re-basin barriers, and the number of
transpositions over training and along the linear path."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.models import mlp_apply, mlp_init
from symlib.experiments import cache
from symlib.experiments.profiles import Profile
from symlib.experiments.registry import load_data, map_train_config, mlp_config, register, run
from symlib.inference import Data, Model, fit_ensemble, fit_map
from symlib.inference.training import evaluate, sq_norm
from symlib.experiments.xiao.results import (MapPairResult, NoTPathsResult, NoTSweepResult, RebasinResult,
                                            repaired_units_summary)
from symlib.experiments.xiao.settings import MATCHING_METHODS, MLP_SEEDS, SPLITS

#: the MLPs of these experiments as a model of the fits (:class:`symlib.inference.Model`)
MLP = Model(mlp_apply)



# ---------------------------------------------------------------------------------------
# Two MAP-trained MLPs and re-basin barriers (Sec. 1, Fig. 1)
# ---------------------------------------------------------------------------------------

@register("mlp_map_pair", mlp_config,
          "two one-hidden-layer MLPs trained by MAP/Adam from independent seeds (0 and 1)", result=MapPairResult)
def mlp_map_pair(profile: Profile) -> dict[str, Any]:
    """Train one MLP per seed of ``MLP_SEEDS`` on the profile's MNIST split.

    Args:
        profile: the run profile.

    Returns:
        The artifact: per ``seed<k>``, ``params``, ``epoch_loss``, ``test_nll`` and ``test_accuracy``.
    """
    d = load_data(profile)
    cfg = map_train_config(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    out: dict[str, Any] = {}
    for seed in MLP_SEEDS:
        init_key, data_key = jax.random.split(jax.random.key(seed))
        fit = fit_map(data_key, mlp_init(init_key, sizes), MLP, Data(d["x_train"], d["y_train"]), cfg)
        params = fit.params
        test = evaluate(params, d["x_test"], d["y_test"], mlp_apply)
        out[f"seed{seed}"] = {"params": jax.device_get(params), "epoch_loss": np.asarray(fit.info["epoch_loss"]),
                              "test_nll": test["nll"], "test_accuracy": test["accuracy"]}
    return out


def _barriers_summary(res: dict[str, Any]) -> dict[str, Any]:
    """Pair 0's barriers, NoT and accuracies (the figure's pair), and every pair's barriers."""
    out = {f"barrier_{split}": {m: float(v) for m, v in b.items()} for split, b in res["barrier"].items()}
    out.update({f"not_{k}": int(v) for k, v in res["not"].items()})
    out.update({f"endpoint_test_accuracy_{k}": float(v) for k, v in res["endpoint_test_accuracy"].items()})
    out["test_accuracy_mid"] = {m: float(c["accuracy"][len(c["accuracy"]) // 2])
                                for m, c in res["curves"]["test"].items()}
    if "pairs" in res:
        pairs = res["pairs"]
        out["pairs"] = int(len(pairs["seeds"]))
        out["pair_seeds"] = np.asarray(pairs["seeds"]).astype(int).tolist()
        for split, b in pairs["barrier"].items():
            out[f"barrier_pairs_{split}"] = {m: np.asarray(v, float).tolist() for m, v in b.items()}
        out["not_pairs"] = {m: np.asarray(v).astype(int).tolist() for m, v in pairs["not"].items()}
    return out


def _barrier_config(profile: Profile) -> dict[str, Any]:
    return {**mlp_config(profile), "n_lambdas": profile.n_lambdas, "rebasin_pairs": profile.rebasin_pairs}


def pair_seeds(pair: int) -> tuple[int, int]:
    """The training seeds of independent pair ``pair`` of ``rebasin_barriers``: (2k, 2k + 1);
    pair 0 is ``MLP_SEEDS``, the networks of ``mlp_map_pair``. No seed is in two pairs."""
    return 2 * pair, 2 * pair + 1


def _train_mlp(profile: Profile, d: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """One MLP trained as in :func:`mlp_map_pair` (same keys from ``seed``)."""
    cfg = map_train_config(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    init_key, data_key = jax.random.split(jax.random.key(seed))
    params = fit_map(data_key, mlp_init(init_key, sizes), MLP, Data(d["x_train"], d["y_train"]), cfg).params
    return {"params": jax.device_get(params), "test_accuracy": evaluate(params, d["x_test"], d["y_test"], mlp_apply)["accuracy"]}


@register("rebasin_barriers", _barrier_config,
          "Xiao et al. Fig. 1: interpolation W_0 -> W_1 before and after weight / activation matching, over "
          "independent pairs of networks",
          summary=_barriers_summary, result=RebasinResult)
def rebasin_barriers(profile: Profile) -> dict[str, Any]:
    """Match net 1 to net 0 and interpolate, raw and matched, for ``profile.rebasin_pairs``
    independent pairs (:func:`pair_seeds`; pair 0 is ``mlp_map_pair``'s).

    Args:
        profile: the run profile.

    Returns:
        The artifact: for pair 0 (the figure's), ``curves`` and ``barrier`` by split and
        method, ``not`` and ``perms`` by matching method, ``endpoint_test_accuracy`` by
        ``seed<k>``; ``pairs``: ``seeds``, ``barrier[split][method]`` and ``not[method]``
        with one entry per pair.
    """
    from symlib.evaluation.interpolation import interpolation_curve, loss_barrier
    from symlib.symmetry.matching import activation_matching, weight_matching
    from symlib.symmetry.permutations import num_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

    d = load_data(profile)
    spec = mlp_permutation_spec(1)

    def one_pair(pair: int) -> dict[str, Any]:
        if pair == 0:
            nets = run("mlp_map_pair", profile).artifact
            w0, w1 = nets["seed0"]["params"], nets["seed1"]["params"]
            acc = [nets[f"seed{s}"]["test_accuracy"] for s in MLP_SEEDS]
        else:
            a, b = (_train_mlp(profile, d, s) for s in pair_seeds(pair))
            w0, w1, acc = a["params"], b["params"], [a["test_accuracy"], b["test_accuracy"]]
        matches = {"weight matching": weight_matching(jax.random.key(0), spec, w0, w1),
                   "activation matching": activation_matching(spec, w0, w1, d["x_train"])}
        targets = {"no matching": w1, **{m: apply_permutation(spec, r.perms, w1) for m, r in matches.items()}}
        out: dict[str, Any] = {"curves": {"train": {}, "test": {}}, "barrier": {"train": {}, "test": {}},
                               "endpoint_test_accuracy": np.asarray(acc, float),
                               "not": {m: np.asarray(num_transpositions(r.perms["P_0"])) for m, r in matches.items()},
                               "perms": {m: np.asarray(r.perms["P_0"]) for m, r in matches.items()}}
        for split in ("train", "test"):
            for method, target in targets.items():
                c = interpolation_curve(w0, target, d[f"x_{split}"], d[f"y_{split}"], profile.n_lambdas,
                                        apply_fn=mlp_apply)
                out["curves"][split][method] = c
                out["barrier"][split][method] = np.asarray(loss_barrier(c["lambda"], c["loss"]))
        if pair:  # only the figure's pair keeps its curves and permutations
            del out["curves"], out["perms"]
        return out

    # one step per pair, each kept in the artifact cache: a killed run resumes
    pairs = cache.cached_steps("rebasin_barriers", _barrier_config(profile), range(profile.rebasin_pairs), one_pair,
                               label=int)
    first = pairs[0]
    return {"curves": first["curves"],
            "barrier": {s: {m: float(v) for m, v in b.items()} for s, b in first["barrier"].items()},
            "not": {m: int(v) for m, v in first["not"].items()}, "perms": first["perms"],
            "endpoint_test_accuracy": {f"seed{s}": float(a) for s, a in zip(MLP_SEEDS, first["endpoint_test_accuracy"])},
            "pairs": {"seeds": np.asarray([pair_seeds(k) for k in range(len(pairs))]),
                      "barrier": {s: {m: np.asarray([float(p["barrier"][s][m]) for p in pairs])
                                      for m in MATCHING_METHODS} for s in SPLITS},
                      "not": {m: np.asarray([int(p["not"][m]) for p in pairs]) for m in first["not"]},
                      "endpoint_test_accuracy": np.asarray([p["endpoint_test_accuracy"] for p in pairs])}}


def barrier_replicates(summary: Mapping[str, Any]) -> dict[str, dict[str, tuple[float, float, int]]]:
    """Mean, standard error and number of independent pairs of every barrier of a
    ``rebasin_barriers`` summary (a saved run without replicates gives one pair, SE nan).

    Returns:
        ``{split: {method: (mean, se, pairs)}}``.
    """
    out: dict[str, dict[str, tuple[float, float, int]]] = {}
    for split in SPLITS:
        b = pair_barrier_lists(summary, split)
        out[split] = {m: (float(np.mean(v)), float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1
                          else float("nan"), len(v)) for m, v in b.items()}
    return out


def pair_barrier_lists(summary: Mapping[str, Any], split: str) -> dict[str, list[float]]:
    if f"barrier_pairs_{split}" in summary:
        return {m: [float(x) for x in v] for m, v in summary[f"barrier_pairs_{split}"].items()}
    return {m: [float(v)] for m, v in summary[f"barrier_{split}"].items()}


# ---------------------------------------------------------------------------------------
# The number of transpositions (Sec. 2, Fig. 2)
# ---------------------------------------------------------------------------------------

def not_grid(profile: Profile) -> np.ndarray:
    """The NoT values of the Fig. 2 sweep.

    Args:
        profile: the run profile (``hidden`` and ``not_points``).

    Returns:
        ``not_points`` values evenly spaced in ``[0, hidden - 1]`` (every value when
        ``not_points`` is 0 or at least ``hidden``).
    """
    n = profile.hidden
    if profile.not_points <= 0 or profile.not_points >= n:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, profile.not_points).round().astype(int))


def _not_config(profile: Profile) -> dict[str, Any]:
    return {**mlp_config(profile), "n_lambdas": profile.n_lambdas, "not_points": profile.not_points,
            "not_runs": profile.not_runs}


def _not_sweep_summary(res: dict[str, Any]) -> dict[str, Any]:
    """Every row of the sweep (small: one per run and NoT value) and the correlations the claims read."""
    from scipy import stats

    rows = {k: np.asarray(res[k]).tolist() for k in NoTSweepResult.COLUMNS}
    not_p = np.asarray(res["not_p"], float)
    out: dict[str, Any] = {"rows": rows, "runs": int(len(np.unique(res["run"]))),
                           "not_values": int(len(np.unique(res["not_p"]))),
                           "pearson_not": float(stats.pearsonr(not_p, np.asarray(res["not_p_prime"], float)).statistic),
                           "mean_abs_not_change": float(np.mean(np.abs(np.asarray(res["not_p_prime"]) - not_p)))}
    out["spearman"] = {k: float(stats.spearmanr(not_p, np.asarray(res[k], float)).statistic)
                       for k in ("distance_raw", "barrier_raw", "distance_matched", "barrier_matched")}
    out["barrier_matched_mean"] = float(np.mean(res["barrier_matched"]))
    out["barrier_raw_max"] = float(np.max(res["barrier_raw"]))
    return out


@register("not_sweep", _not_config,
          "Xiao et al. Fig. 2: train P W_init for permutations P of every NoT, rebasin to the unpermuted net",
          summary=_not_sweep_summary, result=NoTSweepResult)
def not_sweep(profile: Profile) -> dict[str, Any]:
    """Train ``W_init`` and ``P W_init`` for P of every NoT in :func:`not_grid`, then rebasin.

    Args:
        profile: the run profile.

    Returns:
        The artifact: one array per column of :class:`NoTSweepResult`.
    """
    from symlib.evaluation.interpolation import barrier
    from symlib.symmetry.matching import weight_matching
    from symlib.symmetry.permutations import num_transpositions, random_permutation_with_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec, param_distance

    d = load_data(profile)
    cfg = map_train_config(profile)
    spec = mlp_permutation_spec(1)
    ks = not_grid(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    x, y = d["x_train"], d["y_train"]

    def one_run(run_index: int) -> dict[str, Any]:
        rows: dict[str, list] = {k: [] for k in NoTSweepResult.COLUMNS}
        init = mlp_init(jax.random.key(1000 + run_index), sizes)
        perms = [random_permutation_with_transpositions(jax.random.key(10_000 * (run_index + 1) + int(k)),
                                                        profile.hidden, int(k))
                 for k in ks]
        inits = [init] + [apply_permutation(spec, {"P_0": p}, init) for p in perms]
        stacked = jax.tree_util.tree_map(lambda *a: jax.numpy.stack(a), *inits)
        data_keys = jax.random.split(jax.random.key(2000 + run_index), len(inits))  # own minibatch order per net
        trained = fit_ensemble(data_keys, stacked, MLP, Data(x, y), cfg).samples
        trained = jax.device_get(trained)
        ref = jax.tree_util.tree_map(lambda a: a[0], trained)
        for i, (k, p) in enumerate(zip(ks, perms), start=1):
            net = jax.tree_util.tree_map(lambda a: a[i], trained)
            match = weight_matching(jax.random.key(run_index), spec, ref, net)
            matched = apply_permutation(spec, match.perms, net)
            rows["run"].append(run_index)
            rows["not_p"].append(num_transpositions(p))
            rows["not_p_prime"].append(num_transpositions(match.perms["P_0"]))
            rows["distance_raw"].append(param_distance(ref, net))
            rows["distance_matched"].append(param_distance(ref, matched))
            rows["barrier_raw"].append(barrier(ref, net, x, y, profile.n_lambdas, apply_fn=mlp_apply))
            rows["barrier_matched"].append(barrier(ref, matched, x, y, profile.n_lambdas, apply_fn=mlp_apply))
        return {k: np.asarray(v) for k, v in rows.items()}

    # one step per random initialisation, each kept in the artifact cache: a killed run resumes
    runs = cache.cached_steps("not_sweep", _not_config(profile), range(profile.not_runs), one_run, label=int)
    return {k: np.concatenate([r[k] for r in runs]) for k in NoTSweepResult.COLUMNS}


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


#: hidden units of the reference counted as *dead* are never active (ReLU output 0) on this
#: many training images (or all of them, if fewer)
REPAIRED_ACTIVITY_IMAGES = 10_000


def _repaired_units(spec, init_0, init_1, final_0, final_1, x: np.ndarray, epochs: int) -> dict[str, np.ndarray]:
    """Which units of the reference are matched to another partner after training than at
    initialisation, with the reference's hidden activity.

    Matches net 1 to net 0 at initialisation (``m_init``) and after training (``m_final``, the
    same matching as the last entry of :func:`_not_over_training`); unit ``i`` of the reference
    is *re-paired* when ``m_final[i] != m_init[i]``. ``active_fraction[i]``: the fraction of
    the first :data:`REPAIRED_ACTIVITY_IMAGES` training images on which the trained reference's
    hidden unit ``i`` is active; ``out_norm[i]``: the norm of its outgoing weights.
    """
    from symlib.core.models import mlp_hidden
    from symlib.symmetry.matching import weight_matching

    m_init = weight_matching(jax.random.key(0), spec, init_0, init_1).perms["P_0"]
    m_final = weight_matching(jax.random.key(epochs), spec, final_0, final_1).perms["P_0"]
    (hidden,) = mlp_hidden(final_0, x[:REPAIRED_ACTIVITY_IMAGES])
    return {"m_init": np.asarray(m_init), "m_final": np.asarray(m_final),
            "active_fraction": np.asarray((hidden > 0).mean(0)),
            "out_norm": np.asarray(np.linalg.norm(np.asarray(final_0["dense_1"]["kernel"]), axis=1))}


def describe_repaired(s: Mapping[str, Any]) -> str:
    """One paragraph of :func:`repaired_units_summary`'s numbers, for a chapter."""
    if s["repaired"] == 0:
        return f"none of the {s['units']} units re-paired over training ({s['dead_kept']} never active on the images)"
    return (f"{s['repaired']} of {s['units']} units re-paired over training; never active on the images: "
            f"{s['dead_repaired']} of the re-paired, {s['dead_kept']} of the {s['units'] - s['repaired']} kept; "
            f"median active fraction {s['median_active_repaired']:.3f} (re-paired) vs {s['median_active_kept']:.3f} "
            f"(kept); median outgoing-weight norm {s['median_out_norm_repaired']:.3f} vs "
            f"{s['median_out_norm_kept']:.3f}; of the {s['active_half']} more active units, "
            f"{s['active_half_kept']} kept their partner")


def _not_paths_summary(res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"hidden": int(res["hidden"]), "not_p": int(res["not_p"]),
                           "epochs": int(np.asarray(res["epochs"])[-1]), "lambda": np.asarray(res["lambda"]).tolist()}
    for name in ("permuted", "independent"):
        out[name] = {k: np.asarray(res[name][k]).astype(int).tolist() for k in ("not_epochs", "not_lambda")}
    out["permuted"]["repaired"] = repaired_units_summary(res["permuted"]["repaired"])
    if "replicates" in res:
        rep = res["replicates"]
        out["replicates"] = {"not_p": np.asarray(rep["not_p"]).astype(int).tolist(),
                             **{k: np.asarray(rep[k]).astype(int).tolist() for k in ("not_epochs", "not_lambda")}}
    return out


def not_paths_replicates(summary: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The permuted partners' NoT traces of a ``not_paths`` summary, one row per independent
    pair (pair 0 is the figure's; a saved run without replicates gives one row).

    Returns:
        ``not_p`` (pairs,), ``not_epochs`` (pairs, epochs + 1), ``not_lambda`` (pairs, points).
    """
    if "replicates" in summary:
        r = summary["replicates"]
        return {k: np.asarray(r[k]) for k in ("not_p", "not_epochs", "not_lambda")}
    p = summary["permuted"]
    return {"not_p": np.asarray([summary["not_p"]]), "not_epochs": np.asarray([p["not_epochs"]]),
            "not_lambda": np.asarray([p["not_lambda"]])}


@register("not_paths", _not_config,
          "Xiao et al. Fig. 2 right: NoT of rebasin along the interpolation path and over training epochs",
          summary=_not_paths_summary, result=NoTPathsResult)
def not_paths(profile: Profile) -> dict[str, Any]:
    """NoT of re-basin along the path and over training, for a permuted and an independent partner.

    Args:
        profile: the run profile.

    Returns:
        The artifact: ``not_p``, ``epochs``, ``lambda``, and per partner ``not_epochs`` and ``not_lambda``.
    """
    from symlib.symmetry.permutations import num_transpositions, random_permutation_with_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

    d = load_data(profile)
    cfg = map_train_config(profile)
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
        t = fit_map(jax.random.key(3000 + seed), net_init, MLP, Data(d["x_train"], d["y_train"]), cfg,
                    keep_trajectory=True).info["trajectory"]
        traj[name] = jax.device_get(t)
    lambdas = np.linspace(0.0, 1.0, 2 * profile.n_lambdas - 1)
    last = lambda t: jax.tree_util.tree_map(lambda a: a[-1], t)  # noqa: E731
    out: dict[str, Any] = {"not_p": np.asarray(num_transpositions(p)), "epochs": np.arange(cfg.epochs + 1),
                           "lambda": lambdas, "hidden": np.asarray(profile.hidden)}
    for name in ("permuted", "independent"):
        out[name] = {
            "not_epochs": _not_over_training(spec, inits["reference"], inits[name], traj["reference"], traj[name],
                                             cfg.epochs),
            "not_lambda": _not_along_path(spec, last(traj["reference"]), last(traj[name]), lambdas),
        }
    # which units re-pair over training, and how active they are (chapter 3's paper-scale finding)
    out["permuted"]["repaired"] = _repaired_units(spec, inits["reference"], inits["permuted"], last(traj["reference"]),
                                                  last(traj["permuted"]), np.asarray(d["x_train"]), cfg.epochs)

    def replicate(r: int) -> dict[str, Any]:
        """Independent pair ``r`` >= 1: a fresh reference and its permuted copy (own keys)."""
        p_r = random_permutation_with_transpositions(jax.random.key(7 + 100 * r), profile.hidden, k)
        ref = mlp_init(jax.random.key(5000 + r), sizes)
        pair = {"reference": ref, "permuted": apply_permutation(spec, {"P_0": p_r}, ref)}
        t = {name: jax.device_get(fit_map(jax.random.key(6000 + 2 * r + j), net, MLP, Data(d["x_train"], d["y_train"]),
                                          cfg, keep_trajectory=True).info["trajectory"])
             for j, (name, net) in enumerate(pair.items())}
        return {"not_p": np.asarray(num_transpositions(p_r)),
                "not_epochs": _not_over_training(spec, ref, pair["permuted"], t["reference"], t["permuted"],
                                                 cfg.epochs),
                "not_lambda": _not_along_path(spec, last(t["reference"]), last(t["permuted"]), lambdas)}

    # independent pairs for the claims (pair 0 is the one above), one cached step each
    more = cache.cached_steps("not_paths", _not_config(profile), range(1, max(1, profile.not_runs)), replicate,
                              label=int)
    first = {"not_p": out["not_p"], **{key: out["permuted"][key] for key in ("not_epochs", "not_lambda")}}
    out["replicates"] = {key: np.stack([np.asarray(r[key]) for r in [first, *more]])
                         for key in ("not_p", "not_epochs", "not_lambda")}
    return out


# ---------------------------------------------------------------------------------------
# Permuting one trained network (Sec. 1)
# ---------------------------------------------------------------------------------------

def permutation_effect(a: Mapping[str, Any], b: Mapping[str, Any], x: np.ndarray) -> dict[str, float]:
    """What separates two MLPs (``b`` typically a permuted copy of ``a``), in function and in weights.

    Args:
        a: the reference network's parameters (``dense_0``, ``dense_1``, ...).
        b: the other network's parameters, same layout.
        x: inputs on which the logits are compared, ``(n, features)``.

    Returns:
        ``max_abs_logit_diff`` (largest logit difference over ``x``), ``max_abs_logit`` (largest
        logit of ``a``, the scale of float32 rounding), ``prediction_agreement`` (share of ``x``
        where both predict the same class), ``weight_distance`` (Euclidean) and
        ``relative_weight_distance`` (the distance over the norm of ``a``).
    """
    from symlib.symmetry.specs import param_distance

    la, lb = mlp_apply(a, x), mlp_apply(b, x)
    distance = param_distance(a, b)
    return {
        "max_abs_logit_diff": float(jnp.max(jnp.abs(la - lb))),
        "max_abs_logit": float(jnp.max(jnp.abs(la))),
        "prediction_agreement": float(jnp.mean(jnp.argmax(la, 1) == jnp.argmax(lb, 1))),
        "weight_distance": distance,
        "relative_weight_distance": distance / float(jnp.sqrt(sq_norm(a))),
    }


def distance_by_not(params: Mapping[str, Any], x: np.ndarray, hidden: int, points: int = 9,
                    seed: int = 100) -> list[tuple[int, int, float, float]]:
    """:func:`permutation_effect` of a one-hidden-layer MLP against copies permuted by exactly
    ``k`` transpositions, ``k`` evenly spaced in ``[0, hidden - 1]``.

    Args:
        params: the network (one hidden layer of ``hidden`` units).
        x: inputs on which the logits are compared.
        hidden: its number of hidden units.
        points: how many values of ``k`` (duplicates after rounding down are dropped).
        seed: the ``i``-th permutation is drawn with ``jax.random.key(seed + i)``.

    Returns:
        One row per ``k``: ``(k, NoT of the drawn permutation, max abs logit difference,
        relative weight distance)``.
    """
    from symlib.symmetry.permutations import num_transpositions, random_permutation_with_transpositions
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

    spec = mlp_permutation_spec(num_hidden_layers=1)
    rows = []
    for i, k in enumerate(np.unique(np.linspace(0, hidden - 1, points).astype(int))):
        p_k = random_permutation_with_transpositions(jax.random.key(seed + i), hidden, int(k))
        r = permutation_effect(params, apply_permutation(spec, {"P_0": p_k}, params), x)
        rows.append((int(k), num_transpositions(p_k), r["max_abs_logit_diff"], r["relative_weight_distance"]))
    return rows


def sweep_statistics(sweep: Any) -> dict[str, np.ndarray]:
    """Per-run statistics of a ``not_sweep`` result (:class:`~symlib.experiments.xiao.results.NoTSweepResult`),
    each computed within one random initialisation over its NoT values (Fig. 2 a-c).

    Returns:
        One value per run, by name: ``"Pearson r(NoT(P), NoT(P'))"``, ``"mean |NoT(P') - NoT(P)|
        (transpositions)"``, and ``"Spearman rho(NoT(P), <column>)"`` for the raw and matched
        distances and barriers.
    """
    from scipy import stats

    not_p, not_pp = sweep.per_run("not_p"), sweep.per_run("not_p_prime")
    out = {"Pearson r(NoT(P), NoT(P'))": np.asarray([stats.pearsonr(a, b).statistic for a, b in zip(not_p, not_pp)]),
           "mean |NoT(P') - NoT(P)| (transpositions)": np.abs(not_pp - not_p).mean(1)}
    for key in ("distance_raw", "barrier_raw", "distance_matched", "barrier_matched"):
        out[f"Spearman rho(NoT(P), {key})"] = np.asarray([stats.spearmanr(a, b).statistic
                                                          for a, b in zip(not_p, sweep.per_run(key))])
    return out
