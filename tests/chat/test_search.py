"""Search across all conversations: SQLite FTS5 on a real database file, kept in step with every
write, built for the messages of an older database, and the conversation list's search box."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from strata_gui.core.chat.records import COMPLETE, STREAMING
from strata_gui.core.chat.schema import MIGRATIONS
from strata_gui.core.chat.search import MARK_END, MARK_START, make_snippet, search_conversations
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from tests.chat import test_chat_page

page_env = test_chat_page.page_env  # the chat page's fixture: a real store, bridge and pool


@pytest.fixture
def db_path() -> Path:
    paths = AppPaths.from_environment()
    paths.ensure()
    return paths.database_file


def _titles(store: ConversationStore, text: str) -> list[str]:
    return [h.conversation.title for h in search_conversations(store, text)]


def _index_is_sound(store: ConversationStore) -> None:
    # FTS5 compares its index with the messages it was built from; raises when they differ.
    store.db.execute("INSERT INTO chat_messages_fts(chat_messages_fts, rank) VALUES ('integrity-check', 1)")


def test_every_write_is_searchable_at_once(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        trip = store.create_conversation("Trip")
        store.add_message(trip.id, "user", "Plan a week in Kyoto")
        reply = store.add_message(trip.id, "assistant", "", status=STREAMING)
        store.update_message(reply.id, content="Start at Fushimi Inari early", thinking="temples open at dawn")
        # a reply being written is not indexed yet (it is saved every second); it is when it ends
        assert _titles(store, "Fushimi") == []
        store.update_message(reply.id, status=COMPLETE)
        cooking = store.create_conversation("Cooking")
        store.add_messages(cooking.id, [("user", "ramen broth?"), ("assistant", "Simmer pork bones in KYOTO style")])
        assert _titles(store, "fushimi") == ["Trip"]  # case-insensitive, inside words too
        assert _titles(store, "temples") == ["Trip"]  # thinking is searched too
        assert _titles(store, "kyoto") == ["Cooking", "Trip"]  # most recently active first
        assert _titles(store, "kyoto pork") == ["Cooking"]  # every word, in one message
        assert _titles(store, "cook") == ["Cooking"]  # titles match too
        [hit] = search_conversations(store, "inari")
        assert hit.snippet == f"Start at Fushimi {MARK_START}Inari{MARK_END} early" and hit.message_id == reply.id
        # an edit replaces the old text in the index; deleting a conversation drops its messages
        store.update_message(reply.id, content="Go to Arashiyama")
        assert _titles(store, "Fushimi") == [] and _titles(store, "Arashiyama") == ["Trip"]
        store.delete_conversation(cooking.id)
        assert _titles(store, "pork") == []
        _index_is_sound(store)


def test_regenerate_keeps_the_index_in_step(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("Q")
        question = store.add_message(conv.id, "user", "name a colour")
        store.add_message(conv.id, "assistant", "crimson")
        store.shelve_replies(conv.id, question.id)  # Regenerate: the answer is kept aside
        assert _titles(store, "crimson") == []
        store.add_message(conv.id, "assistant", "turquoise")
        [(version_id, _at)] = store.reply_versions(conv.id, question.id)
        store.restore_version(conv.id, question.id, version_id)
        assert _titles(store, "crimson") == ["Q"] and _titles(store, "turquoise") == []
        _index_is_sound(store)


def test_hostile_and_short_searches(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        conv = store.create_conversation("模型")
        store.add_messages(conv.id, [("user", 'say "quoted" AND NEAR(x) * -not 100% _done_'),
                                     ("assistant", "量化模型在显存里更小")])
        # FTS5 syntax is text here, not an error
        for text in ('"quoted"', "NEAR(x)", "AND", "*", "-not", "100%", "_done_", '"'):
            assert _titles(store, text) == ["模型"], text
        assert _titles(store, "100%x") == [] and _titles(store, "_dx") == []
        # Chinese: two characters (below the trigram's three) and three, without spaces
        assert _titles(store, "显存") == ["模型"] and _titles(store, "量化模") == ["模型"]
        assert _titles(store, "显卡") == []


def test_an_older_database_gets_its_messages_indexed(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for migration in MIGRATIONS[:6]:
        for statement in migration:
            db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES ('chat', 6)")
    db.execute("INSERT INTO chat_conversations(title, created_at, updated_at) VALUES ('old', 1, 1)")
    db.executemany("INSERT INTO chat_messages(conversation_id, role, content, status, created_at, thinking)"
                   " VALUES (1, ?, ?, ?, 1, ?)", [("user", "about otters", "complete", ""),
                                                 ("assistant", "otters hold hands", "streaming", "sleepy")])
    db.commit()
    db.close()
    with ConversationStore(db_path) as store:
        assert _titles(store, "otters") == ["old"]
        # the reply a closed app left streaming was marked interrupted at open, and indexed then
        assert _titles(store, "hands") == ["old"] and _titles(store, "sleepy") == ["old"]
        _index_is_sound(store)


def test_search_reads_the_index_not_every_message(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        for n in range(40):
            conv = store.create_conversation(f"c{n}")
            store.add_messages(conv.id, [("user", f"filler text number {i} " * 20) for i in range(50)])
        store.add_messages(conv.id, [("assistant", "a rare zebra appears")])
        plan = " ".join(str(r[-1]) for r in store.db.execute(
            "EXPLAIN QUERY PLAN SELECT rowid FROM chat_messages_fts WHERE chat_messages_fts MATCH 'zebra'"))
        assert "VIRTUAL TABLE INDEX" in plan
        started = time.perf_counter()
        assert _titles(store, "zebra") == ["c39"]
        assert time.perf_counter() - started < 0.5


def test_snippet_marks_each_match_around_the_first() -> None:
    text = "word " * 50 + "the Needle and another needle" + " tail" * 50
    snippet = make_snippet(text, ["needle"], width=60)
    assert snippet.startswith("…") and snippet.endswith("…")
    assert snippet.count(MARK_START) == 2 and f"{MARK_START}Needle{MARK_END}" in snippet


def test_the_search_box_lists_matching_conversations_with_a_snippet(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, _loop, errors = page_env
    store = service.store
    a = store.create_conversation("Garden")
    store.add_messages(a.id, [("user", "when to plant tulips"), ("assistant", "Plant tulip bulbs in autumn.")])
    b = store.create_conversation("Bikes")
    store.add_messages(b.id, [("user", "fix a puncture")])
    page.on_shown()
    assert page.conversation_list.count() == 2
    qtbot.keyClicks(page.search, "bulbs")
    assert page.conversation_list.count() == 1
    item = page.conversation_list.item(0)
    assert item.text() == "Garden\nPlant tulip bulbs in autumn."
    assert item.data(Qt.ItemDataRole.UserRole) == a.id
    page.conversation_list.setCurrentRow(0)
    assert page.conversation_id == a.id
    page.search.clear()
    assert [page.conversation_list.item(i).text() for i in range(2)] == ["Bikes", "Garden"]
    assert not errors
