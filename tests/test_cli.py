import logging

import numpy as np
import pytest

from symlib.__main__ import main


def test_list(capsys):
    assert main(["list"]) == 0
    assert "mlp_map_pair" in capsys.readouterr().out


def test_unknown_experiment_and_profile(capsys):
    with pytest.raises(SystemExit):
        main(["run", "no_such_experiment"])
    assert "unknown experiment" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "mlp_map_pair", "--profile", "huge"])
    assert "valid profiles" in capsys.readouterr().err


def test_run_writes_cached_artifact_and_summary(tmp_path, monkeypatch, capsys):
    import json

    from symlib import experiments

    calls = []

    def tiny(profile):
        calls.append(profile.name)
        return {"value": np.arange(3.0)}

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(experiments.EXPERIMENTS, "tiny", (tiny, lambda p: {"hidden": p.hidden}, "a test experiment"))
    monkeypatch.setitem(experiments.SUMMARIES, "tiny", lambda art: {"total": float(art["value"].sum())})
    assert main(["run", "tiny", "--profile", "quick", "--out", str(tmp_path / "res")]) == 0
    first = capsys.readouterr()
    assert main(["run", "tiny", "--profile", "quick"]) == 0
    second = capsys.readouterr()
    assert calls == ["quick"]  # the second run loaded the artifact from the cache
    # the cache's progress lines: on stderr from the command line (quiet in notebooks, see test_cache)
    assert "[symlib.experiments.cache] computing tiny (" in first.err
    assert "[symlib.experiments.cache] loaded tiny (" in second.err and "computing" not in second.err
    assert "symlib.experiments.cache" not in first.out + second.out
    assert "summary written to" in first.out
    logger = logging.getLogger("symlib")  # restored after the command: no handler, default level
    assert logger.handlers == [] and logger.level == logging.NOTSET
    record = json.loads((tmp_path / "res" / "tiny-quick.json").read_text())
    assert record["summary"] == {"total": 3.0} and record["profile"] == "quick"
    assert record["command"].startswith("python -m symlib run tiny") and "cpu" in record["device"].lower()
    # provenance: date, elapsed time, the symlib version as the artifact cache keys it, computed or loaded
    from symlib import __version__
    from symlib.experiments.cache import code_version

    assert record["date"] and isinstance(record["elapsed_s"], float) and record["computed"] is True
    assert record["symlib_version"] == code_version() == f"{record['package_version']}+{record['code_hash']}"
    assert record["package_version"] == __version__ and record["python"] and record["jax"]


def test_run_help_lists_every_experiment_with_its_description(capsys):
    from symlib import experiments

    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for name, (_, _, doc) in experiments.EXPERIMENTS.items():
        line = next((ln for ln in out.splitlines() if ln.split()[:1] == [name]), None)
        assert line is not None, f"{name} missing from `run --help`"
        assert doc in line


def test_lookup_never_computes(tmp_path, monkeypatch):
    from symlib import experiments

    calls = []

    def tiny(profile):
        calls.append(profile.name)
        return {"value": np.arange(3.0)}

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    monkeypatch.setitem(experiments.EXPERIMENTS, "tiny", (tiny, lambda p: {"hidden": p.hidden}, "a test experiment"))
    assert experiments.lookup("tiny", "quick") is None and calls == []
    experiments.run("tiny", "quick", verbose=False)
    found = experiments.lookup("tiny", "quick")
    assert calls == ["quick"] and list(found.artifact["value"]) == [0.0, 1.0, 2.0]
    assert experiments.lookup("tiny", "paper") is None  # another config
    with pytest.raises(ValueError, match="unknown experiment"):
        experiments.lookup("no_such_experiment")
