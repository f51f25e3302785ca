"""symlib.experiments.weights: memory-mapped weight stores beside the artifact cache."""
import numpy as np
import pytest

from symlib.experiments import weights


def test_weight_store_round_trip(tmp_path):
    stack = {"a": {"kernel": np.arange(24, dtype=np.float32).reshape(4, 3, 2)}, "b": np.ones((4, 5), np.float32)}
    store = weights.create_weights(tmp_path / "w", {"a": {"kernel": stack["a"]["kernel"][0]}, "b": stack["b"][0]}, 4)
    weights.write_weights(store, 0, {"a": {"kernel": stack["a"]["kernel"][:2]}, "b": stack["b"][:2]})
    weights.write_weights(store, 2, {"a": {"kernel": stack["a"]["kernel"][2:]}, "b": stack["b"][2:]})
    with pytest.raises(FileNotFoundError, match="incomplete"):
        weights.open_weights(tmp_path / "w")
    (tmp_path / "w" / "complete").write_text("")
    back = weights.open_weights(tmp_path / "w")
    assert isinstance(back["a"]["kernel"], np.memmap) and np.array_equal(back["a"]["kernel"], stack["a"]["kernel"])
    assert np.array_equal(back["b"], stack["b"])


def test_a_store_resumes_where_a_killed_run_stopped(tmp_path):
    assert weights.resume_weights(tmp_path / "none") is None
    store = weights.create_weights(tmp_path / "w", {"b": np.zeros(3, np.float32)}, 4)
    weights.write_weights(store, 0, {"b": np.ones((2, 3), np.float32)})
    del store  # the run is killed after its first chunk
    again = weights.resume_weights(tmp_path / "w")
    weights.write_weights(again, 2, {"b": np.full((2, 3), 2.0, np.float32)})
    (tmp_path / "w" / "complete").write_text("")
    np.testing.assert_array_equal(weights.open_weights(tmp_path / "w")["b"], [[1] * 3, [1] * 3, [2] * 3, [2] * 3])


def test_store_dir_is_under_the_cache_and_keyed_by_config(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    a, b = weights.store_dir("bank", {"n": 1}), weights.store_dir("bank", {"n": 2})
    assert a.parent == tmp_path / "weights" and a != b and a.name.startswith("bank-")


def test_recreating_a_store_withdraws_its_complete_marker(tmp_path):
    store = weights.create_weights(tmp_path / "w", {"b": np.zeros(2, np.float32)}, 2)
    weights.write_weights(store, 0, {"b": np.ones((2, 2), np.float32)})
    (tmp_path / "w" / "complete").write_text("")
    np.testing.assert_array_equal(weights.open_weights(tmp_path / "w")["b"], np.ones((2, 2)))
    weights.create_weights(tmp_path / "w", {"b": np.zeros(2, np.float32)}, 2)  # a re-run starts it afresh
    with pytest.raises(FileNotFoundError, match="incomplete"):
        weights.open_weights(tmp_path / "w")  # not the half-filled store as if it were finished
