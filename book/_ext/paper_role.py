"""Sphinx extension: the ``{paper}`` role marks a number or setting quoted from a paper.

In a chapter's markdown, every number of *ours* comes from an executed cell through
myst-nb's ``{glue:text}`` role; a number the prose quotes from a paper is written as
``{paper}`98.66%``` and rendered as plain text. The marker is what lets
``scripts/check_prose.py`` fail on a hand-typed number of ours: a bare number in markdown is
neither glued nor quoted.
"""
from __future__ import annotations

from docutils import nodes


def paper_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    node = nodes.inline(rawtext, text, classes=["paper-value"])
    return [node], []


def setup(app):
    app.add_role("paper", paper_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
