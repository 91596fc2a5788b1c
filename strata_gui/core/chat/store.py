"""Conversations and messages in SQLite (WAL) inside Strata's database file.

Tables are prefixed ``chat_`` because other components keep their own tables in the same file;
the shared ``schema_version`` table records one version per component. Every write is a single
short statement (well under a millisecond in WAL mode), so the store is used directly from the
event loop's thread; a reply that is streaming is written about once a second.

Images attached to messages are BLOBs in ``chat_images`` (not files in the data folder): deleting
a conversation, or the messages an edit replaces, removes its images in the same transaction by
``ON DELETE CASCADE``, so no orphan files are left to collect and one file holds a whole chat
for backup. They live in their own table so listing messages never reads image bytes it does
not show.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.storage import open_database, storage_error
from strata_gui.core.runtime.client import ReplyStats, SamplingParams

from .images import ChatImage
from .records import (
    COMPLETE,
    INTERRUPTED,
    STREAMING,
    Conversation,
    Message,
    StructuredOutput,
    ThinkingSettings,
    ToolCallRecord,
    storable,
    tool_calls_from_json,
    tool_calls_json,
)
from .schema import MIGRATIONS, SCHEMA_VERSION, conversation_from_row, message_from_row, settle_tool_calls

# What the database holds, and what a failed write was doing, in the storage errors' sentences.
_HISTORY = QT_TRANSLATE_NOOP("Core", "the conversation history")
_SAVING = QT_TRANSLATE_NOOP("Core", "save to the conversation history")

COMPONENT = "chat"


class ConversationStore:
    """All chat persistence.

    Args:
        path: The database file (``AppPaths.database_file``).
        clock: Wall clock for timestamps.
        busy_timeout: Seconds a lock held by another program is waited for before :meth:`open`
            raises :class:`~strata_gui.core.platform.storage.DatabaseLockedError`.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.time, *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self._clock = clock
        self.busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        # Set by open() when a damaged file was moved aside: what to tell the user, once.
        self.notice: str | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def open(self) -> ConversationStore:
        """Open (creating/migrating as needed) and mark replies left streaming as interrupted."""
        if self._db is not None:
            return self

        def setup(db: sqlite3.Connection) -> None:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            self._db = db
            try:
                self._migrate()
                db.execute("UPDATE chat_messages SET status=? WHERE status=?", (INTERRUPTED, STREAMING))
                settle_tool_calls(db)
            except BaseException:
                self._db = None
                raise

        # A damaged file is moved aside and a fresh one started (``notice`` says where the old one
        # is); a locked one raises DatabaseLockedError after the busy timeout, with its own hint.
        self._db, self.notice = open_database(self.path, setup, what=_HISTORY, clock=self._clock,
                                              isolation_level=None, timeout=self.busy_timeout)
        return self

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> ConversationStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.open()
        assert self._db is not None
        return self._db

    def schema_version(self) -> int:
        row = self.db.execute("SELECT version FROM schema_version WHERE component=?", (COMPONENT,)).fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        db = self._db
        assert db is not None
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "The conversation database was written by a newer Strata "
                                                           "(schema {schema})."), schema=current),
                               hint=QT_TRANSLATE_NOOP("Core", "Update Strata to open these conversations."))
        for version in range(current + 1, SCHEMA_VERSION + 1):
            with self._transaction():
                for statement in MIGRATIONS[version - 1]:
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO schema_version(component, version) VALUES (?, ?)",
                           (COMPONENT, version))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self.db.execute(sql, storable(params))
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, _SAVING) from exc

    # -- conversations --------------------------------------------------------------------------
    def create_conversation(self, title: str = "New chat", *, system_prompt: str = "",
                            sampling: SamplingParams | None = None, model: str = "",
                            structured_output: StructuredOutput | None = None,
                            thinking: ThinkingSettings | None = None) -> Conversation:
        now = self._clock()
        cur = self._write(
            "INSERT INTO chat_conversations(title, created_at, updated_at, system_prompt, sampling_json, model,"
            " output_json, thinking_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (title, now, now, system_prompt, json.dumps((sampling or SamplingParams()).to_json()), model,
             json.dumps((structured_output or StructuredOutput()).to_json()),
             json.dumps((thinking or ThinkingSettings()).to_json())))
        conv = self.conversation(int(cur.lastrowid or 0))
        assert conv is not None
        return conv

    def conversation(self, conversation_id: int) -> Conversation | None:
        row = self.db.execute("SELECT * FROM chat_conversations WHERE id=?", (conversation_id,)).fetchone()
        return conversation_from_row(row) if row else None

    def conversations(self, search: str = "") -> list[Conversation]:
        """Most recently active first; ``search`` matches titles and message text."""
        if search.strip():
            pattern = "%" + search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.db.execute(
                "SELECT * FROM chat_conversations c WHERE c.title LIKE ?1 ESCAPE '\\' OR EXISTS ("
                " SELECT 1 FROM chat_messages m WHERE m.conversation_id=c.id AND m.content LIKE ?1 ESCAPE '\\')"
                " ORDER BY c.updated_at DESC, c.id DESC", (pattern,)).fetchall()
        else:
            rows = self.db.execute(
                "SELECT * FROM chat_conversations ORDER BY updated_at DESC, id DESC").fetchall()
        return [conversation_from_row(r) for r in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        self._write("UPDATE chat_conversations SET title=? WHERE id=?", (title.strip() or "Untitled", conversation_id))

    def update_settings(self, conversation_id: int, *, system_prompt: str | None = None,
                        sampling: SamplingParams | None = None, model: str | None = None,
                        structured_output: StructuredOutput | None = None,
                        thinking: ThinkingSettings | None = None) -> None:
        if system_prompt is not None:
            self._write("UPDATE chat_conversations SET system_prompt=? WHERE id=?", (system_prompt, conversation_id))
        if sampling is not None:
            self._write("UPDATE chat_conversations SET sampling_json=? WHERE id=?",
                        (json.dumps(sampling.to_json()), conversation_id))
        if model is not None:
            self._write("UPDATE chat_conversations SET model=? WHERE id=?", (model, conversation_id))
        if structured_output is not None:
            self._write("UPDATE chat_conversations SET output_json=? WHERE id=?",
                        (json.dumps(structured_output.to_json()), conversation_id))
        if thinking is not None:
            self._write("UPDATE chat_conversations SET thinking_json=? WHERE id=?",
                        (json.dumps(thinking.to_json()), conversation_id))

    def delete_conversation(self, conversation_id: int) -> None:
        self._write("DELETE FROM chat_conversations WHERE id=?", (conversation_id,))

    # -- messages -------------------------------------------------------------------------------
    def add_message(self, conversation_id: int, role: str, content: str, *, status: str = COMPLETE,
                    settings: dict[str, Any] | None = None, stats: ReplyStats | None = None,
                    images: Sequence[ChatImage] = (), thinking: str = "",
                    tool_calls: Sequence[ToolCallRecord] = (), tool_call_id: str = "",
                    tool_name: str = "") -> Message:
        """Save a message (and its images) in one transaction.

        Args:
            tool_calls: The calls an assistant reply asked for.
            tool_call_id: For a ``tool`` message: the call whose result ``content`` is.
            tool_name: For a ``tool`` message: the function's name.
        """
        now = self._clock()
        try:
            with self._transaction() as db:
                cur = db.execute(
                    "INSERT INTO chat_messages(conversation_id, role, content, status, created_at, settings_json,"
                    " stats_json, thinking, tool_calls_json, tool_call_id, tool_name)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    storable((conversation_id, role, content, status, now, json.dumps(settings or {}),
                               json.dumps((stats or ReplyStats()).to_json()), thinking, tool_calls_json(tool_calls),
                               tool_call_id, tool_name)))
                message_id = int(cur.lastrowid or 0)
                db.executemany(
                    "INSERT INTO chat_images(message_id, position, mime, name, data) VALUES (?, ?, ?, ?, ?)",
                    [(message_id, i, im.mime, im.name, im.data) for i, im in enumerate(images)])
                db.execute("UPDATE chat_conversations SET updated_at=? WHERE id=?", (now, conversation_id))
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, _SAVING) from exc
        msg = self.message(message_id)
        assert msg is not None
        return msg

    def add_messages(self, conversation_id: int, items: Sequence[tuple[str, str]]) -> None:
        """Bulk insert of (role, content) pairs (imports and tests)."""
        now = self._clock()
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO chat_messages(conversation_id, role, content, status, created_at) VALUES (?, ?, ?, ?, ?)",
                [storable((conversation_id, role, content, COMPLETE, now)) for role, content in items])
            db.execute("UPDATE chat_conversations SET updated_at=? WHERE id=?", (now, conversation_id))

    def update_message(self, message_id: int, *, content: str | None = None, status: str | None = None,
                       stats: ReplyStats | None = None, settings: dict[str, Any] | None = None,
                       ran_on: str | None = None, thinking: str | None = None,
                       tool_calls: Sequence[ToolCallRecord] | None = None) -> None:
        sets, params = [], []
        for column, value in (("content", content), ("status", status), ("ran_on", ran_on),
                              ("stats_json", json.dumps(stats.to_json()) if stats else None),
                              ("settings_json", json.dumps(settings) if settings is not None else None),
                              ("thinking", thinking),
                              ("tool_calls_json", tool_calls_json(tool_calls) if tool_calls is not None else None)):
            if value is not None:
                sets.append(f"{column}=?")
                params.append(value)
        if sets:
            self._write(f"UPDATE chat_messages SET {', '.join(sets)} WHERE id=?", (*params, message_id))
        if ran_on:
            self._write("UPDATE chat_conversations SET ran_on=? WHERE id="
                        "(SELECT conversation_id FROM chat_messages WHERE id=?)", (ran_on, message_id))

    def update_tool_call(self, message_id: int, record: ToolCallRecord) -> None:
        """Replace the reply's call with ``record``'s id (its status, result, duration), or add it."""
        try:
            with self._transaction() as db:
                row = db.execute("SELECT tool_calls_json FROM chat_messages WHERE id=?", (message_id,)).fetchone()
                if row is None:
                    return
                calls = list(tool_calls_from_json(row[0]))
                at = next((i for i, c in enumerate(calls) if c.id == record.id), None)
                if at is None:
                    calls.append(record)
                else:
                    calls[at] = record
                db.execute("UPDATE chat_messages SET tool_calls_json=? WHERE id=?", (tool_calls_json(calls), message_id))
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, _SAVING) from exc

    def _with_images(self, messages: list[Message]) -> list[Message]:
        """Attach each message's images (one query for the whole page)."""
        ids = [m.id for m in messages]
        if not ids:
            return messages
        found: dict[int, list[ChatImage]] = {}
        marks = ",".join("?" * len(ids))
        for row in self.db.execute(
                f"SELECT message_id, mime, name, data FROM chat_images WHERE message_id IN ({marks})"
                " ORDER BY message_id, position", ids):
            found.setdefault(row["message_id"], []).append(ChatImage(row["mime"], bytes(row["data"]), row["name"]))
        for m in messages:
            m.images = tuple(found.get(m.id, ()))
        return messages

    def message(self, message_id: int) -> Message | None:
        row = self.db.execute("SELECT * FROM chat_messages WHERE id=?", (message_id,)).fetchone()
        return self._with_images([message_from_row(row)])[0] if row else None

    def messages(self, conversation_id: int, *, limit: int | None = None, before_id: int | None = None) -> list[Message]:
        """Messages in order. With ``limit``: the last ``limit`` ones (before ``before_id``) — a page."""
        where, params = "conversation_id=?", [conversation_id]
        if before_id is not None:
            where += " AND id<?"
            params.append(before_id)
        if limit is None:
            rows = self.db.execute(f"SELECT * FROM chat_messages WHERE {where} ORDER BY id", params).fetchall()
        else:
            rows = self.db.execute(f"SELECT * FROM chat_messages WHERE {where} ORDER BY id DESC LIMIT ?",
                                   (*params, limit)).fetchall()[::-1]
        return self._with_images([message_from_row(r) for r in rows])

    def count_messages(self, conversation_id: int) -> int:
        row = self.db.execute("SELECT COUNT(*) FROM chat_messages WHERE conversation_id=?",
                              (conversation_id,)).fetchone()
        return int(row[0])

    def delete_messages_from(self, conversation_id: int, message_id: int) -> None:
        """Delete ``message_id`` and every later message of the conversation (edit, regenerate),
        with the kept answers to questions from there on."""
        try:
            with self._transaction() as db:
                db.execute("DELETE FROM chat_messages WHERE conversation_id=? AND id>=?", (conversation_id, message_id))
                db.execute("DELETE FROM chat_reply_versions WHERE conversation_id=? AND question_id>=?",
                           (conversation_id, message_id))
        except sqlite3.Error as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save to the conversation database: {reason}"),
                                 reason=exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the disk is not full and the data "
                                                              "folder is writable.")) from exc

    # -- answers kept when a question is answered again ---------------------------------------------
    def shelve_replies(self, conversation_id: int, question_id: int) -> bool:
        """Move the messages after ``question_id`` into a kept version; False when there were none."""
        try:
            with self._transaction() as db:
                return self._shelve(db, conversation_id, question_id)
        except sqlite3.Error as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save to the conversation database: {reason}"),
                                 reason=exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the disk is not full and the data "
                                                              "folder is writable.")) from exc

    def _shelve(self, db: sqlite3.Connection, conversation_id: int, question_id: int) -> bool:
        rows = db.execute("SELECT * FROM chat_messages WHERE conversation_id=? AND id>? ORDER BY id",
                          (conversation_id, question_id)).fetchall()
        if not rows:
            return False
        # a sqlite3.Row iterates over its values: its column names come from keys()
        kept = [{key: row[key] for key in row.keys() if key not in ("id", "conversation_id")}  # noqa: SIM118
                for row in rows]
        db.execute("INSERT INTO chat_reply_versions(conversation_id, question_id, made_at, messages_json)"
                   " VALUES (?, ?, ?, ?)", (conversation_id, question_id, rows[0]["created_at"], json.dumps(kept)))
        db.execute("DELETE FROM chat_messages WHERE conversation_id=? AND id>?", (conversation_id, question_id))
        return True

    def drop_versions(self, conversation_id: int, question_id: int) -> None:
        """Forget the kept answers to ``question_id`` (its text changed: they answered another question)."""
        self._write("DELETE FROM chat_reply_versions WHERE conversation_id=? AND question_id=?",
                    (conversation_id, question_id))

    def reply_versions(self, conversation_id: int, question_id: int) -> list[tuple[int, float]]:
        """The kept answers to ``question_id``: (version id, when it was made), oldest first."""
        rows = self.db.execute("SELECT id, made_at FROM chat_reply_versions WHERE conversation_id=? AND question_id=?"
                               " ORDER BY made_at, id", (conversation_id, question_id)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def restore_version(self, conversation_id: int, question_id: int, version_id: int) -> None:
        """Make a kept answer the live one again; the live one is kept in its place."""
        columns = ("role", "content", "status", "created_at", "settings_json", "stats_json", "ran_on", "thinking",
                   "tool_calls_json", "tool_call_id", "tool_name")
        try:
            with self._transaction() as db:
                row = db.execute("SELECT messages_json FROM chat_reply_versions WHERE id=? AND conversation_id=?"
                                 " AND question_id=?", (version_id, conversation_id, question_id)).fetchone()
                if row is None:
                    return
                kept = json.loads(row[0])
                self._shelve(db, conversation_id, question_id)
                db.execute("DELETE FROM chat_reply_versions WHERE id=?", (version_id,))
                db.executemany(
                    f"INSERT INTO chat_messages(conversation_id, {', '.join(columns)})"
                    f" VALUES (?, {', '.join('?' for _ in columns)})",
                    [(conversation_id, *(m.get(c, "") for c in columns)) for m in kept if isinstance(m, dict)])
        except (sqlite3.Error, ValueError) as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not switch to the other answer: {reason}"),
                                 reason=exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the disk is not full and the data "
                                                              "folder is writable.")) from exc

