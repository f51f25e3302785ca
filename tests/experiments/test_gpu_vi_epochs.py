"""scripts/gpu_vi_epochs.py: the saved 1,000-epoch run is what its step files assemble to."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = ROOT / "book" / "results" / "vi_alignment-paper-1000epochs"
SAVED = ROOT / "book" / "results" / "vi_alignment-paper-1000epochs-2pairs.json"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_vi_epochs", ROOT / "scripts" / "gpu_vi_epochs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_saved_run_is_its_step_files_assembled(tmp_path, monkeypatch):
    saved = json.loads(SAVED.read_text())
    monkeypatch.setattr("sys.argv", ["gpu_vi_epochs.py", "assemble", str(STEPS), saved["profile"], "--results",
                                     str(tmp_path), "--device", saved["device"], "--symlib-version",
                                     saved["symlib_version"]])
    _script().main()
    again = json.loads((tmp_path / SAVED.name).read_text())
    assert again["summary"] == saved["summary"]
    for key in ("command", "device", "date", "elapsed_s", "symlib_version", "python", "jax", "steps"):
        assert again[key] == saved[key], key


def test_assemble_refuses_mixed_runs(tmp_path, monkeypatch):
    for name in ("a", "b"):
        record = json.loads(next(STEPS.glob("*.json")).read_text())
        record["epochs"] = 100 if name == "a" else 1000
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
    monkeypatch.setattr("sys.argv", ["gpu_vi_epochs.py", "assemble", str(tmp_path), "paper-x", "--results",
                                     str(tmp_path / "out"), "--symlib-version", "0+x"])
    with pytest.raises(SystemExit, match="mix training lengths"):
        _script().main()
