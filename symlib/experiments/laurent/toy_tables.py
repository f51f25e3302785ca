"""Laurent et al. (2024), Fig. 1 and App. A: the lines, tables and prose values that the toy
perceptrons' chapter shows, from a ``toy_perceptrons`` result and its summary."""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

from symlib.experiments.laurent.perceptrons import LAURENT_FIG1_CLAIMS, OUTPUT_WEIGHT_FORMS, TOY_MAX_LOSS
from symlib.experiments.laurent.toy import CLASS_MEAN, count_modes, two_gaussians
from symlib.experiments.table import Table

#: The panel title of each form of the output weights (Fig. 1).
FORM_TITLES = {"raw": "raw", "unit_norm": "scaling removed (unit-norm)",
               "canonical": "scaling and permutation removed"}


def _p_text(p: float) -> str:
    """A p-value with three decimals (0.997, not 1.00), or two significant figures below 0.001."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.2g}"


def setup_values() -> dict[str, object]:
    """The toy problem's settings that the prose cites: points per class (``n_per_class``), the
    largest relative gap between the l3 and the Euclidean unit norm of a 2-D vector (``l3_gap``,
    ``1 - 2^(-1/6)``), the final-loss threshold for dropping a network (``max_loss``) and the
    smallest height of a density mode, relative to the highest (``mode_height``)."""
    return {"n_per_class": len(two_gaussians()[1]) // 2, "l3_gap": float(1 - 2 ** (-1 / 6)),
            "max_loss": f"{TOY_MAX_LOSS:g}",
            "mode_height": float(inspect.signature(count_modes).parameters["min_height"].default)}


def training_report(result: Any) -> str:
    """Three lines on a ``toy_perceptrons`` result: networks trained and dropped (with the median
    final loss), the largest logit change from removing the symmetries, and the problem's setup."""
    n_kept, n_all = len(result.kept), len(result.loss)
    return "\n".join([
        f"{n_all} networks trained; dropped {n_all - n_kept} ({100 * (n_all - n_kept) / n_all:.2f}%) with final loss "
        f"> {TOY_MAX_LOSS}; median final loss {np.median(result.loss):.4f}",
        f"largest logit change from symmetry removal over all kept networks: {result.max_logit_diff:.1e}",
        f"class means -({CLASS_MEAN}, {CLASS_MEAN}) and +({CLASS_MEAN}, {CLASS_MEAN}) (ours: the paper's are lost "
        "from its text); every hidden unit's incoming kernel rescaled to Euclidean norm 1",
    ])


def forms_table(result: Any, summary: Mapping[str, Any]) -> Table:
    """One row per form of the output weights: the share of networks with ``w1 > w2``, the modes of
    ``w1 - w2`` (count and locations), the KDE's bandwidth and the share near the highest mode."""
    rows = []
    for form in OUTPUT_WEIGHT_FORMS:
        w = result.weights(form)
        rows.append((form, f"{np.mean(w[:, 0] > w[:, 1]):.3f}",
                     f"{len(summary['modes'][form])}: {np.round(summary['modes'][form], 2).tolist()}",
                     f"{summary['bandwidth'][form]:.2f}", f"{summary['concentration'][form]:.3f}"))
    return Table(["form", "fraction w1 > w2", "modes of w1 - w2 (locations)", "KDE bandwidth",
                  "share near the highest mode"], rows)


def fig1_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(quantity, paper, ours)`` rows of Fig. 1 and App. A for a ``toy_perceptrons`` summary."""
    paper = LAURENT_FIG1_CLAIMS
    return [
        ("networks dropped for a high final loss (App. A)", paper["dropped_networks"],
         f"{100 * summary['dropped_fraction']:.2f}%"),
        ("raw output-weight density (Fig. 1 left)", paper["raw_density"],
         f"fraction w1 > w2 = {summary['fraction_w1_gt_w2']:.3f} (sign test p = {_p_text(summary['sign_test_p'])}, "
         f"split-half KS p = {_p_text(summary['split_half_ks_p'])}); modes of w1 - w2 at "
         f"{np.round(summary['modes']['raw'], 1).tolist()}"),
        ("scaling and permutation removed (Fig. 1 right)", paper["canonical_density"],
         f"modes of w1 - w2 at {np.round(summary['modes']['canonical'], 1).tolist()} (one side of the diagonal)"),
    ]
