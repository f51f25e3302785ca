import json
import logging

import numpy as np
import pytest

from symlib.experiments import cache


@pytest.fixture()
def cdir(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    return tmp_path


def _counting(result):
    calls = []

    def compute():
        calls.append(1)
        return result

    return compute, calls


TREE = {"params": {"w": np.arange(6.0).reshape(2, 3), "b": np.zeros(3, np.float32)}, "acc": 0.5}


def test_miss_then_hit(cdir):
    compute, calls = _counting(TREE)
    first = cache.cached("exp", {"a": 1}, compute, verbose=False)
    second = cache.cached("exp", {"a": 1}, compute, verbose=False)
    assert len(calls) == 1
    for got in (first, second):
        np.testing.assert_array_equal(got["params"]["w"], TREE["params"]["w"])
        assert got["params"]["b"].dtype == np.float32
        assert float(got["acc"]) == 0.5
    assert len(list(cdir.glob("exp-*.npz"))) == 1 and len(list(cdir.glob("exp-*.json"))) == 1


def test_key_depends_on_name_config_and_version():
    k = cache.cache_key("exp", {"a": 1, "b": [1, 2]})
    assert k == cache.cache_key("exp", {"b": (1, 2), "a": 1})  # order and tuple/list do not matter
    assert k != cache.cache_key("exp", {"a": 2, "b": [1, 2]})
    assert k != cache.cache_key("other", {"a": 1, "b": [1, 2]})
    assert k != cache.cache_key("exp", {"a": 1, "b": [1, 2]}, version="0.0.0+old")
    assert cache.code_version().startswith("0.") and "+" in cache.code_version()


def test_different_config_is_a_miss(cdir):
    compute, calls = _counting(TREE)
    cache.cached("exp", {"a": 1}, compute, verbose=False)
    cache.cached("exp", {"a": 2}, compute, verbose=False)
    assert len(calls) == 2


def test_truncated_file_is_recomputed(cdir, caplog):
    compute, calls = _counting(TREE)
    cache.cached("exp", {"a": 1}, compute, verbose=False)
    data_path, _ = cache.artifact_paths("exp", {"a": 1})
    data_path.write_bytes(data_path.read_bytes()[:50])  # truncate
    again = cache.cached("exp", {"a": 1}, compute, verbose=False)
    assert len(calls) == 2
    # a WARNING, so it is shown under the default logging level (notebooks, the book) too
    damaged = [r for r in caplog.records if "damaged artifact" in r.getMessage()]
    assert [(r.name, r.levelno) for r in damaged] == [("symlib.experiments.cache", logging.WARNING)]
    np.testing.assert_array_equal(again["params"]["w"], TREE["params"]["w"])
    assert cache.load("exp", {"a": 1}) is not None  # the recomputed one is intact


def test_missing_marker_means_incomplete(cdir):
    compute, calls = _counting(TREE)
    cache.cached("exp", {"a": 1}, compute, verbose=False)
    _, marker = cache.artifact_paths("exp", {"a": 1})
    marker.unlink()
    with pytest.raises(cache.CorruptArtifactError, match="completed-marker"):
        cache.load("exp", {"a": 1})
    cache.cached("exp", {"a": 1}, compute, verbose=False)
    assert len(calls) == 2


def test_same_length_corruption_detected_by_checksum(cdir):
    compute, calls = _counting(TREE)
    cache.cached("exp", {"a": 1}, compute, verbose=False)
    data_path, marker = cache.artifact_paths("exp", {"a": 1})
    raw = bytearray(data_path.read_bytes())
    raw[-10] ^= 0xFF
    data_path.write_bytes(bytes(raw))
    with pytest.raises(cache.CorruptArtifactError, match="sha256"):
        cache.load("exp", {"a": 1})
    assert json.loads(marker.read_text())["name"] == "exp"


def test_failed_compute_leaves_nothing(cdir):
    def boom():
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        cache.cached("exp", {"a": 1}, boom, verbose=False)
    assert [p.name for p in cdir.iterdir()] == [".locks"]  # no artifact file, only the lock's folder


def test_bad_artifacts_rejected(cdir):
    with pytest.raises(TypeError, match="nested dict"):
        cache.save("exp", {}, [1, 2])
    with pytest.raises(TypeError, match="'x'"):
        cache.save("exp", {}, {"x": object()})
    with pytest.raises(TypeError, match="JSON-like"):
        cache.cache_key("exp", {"f": object()})


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.delenv("SYMLIB_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "symlib" / "artifacts"


def test_ragged_leaf_is_a_clear_error(cdir):
    with pytest.raises(ValueError, match=r"'stats/epoch' holds arrays of different shapes \[\(2, 3\), \(2, 4\)\]"):
        cache.save("exp", {}, {"stats": {"epoch": [np.zeros((2, 3)), np.zeros((2, 4))]}})
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = np.zeros(3), np.zeros(5)
    with pytest.raises(ValueError, match=r"'r' holds arrays of different shapes \[\(3,\), \(5,\)\]"):
        cache.save("exp", {}, {"r": ragged})
    assert list(cdir.iterdir()) == []
    same = cache.cached("exp", {}, lambda: {"layers": [np.zeros((2, 3)), np.ones((2, 3))]}, verbose=False)
    assert same["layers"].shape == (2, 2, 3)  # equal shapes are stacked into one array, as before


def test_bad_keys_keep_their_messages(cdir):
    with pytest.raises(TypeError, match="non-empty strings without '/', got 'a/b' under 'p/'"):
        cache.save("exp", {}, {"p": {"a/b": 1}})
    with pytest.raises(TypeError, match="got 3 under ''"):
        cache.save("exp", {}, {3: 1})


def test_config_key_ignores_the_code_version(monkeypatch):
    key = cache.config_key("hmc", {"a": 1})
    code_key = cache.cache_key("hmc", {"a": 1})
    monkeypatch.setattr(cache, "code_version", lambda: "0.0.0+edited")
    assert cache.config_key("hmc", {"a": 1}) == key
    assert cache.cache_key("hmc", {"a": 1}) != code_key
    assert cache.config_key("hmc", {"a": 2}) != key and cache.config_key("other", {"a": 1}) != key


def test_code_version_hashes_every_subpackage():
    root = cache.package_root()
    assert root.name == "symlib" and (root / "inference" / "hmc" / "driver.py").exists()
    assert (root / "experiments" / "cache.py").exists()


def test_progress_is_quiet_by_default(cdir, caplog, capsys):
    """Under Python's default WARNING level (a notebook, the book) the loaded/computing lines
    are not emitted at all, and nothing is printed."""
    assert not logging.getLogger("symlib.experiments.cache").isEnabledFor(logging.INFO)
    compute, calls = _counting(TREE)
    cache.cached("exp", {"a": 1}, compute)  # computed
    cache.cached("exp", {"a": 1}, compute)  # loaded
    assert len(calls) == 1
    assert caplog.records == []
    assert capsys.readouterr() == ("", "")


def test_progress_is_logged_at_info(cdir, caplog):
    compute, _ = _counting(TREE)
    with caplog.at_level(logging.INFO, logger="symlib"):
        cache.cached("exp", {"a": 1}, compute)
        cache.cached("exp", {"a": 1}, compute)
        cache.cached("exp", {"a": 2}, compute, verbose=False)  # verbose=False: nothing
    lines = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    key = cache.cache_key("exp", {"a": 1})
    assert lines == [
        ("symlib.experiments.cache", logging.INFO, f"computing exp ({key}) ..."),
        ("symlib.experiments.cache", logging.INFO, f"loaded exp ({key}) from the artifact cache"),
    ]


class _Stop(RuntimeError):
    pass


def _steps_fn(calls, fail_at=None):
    def fn(item):
        if fail_at is not None and len(calls) == fail_at:
            raise _Stop(f"killed before step {item}")
        calls.append(item)
        return {"value": np.full(3, float(item) ** 2), "meta": {"item": item}}
    return fn


def test_cached_steps_resumes_after_an_interrupted_run(cdir):
    items = [3, 1, 4, 5]
    calls = []
    with pytest.raises(_Stop):
        cache.cached_steps("exp", {"a": 1}, items, _steps_fn(calls, fail_at=2), verbose=False)
    assert calls == [3, 1]  # two steps finished and stored before the "kill"
    assert cache.STEPS_RUN["exp"] == {"computed": 2, "loaded": 0}  # the interrupted call's tally
    resumed = cache.cached_steps("exp", {"a": 1}, items, _steps_fn(calls), verbose=False)
    assert calls == [3, 1, 4, 5]  # only the missing steps were computed
    assert cache.STEPS_RUN["exp"] == {"computed": 2, "loaded": 2}
    fresh_calls = []
    monkey_dir = cdir / "fresh"
    uninterrupted = cache.cached_steps("exp", {"a": 1}, items, _steps_fn(fresh_calls), directory=monkey_dir,
                                       verbose=False)
    assert fresh_calls == items
    for got, want in zip(resumed, uninterrupted):
        np.testing.assert_array_equal(got["value"], want["value"])
        assert int(got["meta"]["item"]) == int(want["meta"]["item"])
    assert len(list(cdir.glob("exp.step-*.npz"))) == 4
    # another config is another set of steps
    other = []
    cache.cached_steps("exp", {"a": 2}, items[:1], _steps_fn(other), verbose=False)
    assert other == [3]


def test_a_damaged_step_that_is_recomputed_counts_as_computed(cdir):
    """The tally asked whether the step's marker existed before loading: a damaged step, which
    cached() deletes and recomputes, was counted as loaded in the saved record."""
    calls = []
    cache.cached_steps("exp", {"a": 1}, [0, 1], _steps_fn(calls), verbose=False)
    data, _ = cache.artifact_paths("exp.step", cache._step_config({"a": 1}, "1"), cdir)
    data.write_bytes(data.read_bytes()[:-10])
    cache.cached_steps("exp", {"a": 1}, [0, 1], _steps_fn(calls), verbose=False)
    assert calls == [0, 1, 1] and cache.STEPS_RUN["exp"] == {"computed": 1, "loaded": 1}


def test_cached_steps_rejects_duplicate_labels(cdir):
    with pytest.raises(ValueError, match="step labels must be unique"):
        cache.cached_steps("exp", {}, [1, 1], _steps_fn([]), verbose=False)


_COMPUTE_ONCE = """
import json, sys, time
from pathlib import Path
from symlib.experiments import cache
tally = Path(sys.argv[1]) / "computed.txt"
def compute():
    with open(tally, "a") as f:
        f.write("x\\n")
    time.sleep(1.5)  # the other process asks meanwhile
    return {"a": [1.0, 2.0, 3.0]}
tree = cache.cached("shared", {"n": 3}, compute, directory=Path(sys.argv[1]), verbose=False)
print(json.dumps(tree["a"].tolist()))
"""


def test_processes_sharing_the_cache_compute_an_artifact_once(tmp_path):
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", _COMPUTE_ONCE, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert [json.loads(out) for out, _ in outs] == [[1.0, 2.0, 3.0]] * 2
    assert (tmp_path / "computed.txt").read_text() == "x\n"  # one computed it, the other loaded it


# ------------------------------------------------------------ XLA's compiled programs

_COMPILE_ONCE = """
import json, jax, jax.numpy as jnp
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
import symlib.experiments   # switches the cache on (use_compilation_cache)
folder = jax.config.jax_compilation_cache_dir
y = jax.jit(lambda x: jnp.sin(x) @ x.T + 1.0)(jnp.ones((7, 5)))
print(json.dumps({"folder": folder, "max_size": jax.config.jax_compilation_cache_max_size,
                  "hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses"), "y": float(y.sum())}))
"""


def _compile_in_subprocess(env: dict) -> dict:
    import os
    import subprocess
    import sys

    full = {k: v for k, v in os.environ.items() if k not in ("SYMLIB_XLA_CACHE", "JAX_COMPILATION_CACHE_DIR")}
    out = subprocess.run([sys.executable, "-c", _COMPILE_ONCE], env={**full, **env}, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compiled_programs_are_shared_between_processes_through_the_artifact_cache(tmp_path):
    env = {"SYMLIB_CACHE": str(tmp_path)}
    first = _compile_in_subprocess(env)
    assert first["folder"] == str(tmp_path / "xla")
    assert first["max_size"] == -1  # no limit: JAX's eviction would read every entry at every write
    assert not (tmp_path / "xla" / ".lockfile").exists()
    assert first["misses"] >= 1 and first["hits"] == 0
    assert any((tmp_path / "xla").iterdir())
    second = _compile_in_subprocess(env)
    assert second["hits"] >= 1 and second["misses"] == 0
    assert second["y"] == first["y"]  # the loaded program computes what the compiled one did


def test_compilation_cache_can_be_switched_off_and_keeps_a_users_own(tmp_path):
    off = _compile_in_subprocess({"SYMLIB_CACHE": str(tmp_path / "a"), "SYMLIB_XLA_CACHE": "0"})
    assert off["folder"] is None and off["hits"] == 0
    assert not (tmp_path / "a" / "xla").exists()
    mine = tmp_path / "mine"
    kept = _compile_in_subprocess({"SYMLIB_CACHE": str(tmp_path / "b"), "JAX_COMPILATION_CACHE_DIR": str(mine)})
    assert kept["folder"] == str(mine)
    assert not (tmp_path / "b" / "xla").exists()


# ------------------------------------------------------------ damaged and in-progress artifacts

def test_an_artifact_being_written_is_not_deleted_by_a_reader_without_the_lock(cdir):
    """Between the .npz's rename and the marker's, another process sees an npz without a marker:
    it must wait for the lock instead of deleting the file under the writer."""
    import threading

    import filelock

    cache.save("exp", {"a": 1}, TREE)
    data_path, marker = cache.artifact_paths("exp", {"a": 1})
    finished_marker = marker.read_bytes()
    marker.unlink()  # the writer has renamed the .npz and not yet written the marker
    compute, calls = _counting(TREE)
    got = {}
    writer = filelock.FileLock(cdir / ".locks" / f"{data_path.stem}.lock")
    (cdir / ".locks").mkdir()
    with writer:
        reader = threading.Thread(target=lambda: got.update(cache.cached("exp", {"a": 1}, compute, verbose=False)))
        reader.start()
        reader.join(timeout=1.0)
        assert reader.is_alive()  # waiting for the writer's lock
        assert data_path.exists()  # and the writer's .npz left alone
        marker.write_bytes(finished_marker)  # the writer finishes
    reader.join(timeout=30)
    assert calls == []  # the reader loaded what the writer stored
    np.testing.assert_array_equal(got["params"]["w"], TREE["params"]["w"])


@pytest.mark.parametrize("marker_bytes", [b"[1, 2]", b"\xff\xfe\x00garbage", b'{"sha256": null}', b'{"name": "exp"}',
                                          b'"a string"'])
def test_a_malformed_marker_is_a_damaged_artifact(cdir, marker_bytes):
    compute, calls = _counting(TREE)
    cache.cached("exp", {"a": 1}, compute, verbose=False)
    _, marker = cache.artifact_paths("exp", {"a": 1})
    marker.write_bytes(marker_bytes)
    with pytest.raises(cache.CorruptArtifactError, match="completed-marker"):
        cache.load("exp", {"a": 1})
    again = cache.cached("exp", {"a": 1}, compute, verbose=False)
    assert len(calls) == 2  # recomputed
    np.testing.assert_array_equal(again["params"]["w"], TREE["params"]["w"])
    assert cache.load("exp", {"a": 1}) is not None


@pytest.fixture()
def package_copy(tmp_path, monkeypatch):
    """A stand-in package folder for :func:`cache.code_version`, with one source and one data file."""
    root = tmp_path / "symlib"
    (root / "_data").mkdir(parents=True)
    (root / "mod.py").write_text("X = 1\n")
    (root / "_data" / "subset_manifest.json").write_text('{"seed": 0}')
    monkeypatch.setattr(cache, "package_root", lambda: root)
    cache.code_version.cache_clear()
    yield root
    cache.code_version.cache_clear()


def test_code_version_changes_with_the_shipped_data(package_copy):
    before = cache.code_version()
    cache.code_version.cache_clear()
    assert cache.code_version() == before  # nothing changed, same version
    (package_copy / "_data" / "subset_manifest.json").write_text('{"seed": 1}')
    cache.code_version.cache_clear()
    after_manifest = cache.code_version()
    assert after_manifest != before
    (package_copy / "_data" / "mnist-subset-train-images-idx3-ubyte.gz").write_bytes(b"new")
    cache.code_version.cache_clear()
    assert cache.code_version() not in (before, after_manifest)


def test_code_version_changes_with_the_sources(package_copy):
    before = cache.code_version()
    (package_copy / "mod.py").write_text("X = 2\n")
    cache.code_version.cache_clear()
    assert cache.code_version() != before


def test_a_dtype_npz_cannot_store_is_a_clear_error(cdir):
    import ml_dtypes

    with pytest.raises(TypeError, match=r"'p/half' has dtype bfloat16"):
        cache.save("exp", {}, {"p": {"half": np.arange(3, dtype=ml_dtypes.bfloat16)}})
    assert list(cdir.iterdir()) == []
    kept = cache.cached("exp", {}, lambda: {"h": np.arange(3, dtype=np.float16)}, verbose=False)
    again = cache.cached("exp", {}, lambda: {"h": np.zeros(1)}, verbose=False)
    assert kept["h"].dtype == again["h"].dtype == np.float16  # numpy's own dtypes round-trip
    np.testing.assert_array_equal(again["h"], [0, 1, 2])
