"""No module of symlib passes 900 lines (issue 46): a module that grows past it is split by role."""
from pathlib import Path

MAX_LINES = 900
ROOT = Path(__file__).resolve().parents[1] / "symlib"


def test_no_module_passes_900_lines():
    long = {str(p.relative_to(ROOT)): n for p in ROOT.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
