
import numpy as np
import pytest

from symlib.experiments import results


def test_save_and_load_roundtrip(tmp_path):
    path = results.save("exp", "paper", {"a": np.float32(1.5), "b": np.arange(3)}, command="cmd", directory=tmp_path)
    assert path == tmp_path / "exp-paper.json"
    record = results.load("exp", "paper", directory=tmp_path)
    assert record["summary"] == {"a": 1.5, "b": [0, 1, 2]}
    assert record["command"] == "cmd" and record["device"] and record["date"] and record["symlib_version"]


def test_missing_is_none_and_corrupt_is_an_error(tmp_path):
    assert results.load("nothing", "paper", directory=tmp_path) is None
    (tmp_path / "bad-paper.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad-paper.json"):
        results.load("bad", "paper", directory=tmp_path)


def test_results_dir_finds_the_book(tmp_path, monkeypatch):
    monkeypatch.delenv("SYMLIB_RESULTS", raising=False)
    (tmp_path / "_toc.yml").write_text("root: x\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert results.results_dir() == tmp_path / "book" / "results"
    monkeypatch.setenv("SYMLIB_RESULTS", str(tmp_path / "elsewhere"))
    assert results.results_dir() == tmp_path / "elsewhere"
