"""Check that no markdown cell of a chapter states a number or a verdict of ours by hand.

    python scripts/check_prose.py [notebooks/NN_name.py | book/page.md ...]
    (default: every notebook, the landing page book/intro.md and book/running.md)

The rule (docs: ``book/running.md``, "Claims, verdicts and numbers in the prose"):

* a number of ours reaches the prose only through myst-nb's glue (``{glue:text}`key``` after
  ``glue("key", value, display=False)`` in a code cell), or is printed by a cell;
* a number quoted from a paper (a value or a setting) is marked ``{paper}`98.66%```, one
  taken from the authors' code ``{repo}`2e-4``` (``book/_ext/paper_role.py`` renders both
  as plain text), and the value must be registered in ``symlib/experiments/report/paper_facts.py``
  (a paper fact with its quote, a repo fact with its file): an unregistered value is reported;
* a verdict (holds, does not hold, reproduced, differs, ...) is glued or printed too, unless
  the sentence only states a criterion (``if``, ``when``, ``whether``, ``unless``, ...).

A markdown page (``book/intro.md``, ``book/running.md``: plain MyST, no executed cells, so
nothing can be glued) follows the number rules: every number on it is a paper's or the code's,
with its role, or a reference; numbers of ours belong in the chapters and the reproduction
report, or in the tables ``book/_ext/records.py`` generates from the runs' records.

What is not a number of ours: references (``Fig. 2``, ``Sec. 3.1``, ``App. D.2``, ``chapter
07``, ``Table 1 (ii)``), citation years, names with digits (``ResNet20``, ``CIFAR-10``,
``float64``, ``dense_1``), list markers, math (``$...$``), inline code and code blocks, link
targets, and the contents of roles (``{glue:text}``, ``{paper}``, ``{repo}``, ``{cite}``,
``{doc}``, ...).
Everything else with a digit is reported, with the cell and the line.

Exit status 1 when anything is reported.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "book" / "intro.md", ROOT / "book" / "running.md")


def _load_paper_facts():
    """symlib.experiments.report.paper_facts, loaded from its file (stdlib only) so that the check
    needs neither JAX nor an installed symlib."""
    spec = importlib.util.spec_from_file_location(
        "symlib_paper_facts", ROOT / "symlib" / "experiments" / "report" / "paper_facts.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


paper_facts = _load_paper_facts()

_REF_WORDS = (r"Tables?|Figs?\.|Figures?|Secs?\.|Sections?|App\.|Appendix|Appendices|Eqs?\.|Equations?|Props?\."
              r"|Propositions?|Cor\.|Corollary|Def\.|Definition|Lemma|Theorem|Thm\.|Alg\.|Algorithm|[Cc]hapters?"
              r"|[Ss]teps?|[Ii]tems?|[Ii]ssues?|Part|[Ll]ines?|[Ii]tem|[Cc]laims?|[Ff]inding|[Pp]oint|#")
_REF_ID = r"(?:[A-Z]?\d+(?:\.\d+)*[a-z]?\b|[A-Z](?:\.\d+)*\b)(?:\s*\([ivx]+\)|\s*\([a-d]\))*"
_PATTERNS = [
    (re.compile(r"```.*?```", re.S), " "),                          # fenced code and directives
    (re.compile(r"<!--.*?-->", re.S), " "),                        # HTML comments
    (re.compile(r"\$\$.*?\$\$", re.S), " "),                        # display math
    (re.compile(r"\{[\w:-]+\}`[^`]*`"), " "),                      # roles: glue, paper, cite, doc, ref
    (re.compile(r"`[^`]*`"), " "),                                  # inline code
    (re.compile(r"(?<!\\)\$[^$]+\$"), " "),                          # inline math (may span lines)
    (re.compile(r'"[^"]*"|“[^”]*”', re.S), " "),                   # the papers' words, quoted
    (re.compile(r"\]\([^)]*\)"), "]"),                             # link targets
    (re.compile(r"https?://\S+"), " "),                            # URLs
    (re.compile(r"\((?:[^()]*?)(?:19|20)\d\d[a-z]?\)"), " "),      # citation years: (2023), (Xiao et al., 2023)
    (re.compile(r"et al\.?,?\s*\(?(?:19|20)\d\d[a-z]?\)?"), "et al."),
    (re.compile(rf"\b(?:{_REF_WORDS})\s*{_REF_ID}(?:\s*(?:,|and|or|to|-|–)\s*{_REF_ID})*"), " "),
    (re.compile(r"\([ivx]+\)|\([a-d]\)"), " "),                    # enumerations (ii), (b)
    (re.compile(r"\b[A-Za-z][A-Za-z_]*[-_]?\d[\w.]*"), " "),        # names: ResNet20, CIFAR-10, float64, dense_1
    (re.compile(r"^\s*(?:[-*]\s+)?\d+[.)]\s", re.M), " "),         # list markers
    (re.compile(r"\b\d+-(?=[A-Za-z])"), " "),                       # 2-Wasserstein
    (re.compile(r"^#+ .*$", re.M), " "),                            # headings
]
_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?\s*(?:%|x\b|×)?")
_VERDICT = re.compile(r"\b(?:holds|held|(?:does|did) not hold|reproduced|differs|differed"
                      r"|fails to hold|failed to hold)\b", re.I)
_CRITERION = re.compile(r"\b(?:if|when|whether|unless|would|until|only when|as long as|must|should|needs?|"
                        r"requires?|asks?|means?|reads?|called|calls?|say|says|counts? as)\b", re.I)


def strip_allowed(text: str) -> str:
    """The markdown with every allowed digit-bearing span removed (see the module docstring);
    the line breaks are kept, so line ``i`` of the result is line ``i`` of the cell."""
    for pattern, repl in _PATTERNS:
        text = pattern.sub(lambda m, r=repl: r + "\n" * m.group(0).count("\n"), text)
    return text


_CODE = [re.compile(r"```.*?```", re.S), re.compile(r"<!--.*?-->", re.S), re.compile(r"``.+?``", re.S)]
_SOURCED = re.compile(r"\{(paper|repo)\}`([^`]*)`")


def role_problems(text: str) -> list[str]:
    """The ``{paper}`` and ``{repo}`` values of one markdown cell that the registry
    (``symlib/experiments/report/paper_facts.py``) does not hold.

    Args:
        text: the cell's markdown (a role shown as code, inside double backticks or a code
            block, is not read).

    Returns:
        One message per unregistered value, with its line number in the cell.
    """
    for pattern in _CODE:
        text = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    registered = {"paper": paper_facts.paper_values(), "repo": paper_facts.repo_values()}
    found = []
    for m in _SOURCED.finditer(text):
        role, value = m.group(1), m.group(2)
        if value not in registered[role]:
            line = text.count("\n", 0, m.start()) + 1
            what = ("a paper fact with its quote" if role == "paper" else "a repo fact with its file")
            found.append(f"line {line}: {{{role}}}`{value}` is not registered as {what} in "
                         f"symlib/experiments/report/paper_facts.py")
    return found


def markdown_problems(text: str, verdicts: bool = True) -> list[str]:
    """The hand-written numbers and verdicts, and the unregistered quoted values, in one
    markdown cell.

    Args:
        text: the cell's markdown.
        verdicts: also report verdicts written by hand (the chapters; a page of the book
            follows the number rules only).

    Returns:
        One message per offending line (the numbers or the verdict found, and the line) and
        per unregistered ``{paper}`` or ``{repo}`` value.
    """
    found = []
    original_lines = text.splitlines()
    for i, line in enumerate(strip_allowed(text).splitlines()):
        numbers = [m.group(0).strip() for m in _NUMBER.finditer(line)]
        shown = original_lines[i].strip() if i < len(original_lines) else line.strip()
        if numbers:
            found.append(f"line {i + 1}: number(s) {numbers} not glued or marked {{paper}}/{{repo}}: {shown[:160]}")
        for sentence in re.split(r"(?<=[.;:!?])\s+", line) if verdicts else ():
            if _VERDICT.search(sentence) and not _CRITERION.search(sentence):
                found.append(f"line {i + 1}: verdict '{_VERDICT.search(sentence).group(0)}' written by hand: "
                             f"{shown[:160]}")
    return found + role_problems(text)


def notebook_problems(path: Path) -> list[str]:
    """The problems of every markdown cell of one notebook source (``notebooks/NN_*.py``)."""
    nb = jupytext.read(path)
    out = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            out += [f"{path.name}, cell {index}: {p}" for p in markdown_problems(cell.source)]
    return out


def page_problems(path: Path) -> list[str]:
    """The problems of one markdown page of the book (``book/intro.md``): the number rules
    and the registry of quoted values, not the verdict rule (the page defines the verdicts)."""
    return [f"{path.name}, {p}" for p in markdown_problems(path.read_text(encoding="utf-8"), verdicts=False)]


def main(argv: list[str]) -> int:
    """Check the notebooks and pages named in ``argv`` (default: every notebook and
    ``book/intro.md``) and print the problems.

    Returns:
        0 when nothing is found, else 1.
    """
    paths = [Path(a) for a in argv[1:]] or [*sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")), *PAGES]
    found = [p for path in paths for p in (page_problems(path) if path.suffix == ".md" else notebook_problems(path))]
    for p in found:
        print(p)
    pages = sum(path.suffix == ".md" for path in paths)
    print(f"check_prose: {len(paths) - pages} notebook(s), {pages} page(s), {len(found)} hand-written number(s), "
          "verdict(s) or unregistered quoted value(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
