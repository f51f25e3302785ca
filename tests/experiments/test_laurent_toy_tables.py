"""The toy perceptrons' lines, tables and prose values (symlib.experiments.laurent.toy_tables),
on a small known result."""
from types import SimpleNamespace

import numpy as np
import pytest

from symlib.experiments.laurent import toy_tables
from symlib.experiments.laurent.perceptrons import OUTPUT_WEIGHT_FORMS, TOY_MAX_LOSS


def _result():
    w = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0], [1.0, 3.0]])
    return SimpleNamespace(kept=np.arange(4), loss=np.array([0.01, 0.02, 0.03, 0.04, 0.5]), max_logit_diff=3e-7,
                           weights=lambda form: w, x=np.zeros((4, 2)), y=np.array([0, 0, 1, 1]))


def _summary():
    return {"modes": {f: np.array([-1.234, 1.26]) for f in OUTPUT_WEIGHT_FORMS},
            "bandwidth": {f: 0.5 for f in OUTPUT_WEIGHT_FORMS}, "concentration": {f: 0.25 for f in OUTPUT_WEIGHT_FORMS},
            "dropped_fraction": 0.2, "fraction_w1_gt_w2": 0.5, "sign_test_p": 1.0, "split_half_ks_p": 0.456}


def test_setup_values():
    values = toy_tables.setup_values()
    assert values["n_per_class"] == 200 and values["max_loss"] == f"{TOY_MAX_LOSS:g}"
    assert values["l3_gap"] == pytest.approx(1 - 2 ** (-1 / 6)) and values["mode_height"] == 0.1


def test_training_report_counts_the_dropped_networks():
    lines = toy_tables.training_report(_result()).splitlines()
    assert lines[0] == (f"5 networks trained; dropped 1 (20.00%) with final loss > {TOY_MAX_LOSS}; "
                        "median final loss 0.0300")
    assert lines[1].endswith("3.0e-07") and len(lines) == 3


def test_forms_table_and_paper_rows():
    table = toy_tables.forms_table(_result(), _summary())
    assert [r[0] for r in table.rows] == list(OUTPUT_WEIGHT_FORMS)
    assert table.rows[0][1:] == ["0.500", "2: [-1.23, 1.26]", "0.50", "0.250"]
    rows = toy_tables.fig1_rows(_summary())
    assert rows[0][2] == "20.00%"
    assert "(sign test p = 1.000, split-half KS p = 0.456); modes of w1 - w2 at [-1.2, 1.3]" in rows[1][2]


def test_plots_of_the_densities_and_the_split_half():
    import matplotlib

    matplotlib.use("Agg")
    from symlib.experiments import plotting

    res = _result()
    fig = plotting.output_weight_densities(res.x, res.y, {t: res.weights(f) for f, t in toy_tables.FORM_TITLES.items()},
                                           suptitle="s")
    titles = [ax.get_title() for ax in fig.axes[:4]]
    assert titles[0] == "training data (2 classes)"
    assert [t.split("\n")[0] for t in titles[1:]] == list(toy_tables.FORM_TITLES.values())
    for t, f in zip(titles[1:], toy_tables.FORM_TITLES):  # how many fall outside the 99.5% window, counted
        w = res.weights(f)
        outside = int(np.sum(np.any(np.abs(w) > np.percentile(np.abs(w), 99.5), axis=1)))
        assert t.endswith(f"({outside} of {len(w)} networks outside the window)")
    fig = plotting.split_half_histogram(np.array([1.0, -2.0, 0.5, 3.0]), [0.0, 1.0])
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and ax.get_legend_handles_labels()[1] == ["$d$, first half of the networks",
                                                                        "$-d$, second half"]
