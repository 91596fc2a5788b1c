"""ConversationStore on a real SQLite file: CRUD, search, paging, migrations, crash recovery."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from strata_gui.core.chat.store import (
    COMPLETE,
    INTERRUPTED,
    MIGRATIONS,
    SCHEMA_VERSION,
    STREAMING,
    ConversationStore,
)
from strata_gui.core.errors import StorageError
from strata_gui.core.paths import AppPaths
from strata_gui.core.runtime.client import ReplyStats, SamplingParams


@pytest.fixture
def db_path() -> Path:
    paths = AppPaths.from_environment()
    paths.ensure()
    return paths.database_file


def test_conversations_and_messages_survive_a_restart(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("Trip", system_prompt="Be brief", sampling=SamplingParams(temperature=0.2))
        store.add_message(conv.id, "user", "hello")
        reply = store.add_message(conv.id, "assistant", "", status=STREAMING)
        store.update_message(reply.id, content="hi there", status=COMPLETE,
                             stats=ReplyStats(predicted_n=2, decode_tps=10.0, engine="CPU"))
    assert db_path.exists()
    with ConversationStore(db_path) as store:
        [conv2] = store.conversations()
        assert conv2.title == "Trip" and conv2.system_prompt == "Be brief" and conv2.sampling.temperature == 0.2
        msgs = store.messages(conv2.id)
        assert [(m.role, m.content, m.status) for m in msgs] == [("user", "hello", COMPLETE),
                                                                  ("assistant", "hi there", COMPLETE)]
        assert msgs[1].stats.predicted_n == 2 and msgs[1].stats.engine == "CPU"
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reply_left_streaming_is_marked_interrupted_on_open(db_path: Path) -> None:
    store = ConversationStore(db_path).open()
    conv = store.create_conversation()
    reply = store.add_message(conv.id, "assistant", "half a sen", status=STREAMING)
    store.close()  # the app died here
    with ConversationStore(db_path) as store:
        msg = store.message(reply.id)
        assert msg is not None and msg.status == INTERRUPTED and msg.content == "half a sen"


def test_rename_delete_search_and_paging(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        a = store.create_conversation("Recipes")
        b = store.create_conversation("Physics")
        store.add_message(b.id, "user", "what is 100% entropy_x?")
        store.rename(a.id, "Cooking")
        assert [c.title for c in store.conversations()] == ["Physics", "Cooking"]
        assert [c.title for c in store.conversations("cook")] == ["Cooking"]
        assert [c.title for c in store.conversations("ENTROPY_x")] == ["Physics"]
        assert store.conversations("100%") and not store.conversations("1000%")
        store.add_messages(a.id, [("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(50)])
        page = store.messages(a.id, limit=10)
        assert [m.content for m in page] == [f"m{i}" for i in range(40, 50)]
        older = store.messages(a.id, limit=10, before_id=page[0].id)
        assert [m.content for m in older] == [f"m{i}" for i in range(30, 40)]
        store.delete_messages_from(a.id, page[5].id)
        assert store.count_messages(a.id) == 45
        store.delete_conversation(a.id)
        assert store.count_messages(a.id) == 0 and [c.title for c in store.conversations()] == ["Physics"]


def test_migrates_a_version_1_database(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    db.execute("CREATE TABLE other_component (x)")  # another component's table in the same file
    db.execute("INSERT INTO schema_version VALUES ('dashboards', 7)")
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES ('chat', 1)")
    db.execute("INSERT INTO chat_conversations(title, created_at, updated_at) VALUES ('old', 1, 1)")
    db.execute("INSERT INTO chat_messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'hi', 1)")
    db.commit()
    db.close()
    with ConversationStore(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 4
        [msg] = store.messages(1)
        assert msg.content == "hi" and msg.stats.predicted_n is None and msg.settings == {}
        assert store.db.execute("SELECT version FROM schema_version WHERE component='dashboards'").fetchone()[0] == 7


def test_newer_schema_is_refused(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        store.db.execute("UPDATE schema_version SET version=99 WHERE component='chat'")
    with pytest.raises(StorageError, match="newer Strata"):
        ConversationStore(db_path).open()


def test_damaged_file_is_a_storage_error(db_path: Path) -> None:
    db_path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError, match="cannot be opened"):
        ConversationStore(db_path).open()


def test_images_are_kept_with_their_message_and_go_with_it(db_path: Path) -> None:
    from strata_gui.core.chat.images import ChatImage
    from tests.support.images import png_bytes

    first, second = ChatImage.from_bytes(png_bytes(seed=1), "cat.png"), ChatImage.from_bytes(png_bytes(seed=2))
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("Look")
        msg = store.add_message(conv.id, "user", "what is this?", images=[first, second])
        store.add_message(conv.id, "assistant", "a gradient")
    with ConversationStore(db_path) as store:  # a restart: the images come back, in order, byte for byte
        [user, reply] = store.messages(conv.id)
        assert user.images == (first, second) and user.images[0].mime == "image/png"
        assert user.images[0].name == "cat.png" and reply.images == ()
        assert store.message(msg.id).images == (first, second)  # type: ignore[union-attr]
        # Deleting the conversation drops its images with it (no orphan rows).
        store.delete_conversation(conv.id)
        assert store.db.execute("SELECT COUNT(*) FROM chat_images").fetchone()[0] == 0


def test_a_version_3_database_gains_images(db_path: Path) -> None:
    from strata_gui.core.chat.images import ChatImage
    from tests.support.images import png_bytes

    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for migration in MIGRATIONS[:3]:
        for statement in migration:
            db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES ('chat', 3)")
    db.execute("INSERT INTO chat_conversations(title, created_at, updated_at) VALUES ('old', 1, 1)")
    db.execute("INSERT INTO chat_messages(conversation_id, role, content, created_at) VALUES (1, 'user', 'hi', 1)")
    db.commit()
    db.close()
    with ConversationStore(db_path) as store:
        assert store.schema_version() == 4
        [old] = store.messages(1)
        assert old.content == "hi" and old.images == ()
        image = ChatImage.from_bytes(png_bytes())
        store.add_message(1, "user", "", images=[image])
        assert store.messages(1)[-1].images == (image,)


def test_only_images_the_engine_reads_are_accepted(tmp_path: Path) -> None:
    from strata_gui.core.chat.images import ChatImage
    from strata_gui.core.errors import ChatError
    from tests.support.images import write_png

    image = ChatImage.from_file(write_png(tmp_path / "a.png"))
    assert image.mime == "image/png" and image.data_url().startswith("data:image/png;base64,iVBORw0KGgo")
    (tmp_path / "a.webp").write_bytes(b"RIFF\x00\x00\x00\x00WEBPVP8 ")
    with pytest.raises(ChatError, match="not a PNG, JPEG, GIF or BMP"):
        ChatImage.from_file(tmp_path / "a.webp")
    with pytest.raises(ChatError, match="Cannot read"):
        ChatImage.from_file(tmp_path / "missing.png")
