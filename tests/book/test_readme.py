"""The README's library quickstart runs as written and prints a lower barrier after matching."""
import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_quickstart_runs(tmp_path, capsys, monkeypatch):
    section = README.read_text().split("## symlib as a library: a quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script), run_name="__main__")
    before, after = map(float, re.search(r"barrier ([\d.]+) -> ([\d.]+) nats", capsys.readouterr().out).groups())
    assert after < before
