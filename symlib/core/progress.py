"""The one progress bar of symlib (tqdm), used by downloads, training and HMC.

A bar is shown only when asked (``enabled=True``) or, by default, when stderr is a
terminal, so notebooks under nbval and CI logs stay clean.
"""
from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm  # the text bar: tqdm.auto would want ipywidgets inside a notebook

__all__ = ["progress_enabled", "progress_bar"]


def progress_enabled(progress: bool | None) -> bool:
    """Whether to show a progress bar.

    Args:
        progress: ``True`` or ``False`` to force it, ``None`` for the default.

    Returns:
        ``progress`` if given, else whether stderr is an interactive terminal.
    """
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress_bar(total: int | None, desc: str, *, enabled: bool | None = None, initial: int = 0,
                 unit: str = "it", **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr, disabled unless :func:`progress_enabled` says otherwise.

    Args:
        total: number of units (``None`` if unknown).
        desc: the label shown before the bar.
        enabled: force the bar on or off; ``None`` shows it on a terminal only.
        initial: units already done (a resumed run).
        unit: name of one unit; ``unit="B"`` with ``unit_scale=True`` for downloads.
        **kwargs: passed to :class:`tqdm.tqdm`.

    Returns:
        The bar; use ``bar.update(n)``, ``bar.set_postfix(...)`` and ``bar.close()``.
    """
    return tqdm(total=total, desc=desc, initial=initial, unit=unit, file=sys.stderr,
                disable=not progress_enabled(enabled), dynamic_ncols=True, leave=True, **kwargs)
