import logging

import numpy as np
import pytest

from symlib.__main__ import main
from symlib.experiments.registry import Experiment


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
    monkeypatch.setitem(experiments.EXPERIMENTS, "tiny", Experiment(
        "tiny", tiny, lambda p: {"hidden": p.hidden}, "a test experiment",
        summary=lambda art: {"total": float(art["value"].sum())}))
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
    for name, doc in ((n, e.doc) for n, e in experiments.EXPERIMENTS.items()):
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
    monkeypatch.setitem(experiments.EXPERIMENTS, "tiny",
                        Experiment("tiny", tiny, lambda p: {"hidden": p.hidden}, "a test experiment"))
    assert experiments.lookup("tiny", "quick") is None and calls == []
    experiments.run("tiny", "quick", verbose=False)
    found = experiments.lookup("tiny", "quick")
    assert calls == ["quick"] and list(found.artifact["value"]) == [0.0, 1.0, 2.0]
    assert experiments.lookup("tiny", "paper") is None  # another config
    with pytest.raises(ValueError, match="unknown experiment"):
        experiments.lookup("no_such_experiment")


def test_run_reduced_profile_is_labelled(tmp_path, monkeypatch, capsys):
    """--set FIELD=VALUE with --label: the fields replaced, the result saved under the label."""
    import json

    from symlib import experiments

    seen = []
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(experiments.EXPERIMENTS, "tiny", Experiment(
        "tiny", lambda p: seen.append(p) or {"value": np.ones(2)},
        lambda p: {"hidden": p.hidden, "widths": p.align_widths}, "a test experiment",
        summary=lambda art: {"total": float(art["value"].sum())}))
    argv = ["run", "tiny", "--profile", "paper", "--set", "hidden=16", "--set", "align_widths=8,16",
            "--label", "paper-small", "--out", str(tmp_path / "res")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "reduced: hidden=16, align_widths=(8, 16)" in out
    profile, = seen
    assert (profile.name, profile.hidden, profile.align_widths, profile.n_train) == ("paper-small", 16, (8, 16), 50_000)
    record = json.loads((tmp_path / "res" / "tiny-paper-small.json").read_text())
    assert record["profile"] == "paper-small" and "--set hidden=16" in record["command"]


@pytest.mark.parametrize("args, message", [
    (["--set", "hidden=16"], "--set and --label go together"),
    (["--label", "paper-x"], "--set and --label go together"),
    (["--set", "hidden=16", "--label", "paper"], "must start with 'paper-'"),
    (["--set", "hidden=16", "--label", "quick-x"], "must start with 'paper-'"),
    (["--set", "hiden=16", "--label", "paper-x"], "unknown or protected profile field(s) ['hiden']"),
    (["--set", "name=x", "--label", "paper-x"], "unknown or protected profile field(s) ['name']"),
    (["--set", "hidden=lots", "--label", "paper-x"], "profile field 'hidden' wants a value of type int"),
    (["--set", "hmc_adapt=maybe", "--label", "paper-x"], "profile field 'hmc_adapt' wants a value of type bool"),
    (["--set", "hidden", "--label", "paper-x"], "expected FIELD=VALUE"),
])
def test_run_reduced_profile_errors(args, message, capsys):
    with pytest.raises(SystemExit):
        main(["run", "mlp_map_pair", "--profile", "paper", *args])
    assert message in capsys.readouterr().err


def test_reduced_profile_values():
    from symlib.experiments.profiles import reduced

    p = reduced("paper", {"laplace_n_data": "none", "hmc_adapt": "false", "prior_std": "0.5", "bank_recipe": "adam"},
                "paper-x")
    assert (p.laplace_n_data, p.hmc_adapt, p.prior_std, p.bank_recipe) == (None, False, 0.5, "adam")
    assert reduced("quick", ["not_runs=2"], "quick-2runs").not_runs == 2


class _Stop(RuntimeError):
    pass


@pytest.mark.parametrize("flag, value", [("--chains", "0"), ("--samples", "0"), ("--chains", "-2"),
                                         ("--samples", "-1"), ("--chunk-size", "0"), ("--chains", "two"),
                                         ("--minutes", "0"), ("--minutes", "-3"), ("--minutes", "nan"),
                                         ("--minutes", "soon")])
def test_hmc_piece_refuses_counts_below_one(tmp_path, monkeypatch, capsys, flag, value):
    from symlib.experiments import xiao

    def not_run(*args):
        raise _Stop("hmc-piece started a run")

    monkeypatch.setattr(xiao, "hmc_pieces_run", not_run)
    with pytest.raises(SystemExit) as err:
        main(["hmc-piece", "--state", str(tmp_path / "s"), flag, value])
    assert err.value.code == 2
    assert f"argument {flag}:" in capsys.readouterr().err


def test_hmc_piece_passes_the_counts_given(tmp_path, monkeypatch):
    from symlib.experiments import xiao

    asked = []

    def record(profile, chains, samples, chunk_size):
        asked.append((chains, samples, chunk_size))
        raise _Stop("recorded")

    monkeypatch.setattr(xiao, "hmc_pieces_run", record)
    with pytest.raises(_Stop):
        main(["hmc-piece", "--state", str(tmp_path / "s"), "--chains", "1", "--samples", "3", "--chunk-size", "1"])
    with pytest.raises(_Stop):
        main(["hmc-piece", "--state", str(tmp_path / "s")])
    assert asked == [(1, 3, 1), (xiao.PIECES_CHAINS, xiao.PIECES_SAMPLES, xiao.PIECES_CHUNK)]


@pytest.mark.parametrize("flags", [["--status"], ["--summarize", "--out", "res"]])
def test_hmc_piece_without_a_state_is_a_clean_error(tmp_path, capsys, flags):
    flags = [str(tmp_path / f) if f == "res" else f for f in flags]
    assert main(["hmc-piece", "--state", str(tmp_path / "none"), *flags]) == 1
    assert capsys.readouterr().err.startswith(f"error: no pieced HMC state in {tmp_path / 'none'}")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "state.json").write_text("[1, 2]")  # not a state: a ValueError (CorruptRunError)
    assert main(["hmc-piece", "--state", str(tmp_path / "bad"), *flags]) == 1
    assert "is not the state of a pieced HMC run" in capsys.readouterr().err
    assert not (tmp_path / "res").exists()
