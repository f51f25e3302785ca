"""The reproduction report's per-paper selections and count table (symlib.experiments.report.page),
on the report of the saved runs alone (no quick artifacts needed)."""
import numpy as np
import pytest

import symlib.experiments  # noqa: F401  (registers the experiments and their claims)
from symlib.experiments.judging import results, scales
from symlib.experiments.report import manifest, page as report_page


@pytest.fixture(scope="module")
def rows():
    return report_page.report_rows({}, manifest.saved_runs(results.results_dir()))


def test_rows_of_paper_split_the_report(rows):
    parts = [report_page.rows_of_paper(rows, key) for key in manifest.PAPERS]
    assert sum(len(p) for p in parts) == len(rows)
    assert all(r.paper == "Rossi et al. (2023)" for r in report_page.rows_of_paper(rows, "rossi2023"))
    with pytest.raises(ValueError, match="rossi2024"):
        report_page.rows_of_paper(rows, "rossi2024")


def test_paper_forest_entries_are_grouped_by_scale(rows):
    entries = report_page.paper_forest_entries(rows, "laurent2024")
    assert entries and all(e.paper == "Laurent et al. (2024)" for e in entries)
    order = [scales.KINDS.index(e.scale) for e in entries]
    assert order == sorted(order)


def test_counts_table_rows_and_columns():
    counts = {("Xiao et al. (2023)", scales.PAPER, "holds"): 2, ("Xiao et al. (2023)", "none", "not run"): 1,
              ("Laurent et al. (2024)", scales.QUICK, "differs"): 1}
    verdicts = report_page.count_verdicts(counts)
    assert verdicts[-1] == "not run" and verdicts[0] == "holds"
    table = report_page.counts_table(counts)
    assert table.headers == ["paper", "scale", "holds", "differs", "not run"]
    assert table.rows == [["Xiao et al. (2023)", scales.PAPER, "2", "", ""],
                          ["Xiao et al. (2023)", "none", "", "", "1"],
                          ["Laurent et al. (2024)", scales.QUICK, "", "1", ""]]


def test_stacked_counts_draws_a_bar_per_occurring_stack():
    import matplotlib

    matplotlib.use("Agg")
    from symlib.experiments import plotting

    counts = {("A", "x", "holds"): 2, ("A", "y", "differs"): 1, ("B", "x", "holds"): 1}
    fig = plotting.stacked_counts(counts, ["A", "B"], ["x", "y"], ["holds", "differs", "not run"],
                                  {"holds": "#1b9e77"}, suptitle="s")
    assert [ax.get_title() for ax in fig.axes] == ["A", "B"]
    assert [len(c) for c in fig.axes[0].containers] == [2, 2] and len(fig.axes[1].containers) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["holds", "differs"]


def test_forest_axis_labels_every_other_decade_when_they_would_crowd():
    """A forest plot spanning many decades labels 0 and every other power of ten on each side
    (the others are unlabelled grid lines), so that labels near 0 do not overlap; a narrow span
    labels every decade."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from symlib.experiments import plotting

    def entry(effect):
        return report_page.ForestEntry(paper="p", scale=scales.QUICK, run="quick", label="x.claim", effect=effect,
                                       low=effect - 0.001, high=effect + 0.001, verdict="holds", one_run=False)

    for effect, labelled, grid in ((50.0, [-100, -1, -0.01, 0, 0.01, 1, 100], [-10, -0.1, 0.1, 10]),
                                   (0.5, [-1, -0.1, -0.01, 0, 0.01, 0.1, 1], [])):
        fig = plotting.forest([entry(effect), entry(-effect / 3)], title="t")
        ax = fig.axes[0]
        assert np.allclose(ax.get_xticks(), labelled)
        assert np.allclose(ax.get_xticks(minor=True), grid)
        plt.close(fig)
