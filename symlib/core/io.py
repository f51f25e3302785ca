"""Files written so that a reader never sees half of one."""
from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _target_mode(path: Path) -> int:
    """Permission bits for a new ``path``: those of the existing file, else ``0o666`` less the umask.

    The umask can only be read by setting it; it is set to the restrictive ``0o077`` for that
    instant, so a file another thread creates meanwhile is never more open than intended.
    """
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0o077)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None]) -> None:
    """Write ``path`` atomically: ``write`` fills a temporary file beside it, which is
    fsynced and then renamed over ``path``; on POSIX the folder is then fsynced too, so the
    rename itself survives a crash. Readers see the old file or the complete new
    one, never a partial one; if ``write`` raises, the temporary file is removed and
    ``path`` is left as it was. The new file keeps the permission bits of the file it
    replaces, or, if ``path`` did not exist, gets those a plain ``open(path, "wb")`` would
    (``0o666`` less the process umask). A symbolic link is written through: its target is
    replaced and the link kept.

    Args:
        path: the file to (re)write (a path or a string); its folder is created if missing.
        write: called with the open binary file object.

    Returns:
        None.
    """
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _target_mode(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; elsewhere folders cannot be opened for it)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
