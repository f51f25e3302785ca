"""scripts/chapter_shares.py classifies a chapter's code lines as the issue counts them."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("chapter_shares", ROOT / "scripts" / "chapter_shares.py")
shares = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shares)

PAGE = '''# %% [markdown]
# # A page
x = "markdown is not code"

# %% tags=["hide-cell"]
import numpy as np
from symlib import plotting

# %%
a = np.arange(3)
for v in a:
    b = v * 2
    print(f"{v}: {b}")
# a comment
text = f"{a.sum()} in all"

# %% tags=["hide-input"]
plotting.interpolation_curves({}, title="t")
glue("n", int(a.sum()), display=False)
'''


def test_a_page_is_counted_line_by_line(tmp_path):
    page = tmp_path / "01_page.py"
    page.write_text(PAGE)
    c = shares.chapter_shares(page)
    # compute: a = ..., for (header, majority of its body: one compute, one format -> compute), b = ...
    assert c == {"import": 2, "compute": 3, "format": 3, "plot": 1, "hidden": 4, "lines": 9}
    assert round(shares.percent(c, "hidden")) == 44


def test_the_book_is_measured():
    total = shares.book_shares()["all"]
    assert total["lines"] > 1000 and sum(total[k] for k in shares.KINDS) == total["lines"]
