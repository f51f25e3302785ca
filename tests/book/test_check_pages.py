"""scripts/check_pages.py reports each kind of broken page, on tiny HTML fixtures, in a real browser.

Skipped where no Chromium + chromedriver + Selenium is installed, except under ``CI=true``,
where that is a failure.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_pages.py"
REPO = SCRIPT.parents[1]
_spec = importlib.util.spec_from_file_location("check_pages", SCRIPT)
check_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_pages)

# A 1x1 PNG, so a clean page has an image that loads.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a9b8e3cd0000000049454e44ae426082"
)


def _page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title>{head}</head><body>{body}</body></html>"


@pytest.fixture(scope="module")
def driver():
    why = check_pages.unavailable()
    if why:
        msg = f"{why}; {check_pages.INSTALL_HINT}"
        if check_pages.in_ci():
            pytest.fail(f"CI=true and no browser: {msg}")
        pytest.skip(msg)
    d = check_pages.make_driver(timeout=20)
    yield d
    d.quit()


def _check(driver, tmp_path: Path, files: dict[str, str | bytes], timeout: float = 5.0) -> dict[str, list[str]]:
    root = tmp_path / "html"
    for name, content in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            f.write_bytes(content)
        else:
            f.write_text(content)
    return check_pages.check_pages(driver, root, check_pages.pages_of(root), tmp_path / "shots", timeout=timeout)


def _kinds(probs: list[str]) -> set[str]:
    return {p.split(":", 1)[0] for p in probs}


def test_clean_pages_pass(driver, tmp_path):
    found = _check(driver, tmp_path, {
        "index.html": _page("<h1 id='top'>Clean</h1><img src='_images/dot.png' alt='dot'>"
                            "<p><a href='sub/other.html#sec'>other</a> <a href='#top'>top</a> "
                            "<a href='https://example.org/not-followed'>external</a></p>"
                            "<pre>re.sub(r'\\(x\\)', '', s)  # $$ in code is not math</pre>"
                            "<script>document.title = 'ok';</script>"),
        "sub/other.html": _page("<h2 id='sec'>Section</h2><a href='../index.html'>back</a>"),
        "_images/dot.png": PNG,
        "_static/skipped.html": _page("<script>throw new Error('not a page')</script>"),
    })
    assert found == {"index.html": [], "sub/other.html": []}
    assert sorted(p.name for p in (tmp_path / "shots").iterdir()) == ["index.png", "sub__other.png"]


def test_broken_image(driver, tmp_path):
    found = _check(driver, tmp_path, {"index.html": _page("<img src='_images/missing.png' alt='x'>")})
    probs = found["index.html"]
    assert any(p.startswith("image: did not load: ") and "missing.png" in p for p in probs), probs
    assert any(p.startswith("resource: ") and "missing.png" in p for p in probs), probs


def test_javascript_error(driver, tmp_path):
    found = _check(driver, tmp_path, {"index.html": _page("<script>throw new Error('boom in the page')</script>")})
    probs = found["index.html"]
    assert any(p.startswith("console: ") and "boom in the page" in p for p in probs), probs


def test_raw_tex_without_mathjax(driver, tmp_path):
    found = _check(driver, tmp_path, {
        "inline.html": _page("<p>the weight \\(x\\) here</p>"),
        "display.html": _page("<div class='math'>\\[ a = b \\]</div>"),
        "dollars.html": _page("<p>$$ y = 1 $$</p>"),
    })
    for page, tex in [("inline.html", "\\(x\\)"), ("display.html", "\\[ a = b \\]"), ("dollars.html", "$$ y = 1 $$")]:
        probs = found[page]
        assert any(p.startswith("math: ") and tex in p for p in probs), (page, probs)


def test_missing_file_and_anchor(driver, tmp_path):
    found = _check(driver, tmp_path, {
        "index.html": _page("<h1 id='here'>x</h1><a href='nowhere.html'>a</a> <a href='other.html#nosuch'>b</a>"
                            " <a href='#missing-here'>c</a> <a href='other.html#there'>fine</a>"),
        "other.html": _page("<h2 id='there'>y</h2>"),
    })
    probs = found["index.html"]
    assert any(p.startswith("link: 'nowhere.html': no such file") for p in probs), probs
    assert any(p.startswith("link: 'other.html#nosuch': no id 'nosuch'") for p in probs), probs
    assert any(p.startswith("link: '#missing-here': no id 'missing-here'") for p in probs), probs
    assert not any("#there" in p for p in probs), probs
    assert found["other.html"] == []


def test_a_redirect_page_is_checked_by_its_target(driver, tmp_path):
    """Jupyter Book's root index.html is a meta refresh: not opened (the browser would leave it
    while the checks run), its target checked as a link."""
    found = _check(driver, tmp_path, {
        "index.html": '<meta http-equiv="Refresh" content="0; url=book/intro.html" />',
        "old.html": "<html><head><meta content='0;URL=gone.html' http-equiv='refresh'></head></html>",
        "book/intro.html": _page("<h1>Intro</h1>"),
    })
    assert found["index.html"] == [] and found["book/intro.html"] == []
    assert found["old.html"] == ["link: 'gone.html': no such file gone.html"]
    assert sorted(p.name for p in (tmp_path / "shots").iterdir()) == ["book__intro.png"]
    assert check_pages.redirect_target(tmp_path / "html" / "book" / "intro.html") is None


def test_link_leaving_the_book(driver, tmp_path):
    (tmp_path / "outside.html").write_text(_page("x"))
    found = _check(driver, tmp_path, {"index.html": _page("<a href='../outside.html'>out</a>")})
    assert any(p.startswith("link: '../outside.html' leaves the built book") for p in found["index.html"])


def test_remote_request_is_reported_and_blocked(driver, tmp_path):
    found = _check(driver, tmp_path, {
        "index.html": _page("<p>x</p>", head="<script src='https://example.org/x.js'></script>"
                                             "<link rel='stylesheet' href='http://example.com/s.css'>"),
    })
    probs = found["index.html"]
    assert "remote: request to https://example.org/x.js" in probs, probs
    assert "remote: request to http://example.com/s.css" in probs, probs


def test_mathjax_is_waited_for(driver, tmp_path):
    # A stand-in MathJax whose startup promise typesets (removes the raw TeX) after 300 ms:
    # the checker must wait for it and then see no raw TeX.
    fake = ("<script>window.MathJax = {startup: {promise: new Promise((r) => setTimeout(() => {"
            "document.querySelectorAll('.math').forEach((e) => { e.textContent = 'x'; }); r(); }, 300))}};"
            "</script>")
    found = _check(driver, tmp_path, {"index.html": _page("<span class='math'>\\(x\\)</span>", head=fake)})
    assert found["index.html"] == []


def test_page_that_does_not_load(driver, tmp_path):
    root = tmp_path / "html"
    root.mkdir()
    found = check_pages.check_pages(driver, root, [root / "gone.html"], None, timeout=5)
    assert any(p.startswith("load: ") for p in found["gone.html"]), found


def test_command_line_exit_status(driver, tmp_path):
    root = tmp_path / "_build" / "html"
    root.mkdir(parents=True)
    (root / "index.html").write_text(_page("<p>\\(x\\)</p>"))
    run = subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "index.html: 1 problem(s)" in run.stderr and "math: " in run.stderr
    assert (tmp_path / "_build" / "screenshots" / "index.png").exists()
    (root / "index.html").write_text(_page("<p>fine</p>"))
    run = subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_browser_skips_outside_ci_and_fails_under_ci(tmp_path, monkeypatch):
    env = {"PATH": str(tmp_path), "CHROME_BIN": "", "CHROMEDRIVER": ""}  # nothing on PATH
    for ci, rc, word in [("", 0, "SKIPPED"), ("true", 2, "FAILED under CI=true")]:
        run = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True,
                             env={**env, "CI": ci})
        assert run.returncode == rc, run.stdout + run.stderr
        assert word in run.stdout + run.stderr
        assert "apt-get install chromium chromium-driver" in run.stdout + run.stderr


WIDE_ROW = "<tr>" + "".join(f"<td style='white-space:nowrap'>column_{i}_with_a_long_unbreakable_value</td>"
                            for i in range(12)) + "</tr>"


def test_tables_and_code_that_scroll_sideways_are_reported(driver, tmp_path):
    long_line = "x = " + " + ".join(f"value_{i}" for i in range(80))
    wrapped = ("<table style='table-layout:fixed;width:100%;overflow-wrap:anywhere'><tr>"
               + "".join(f"<td>column_{i}_with_a_long_unbreakable_value</td>" for i in range(12)) + "</tr></table>")
    found = _check(driver, tmp_path, {
        "wide_code.html": _page(f"<div class='highlight' style='overflow-x:auto'><pre>{long_line}</pre></div>"),
        "wide_table.html": _page(f"<div class='table-wrapper' style='overflow-x:auto'><table>{WIDE_ROW}</table></div>"),
        "in_details.html": _page(f"<details><summary>more</summary><div style='overflow:auto'><table>{WIDE_ROW}"
                                 "</table></div></details>"),
        "page_wide.html": _page(f"<table>{WIDE_ROW}</table>"),
        "fits.html": _page(f"<pre>short = 1</pre>{wrapped}<div style='overflow-x:auto'><pre>y = 2</pre></div>"),
    })
    for page in ("wide_code.html", "wide_table.html", "in_details.html", "page_wide.html"):
        assert "scroll" in _kinds(found[page]), (page, found[page])
    assert any(p.startswith("scroll: sideways at 1280 px: pre ") and "x = value_0" in p
               for p in found["wide_code.html"]), found["wide_code.html"]
    assert any(p.startswith("scroll: the page is ") for p in found["page_wide.html"]), found["page_wide.html"]
    assert any(p.startswith("scroll: sideways at 1280 px: table") for p in found["wide_table.html"])
    assert found["fits.html"] == []


def test_the_reports_table_fits_a_1280_px_window(driver, tmp_path):
    import dataclasses

    import symlib.experiments  # noqa: F401  (registers the experiments)
    from symlib.experiments.report import page as report_page

    rows = report_page.report_rows({}, {})
    long = dataclasses.replace(rows[0], label="Figure 1 (" + "a_very_long_unbreakable_part_name_" * 4 + ")",
                               scale="labelled reduction: " + "16 of the paper's 1,000 networks, " * 4,
                               our_number="x" * 200, details=(("t", "y" * 500),))
    html = report_page.report_html([*rows, long])
    found = _check(driver, tmp_path, {"report.html": _page(f"<main style='width:760px;margin:auto'>{html}</main>")})
    problems = [p for p in found["report.html"] if not p.startswith("link: ")]  # the chapters are not in the fixture
    assert problems == [], problems
    assert {p.split(": ", 1)[0] for p in found["report.html"]} <= {"link"}


def _claims_table(head_cells: str) -> str:
    """A five-column claims table in a 688 px column (the book's text width at 1280 px),
    its last columns long enough to squeeze the first."""
    long = "a long sentence of the paper quoted in full " * 6
    row = "<tr><td>Xiao et al. (2023), Table 1</td>" + f"<td>{long}</td>" * 4 + "</tr>"
    return (f"<div style='width:688px'><div class='cell_output'><table><tr>{head_cells}</tr>{row}</table>"
            "</div></div>")


def test_header_words_broken_across_lines_are_reported(driver, tmp_path):
    heads = "".join(f"<th>{h}</th>" for h in ("source", "the paper says", "ours", "effect", "verdict"))
    anywhere = "<style>th, td { overflow-wrap: anywhere; }</style>"
    css = (REPO / "book" / "_static" / "wrap-code.css").read_text()
    found = _check(driver, tmp_path, {
        "anywhere.html": _page(_claims_table(heads), anywhere),  # the book's rule before 2026-12-02
        "fixed.html": _page(_claims_table(heads).replace("<table>", "<table style='table-layout:fixed'>"), anywhere),
        "book.html": _page(_claims_table(heads), f"<style>{css}</style>"),
    })
    assert any(p.startswith('split: a word broken across lines at 1280 px: "source" in the header "source"')
               for p in found["anywhere.html"]), found["anywhere.html"]
    assert found["fixed.html"] == [] and found["book.html"] == []
