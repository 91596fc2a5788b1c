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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.errors import StorageError
from strata_gui.core.runtime.client import ReplyStats, SamplingParams

from .images import ChatImage

COMPONENT = "chat"

# Message status: what the user sees next to a reply.
COMPLETE = "complete"
STREAMING = "streaming"
INTERRUPTED = "interrupted"  # the engine died or the app closed mid-reply
STOPPED = "stopped"  # the user pressed Stop
FAILED = "error"

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
]
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass
class Conversation:
    id: int
    title: str
    created_at: float
    updated_at: float
    system_prompt: str = ""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    model: str = ""
    ran_on: str = ""


@dataclass
class Message:
    id: int
    conversation_id: int
    role: str
    content: str
    status: str
    created_at: float
    settings: dict[str, Any] = field(default_factory=dict)
    stats: ReplyStats = field(default_factory=ReplyStats)
    ran_on: str = ""
    images: tuple[ChatImage, ...] = ()


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ConversationStore:
    """All chat persistence.

    Args:
        path: The database file (``AppPaths.database_file``).
        clock: Wall clock for timestamps.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._db: sqlite3.Connection | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def open(self) -> ConversationStore:
        """Open (creating/migrating as needed) and mark replies left streaming as interrupted."""
        if self._db is not None:
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, timeout=5.0)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            self._db = db
            self._migrate()
            db.execute("UPDATE chat_messages SET status=? WHERE status=?", (INTERRUPTED, STREAMING))
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StorageError(f"The conversation database {self.path} cannot be opened: {exc}",
                               hint="If the file is damaged, move it away; Strata starts a new one.") from exc
        except OSError as exc:
            raise StorageError(f"Cannot create {self.path.parent}: {exc.strerror or exc}") from exc
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
            raise StorageError(f"The conversation database was written by a newer Strata (schema {current}).",
                               hint="Update Strata to open these conversations.")
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
            return self.db.execute(sql, params)
        except sqlite3.Error as exc:
            raise StorageError(f"Could not save to the conversation database: {exc}",
                               hint="Check that the disk is not full and the data folder is writable.") from exc

    # -- conversations --------------------------------------------------------------------------
    def create_conversation(self, title: str = "New chat", *, system_prompt: str = "",
                            sampling: SamplingParams | None = None, model: str = "") -> Conversation:
        now = self._clock()
        cur = self._write(
            "INSERT INTO chat_conversations(title, created_at, updated_at, system_prompt, sampling_json, model)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (title, now, now, system_prompt, json.dumps((sampling or SamplingParams()).to_json()), model))
        conv = self.conversation(int(cur.lastrowid or 0))
        assert conv is not None
        return conv

    @staticmethod
    def _conversation(row: sqlite3.Row) -> Conversation:
        return Conversation(id=row["id"], title=row["title"], created_at=row["created_at"],
                            updated_at=row["updated_at"], system_prompt=row["system_prompt"],
                            sampling=SamplingParams.from_json(_loads(row["sampling_json"])), model=row["model"],
                            ran_on=row["ran_on"])

    def conversation(self, conversation_id: int) -> Conversation | None:
        row = self.db.execute("SELECT * FROM chat_conversations WHERE id=?", (conversation_id,)).fetchone()
        return self._conversation(row) if row else None

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
        return [self._conversation(r) for r in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        self._write("UPDATE chat_conversations SET title=? WHERE id=?", (title.strip() or "Untitled", conversation_id))

    def update_settings(self, conversation_id: int, *, system_prompt: str | None = None,
                        sampling: SamplingParams | None = None, model: str | None = None) -> None:
        if system_prompt is not None:
            self._write("UPDATE chat_conversations SET system_prompt=? WHERE id=?", (system_prompt, conversation_id))
        if sampling is not None:
            self._write("UPDATE chat_conversations SET sampling_json=? WHERE id=?",
                        (json.dumps(sampling.to_json()), conversation_id))
        if model is not None:
            self._write("UPDATE chat_conversations SET model=? WHERE id=?", (model, conversation_id))

    def delete_conversation(self, conversation_id: int) -> None:
        self._write("DELETE FROM chat_conversations WHERE id=?", (conversation_id,))

    # -- messages -------------------------------------------------------------------------------
    def add_message(self, conversation_id: int, role: str, content: str, *, status: str = COMPLETE,
                    settings: dict[str, Any] | None = None, stats: ReplyStats | None = None,
                    images: Sequence[ChatImage] = ()) -> Message:
        now = self._clock()
        try:
            with self._transaction() as db:
                cur = db.execute(
                    "INSERT INTO chat_messages(conversation_id, role, content, status, created_at, settings_json,"
                    " stats_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (conversation_id, role, content, status, now, json.dumps(settings or {}),
                     json.dumps((stats or ReplyStats()).to_json())))
                message_id = int(cur.lastrowid or 0)
                db.executemany(
                    "INSERT INTO chat_images(message_id, position, mime, name, data) VALUES (?, ?, ?, ?, ?)",
                    [(message_id, i, im.mime, im.name, im.data) for i, im in enumerate(images)])
                db.execute("UPDATE chat_conversations SET updated_at=? WHERE id=?", (now, conversation_id))
        except sqlite3.Error as exc:
            raise StorageError(f"Could not save to the conversation database: {exc}",
                               hint="Check that the disk is not full and the data folder is writable.") from exc
        msg = self.message(message_id)
        assert msg is not None
        return msg

    def add_messages(self, conversation_id: int, items: Sequence[tuple[str, str]]) -> None:
        """Bulk insert of (role, content) pairs (imports and tests)."""
        now = self._clock()
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO chat_messages(conversation_id, role, content, status, created_at) VALUES (?, ?, ?, ?, ?)",
                [(conversation_id, role, content, COMPLETE, now) for role, content in items])
            db.execute("UPDATE chat_conversations SET updated_at=? WHERE id=?", (now, conversation_id))

    def update_message(self, message_id: int, *, content: str | None = None, status: str | None = None,
                       stats: ReplyStats | None = None, settings: dict[str, Any] | None = None,
                       ran_on: str | None = None) -> None:
        sets, params = [], []
        for column, value in (("content", content), ("status", status), ("ran_on", ran_on),
                              ("stats_json", json.dumps(stats.to_json()) if stats else None),
                              ("settings_json", json.dumps(settings) if settings is not None else None)):
            if value is not None:
                sets.append(f"{column}=?")
                params.append(value)
        if sets:
            self._write(f"UPDATE chat_messages SET {', '.join(sets)} WHERE id=?", (*params, message_id))
        if ran_on:
            self._write("UPDATE chat_conversations SET ran_on=? WHERE id="
                        "(SELECT conversation_id FROM chat_messages WHERE id=?)", (ran_on, message_id))

    @staticmethod
    def _message(row: sqlite3.Row) -> Message:
        return Message(id=row["id"], conversation_id=row["conversation_id"], role=row["role"],
                       content=row["content"], status=row["status"], created_at=row["created_at"],
                       settings=_loads(row["settings_json"]), stats=ReplyStats.from_json(_loads(row["stats_json"])),
                       ran_on=row["ran_on"])

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
        return self._with_images([self._message(row)])[0] if row else None

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
        return self._with_images([self._message(r) for r in rows])

    def count_messages(self, conversation_id: int) -> int:
        row = self.db.execute("SELECT COUNT(*) FROM chat_messages WHERE conversation_id=?",
                              (conversation_id,)).fetchone()
        return int(row[0])

    def delete_messages_from(self, conversation_id: int, message_id: int) -> None:
        """Delete ``message_id`` and every later message of the conversation (edit, regenerate)."""
        self._write("DELETE FROM chat_messages WHERE conversation_id=? AND id>=?", (conversation_id, message_id))
