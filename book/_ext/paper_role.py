"""Sphinx extension: the ``{paper}`` and ``{repo}`` roles mark a number quoted from a source.

In a chapter's markdown, every number of *ours* comes from an executed cell through
myst-nb's ``{glue:text}`` role. A number the prose quotes from a paper is written as
``{paper}`98.66%```; one taken from the authors' code (or a library the paper says it
used), as ``{repo}`2e-4```. Both are rendered as plain text. The markers are what let
``scripts/check_prose.py`` fail on a hand-typed number of ours (a bare number in markdown is
neither glued nor quoted) and on a quoted number with no source: every value inside either
role must be registered, with its quote or its file, in ``symlib/experiments/report/paper_facts.py``.
"""
from __future__ import annotations

from docutils import nodes


def paper_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{paper}`value```: a value quoted from a paper's text, rendered as plain text."""
    node = nodes.inline(rawtext, text, classes=["paper-value"])
    return [node], []


def repo_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{repo}`value```: a value from the authors' code, rendered as plain text."""
    node = nodes.inline(rawtext, text, classes=["repo-value"])
    return [node], []


def setup(app):
    app.add_role("paper", paper_role)
    app.add_role("repo", repo_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
