"""A damaged or locked ``strata.sqlite3``: each told apart with its own hint, and neither stops
commands that need no history (``system``, a one-off ``chat``) or the app's start.

Damage is real garbage written over the file; a lock is held by a real second connection
(``locking_mode=EXCLUSIVE``) or by another process.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from strata_gui.cli import main
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.platform.storage import DatabaseDamagedError, DatabaseLockedError, storage_error
from tests.support.locked_db import held_by_another_process


@pytest.fixture
def db_path() -> Path:
    paths = AppPaths.from_environment()
    paths.ensure()
    return paths.database_file


def _make(db_path: Path) -> None:
    MetricsStore(db_path).close()
    ConversationStore(db_path).open().close()


@contextmanager
def held_by_a_connection(path: Path, *, whole_file: bool = True) -> Iterator[None]:
    """Another connection's EXCLUSIVE lock: on the whole file (``locking_mode=EXCLUSIVE``: nobody
    can open it), or, while others have it open in WAL mode, the write lock only."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        if whole_file:
            other.execute("PRAGMA locking_mode=EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        yield
    finally:
        other.close()


def test_a_locked_file_is_in_use_not_damaged_and_is_left_alone(db_path: Path) -> None:
    _make(db_path)
    before = db_path.read_bytes()
    with held_by_a_connection(db_path):
        for open_store in (lambda: MetricsStore(db_path, busy_timeout=0.2),
                           lambda: ConversationStore(db_path, busy_timeout=0.2).open()):
            with pytest.raises(DatabaseLockedError) as info:
                open_store()
            assert "is in use by another program" in info.value.message
            assert info.value.hint is not None and "not damaged" in info.value.hint
            assert "move" not in info.value.hint.lower()
    assert not list(db_path.parent.glob("*.damaged-*")) and db_path.read_bytes() == before


def test_a_lock_taken_while_the_store_is_open_fails_the_save_with_its_own_hint(db_path: Path) -> None:
    with ConversationStore(db_path, busy_timeout=0.2) as store:
        conv = store.create_conversation("before")
        with held_by_a_connection(db_path, whole_file=False), pytest.raises(DatabaseLockedError, match="in use by another program"):
            store.add_message(conv.id, "user", "hello")
        store.add_message(conv.id, "user", "after the lock went")  # retried by the next save: fine again
        assert [m.content for m in store.messages(conv.id)] == ["after the lock went"]


def test_the_errors_are_told_apart_by_sqlite_not_by_guessing() -> None:
    damaged = sqlite3.DatabaseError("file is not a database")
    locked = sqlite3.OperationalError("database is locked")
    full = sqlite3.OperationalError("database or disk is full")
    path = Path("strata.sqlite3")
    assert isinstance(storage_error(damaged, path, "save"), DatabaseDamagedError)
    assert isinstance(storage_error(locked, path, "save"), DatabaseLockedError)
    other = storage_error(full, path, "save")
    assert type(other).__name__ == "StorageError" and other.hint is not None and "disk" in other.hint


def test_system_and_a_damaged_file(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path.write_bytes(b"\x00garbage, not SQLite" * 500)
    assert main(["system"]) == 0
    err = capsys.readouterr().err
    assert "note: The database file was damaged (file is not a database)" in err
    assert "Traceback" not in err
    (kept,) = db_path.parent.glob("strata.sqlite3.damaged-*")
    assert str(kept) in err
    assert main(["system"]) == 0  # the new file is fine: no note the second time
    assert "note:" not in capsys.readouterr().err


def test_system_while_another_process_holds_the_file(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _make(db_path)
    with held_by_another_process(db_path):
        assert main(["system"]) == 0
    err = capsys.readouterr().err
    assert "is in use by another program" in err and "not saved this session" in err
    assert "was damaged" not in err and "Traceback" not in err and "not damaged" in err
    assert not list(db_path.parent.glob("*.damaged-*"))


@pytest.mark.engine
def test_a_one_off_chat_answers_while_another_process_holds_the_file(db_path: Path, test_engines: object,
                                                                     test_model: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _make(db_path)
    cpu_dir = test_engines.cpu_dir  # type: ignore[attr-defined]
    with held_by_another_process(db_path):
        code = main(["chat", "-m", str(test_model), "-e", str(cpu_dir), "--ctx-size", "512", "--max-tokens", "8",
                     "Hello"])
    out, err = capsys.readouterr()
    assert code == 0 and out.strip()
    assert "in use by another program" in err and "Traceback" not in err and "was damaged" not in err
