"""Laurent et al. (2024), "A symmetry-aware exploration of Bayesian neural network posteriors",
on MLPs: the registered experiment ``laurent_mlps`` (Fig. 2, Fig. 4, App. D.3: many ReLU MLPs
trained with the OptuNet recipe; :func:`symlib.experiments.run` returns a
:class:`LaurentMLPsResult`), and its claims (Fig. 1's toy perceptrons are
:mod:`symlib.experiments.laurent.perceptrons`).

The paper's claims are registered here with :func:`symlib.experiments.judging.claims.claim` and read
the experiment's summary: Fig. 2, Prop. 2, Cor. 1, App. D.3
(above the min-mass point, strict convexity in the log-scales, lower regularised loss with
biases counted, largest weights, identical marginals before symmetry removal and different
after), and Sec. 5.2 (swaps in the high learning-rate phases, the ordering freezing). Each
returns :class:`~symlib.experiments.judging.claims.Evidence` against a threshold of the Laurent
section of :mod:`symlib.experiments.judging.thresholds`, over its independent units: the networks
(exact worst cases over every network for the min-mass claims, whose optimum is computed, not
sampled; a Student-t interval over networks for the largest weights), the runs (a delta-method
interval for the swap ratios) and, for the KS shares, the networks again (Clopper-Pearson over
the weight positions' effective number, measured by splitting the networks at random,
:func:`permuted_ks_shares`). Summaries saved before
2026-11-25 lack the per-unit values, and those saved before 2026-12-01 the networks' ranks of
the KS shares; the claims that need them are "not tested" on such runs. :func:`mass_hessian`
and :func:`mass_along_line` are the numerical checks of
Proposition 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from symlib.core.models import mlp_init
from symlib.experiments.laurent import perceptrons  # noqa: F401  (registers toy_perceptrons and its claims first)
from symlib.experiments.judging.claims import (Evidence, Verdict, claim, difference, worst, exact, interval_evidence,
                                       mean_of_units, not_tested)
from symlib.experiments.profiles import Profile
from symlib.experiments.recipes import StepDecay, step_sgd
from symlib.experiments.registry import ExperimentResult, data_config, fit_many_blocks, load_data, register
from symlib.experiments.judging.thresholds import threshold
from symlib.evaluation.stats import proportion_interval
from symlib.inference.training import TrainConfig


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
    "where_units_swap": "scarce, gathered around points of instability (MNIST, left; ResNet-18, right: "
                        "in the high learning-rate phases)",
    "last_phase": "weights nearly never permute",
}


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


def laurent_decay(profile: Profile) -> StepDecay:
    """The learning rate of :func:`laurent_train_config` in epochs: ``profile.laurent_learning_rate``,
    halved after a quarter and after half of the ``profile.laurent_epochs`` epochs."""
    e = profile.laurent_epochs
    return StepDecay(profile.laurent_learning_rate, tuple(sorted({max(1, e // 4), max(2, e // 2)})), 0.5)


def laurent_train_config(profile: Profile, n_train: int) -> TrainConfig:
    """Laurent et al.'s OptuNet recipe (App. B.1) for ``profile.laurent_epochs`` epochs.

    SGD, learning rate halved after a quarter and after half of training
    (:func:`laurent_decay`), weight decay as a Gaussian prior on ``n_train`` examples.

    Args:
        profile: the run profile (``laurent_*`` settings).
        n_train: training examples (the data the config trains on: the steps of an epoch;
            turns the weight decay into a prior std).

    Returns:
        The training configuration.
    """
    return TrainConfig(profile.laurent_epochs, profile.laurent_batch_size,
                       step_sgd(laurent_decay(profile), n_train // profile.laurent_batch_size),
                       TrainConfig.prior_std_for_weight_decay(profile.laurent_weight_decay, n_train))


#: networks per cached block of ``laurent_mlps`` (the quick profile's 64 in one, the paper's 256 in four)
LAURENT_MLP_BLOCK = 64


def _laurent_config(profile: Profile) -> dict[str, Any]:
    return {**data_config(profile), **{k: v for k, v in profile.to_dict().items() if k.startswith("laurent_")}}


def mass_hessian(params: dict[str, Any], log_scales: list[np.ndarray] | None = None) -> np.ndarray:
    """Hessian of the mass ``M(u)`` in the hidden units' log-scales ``u`` (App. C.7).

    ``M(u) = sum_l sum_ij K_l[i,j]^2 exp(2 (u_l[j] - u_{l-1}[i]))`` (see
    :mod:`symlib.symmetry.scaling`): every term ``e = K^2 exp(...)`` adds ``4 e`` to the
    diagonal entries of its two units and ``-4 e`` to their off-diagonal pair (a grounded
    weighted graph Laplacian; input and output units have no scale).

    Args:
        params: one MLP (``dense_0 .. dense_{L-1}``).
        log_scales: one array per hidden layer (zeros, the network as it is, when None).

    Returns:
        The ``(H, H)`` Hessian, ``H`` the number of hidden units, units in layer order.

    Raises:
        ValueError: if ``params`` has no hidden layer or ``log_scales`` has the wrong shapes.
    """
    names = [f"dense_{l}" for l in range(len(params))]
    K2 = [np.square(np.asarray(params[n]["kernel"], np.float64)) for n in names]
    widths = [k.shape[1] for k in K2[:-1]]
    if not widths:
        raise ValueError("params must have at least one hidden layer")
    u = [np.zeros(w) for w in widths] if log_scales is None else [np.asarray(x, np.float64) for x in log_scales]
    if [x.shape for x in u] != [(w,) for w in widths]:
        raise ValueError(f"log_scales must have shapes {[(w,) for w in widths]}, got {[x.shape for x in u]}")
    start = np.concatenate([[0], np.cumsum(widths)])
    H = np.zeros((start[-1], start[-1]))
    for l, k2 in enumerate(K2):
        e = k2 * (np.exp(-2 * u[l - 1])[:, None] if l > 0 else 1.0) * (np.exp(2 * u[l])[None, :] if l < len(u) else 1.0)
        if l < len(u):  # units of hidden layer l receive these weights
            j = slice(start[l], start[l + 1])
            H[j, j] += np.diag(4 * e.sum(0))
        if l > 0:  # units of hidden layer l-1 send them
            i = slice(start[l - 1], start[l])
            H[i, i] += np.diag(4 * e.sum(1))
            if l < len(u):
                H[i, j] -= 4 * e
                H[j, i] -= 4 * e.T
    return H


def _mass_at(K2: list[np.ndarray], u: list[np.ndarray]) -> float:
    total = 0.0
    for l, k2 in enumerate(K2):
        e = k2 * (np.exp(-2 * u[l - 1])[:, None] if l > 0 else 1.0) * (np.exp(2 * u[l])[None, :] if l < len(u) else 1.0)
        total += float(e.sum())
    return total


def mass_along_line(params: dict[str, Any], origin: list[np.ndarray], direction: list[np.ndarray],
                    t: np.ndarray) -> np.ndarray:
    """The mass of ``params`` rescaled by log-scales ``origin + t * direction``, for every ``t``.

    Args:
        params: one MLP.
        origin: one log-scale array per hidden layer.
        direction: one array per hidden layer, same shapes.
        t: positions along the line.

    Returns:
        ``M(origin + t direction)`` for each ``t``.
    """
    K2 = [np.square(np.asarray(params[f"dense_{l}"]["kernel"], np.float64)) for l in range(len(params))]
    return np.array([_mass_at(K2, [o + ti * d for o, d in zip(origin, direction)]) for ti in np.asarray(t, float)])


#: positions along each random line through the min-mass point (in units of the line's
#: direction, a unit vector in log-scale space)
LINE_T = np.linspace(-1.0, 1.0, 41)


def min_mass_entry(nets, solved, *, layers, bias_layers, layer_weights, layer_params, eig, lines, max_logit_change):
    """The ``min_mass`` entry of a summary (the numbers the Fig. 2 / Prop. 2 / Cor. 1 claims read).

    Args:
        nets: the trained networks (nested dicts, float64).
        solved: their min-mass solutions (``mass_before``, ``mass``, ``params``, ``converged``).
        layers: the layers with a kernel, input to output.
        bias_layers: the layers whose bias the rescaling changes (the hidden ones).
        layer_weights: kernel weights per layer.
        layer_params: weights and biases per layer.
        eig: ``{"trained" | "halfway" | "min-mass": [smallest / largest Hessian eigenvalue per net]}``.
        lines: ``(lines, minimum_at_optimum, convex)`` counts of the random lines.
        max_logit_change: largest logit change of the rescaling over all networks.

    Returns:
        A JSON-able dict.
    """
    def bias_sq(net):
        return float(sum(np.sum(np.square(np.asarray(net[n]["bias"], np.float64))) for n in bias_layers))

    largest = {name: np.array([[np.abs(np.asarray(n[l]["kernel"])).max() for l in layers] for n in group])
               for name, group in (("trained", nets), ("min-mass", [s.params for s in solved]))}
    return {"all_converged": bool(all(s.converged for s in solved)), "max_logit_change": float(max_logit_change),
            "mass_before": [float(s.mass_before) for s in solved], "mass_after": [float(s.mass) for s in solved],
            "hidden_bias_sq_before": [bias_sq(n) for n in nets],
            "hidden_bias_sq_after": [bias_sq(s.params) for s in solved],
            "hessian_min_over_max_eigenvalue": {k: float(np.min(v)) for k, v in eig.items()},
            "random_lines": {"lines": lines[0], "minimum_at_optimum": lines[1], "convex": lines[2],
                             "t": [float(LINE_T[0]), float(LINE_T[-1]), len(LINE_T)]},
            "layers": list(layers), "layer_weights": list(layer_weights), "layer_params": list(layer_params),
            "largest_weight_trained": largest["trained"].mean(0).tolist(),
            "largest_weight_min_mass": largest["min-mass"].mean(0).tolist(),
            # per network (rows) and layer: the largest-weight claim's units
            "largest_weight_trained_per_net": largest["trained"].tolist(),
            "largest_weight_min_mass_per_net": largest["min-mass"].tolist()}


def _laurent_summary(res: dict[str, Any]) -> dict[str, Any]:
    """Summary of ``laurent_mlps``: accuracy and swaps, and for Fig. 2, Prop. 2, Cor. 1 and
    App. D.3 the min-mass problem of every network (masses, hidden-bias sums of squares,
    Hessian eigenvalues, random lines, largest weights) and the KS tests of the marginals."""
    from symlib.core.models import unstack
    from symlib.evaluation.marginals import first_last_pvalues
    from symlib.core.models import mlp_apply
    from symlib.symmetry import identifiable, min_mass, mlp_permutation_spec, mlp_scaling_spec, sort_neurons
    from symlib.symmetry.scaling import function_change

    nets = unstack(res["params"], np.float64)
    L = len(nets[0])
    layers = [f"dense_{l}" for l in range(L)]
    sspec, pspec = mlp_scaling_spec(L - 1), mlp_permutation_spec(L - 1)
    solved = [min_mass(sspec, net) for net in nets]
    rng = np.random.default_rng(0)
    eig = {"trained": [], "halfway": [], "min-mass": []}
    line_min_at_optimum, line_convex, lines = 0, 0, 0
    for net, s in zip(nets, solved):
        logs = [s.log_scales[g] for g in sspec.groups]
        for where, u in (("trained", None), ("halfway", [x / 2 for x in logs]), ("min-mass", logs)):
            ev = np.linalg.eigvalsh(mass_hessian(net, u))
            eig[where].append(ev[0] / ev[-1])
        for _ in range(8):
            v = [rng.normal(size=x.shape) for x in logs]
            norm = np.sqrt(sum(np.sum(x**2) for x in v))
            m = mass_along_line(net, logs, [x / norm for x in v], LINE_T)
            lines += 1
            line_min_at_optimum += int(np.argmin(m) == len(LINE_T) // 2)
            line_convex += int(np.all(np.diff(m, 2) >= -1e-12 * m.max()))
    forms = {"raw": nets, "permutation removed": [sort_neurons(pspec, n)[0] for n in nets],
             "scaling and permutation removed": [identifiable(sspec, pspec, n) for n in nets]}
    pvals = {k: [first_last_pvalues(g, l) for l in range(L)] for k, g in forms.items()}
    sizes = np.asarray(res["sizes"])
    return {"nets": int(len(res["test_accuracy"])), "test_accuracy_mean": float(np.mean(res["test_accuracy"])),
            "swapped_pairs_per_step": float(np.mean(res["swaps"])),
            "swaps": {"perm_names": [f"P_{l}" for l in range(L - 1)], "units": sizes[1:-1].tolist(),
                      "blocks": [1] * (L - 1), "lr": np.asarray(res["lr"]).tolist(),
                      **swap_summary(res["swaps"], res["epoch_stats"], res["milestones"], sizes[1:-1].tolist(),
                                     [1] * (L - 1))},
            "min_mass": min_mass_entry(
                nets, solved, layers=layers, bias_layers=layers[:-1],
                layer_weights=[int(a * b) for a, b in zip(sizes[:-1], sizes[1:])],
                layer_params=[int(a * b + b) for a, b in zip(sizes[:-1], sizes[1:])], eig=eig,
                lines=(lines, line_min_at_optimum, line_convex),
                max_logit_change=max(
                    function_change(mlp_apply, n, s.params,
                                    np.random.default_rng(i).normal(size=(64, n["dense_0"]["kernel"].shape[0])))
                    for i, (n, s) in enumerate(zip(nets, solved)))),
            "marginals": {
                "positions": [int(len(p)) for p in pvals["raw"]],
                "share_below_005": {k: float(np.mean(np.concatenate(v) < 0.05)) for k, v in pvals.items()},
                "layer_share_below_005": {k: [float(np.mean(p < 0.05)) for p in v] for k, v in pvals.items()},
                "layer_median_p": {k: [float(np.median(p)) for p in v] for k, v in pvals.items()},
                "ks_ranks": ks_ranks_entry({k: forms[k] for k in KS_RANK_FORMS})}}


#: the forms of the weights whose KS tests the marginals' claims read (keys of ``marginals``)
KS_RANK_FORMS = ("raw", "scaling and permutation removed")


def ks_ranks_entry(forms: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The ``marginals.ks_ranks`` entry of a summary: what the marginals' claims need to place
    their interval over the networks, compactly.

    For every form, the ``2 h`` values that the KS tests of
    :func:`symlib.evaluation.marginals.first_last_pvalues` compare at each weight position
    (layers in order): the first unit's weight in the first ``h`` networks, then the last
    unit's in the next ``h``. Only their order matters to a KS test, so each position keeps the
    dense ranks of its values (ties share a rank), ``(positions, 2 h)`` unsigned little-endian
    integers (1 byte for up to 256 networks, else 2), in base64.

    Args:
        forms: form name -> the networks in that form (at least 8).

    Returns:
        ``{"networks_per_half": h, "dtype": ..., form: base64 string, ...}``.
    """
    import base64

    from scipy import stats

    from symlib.evaluation.marginals import unit_weights

    out: dict[str, Any] = {}
    for key, nets in forms.items():
        half = len(nets) // 2
        x = np.concatenate([np.concatenate([unit_weights(nets[:half], l, 0), unit_weights(nets[half:2 * half], l, -1)])
                            for l in range(len(nets[0]))], axis=1)
        dtype = "<u1" if 2 * half <= 256 else "<u2"
        ranks = (stats.rankdata(x, method="dense", axis=0) - 1).T
        out.update({"networks_per_half": half, "dtype": dtype,
                    key: base64.b64encode(np.ascontiguousarray(ranks, dtype).tobytes()).decode("ascii")})
    return out


_NOT_SOLVED = "a min-mass solve did not converge or the rescaled function moved by {change:.1e} (> 1e-9)"


def _min_mass_invalid(mm: dict[str, Any]) -> str | None:
    if not mm["all_converged"] or mm["max_logit_change"] >= 1e-9:
        return _NOT_SOLVED.format(change=mm["max_logit_change"])
    return None


@claim("laurent_mlps", "above_min_mass", "Laurent et al. (2024), Sec. 3.6, Fig. 2",
       "networks trained with weight decay are not at their min-mass point: scaling symmetries remain")
def _above_min_mass(summary: dict[str, Any]) -> Evidence:
    """The smallest relative decrease of the mass over every network (exact worst case)."""
    t = threshold("laurent.above_min_mass")
    mm = summary["min_mass"]
    b, a = np.asarray(mm["mass_before"]), np.asarray(mm["mass_after"])
    dec = (b - a) / b
    detail = (f"{int(np.sum(dec > 1e-3))} of {len(b)} networks above their optimum; mass lower by "
              f"{100 * dec.min():.1f}% to {100 * dec.max():.1f}% (mean {100 * dec.mean():.1f}%); largest logit change "
              f"{mm['max_logit_change']:.1e}")
    why = _min_mass_invalid(mm)
    if why:
        return not_tested(t, why, detail)
    return exact(dec.min(), t, f"all {len(b)} networks (worst case)", detail)


@claim("laurent_mlps", "min_mass_convex", "Laurent et al. (2024), Prop. 2, App. C.7 (Prop. 7)",
       "the min-mass problem is strictly convex in the log-scales, with a single minimiser")
def _min_mass_convex(summary: dict[str, Any]) -> Evidence:
    """The smallest Hessian eigenvalue ratio over every network and point (exact worst case);
    minus the share of bad random lines when a line is not convex or not smallest at the optimum."""
    t = threshold("laurent.min_mass_convex")
    mm = summary["min_mass"]
    ev, rl = mm["hessian_min_over_max_eigenvalue"], mm["random_lines"]
    bad = rl["lines"] - min(rl["minimum_at_optimum"], rl["convex"])
    effect = min(ev.values()) if bad == 0 else -bad / rl["lines"]
    return exact(effect, t, f"all {len(mm['mass_before'])} networks x 3 points, {rl['lines']} random lines (worst case)",
                 "smallest Hessian eigenvalue / largest: " + ", ".join(f"{k} {v:.1e}" for k, v in ev.items())
                 + f"; {rl['convex']} of {rl['lines']} random lines convex, {rl['minimum_at_optimum']} smallest at the "
                   "optimum")


@claim("laurent_mlps", "corollary1_lower_loss", "Laurent et al. (2024), Cor. 1, App. C.7",
       "a trained network not at its min-mass point has equivalent networks with a lower regularised training loss")
def _corollary1(summary: dict[str, Any]) -> Evidence:
    """Our training penalises every parameter, hidden biases included, which the rescaling
    multiplies by the unit's scale. Exactly: the data term is unchanged, the penalty
    ``wd/2 * sum of squares`` changes by ``wd/2 * (dM + dB)``, dM the mass change and dB the
    change of the hidden biases' sum of squares. Effect: the largest ``dM + dB`` over every
    network (exact worst case). One-sided: the kernel-only min-mass point can witness a lower
    penalty; where it does not, it refutes nothing, and the claim is not tested."""
    t = threshold("laurent.corollary1_lower_loss")
    mm = summary["min_mass"]
    dM = np.asarray(mm["mass_after"]) - np.asarray(mm["mass_before"])
    dB = np.asarray(mm["hidden_bias_sq_after"]) - np.asarray(mm["hidden_bias_sq_before"])
    total = dM + dB
    detail = (f"sum of squares changes by dM {dM.mean():.3f} (kernels) + dB {dB.mean():+.4f} (hidden biases) on "
              f"average; total lower for {int(np.sum(total < 0))} of {len(total)} networks (largest total "
              f"{total.max():.3f})")
    why = _min_mass_invalid(mm)
    if why:
        return not_tested(t, why, detail)
    # the kernel-only min-mass point is our only witness, so the check is one-sided: it can
    # show a lower whole penalty, and only the minimiser of kernels and biases together (which
    # the summary does not keep) could refute one. Each gate reads the networks it names.
    no_lower_mass = int(np.sum((total >= 0) & (dB <= 0)))  # then dM >= 0: the kernels did not shrink
    if no_lower_mass:
        return not_tested(t, f"the kernel-only min-mass rescaling did not lower the kernels' sum of squares of "
                             f"{no_lower_mass} of {len(total)} networks: there the witness is missing (the network "
                             "is at its kernel optimum, or the solver failed), which refutes nothing", detail)
    unwitnessed = int(np.sum((total >= 0) & (dB > 0)))
    if unwitnessed:
        return not_tested(t, f"the kernel-only min-mass rescaling, our witness, raises the whole penalty of "
                             f"{unwitnessed} of {len(total)} networks through their hidden biases; it cannot "
                             "witness a lower-loss network there, nor refute one (the minimiser of kernels and "
                             "biases together would be needed)", detail)
    return exact(total.max(), t, f"all {len(total)} networks (worst case)", detail)


#: a rise of a layer's largest weight by this factor or more is "unfeasible" (our reading)
UNFEASIBLE_RATIO = 10.0


@claim("laurent_mlps", "largest_weight", "Laurent et al. (2024), Sec. 3.6, Fig. 2",
       "the minimisation raises the largest weights of the layers with fewer parameters, without unfeasible values")
def _largest_weight(summary: dict[str, Any]) -> Evidence:
    """Per network, the log ratio of each layer's largest |weight| after / before the min-mass
    rescaling: it must rise in every layer with fewer parameters (weights and biases, the
    paper's word) than the average layer, and not in the layer with most; no ratio reaches
    ``UNFEASIBLE_RATIO``."""
    t = threshold("laurent.largest_weight")
    mm = summary["min_mass"]
    n = np.asarray(mm.get("layer_params", mm["layer_weights"]))
    mean_ratio = np.asarray(mm["largest_weight_min_mass"]) / np.asarray(mm["largest_weight_trained"])
    detail = "mean largest |weight| after / before: " + ", ".join(
        f"{l} ({w} parameters) x{r:.2f}" for l, w, r in zip(mm["layers"], n, mean_ratio))
    if "largest_weight_trained_per_net" not in mm:
        return not_tested(t, "the summary keeps only the mean over networks of each layer's largest weight (it "
                             "predates 2026-11-25), so the ratio has no interval over networks", detail)
    ratio = np.asarray(mm["largest_weight_min_mass_per_net"]) / np.asarray(mm["largest_weight_trained_per_net"])
    small, big = [int(i) for i in np.flatnonzero(n < n.mean())], int(np.argmax(n))
    if np.max(ratio) >= UNFEASIBLE_RATIO:
        return exact(np.log(UNFEASIBLE_RATIO) - np.log(np.max(ratio)), t, f"all {len(ratio)} networks (worst case)",
                     detail + f"; largest single ratio x{np.max(ratio):.1f} (unfeasible: >= x{UNFEASIBLE_RATIO:g})")
    evs = [mean_of_units(np.log(ratio[:, i]), t, "networks", f"{mm['layers'][i]} rises") for i in small]
    evs.append(mean_of_units(-np.log(ratio[:, big]), t, "networks", f"{mm['layers'][big]} does not rise"))
    w = worst(evs)
    names = ", ".join(mm["layers"][i] for i in small)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of: the log ratio of each smaller-than-average "
                    f"layer ({names}) rises, of {mm['layers'][big]} does not; least clear: {w.detail})",
                    detail + "; mean log ratio " + ", ".join(f"{mm['layers'][i]} {np.log(ratio[:, i]).mean():+.3g}"
                                                             for i in range(ratio.shape[1])))


#: random splits of the networks between the KS tests' two halves that measure how the weight
#: positions' tests move together (the marginals' claims)
KS_PERMUTATIONS = 400

_NO_RANKS = ("the summary has no per-network ranks of the tested weights (marginals.ks_ranks, added on 2026-12-01), "
             "so the share has no interval over the networks; a rerun judges it")


def ks_critical(half: int, level: float = 0.05) -> int:
    """The smallest ``k`` for which the two-sample KS test of two samples of ``half`` values with
    statistic ``D = k / half`` gives ``p < level`` (``half + 1`` when none does): the p-value
    of :func:`scipy.stats.ks_2samp` (:func:`~symlib.evaluation.marginals.ks_pvalue`) depends on
    the samples only through ``D``, and falls as it grows."""
    from symlib.evaluation.marginals import ks_pvalue

    a = np.arange(half, dtype=float)
    for k in range(half + 1):
        if ks_pvalue(a, a + k) < level:
            return k
    return half + 1


def permuted_ks_shares(ranks: np.ndarray, half: int, permutations: int = KS_PERMUTATIONS, seed: int = 0,
                       chunk: int = 16) -> tuple[float, np.ndarray]:
    """The share of positions whose KS test gives ``p < 0.05``, as stored and for random splits
    of the ``2 half`` networks between the two samples (the same split at every position).

    Args:
        ranks: ``(positions, 2 half)`` ranks of the values at each position (the first ``half``
            columns the first sample).
        half: networks per sample.
        permutations: random splits.
        seed: seed of the splits.
        chunk: splits evaluated at once (memory: ``chunk * positions * 2 half`` integers).

    Returns:
        ``(share of the stored split, shares of the random splits)``.
    """
    ranks = np.asarray(ranks)
    order = np.argsort(ranks, axis=1, kind="stable")
    ordered = np.take_along_axis(ranks, order, axis=1)
    last_of_tie = np.ones(ranks.shape, bool)  # the empirical CDFs are compared after each run of equal values
    last_of_tie[:, :-1] = ordered[:, 1:] != ordered[:, :-1]
    k = ks_critical(half)
    base = np.concatenate([np.ones(half, np.int32), -np.ones(half, np.int32)])
    rng = np.random.default_rng(seed)
    signs = np.stack([base] + [rng.permutation(base) for _ in range(permutations)])
    shares = []
    for i in range(0, len(signs), chunk):
        walk = np.abs(np.cumsum(signs[i:i + chunk][:, order], axis=2)) * last_of_tie  # half * D at every split
        shares.append(np.mean(walk.max(axis=2) >= k, axis=1))
    shares = np.concatenate(shares)
    return float(shares[0]), shares[1:]


def _ks_share_evidence(m: dict[str, Any], form: str, t, detail: str) -> Evidence:
    """The share of KS p-values below 0.05 in ``form`` with a Clopper-Pearson interval over the
    positions' effective number: ``positions / design effect``, the design effect being the
    variance of the share over random splits of the networks between the two samples over its
    binomial variance (at least 1), i.e. how far the positions' tests move together because
    they read the same networks."""
    import base64

    share, n = m["share_below_005"][form], int(sum(m["positions"]))
    if "ks_ranks" not in m:
        return not_tested(t, _NO_RANKS, detail)
    kr = m["ks_ranks"]
    half = int(kr["networks_per_half"])
    ranks = np.frombuffer(base64.b64decode(kr[form]), np.dtype(kr["dtype"])).reshape(n, 2 * half)
    stored, perm = permuted_ks_shares(ranks, half)
    if abs(stored - share) > 0.5 / n:
        return not_tested(t, f"the stored ranks give a share of {stored:.4f}, not the summary's {share:.4f}", detail)
    mean = float(perm.mean())
    deff = max(1.0, float(perm.var()) / (mean * (1 - mean) / n)) if 0 < mean < 1 else 1.0
    n_eff = max(1, int(n / deff))
    _, lo, hi = proportion_interval(int(round(share * n_eff)), n_eff, t.level)
    return interval_evidence(share, min(lo, share), max(hi, share), t,
                             f"{2 * half} networks ({n} weight positions, worth {n_eff} independent ones: "
                             f"design effect {deff:.1f} from {len(perm)} random splits of the networks)", detail)


@claim("laurent_mlps", "marginals_identical_before", "Laurent et al. (2024), Prop. 1, App. D.3, Fig. 9",
       "KS tests cannot rule out that the layer-wise marginals of different units are identical")
def _marginals_before(summary: dict[str, Any]) -> Evidence:
    """The share of weight positions whose KS test gives p < 0.05 before symmetry removal, its
    interval over the networks (:func:`_ks_share_evidence`)."""
    m = summary["marginals"]
    n = int(sum(m["positions"]))
    share = m["share_below_005"]["raw"]
    return _ks_share_evidence(m, "raw", threshold("laurent.marginals_identical_before"),
                              f"{int(round(share * n))} of {n} KS p-values < 0.05 ({100 * share:.1f}%; first vs last "
                              f"unit, independent halves of the networks; 5% expected if identical)")


@claim("laurent_mlps", "marginals_differ_after", "Laurent et al. (2024), App. D.3",
       "once the symmetries are removed the units' marginals are no longer identical")
def _marginals_after(summary: dict[str, Any]) -> Evidence:
    """As :func:`_marginals_before`, after min-mass scaling and sorting."""
    m = summary["marginals"]
    n = int(sum(m["positions"]))
    share = m["share_below_005"]["scaling and permutation removed"]
    med_raw, med = m["layer_median_p"]["raw"], m["layer_median_p"]["scaling and permutation removed"]
    return _ks_share_evidence(m, "scaling and permutation removed", threshold("laurent.marginals_differ_after"),
                              f"{int(round(share * n))} of {n} KS p-values < 0.05 ({100 * share:.1f}%); median p "
                              "per layer " + ", ".join(f"{a:.2g} (raw {b:.2g})" for a, b in zip(med, med_raw)))


def swap_summary(swaps, epoch_stats, milestones, units, blocks) -> dict[str, Any]:
    """Sec. 5.2 numbers of recorded runs: per learning-rate phase and permutation the rows of
    :func:`symlib.symmetry.neuron_order.phase_summary`, and the net swapped pairs per epoch over
    the last tenth of training against those from the end of epoch 1 to the end of epoch 2.

    Args:
        swaps: ``(runs, epochs, steps, permutations)`` swapped pairs per step.
        epoch_stats: per permutation ``(runs, epochs, units)`` statistics at each epoch's end.
        milestones: epochs where the learning rate changed.
        units: units per permutation.
        blocks: blocks per permutation.

    Returns:
        A JSON-able dict: ``phases`` (rows), ``late_net_per_epoch``, ``first_net_per_epoch``,
        ``late_epochs``, ``pairs`` (comparable pairs per permutation).

    Raises:
        ValueError: for runs of one epoch (the net swaps compare the ends of two epochs).
    """
    from symlib.symmetry.neuron_order import epoch_swaps, phase_summary, swap_bursts

    swaps = np.asarray(swaps)
    epochs = swaps.shape[1]
    if epochs < 2:
        raise ValueError(f"the swap summary compares the orderings at the ends of epochs: it needs runs of at least "
                         f"2 epochs, got {epochs}")
    late = epochs - max(1, epochs // 10)
    net = epoch_swaps(epoch_stats, blocks)
    pairs = [int(g * (n // g) * (n // g - 1) // 2) for n, g in zip(units, blocks)]
    phase_of_epoch = np.searchsorted(np.asarray(milestones), np.arange(epochs), side="right")
    first_ep, last_ep = np.flatnonzero(phase_of_epoch == 0), np.flatnonzero(phase_of_epoch == phase_of_epoch.max())
    first_net = first_ep[first_ep > 0] - 1
    # per run (the Sec. 5.2 claims' independent units): mean swapped pairs per step in the
    # first and the last learning-rate phase, net swapped pairs per epoch in the first phase
    # and over the last tenth of training
    per_run = {"first_per_step": [swaps[..., l][:, first_ep].mean(axis=(1, 2)).tolist() for l in range(len(net))],
               "last_per_step": [swaps[..., l][:, last_ep].mean(axis=(1, 2)).tolist() for l in range(len(net))],
               "first_net_per_epoch": [(x[:, first_net].mean(axis=1) if first_net.size else np.full(len(x), np.nan)
                                        ).tolist() for x in net],
               "late_net_per_epoch": [x[:, late - 1:].mean(axis=1).tolist() for x in net]}
    # Fig. 4 (left): how rare the steps that change the ordering are, and how gathered in time
    share, ratio = swap_bursts(swaps, milestones, window=BURST_WINDOW)
    per_run["steps_with_swap"] = [share[:, l].tolist() for l in range(len(net))]
    per_run["burst_ratio"] = [[None if not np.isfinite(x) else float(x) for x in ratio[:, l]] for l in range(len(net))]
    return {"phases": phase_summary(swaps, epoch_stats, milestones, blocks),
            "late_net_per_epoch": [float(x[:, late - 1:].mean()) for x in net],
            "first_net_per_epoch": [float(x[:, 0].mean()) for x in net],
            "late_epochs": int(epochs - late), "pairs": pairs, "per_run": per_run}


#: the neighbourhood, in SGD steps, within which a change of the ordering counts as gathered
#: with another (claim swaps_gathered; threshold laurent.swaps_gathered)
BURST_WINDOW = 10

_NO_RUNS = ("the summary keeps only the means over runs (it predates 2026-11-25), so the ratio has no interval over "
            "the runs")


#: The fewest runs over which the Sec. 5.2 ratios of swap rates are judged. Over 3 runs the ratio's
#: direction flipped between two CPUs from float rounding alone (benchmarks/README.md, 2026-11-28);
#: a rule set on 2026-11-29 (then for a percentile bootstrap) and kept on 2026-12-01 for the
#: delta-method interval, before its quick-profile verdicts were seen.
MIN_RATIO_RUNS = 5


def _ratio_over_runs(num: np.ndarray, den: np.ndarray, t, detail: str) -> Evidence:
    """mean(num) / mean(den) over runs with its delta-method Student-t interval over the runs
    (:func:`symlib.evaluation.stats.ratio_interval`); not tested with fewer than
    :data:`MIN_RATIO_RUNS` runs, a run without a value, or no swap at all in the denominator."""
    from symlib.evaluation.stats import ratio_interval

    num, den = np.asarray(num, float), np.asarray(den, float)
    if not (np.all(np.isfinite(num)) and np.all(np.isfinite(den))):
        return not_tested(t, "a run has no value (a first learning-rate phase of one epoch has no net change)",
                          detail)
    if den.mean() <= 0:
        return not_tested(t, "no swap at all in the first learning-rate phase, so there is nothing to fall from",
                          detail)
    if num.size < MIN_RATIO_RUNS:
        return not_tested(t, f"{num.size} runs: a ratio of swap rates is judged "
                             f"over {MIN_RATIO_RUNS} runs or more (over 3, float rounding alone turned its direction "
                             "between machines)", detail)
    est, lo, hi = ratio_interval(num, den, t.level)
    spread = "" if np.isfinite(lo) else f" (no spread among them: each run's ratio is {est:.3g}, so no interval)"
    return interval_evidence(est, lo, hi, t, f"{num.size} runs{spread}", detail)


def _per_permutation_mean(summary: dict[str, Any], key: str, t, what: str) -> Evidence:
    """The mean over runs of ``per_run[key]`` (one value per run, ``None`` where undefined),
    with its Student-t interval, per permutation; the worst permutation."""
    sw = summary["swaps"]
    if "per_run" not in sw or key not in sw["per_run"]:
        return not_tested(t, f"the summary has no per-run {what} (saved before 2026-11-27)")
    evs, parts = [], []
    for p, name in enumerate(sw["perm_names"]):
        v = np.asarray([x for x in sw["per_run"][key][p] if x is not None], float)
        if v.size < 2:
            evs.append(not_tested(t, f"{name}: fewer than two runs with a defined {what}"))
            continue
        evs.append(mean_of_units(v, t, "runs", name))
        parts.append(f"{name}: {v.mean():.3g} over {v.size} runs")
    w = worst(evs)
    if w.untested is not None:
        return not_tested(t, w.untested, "; ".join(parts))
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of {len(evs)} permutations: {w.detail})",
                    f"{what}, mean over runs: " + "; ".join(parts))


@claim("laurent_mlps", "swaps_scarce", "Laurent et al. (2024), Sec. 5.2, Fig. 4 (left)",
       "on MNIST the variations of the permutation set are scarce")
def _swaps_scarce(summary: dict[str, Any]) -> Evidence:
    """Share of steps that change the sorting permutation, mean over runs; worst permutation."""
    return _per_permutation_mean(summary, "steps_with_swap", threshold("laurent.swaps_scarce"),
                                 "share of steps that change the ordering")


@claim("laurent_mlps", "swaps_gathered", "Laurent et al. (2024), Sec. 5.2, Fig. 4 (left)",
       "on MNIST the variations of the permutation set are gathered around points of instability (changes come "
       "in bursts, beyond the learning-rate phases' own rates)")
def _swaps_gathered(summary: dict[str, Any]) -> Evidence:
    """Clustering ratio of the changing steps (symlib.symmetry.neuron_order.swap_bursts), mean
    over runs; worst permutation."""
    return _per_permutation_mean(summary, "burst_ratio", threshold("laurent.swaps_gathered"),
                                 f"clustering of the changes within {BURST_WINDOW} steps over chance")


@claim("laurent_mlps", "swaps_in_high_lr_phases", "ours, after Laurent et al. (2024), Sec. 5.2, Fig. 4 (right)",
       "sorted units change places mostly in the high learning-rate phases (the paper says so of ResNet-18; "
       "tested here on MNIST networks as a claim of ours)")
def _swaps_high_lr(summary: dict[str, Any]) -> Evidence:
    """Per permutation: the mean over runs of the swapped pairs per step in the last
    learning-rate phase over that in the first, delta-method interval over runs; the worst
    permutation."""
    t = threshold("laurent.swaps_in_high_lr_phases")
    sw = summary["swaps"]
    out = []
    for p, name in enumerate(sw["perm_names"]):
        rates = [r["per_step"] for r in sw["phases"] if r["layer"] == p]
        out.append(f"{name}: " + " -> ".join(f"{r:.3f}" for r in rates))
    detail = "swapped pairs per step by phase (mean over runs), " + "; ".join(out)
    if "per_run" not in sw:
        return not_tested(t, _NO_RUNS, detail)
    pr = sw["per_run"]
    evs = [_ratio_over_runs(np.asarray(pr["last_per_step"][p], float), np.asarray(pr["first_per_step"][p], float), t,
                            "") for p in range(len(sw["perm_names"]))]
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of {len(evs)} permutations)", detail) \
        if w.untested is None else not_tested(t, w.untested, detail)


@claim("laurent_mlps", "ordering_freezes", "Laurent et al. (2024), Sec. 5.2",
       "the weights nearly never permute in the last phase of training")
def _ordering_freezes(summary: dict[str, Any]) -> Evidence:
    """Per permutation: the mean over runs of the net swapped pairs per epoch over the last
    tenth of training over their mean in the first learning-rate phase, delta-method interval
    over runs; the worst permutation."""
    t = threshold("laurent.ordering_freezes")
    sw = summary["swaps"]
    late = np.asarray(sw["late_net_per_epoch"])
    first = np.asarray([next(r["net_per_epoch"] for r in sw["phases"] if r["layer"] == p and r["phase"] == 0)
                        for p in range(len(late))])
    detail = "; ".join(f"{n}: {a:.3f} net swapped pairs per epoch over the last tenth vs {b:.3f} in the first "
                       f"phase (of {c} pairs; means over runs)"
                       for n, a, b, c in zip(sw["perm_names"], late, first, sw["pairs"]))
    if "per_run" not in sw:
        return not_tested(t, _NO_RUNS, detail)
    pr = sw["per_run"]
    evs = [_ratio_over_runs(np.asarray(pr["late_net_per_epoch"][p], float),
                            np.asarray(pr["first_net_per_epoch"][p], float), t, "")
           for p in range(len(sw["perm_names"]))]
    w = worst(evs)
    return Evidence(w.effect, w.low, w.high, t, f"{w.units} (worst of {len(evs)} permutations)", detail) \
        if w.untested is None else not_tested(t, w.untested, detail)


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
    from symlib.symmetry import mlp_permutation_spec, mlp_scaling_spec
    from symlib.symmetry.neuron_order import statistics_observer, swap_counter

    d = load_data(profile)
    x, y = d["x_train"], d["y_train"]
    cfg = laurent_train_config(profile, x.shape[0])
    sizes = [x.shape[1], *profile.laurent_hidden, 10]
    n = profile.laurent_nets
    specs = mlp_scaling_spec(len(sizes) - 2), mlp_permutation_spec(len(sizes) - 2)
    # blocks of LAURENT_MLP_BLOCK networks, each kept in the artifact cache: a killed run resumes
    params, losses, seen = fit_many_blocks("laurent_mlps", _laurent_config(profile), lambda k: mlp_init(k, sizes),
                                           jax.random.split(jax.random.key(5000), n),
                                           jax.random.split(jax.random.key(6000), n), x, y, cfg,
                                           block_size=LAURENT_MLP_BLOCK, apply_fn=mlp_apply,
                                           observe=swap_counter(*specs, "max", "unit_norm"),
                                           observe_epoch=statistics_observer(*specs, "max", "unit_norm"))
    acc = jax.vmap(lambda p: accuracy(mlp_apply(p, d["x_test"]), d["y_test"]))(params)
    return {"params": jax.device_get(params), "epoch_loss": np.asarray(losses),
            "swaps": np.asarray(seen["step"]), "test_accuracy": np.asarray(acc),
            # per hidden layer: (nets, epochs, units) sorting statistic at the end of every epoch
            "epoch_stats": [np.asarray(s) for s in seen["epoch"]],
            "lr": np.asarray([laurent_decay(profile).at_epoch(e) for e in range(cfg.epochs)]),
            "milestones": np.asarray(laurent_decay(profile).milestones), "prior_std": np.asarray(cfg.prior_std),
            "sizes": np.asarray(sizes)}


# ----------------------------------------------------------------------------- differences
# Both saved paper-profile runs keep the per-unit values (the 64-network run was rerun on a CPU
# on 2026-11-26, the 256-network run on an H100 the same day). The code that reads summaries
# saved before 2026-11-25 (means only) stays, and gives "not tested" on them.
# largest_weight, re-read on 2026-11-27 as every smaller-than-average layer (issue 43):
difference("laurent_mlps", "quick", "largest_weight",
           "read as every layer smaller than the average, the claim differs in the quick profile as at paper scale: "
           "the smallest layer's largest weight rises, but the middle layer's falls (the claims table gives the "
           "ratios)")
for _label in ("paper", "paper-64nets"):
    difference("laurent_mlps", _label, "largest_weight",
               "read as the paper's plural, 'the layers with fewer parameters' (every layer smaller than the "
               "average), the claim differs: the min-mass rescaling raises the largest weight of the smallest layer "
               "(dense_2, about x1.2) and lowers that of the largest (dense_0, about x0.86), but it also lowers that "
               "of the middle layer dense_1 (about x0.95, an interval over the networks below 1); the earlier "
               "reading (the smallest layer alone) holds")
# The MNIST panel's own claims of Fig. 4 (registered on 2026-11-27, issue 43) need per-run
# counts that the summaries saved on 2026-11-26 do not keep.
for _label in ("paper", "paper-64nets"):
    for _name in ("swaps_scarce", "swaps_gathered"):
        difference("laurent_mlps", _label, _name,
                   "the summary was saved on 2026-11-26, before this claim and its per-run counts existed "
                   "(symlib.symmetry.neuron_order.swap_bursts); a rerun at paper scale judges it",
                   verdict=Verdict.NOT_TESTED)
# The marginals' claims place their interval over the networks since 2026-12-01 (before, over
# the weight positions as if independent); the saved summaries lack the ranks that needs.
for _label in ("paper", "paper-64nets"):
    for _name in ("marginals_identical_before", "marginals_differ_after"):
        difference("laurent_mlps", _label, _name,
                   "the summary was saved on 2026-11-26, before the per-network ranks of the tested weights "
                   "(marginals.ks_ranks) that place the share's interval over the networks; its share is shown, "
                   "a rerun judges it", verdict=Verdict.NOT_TESTED)
# The quick profile's MLPs (registered after its first run, 2026-11-27; the thresholds were set
# before it): with tens of units per layer the sorted order flickers at most steps.
difference("laurent_mlps", "quick", "swaps_scarce",
           "the quick profile's MLPs have tens of units per hidden layer, hundreds of pairs whose sorting statistics "
           "are often nearly tied: the ordering changes at a large share of all steps (the claims table gives it), "
           "far above one in ten; the paper's MNIST panel is OptuNet (3 dense units, channel groups of 5), which "
           "chapter 11 judges beside it")
difference("laurent_mlps", "quick", "swaps_gathered",
           "with the ordering changing at most steps, nearly every change has another within 10 steps, as it would "
           "at random: the clustering ratio is about 1 (the claims table gives it), no bursts beyond chance")
