"""Open every page of the built HTML book in headless Chromium and report what a reader would see go wrong.

    python scripts/check_pages.py [_build/html] [--screenshots DIR] [--timeout SECONDS]

For every ``*.html`` page under the book (except ``_static/``, ``_sources/``, ``_images/``,
which hold assets, not pages) the checker loads the page from ``file://``, waits for the
page's ``load`` event, its images and MathJax's first typesetting pass, saves a screenshot,
and reports, one line per problem, prefixed by its kind:

* ``load``     the page does not load (a Chromium error page, or a timeout);
* ``console``  a SEVERE entry on the JavaScript console (an uncaught error, a failed load);
* ``resource`` a local file the page asks for (script, style sheet, font, image) is missing;
* ``image``    an ``<img>`` that did not load (``complete && naturalWidth == 0``);
* ``math``     raw TeX (``\\(``, ``\\[``, ``$$``) left in the rendered text, outside code;
* ``link``     an internal link to a missing file, or to a ``#fragment`` with no such id;
  a redirect page (a ``<meta http-equiv="refresh">``: Jupyter Book's root ``index.html``) is
  not opened, its target is checked as its one link (the browser leaves such a page while
  the checks run, and their script then fails: one CI run failed so, 2026-12-01);
* ``scroll``   a table or code block (``table``, ``pre``) that scrolls sideways at a 1280-pixel
  window: the element or one of its containers (up to five levels up) is wider inside than
  its box (``scrollWidth > clientWidth``), or the whole page is; collapsed ``<details>``
  are opened first, so what a reader sees after expanding them is measured too;
* ``split``    a word of a table's header (letters and digits) broken across two lines at
  a 1280-pixel window, as "sourc / e" was when every cell could break anywhere (tables
  with ``table-layout: fixed`` are left out: their page sets the columns' widths);
* ``remote``   any request to a host (anything but ``file:``, ``data:``, ``about:``,
  ``blob:``, ``chrome:``), whether or not it could have succeeded: the book must work
  offline. Remote requests are blocked in the browser, so the check never uses the network.

Screenshots (the viewport, 1280x1000) go to ``DIR`` (default: ``screenshots/`` next to the
HTML root, i.e. ``_build/screenshots/``), one PNG per page named from its path
(``notebooks/01_x.html`` -> ``notebooks__01_x.png``).

Driver: Selenium 4 with the system's Chromium and chromedriver (Debian: ``apt-get install
chromium chromium-driver``); the driver is passed explicitly so Selenium Manager never
downloads anything. Where no browser, driver or Selenium is installed, the check is skipped
with a message (exit 0), except when ``CI=true``, where that is a failure (exit 2).

Exit status: 0 no problem (or skipped), 1 problems found, 2 no browser under CI.
"""
from __future__ import annotations

import argparse
import html.parser
import json
import os
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

INSTALL_HINT = (
    "install a browser and its driver: `apt-get install chromium chromium-driver` "
    "(Debian/Ubuntu) and `pip install 'selenium>=4.10'` (the project's `test` extra)"
)
# Folders of the built book that hold assets, not pages.
EXCLUDED_DIRS = {"_static", "_sources", "_images", "_downloads"}
# URL schemes that never leave the machine.
LOCAL_SCHEMES = {"file", "data", "about", "blob", "chrome", "chrome-error", "devtools"}
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
WINDOW = (1280, 1000)

# Waits (in the page) for the load event, every image, and MathJax's first typesetting
# pass (MathJax 3: startup.promise; MathJax 2: a Hub.Queue callback), up to a timeout.
# Returns what was waited for, so a timeout is visible.
WAIT_JS = r"""
const done = arguments[arguments.length - 1];
const timeoutMs = arguments[0];
const t0 = Date.now();
const left = () => Math.max(0, timeoutMs - (Date.now() - t0));
const withTimeout = (p, what) => Promise.race([
  p.then(() => null, (e) => what + " failed: " + e),
  new Promise((r) => setTimeout(() => r(what + " timed out"), left())),
]);
const loaded = new Promise((r) => {
  if (document.readyState === "complete") r(); else window.addEventListener("load", () => r());
});
(async () => {
  const notes = [];
  const n1 = await withTimeout(loaded, "page load event"); if (n1) notes.push(n1);
  const imgs = Array.from(document.images);
  imgs.forEach((i) => { if (i.loading === "lazy") i.loading = "eager"; });
  const pending = imgs.filter((i) => !i.complete).map((i) => new Promise((r) => {
    i.addEventListener("load", r); i.addEventListener("error", r);
  }));
  const n2 = await withTimeout(Promise.all(pending), "images"); if (n2) notes.push(n2);
  const MJ = window.MathJax;
  let mj = null;
  if (MJ && MJ.startup && MJ.startup.promise) mj = MJ.startup.promise;
  else if (MJ && MJ.Hub && MJ.Hub.Queue) mj = new Promise((r) => MJ.Hub.Queue(r));
  if (mj) { const n3 = await withTimeout(mj, "MathJax typesetting"); if (n3) notes.push(n3); }
  done({notes: notes, mathjax: mj !== null});
})().catch((e) => done({notes: ["wait script: " + e], mathjax: false}));
"""

# What the rendered page shows: broken images, raw TeX outside code, links and ids.
INSPECT_JS = r"""
const brokenImages = Array.from(document.images)
  .filter((i) => i.complete && i.naturalWidth === 0)
  .map((i) => i.currentSrc || i.src || i.outerHTML.slice(0, 120));
// MathJax's own skipHtmlTags: raw TeX inside these is code, not math.
const SKIP = new Set(["SCRIPT", "NOSCRIPT", "STYLE", "TEXTAREA", "PRE", "CODE", "ANNOTATION",
                      "ANNOTATION-XML", "MJX-CONTAINER", "MATH", "SVG"]);
const rawTex = [];
if (document.body) {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let e = node.parentElement; e; e = e.parentElement) {
        if (SKIP.has(e.tagName.toUpperCase())) return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    },
  });
  const re = /\\\(|\\\[|\$\$/g;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.nodeValue;
    let m;
    while ((m = re.exec(text)) !== null) {
      const s = Math.max(0, m.index - 30);
      rawTex.push(text.slice(s, m.index + 50).replace(/\s+/g, " ").trim());
    }
  }
}
document.querySelectorAll("details").forEach((d) => { d.open = true; });
const describe = (e) => {
  const cls = (e.getAttribute("class") || "").trim().split(/\s+/).filter(Boolean).slice(0, 2).join(".");
  return e.tagName.toLowerCase() + (cls ? "." + cls : "");
};
const sideways = [];
for (const el of document.querySelectorAll("pre, table")) {
  if (!el.getClientRects().length) continue;  // not displayed
  let e = el;
  for (let i = 0; e && e !== document.body && e !== document.documentElement && i < 6; e = e.parentElement, i++) {
    if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1) {
      const text = (el.innerText || "").replace(/\s+/g, " ").trim().slice(0, 60);
      sideways.push(`${describe(el)}` + (e === el ? "" : ` in ${describe(e)}`) +
                    ` is ${e.scrollWidth} px wide in ${e.clientWidth} px: "${text}"`);
      break;
    }
  }
}
const splitWords = [];
for (const th of document.querySelectorAll("table th")) {
  if (!th.getClientRects().length) continue;  // not displayed
  if (getComputedStyle(th.closest("table")).tableLayout === "fixed") continue;  // widths set by the page
  const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const re = /[A-Za-z0-9]{2,}/g;
    let m;
    while ((m = re.exec(n.nodeValue)) !== null) {
      const range = document.createRange();
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
      if (tops.size > 1) splitWords.push(`"${m[0]}" in the header "${th.innerText.replace(/\s+/g, " ").trim()}"`);
    }
  }
}
const root = document.scrollingElement || document.documentElement;
const pageScrolls = root.scrollWidth > window.innerWidth + 1 ? [root.scrollWidth, window.innerWidth] : null;
const links = Array.from(document.querySelectorAll("a[href], area[href]"))
  .map((a) => [a.getAttribute("href"), a.href]);
const ids = Array.from(document.querySelectorAll("[id], a[name]"))
  .map((e) => e.id || e.getAttribute("name"));
return {href: location.href, brokenImages, rawTex, links, ids, sideways, splitWords, pageScrolls,
        bodyText: document.body ? document.body.innerText.length : 0};
"""


def find_browser() -> tuple[str, str] | None:
    """The Chromium binary and chromedriver to use, or None when either is missing.

    ``CHROME_BIN`` and ``CHROMEDRIVER`` override the search of ``PATH``.

    Returns:
        ``(browser, driver)`` paths, or None.
    """
    browser = os.environ.get("CHROME_BIN") or next(filter(None, map(shutil.which, BROWSERS)), None)
    driver = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")
    if not browser or not driver:
        return None
    return browser, driver


def unavailable() -> str | None:
    """Why the browser check cannot run here, or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "Selenium is not installed"
    if find_browser() is None:
        return "no Chromium and chromedriver on PATH"
    return None


def in_ci() -> bool:
    """Whether we run under CI (``CI=true``), where a missing browser is a failure."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def make_driver(timeout: float = 30.0):
    """Start one headless Chromium for all pages, with the console and network logged.

    Args:
        timeout: page-load and script timeout, in seconds.

    Returns:
        A Selenium ``WebDriver``; remote (http, https, ws, wss, ftp) requests are blocked,
        though still logged as attempted.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars",
                "--allow-file-access-from-files", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": True})
    from selenium.common.exceptions import WebDriverException

    for attempt in (1, 2):  # a Chromium starting beside another one on a loaded machine can fail once
        try:
            driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
            break
        except WebDriverException as err:
            if attempt == 2:
                raise
            print(f"check_pages: Chromium did not start ({str(err).splitlines()[0]}); trying once more",
                  file=sys.stderr)
    driver.set_page_load_timeout(timeout)
    driver.set_script_timeout(timeout + 5)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": [
        "http://*", "https://*", "ws://*", "wss://*", "ftp://*"]})
    return driver


def pages_of(root: Path) -> list[Path]:
    """Every HTML page of the built book, outside the asset folders, sorted."""
    return sorted(p for p in root.rglob("*.html")
                  if not EXCLUDED_DIRS.intersection(p.relative_to(root).parts[:-1]))


def screenshot_name(root: Path, page: Path) -> str:
    """``notebooks/01_x.html`` -> ``notebooks__01_x.png``."""
    return "__".join(page.relative_to(root).with_suffix("").parts) + ".png"


class _Ids(html.parser.HTMLParser):
    """The ``id`` and ``<a name>`` values of an HTML file (for pages not opened)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v and (k == "id" or (k == "name" and tag == "a")):
                self.ids.add(v)


class _Refresh(html.parser.HTMLParser):
    """The URL of a page's ``<meta http-equiv="refresh" content="N; url=...">``, if it has one."""

    def __init__(self) -> None:
        super().__init__()
        self.url: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k.lower(): v or "" for k, v in attrs}
        if tag == "meta" and a.get("http-equiv", "").lower() == "refresh" and self.url is None:
            key, _, url = a.get("content", "").partition(";")[2].partition("=")
            if key.strip().lower() == "url" and url.strip():
                self.url = url.strip().strip("'\"")


def redirect_target(page: Path) -> str | None:
    """Where a redirect page sends the browser (its meta refresh URL), or None for another page
    (or a missing one: opening it reports that)."""
    if not page.is_file():
        return None
    parser = _Refresh()
    parser.feed(page.read_text(errors="replace"))
    return parser.url


def _file_path(url: str) -> Path:
    return Path(unquote(urlsplit(url).path))


def _drain(driver) -> None:
    for kind in ("browser", "performance"):
        driver.get_log(kind)


def _network(perf_log: list[dict]) -> tuple[list[str], list[str], list[str]]:
    """Remote requests, failed local loads and a failed main document, from the perf log."""
    remote, failed, doc_failed = [], [], []
    requests: dict[str, tuple[str, str]] = {}
    for entry in perf_log:
        msg = json.loads(entry["message"])["message"]
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            requests[params["requestId"]] = (url, params.get("type", ""))
            if urlsplit(url).scheme.lower() not in LOCAL_SCHEMES and url not in remote:
                remote.append(url)
        elif method == "Network.webSocketCreated":
            if params["url"] not in remote:
                remote.append(params["url"])
        elif method == "Network.loadingFailed":
            url, rtype = requests.get(params["requestId"], ("?", params.get("type", "")))
            if urlsplit(url).scheme.lower() in LOCAL_SCHEMES and params.get("errorText") != "net::ERR_ABORTED":
                line = f"{url} ({params.get('errorText', 'failed')})"
                (doc_failed if (params.get("type") or rtype) == "Document" else failed).append(line)
    return remote, failed, doc_failed


def check_pages(driver, root: Path, pages: list[Path], screenshots: Path | None,
                timeout: float = 20.0) -> dict[str, list[str]]:
    """Open each page and list its problems.

    Args:
        driver: from :func:`make_driver`.
        root: the HTML root; links leaving it are problems.
        pages: the pages to open (files under ``root``).
        screenshots: folder for one PNG per page, or None for none.
        timeout: seconds to wait, per page, for load, images and MathJax.

    Returns:
        ``{page path relative to root: ["kind: message", ...]}``, every page present.
    """
    from selenium.common.exceptions import WebDriverException

    root = root.resolve()
    found: dict[str, list[str]] = {}
    dom_ids: dict[Path, set[str]] = {}
    links: dict[str, list[tuple[str, str]]] = {}
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    for page in pages:
        page = page.resolve()
        rel = page.relative_to(root).as_posix()
        probs = found.setdefault(rel, [])
        target = redirect_target(page)
        if target is not None:  # nothing to render; its target is checked below, as its one link
            links[rel] = [(target, urljoin(page.as_uri(), target))]
            continue
        driver.get("about:blank")
        _drain(driver)
        try:
            driver.get(page.as_uri())
            waited = driver.execute_async_script(WAIT_JS, int(timeout * 1000))
            seen = driver.execute_script(INSPECT_JS)
        except WebDriverException as e:
            probs.append(f"load: {type(e).__name__}: {(e.msg or str(e)).splitlines()[0]}")
            waited, seen = {"notes": []}, None
        remote, failed, doc_failed = _network(driver.get_log("performance"))
        console = driver.get_log("browser")
        if screenshots is not None and seen is not None:
            driver.save_screenshot(str(screenshots / screenshot_name(root, page)))
        for line in doc_failed:
            probs.append(f"load: {line}")
        if seen is not None and seen["href"].startswith("chrome-error:"):
            probs.append(f"load: Chromium shows an error page for {page.as_uri()}")
            seen = None
        for note in waited["notes"]:
            probs.append(f"load: waiting for {note}")
        for entry in console:
            if entry.get("level") == "SEVERE":
                probs.append(f"console: {entry.get('message', '').strip()}")
        probs += [f"resource: {line}" for line in failed]
        probs += [f"remote: request to {url}" for url in remote]
        if seen is None:
            continue
        probs += [f"image: did not load: {src}" for src in seen["brokenImages"]]
        counts: dict[str, int] = {}
        for t in seen["rawTex"]:
            counts[t] = counts.get(t, 0) + 1
        probs += [f"math: raw TeX in the rendered text{f' (x{n})' if n > 1 else ''}: ...{t}..."
                  for t, n in counts.items()]
        probs += [f"scroll: sideways at {WINDOW[0]} px: {w}" for w in seen["sideways"]]
        probs += [f"split: a word broken across lines at {WINDOW[0]} px: {w}" for w in seen["splitWords"]]
        if seen["pageScrolls"]:
            width, inner = seen["pageScrolls"]
            probs.append(f"scroll: the page is {width} px wide in a {inner} px window")
        dom_ids[page] = set(seen["ids"])
        links[rel] = seen["links"]

    parsed_ids: dict[Path, set[str]] = {}
    for rel, page_links in links.items():
        probs = found[rel]
        reported = set()
        for raw, absolute in page_links:
            if raw is None or absolute in reported:
                continue
            scheme = urlsplit(absolute).scheme.lower()
            if scheme != "file":
                continue  # external (not followed), mailto:, javascript:, ...
            url, fragment = urldefrag(absolute)
            target = _file_path(url)
            reported.add(absolute)
            if not target.is_relative_to(root):
                probs.append(f"link: {raw!r} leaves the built book ({target})")
                continue
            if not target.exists():
                probs.append(f"link: {raw!r}: no such file {target.relative_to(root)}")
                continue
            if target.is_dir() and not (target / "index.html").exists():
                probs.append(f"link: {raw!r}: a folder without index.html")
                continue
            fragment = unquote(fragment)
            if not fragment or target.suffix.lower() not in {".html", ".htm"}:
                continue
            if target not in dom_ids and target not in parsed_ids:
                parser = _Ids()
                parser.feed(target.read_text(errors="replace"))
                parsed_ids[target] = parser.ids
            ids = dom_ids.get(target) or parsed_ids[target]
            if fragment not in ids:
                probs.append(f"link: {raw!r}: no id {fragment!r} in {target.relative_to(root)}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Check the built book in a browser and print the problems, per page.

    Returns:
        0 no problem (or skipped outside CI), 1 problems, 2 no browser under CI.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html_root", nargs="?", default="_build/html", type=Path)
    ap.add_argument("--screenshots", type=Path, default=None,
                    help="folder for the screenshots (default: screenshots/ next to html_root)")
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="seconds to wait per page for load, images and MathJax (default 20)")
    args = ap.parse_args(argv)
    root = args.html_root.resolve()
    why = unavailable()
    if why:
        if in_ci():
            print(f"check_pages: FAILED under CI=true: {why}; {INSTALL_HINT}", file=sys.stderr)
            return 2
        print(f"check_pages: SKIPPED (the book was not opened in a browser): {why}; {INSTALL_HINT}")
        return 0
    if not root.is_dir():
        print(f"check_pages: no built book at {root}", file=sys.stderr)
        return 1
    pages = pages_of(root)
    if not pages:
        print(f"check_pages: no HTML page under {root}", file=sys.stderr)
        return 1
    shots = (args.screenshots or root.parent / "screenshots").resolve()
    start = time.time()
    driver = make_driver(timeout=args.timeout + 10)
    try:
        found = check_pages(driver, root, pages, shots, timeout=args.timeout)
    finally:
        driver.quit()
    bad = {page: probs for page, probs in found.items() if probs}
    for page, probs in bad.items():
        print(f"{page}: {len(probs)} problem(s)", file=sys.stderr)
        for p in probs:
            print(f"  {p}", file=sys.stderr)
    total = sum(map(len, bad.values()))
    print(f"check_pages: checked {len(pages)} pages under {root} in {time.time() - start:.1f} s "
          f"(screenshots in {shots}): {total} problem(s) on {len(bad)} page(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
