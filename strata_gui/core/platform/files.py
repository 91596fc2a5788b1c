"""Open only regular files: a FIFO, socket or device named like a model must never be read.

``open()`` on a FIFO blocks until a writer appears (forever, and Ctrl-C cannot interrupt the
C call), and reading a character device like ``/dev/zero`` never ends. Every place that reads a
file a user named or that a folder scan found goes through :func:`open_regular`: ``os.stat`` and
``S_ISREG`` first, then ``O_NONBLOCK`` so that a file swapped for a FIFO between the check and the
open cannot block the open, then ``fstat`` on the open descriptor to close that race.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from strata_gui.core.base.errors import StorageError


class NotRegularFileError(StorageError, OSError):
    """A path names a FIFO, socket, device or folder where a regular file was expected.

    Also an ``OSError``, so every reader that already handles "cannot read this file" handles it.
    """

    title = "Not a regular file"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refuse(path: Path, mode: int) -> NotRegularFileError:
    return NotRegularFileError(
        f"{path.name} is {_kind(mode)}, not a regular file; Strata only reads regular files.",
        hint="Point Strata at the model file itself (a FIFO, socket or device cannot be a model).",
    )


def check_regular(path: Path) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed), refusing anything that is not a regular file.

    Raises:
        NotRegularFileError: ``path`` is a FIFO, socket, device or folder.
        OSError: ``path`` cannot be stat'ed (missing, no permission).
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(Path(path), st.st_mode)
    return st


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (symlinks followed); False when it cannot be stat'ed."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading, refusing anything that is not a regular file.

    Never blocks on a FIFO: checked before the open, opened non-blocking, checked again on the
    open descriptor (the path may have been replaced in between).

    Raises:
        NotRegularFileError: ``path`` is a FIFO, socket, device or folder.
        OSError: The file cannot be opened.
    """
    path = Path(path)
    check_regular(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode)
        if hasattr(os, "set_blocking"):
            # Regular files ignore O_NONBLOCK, but the descriptor should not carry it into readers.
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
