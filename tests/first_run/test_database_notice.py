"""The app's start with a damaged or locked database (or key store): the window comes up, with a notice that
says which it is (and, for a damaged file, where the old one was kept)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from tests.first_run.conftest import App
from tests.support.locked_db import held_by_another_process


def _database() -> Path:
    paths = AppPaths.from_environment()
    paths.ensure()
    return paths.database_file


def test_the_app_starts_on_a_damaged_database_and_says_where_the_old_file_is(make_app: Callable[..., App]) -> None:
    db = _database()
    db.write_bytes(b"not a database at all " * 300)
    app = make_app(first_run_done=True)
    banner = app.window.banner
    assert not banner.isHidden()
    (kept,) = db.parent.glob("strata.sqlite3.damaged-*")
    assert "The database file was damaged (file is not a database)" in banner.text.text()
    assert str(kept) in banner.text.text()
    conv = app.services.chat_store.create_conversation("saved again")  # the new file works
    assert app.services.chat_store.conversation(conv.id) is not None


def test_the_app_starts_while_another_process_holds_the_database(make_app: Callable[..., App]) -> None:
    db = _database()
    MetricsStore(db).close()
    ConversationStore(db).open().close()
    with held_by_another_process(db):
        app = make_app(first_run_done=True)
    text = app.window.banner.text.text()
    assert not app.window.banner.isHidden()
    assert "is in use by another program" in text and "not damaged" in text and "not saved this session" in text
    assert not list(db.parent.glob("*.damaged-*"))


def test_the_app_starts_with_a_damaged_key_store_and_says_so(make_app: Callable[..., App]) -> None:
    paths = AppPaths.from_environment()
    paths.ensure()
    (paths.config_dir / "secrets.json").write_text("[" * 50_000, encoding="utf-8")
    app = make_app(first_run_done=True)
    text = app.window.banner.text.text()
    assert "The key store secrets.json was damaged" in text and "Enter them again" in text
    assert app.services.remote.endpoints() == []
