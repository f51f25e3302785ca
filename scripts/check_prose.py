"""Check that no markdown cell of a chapter states a number or a verdict of ours by hand.

    python scripts/check_prose.py [notebooks/NN_name.py ...]   (default: every notebook)

The rule (docs: ``book/running.md``, "Numbers in the prose"):

* a number of ours reaches the prose only through myst-nb's glue (``{glue:text}`key``` after
  ``glue("key", value, display=False)`` in a code cell), or is printed by a cell;
* a number quoted from a paper (a value or a setting) is marked ``{paper}`98.66%```
  (``book/_ext/paper_role.py`` renders it as plain text);
* a verdict (holds, does not hold, reproduced, differs, ...) is glued or printed too, unless
  the sentence only states a criterion (``if``, ``when``, ``whether``, ``unless``, ...).

What is not a number of ours: references (``Fig. 2``, ``Sec. 3.1``, ``App. D.2``, ``chapter
07``, ``Table 1 (ii)``), citation years, names with digits (``ResNet20``, ``CIFAR-10``,
``float64``, ``dense_1``), list markers, math (``$...$``), inline code and code blocks, link
targets, and the contents of roles (``{glue:text}``, ``{paper}``, ``{cite}``, ``{doc}``, ...).
Everything else with a digit is reported, with the cell and the line.

Exit status 1 when anything is reported.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]

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


def markdown_problems(text: str) -> list[str]:
    """The hand-written numbers and verdicts in one markdown cell.

    Args:
        text: the cell's markdown.

    Returns:
        One message per offending line: the numbers or the verdict found, and the line.
    """
    found = []
    original_lines = text.splitlines()
    for i, line in enumerate(strip_allowed(text).splitlines()):
        numbers = [m.group(0).strip() for m in _NUMBER.finditer(line)]
        shown = original_lines[i].strip() if i < len(original_lines) else line.strip()
        if numbers:
            found.append(f"number(s) {numbers} not glued or marked {{paper}}: {shown[:160]}")
        for sentence in re.split(r"(?<=[.;:!?])\s+", line):
            if _VERDICT.search(sentence) and not _CRITERION.search(sentence):
                found.append(f"verdict '{_VERDICT.search(sentence).group(0)}' written by hand: {shown[:160]}")
    return found


def notebook_problems(path: Path) -> list[str]:
    """The problems of every markdown cell of one notebook source (``notebooks/NN_*.py``)."""
    nb = jupytext.read(path)
    out = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            out += [f"{path.name}, cell {index}: {p}" for p in markdown_problems(cell.source)]
    return out


def main(argv: list[str]) -> int:
    """Check the notebooks named in ``argv`` (default: all) and print the problems.

    Returns:
        0 when nothing is found, else 1.
    """
    paths = [Path(a) for a in argv[1:]] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    found = [p for path in paths for p in notebook_problems(path)]
    for p in found:
        print(p)
    print(f"check_prose: {len(paths)} notebook(s), {len(found)} hand-written number(s) or verdict(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
