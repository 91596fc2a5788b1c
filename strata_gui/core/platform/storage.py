"""Strata's SQLite database file: telling a damaged file from a busy one, and what to do about each.

Two different failures look alike to ``sqlite3`` users and must never share a hint:

- **damaged** (``SQLITE_CORRUPT`` "database disk image is malformed", ``SQLITE_NOTADB`` "file is
  not a database"): nothing will ever read it. :func:`open_database` moves it aside
  (``strata.sqlite3.damaged-<time>``, with its ``-wal``/``-shm``), starts a fresh file and
  returns a notice saying where the old one is (nothing is copied out of it: damage SQLite
  reports while opening is in the header or the schema, which leaves no table readable).
- **locked** (``SQLITE_BUSY``/``SQLITE_LOCKED``: another program, or another Strata, holds a lock):
  the file is fine. SQLite's busy handler retries for the connection's ``timeout``; then
  :class:`DatabaseLockedError` says so, and the composition root carries on without saved history
  (in memory) rather than failing commands that need none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

log = logging.getLogger(__name__)

# sqlite3 primary result codes (the low byte of an extended code).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 11, 26
_DAMAGED_TEXT = ("file is not a database", "malformed", "file is encrypted")
_LOCKED_TEXT = ("database is locked", "database table is locked", "database is busy")


class DatabaseDamagedError(StorageError):
    """The database file is damaged (or is not a database at all)."""

    title = "Damaged database"


class DatabaseLockedError(StorageError):
    """Another program holds a lock on the database file; the file itself is fine."""

    title = "Database in use"


def _code(exc: BaseException) -> int:
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def is_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the database file is damaged (never true of a busy file)."""
    if not isinstance(exc, sqlite3.DatabaseError) or is_locked(exc):
        return False
    return _code(exc) in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or any(t in str(exc).lower() for t in _DAMAGED_TEXT)


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` says another connection holds a lock (the file is fine)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    return _code(exc) in (_SQLITE_BUSY, _SQLITE_LOCKED) or any(t in str(exc).lower() for t in _LOCKED_TEXT)


def storage_error(exc: sqlite3.Error, path: Path, doing: str) -> StorageError:
    """The user-facing error for ``exc``, met while ``doing`` (``"save the conversation"``) on ``path``.

    Damaged, locked and other failures (disk full, no permission) each get their own hint.
    """
    if is_locked(exc):
        return DatabaseLockedError(
            T(QT_TRANSLATE_NOOP("Core", "Could not {doing}: the database {path} is in use by another program."),
              doing=doing, path=path),
            hint=QT_TRANSLATE_NOOP("Core", "Another Strata (or a program that opened the file) is holding it; "
                                           "close it and try again. The file is not damaged."))
    if is_damaged(exc):
        return DatabaseDamagedError(
            T(QT_TRANSLATE_NOOP("Core", "Could not {doing}: the database {path} is damaged ({reason})."),
              doing=doing, path=path, reason=exc),
            hint=QT_TRANSLATE_NOOP("Core", "Restart Strata: it moves the damaged file aside, keeps it, and starts "
                                           "a new one."))
    return StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not {doing}: {reason}"), doing=doing, reason=exc),
                        hint=QT_TRANSLATE_NOOP("Core", "Check that the disk is not full and the data folder is "
                                                       "writable."))


def _stamp(clock: Callable[[], float]) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(clock()))


def move_aside(path: Path, clock: Callable[[], float] = time.time) -> Path:
    """Rename a damaged database (and its ``-wal``/``-shm``) to ``<name>.damaged-<time>``.

    The WAL must go with it: a fresh file beside an old WAL would replay the old pages into it.

    Raises:
        OSError: The file could not be renamed.
    """
    target = path.with_name(f"{path.name}.damaged-{_stamp(clock)}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{_stamp(clock)}-{n}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            with contextlib.suppress(OSError):
                os.replace(side, target.with_name(target.name + suffix))
    return target


def open_database(path: Path, setup: Callable[[sqlite3.Connection], None], *, what: str,
                  clock: Callable[[], float] = time.time, **connect: Any) -> tuple[sqlite3.Connection, str | None]:
    """Connect to ``path`` and run ``setup`` (pragmas, migrations); recover from a damaged file.

    Args:
        path: The database file (``":memory:"`` for none).
        setup: Runs on the new connection; sqlite3 errors it raises are classified.
        what: What the file holds, for messages ("the conversation history").
        clock: Wall clock for the moved-aside file's name.
        connect: Passed to ``sqlite3.connect`` (``timeout`` is how long a lock is waited for).

    Returns:
        The connection, and a notice for the user when a damaged file was moved aside (else None).

    Raises:
        DatabaseLockedError: Another program holds the file longer than ``timeout``.
        StorageError: The folder cannot be written, or a damaged file could not be moved aside.
    """
    def attempt() -> sqlite3.Connection:
        db: sqlite3.Connection = sqlite3.connect(path, **connect)
        try:
            setup(db)
        except BaseException:
            db.close()
            raise
        return db

    memory = str(path) == ":memory:"
    try:
        if not memory:
            path.parent.mkdir(parents=True, exist_ok=True)
        return attempt(), None
    except OSError as exc:
        raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Cannot create {folder}: {reason}"), folder=path.parent,
                             reason=exc.strerror or exc),
                           hint=QT_TRANSLATE_NOOP("Core", "Check that the data folder is writable.")) from exc
    except sqlite3.Error as exc:
        if memory or not is_damaged(exc):
            raise storage_error(exc, path, T(QT_TRANSLATE_NOOP("Core", "open {what}"), what=what)) from exc
        damage = exc
    log.warning("database %s is damaged (%s); moving it aside", path, damage)
    try:
        moved = move_aside(path, clock)
    except OSError as exc:
        raise DatabaseDamagedError(
            T(QT_TRANSLATE_NOOP("Core", "The database {path} is damaged ({damage}) and could not be moved aside: "
                                        "{reason}"), path=path, damage=damage, reason=exc.strerror or exc),
            hint=QT_TRANSLATE_NOOP("Core", "Move or delete the file by hand; Strata then starts a new one.")) from exc
    try:
        db = attempt()
    except sqlite3.Error as exc:
        raise storage_error(exc, path, T(QT_TRANSLATE_NOOP("Core", "open {what}"), what=what)) from exc
    notice = T(QT_TRANSLATE_NOOP("Core", "The database file was damaged ({damage}), so Strata started a new one for "
                                         "{what}. The old file was kept as {moved}."),
               damage=damage, what=what, moved=moved)
    return db, notice
