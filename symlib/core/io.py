"""Files written so that a reader never sees half of one."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def atomic_write(path: Path, write: Callable[[Any], None]) -> None:
    """Write ``path`` atomically: ``write`` fills a temporary file beside it, which is
    fsynced and then renamed over ``path``. Readers see the old file or the complete new
    one, never a partial one; if ``write`` raises, the temporary file is removed and
    ``path`` is left as it was.

    Args:
        path: the file to (re)write; its folder is created if missing.
        write: called with the open binary file object.

    Returns:
        None.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
