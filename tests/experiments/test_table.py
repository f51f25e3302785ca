"""The notebooks' small table and the gluing of a chapter's values."""
import pytest

from symlib.experiments.table import Table, glue_all


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
