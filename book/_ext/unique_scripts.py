"""Sphinx extension: drop repeated <script> entries from every HTML page.

sphinx-thebe 0.3.1 (which Jupyter Book always loads) registers its inline configuration
script (``const THEBE_JS_URL = ...``) in ``env-before-read-docs``, which can fire twice in
one build; the page then declares the same ``const`` twice and the browser reports
"Identifier 'THEBE_JS_URL' has already been declared". Found by scripts/check_pages.py.
The two copies differ only in ``filename`` (``None`` and ``""``), so both count as inline.
"""
from __future__ import annotations


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def _unique_scripts(app, pagename, templatename, context, doctree) -> None:
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _unique_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
