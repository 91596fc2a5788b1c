"""The conversation history's tables, one migration per schema version, and the repair run at
every open (tool calls a closed app left waiting or running).

Since v5 a reply also keeps its thinking (``thinking``; its token count and duration are in the
statistics), the tool calls it asked for with what became of them (``tool_calls_json``), and a
``tool`` message carries one call's result (``tool_call_id``, ``tool_name``). A conversation keeps
its structured-output and thinking settings as JSON. Every JSON value is read defensively: a
damaged one reads as its default, never as an error."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.runtime.client import ReplyStats, SamplingParams

from .records import (
    STREAMING,
    TOOL_ERROR,
    TOOL_PENDING,
    TOOL_RUNNING,
    Conversation,
    Message,
    StructuredOutput,
    ThinkingSettings,
    json_object,
    tool_calls_from_json,
    tool_calls_json,
)

MIGRATIONS: list[Sequence[str]] = [
    # v1: conversations and plain messages.
    (
        """CREATE TABLE chat_conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            system_prompt TEXT NOT NULL DEFAULT '',
            sampling_json TEXT NOT NULL DEFAULT '{}',
            model TEXT NOT NULL DEFAULT ''
        )""",
        """CREATE TABLE chat_messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES chat_conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'complete',
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX chat_messages_by_conversation ON chat_messages(conversation_id, id)",
    ),
    # v2: per-message settings and statistics; conversation list ordered by activity.
    (
        "ALTER TABLE chat_messages ADD COLUMN settings_json TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE chat_messages ADD COLUMN stats_json TEXT NOT NULL DEFAULT '{}'",
        "CREATE INDEX chat_conversations_by_update ON chat_conversations(updated_at)",
    ),
    # v3: where each reply ran ("local:<engine>" or "remote:<endpoint>"); the conversation keeps
    # the place of its latest reply.
    (
        "ALTER TABLE chat_conversations ADD COLUMN ran_on TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE chat_messages ADD COLUMN ran_on TEXT NOT NULL DEFAULT ''",
    ),
    # v4: images attached to user messages (vision models), in the order they were attached.
    (
        """CREATE TABLE chat_images (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id INTEGER NOT NULL REFERENCES chat_messages(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            mime TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            data BLOB NOT NULL
        )""",
        "CREATE INDEX chat_images_by_message ON chat_images(message_id, position)",
    ),
    # v5: thinking, tool calls and tool results per message; structured output and thinking settings
    # per conversation.
    (
        "ALTER TABLE chat_messages ADD COLUMN thinking TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE chat_messages ADD COLUMN tool_calls_json TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE chat_messages ADD COLUMN tool_call_id TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE chat_messages ADD COLUMN tool_name TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE chat_conversations ADD COLUMN output_json TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE chat_conversations ADD COLUMN thinking_json TEXT NOT NULL DEFAULT '{}'",
    ),
    # v6: earlier answers to a question, kept when it is answered again (Regenerate), so the
    # user can switch back (‹ 1/3 ›). A version holds the replies after the question (the
    # assistant's, and tool results) as they were; the live one stays in chat_messages.
    (
        """CREATE TABLE chat_reply_versions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES chat_conversations(id) ON DELETE CASCADE,
            question_id INTEGER NOT NULL,
            made_at REAL NOT NULL,
            messages_json TEXT NOT NULL
        )""",
        "CREATE INDEX chat_reply_versions_by_question ON chat_reply_versions(conversation_id, question_id)",
    ),
    # v7: full-text search over every message's text and thinking (SQLite FTS5, see .search). The
    # index reads its text from chat_messages (external content) and holds exactly the messages that
    # are not streaming, with their current text: a reply being written (saved about once a second)
    # is indexed once, when it ends. The triggers keep it so for every write; the last statement
    # indexes the messages already there.
    (
        "CREATE VIRTUAL TABLE chat_messages_fts USING fts5(content, thinking, content='chat_messages',"
        " content_rowid='id', tokenize='trigram')",
        f"""CREATE TRIGGER chat_messages_fts_added AFTER INSERT ON chat_messages WHEN new.status != '{STREAMING}'
        BEGIN
            INSERT INTO chat_messages_fts(rowid, content, thinking) VALUES (new.id, new.content, new.thinking);
        END""",
        f"""CREATE TRIGGER chat_messages_fts_deleted AFTER DELETE ON chat_messages WHEN old.status != '{STREAMING}'
        BEGIN
            INSERT INTO chat_messages_fts(chat_messages_fts, rowid, content, thinking)
                VALUES ('delete', old.id, old.content, old.thinking);
        END""",
        # One trigger, so the old text leaves the index before the new one enters (in that order).
        f"""CREATE TRIGGER chat_messages_fts_changed AFTER UPDATE OF content, thinking, status ON chat_messages
        BEGIN
            INSERT INTO chat_messages_fts(chat_messages_fts, rowid, content, thinking)
                SELECT 'delete', old.id, old.content, old.thinking WHERE old.status != '{STREAMING}';
            INSERT INTO chat_messages_fts(rowid, content, thinking)
                SELECT new.id, new.content, new.thinking WHERE new.status != '{STREAMING}';
        END""",
        f"INSERT INTO chat_messages_fts(rowid, content, thinking) SELECT id, content, thinking FROM chat_messages"
        f" WHERE status != '{STREAMING}'",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)


# Left by an app that closed (or was killed) during a tool call: nobody will run or answer them now.
_CLOSED_BEFORE_RUN = QT_TRANSLATE_NOOP("Core", "Not run: Strata closed before it was answered.")
_CLOSED_WHILE_RUNNING = QT_TRANSLATE_NOOP("Core", "Stopped: Strata closed while the tool ran.")


def settle_tool_calls(db: sqlite3.Connection) -> None:
    """Calls saved waiting for an answer or running, from a run that ended: marked as not finished
    (they showed "running…" or "waiting for your answer" for ever)."""
    rows = db.execute("SELECT id, tool_calls_json FROM chat_messages WHERE tool_calls_json LIKE ? OR "
                      "tool_calls_json LIKE ?", (f'%"{TOOL_PENDING}"%', f'%"{TOOL_RUNNING}"%')).fetchall()
    for row in rows:
        calls = tool_calls_from_json(row[1])
        settled = [replace(c, status=TOOL_ERROR,
                                       result=_CLOSED_BEFORE_RUN if c.status == TOOL_PENDING else _CLOSED_WHILE_RUNNING)
                   if c.status in (TOOL_PENDING, TOOL_RUNNING) else c for c in calls]
        if settled != list(calls):
            db.execute("UPDATE chat_messages SET tool_calls_json=? WHERE id=?", (tool_calls_json(settled), row[0]))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def conversation_from_row(row: sqlite3.Row) -> Conversation:
    return Conversation(id=row["id"], title=row["title"], created_at=row["created_at"],
                        updated_at=row["updated_at"], system_prompt=row["system_prompt"],
                        sampling=SamplingParams.from_json(json_object(row["sampling_json"])), model=row["model"],
                        ran_on=row["ran_on"],
                        structured_output=StructuredOutput.from_json(json_object(row["output_json"])),
                        thinking=ThinkingSettings.from_json(json_object(row["thinking_json"])))


def message_from_row(row: sqlite3.Row) -> Message:
    return Message(id=row["id"], conversation_id=row["conversation_id"], role=row["role"],
                   content=row["content"], status=row["status"], created_at=row["created_at"],
                   settings=json_object(row["settings_json"]), stats=ReplyStats.from_json(json_object(row["stats_json"])),
                   ran_on=row["ran_on"], thinking=_text(row["thinking"]),
                   tool_calls=tool_calls_from_json(row["tool_calls_json"]), tool_call_id=_text(row["tool_call_id"]),
                   tool_name=_text(row["tool_name"]))

