"""The notebooks' small table and the gluing of a chapter's values."""
import pytest

from symlib.experiments.table import Table, glue_all, plus_minus


def test_glue_all_names_each_value_with_the_prefix_and_keeps_its_type():
    calls = []
    glue_all(lambda name, value, display: calls.append((name, value, display)), "ch04",
             {"runs": 3, "lr": "0.005"})
    assert calls == [("ch04_runs", 3, False), ("ch04_lr", "0.005", False)]


@pytest.mark.parametrize("prefix, values", [("", {"a": 1}), ("ch04", {"": 1})])
def test_glue_all_rejects_empty_names(prefix, values):
    with pytest.raises(ValueError, match="prefix"):
        glue_all(lambda *a, **k: None, prefix, values)


def test_table_renders_markdown_and_text_and_rejects_ragged_rows():
    t = Table(["a", "b"], [(1, "x|y")])
    assert t._repr_markdown_().splitlines() == ["| a | b |", "|---|---|", r"| 1 | x\|y |"]
    assert repr(t).splitlines()[0] == "a  b"
    with pytest.raises(ValueError, match="every row needs 2 cells"):
        Table(["a", "b"], [(1,)])


def test_plus_minus_keeps_an_error_that_would_round_to_zero():
    """An error shown at the table's precision, or at two significant figures where that precision
    would print it as zero; one unit's (non-finite) error leaves the mean alone."""
    assert plus_minus(1.2345, 0.0123) == "1.234 ± 0.012"
    assert plus_minus(0.0032, 6.3e-5) == "0.003200 ± 0.000063"
    assert plus_minus(97.123, 0.3, 0) == "97.12 ± 0.30"
    assert plus_minus(-0.3987, 0.0021, 2) == "-0.3987 ± 0.0021"
    assert plus_minus(0.5, 0.0) == "0.500 ± 0.000"  # no spread at all: a true zero
    assert plus_minus(0.5, float("nan")) == "0.500"
