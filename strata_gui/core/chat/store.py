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

Since v5 a reply also keeps its thinking (``thinking``; its token count and duration are in the
statistics), the tool calls it asked for with what became of them (``tool_calls_json``), and a
``tool`` message carries one call's result (``tool_call_id``, ``tool_name``). A conversation keeps
its structured-output and thinking settings as JSON. Every JSON value is read defensively: a
damaged one reads as its default, never as an error.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.storage import open_database, storage_error
from strata_gui.core.runtime.client import (
    Effort,
    ReplyStats,
    RequestOptions,
    ResponseFormat,
    SamplingParams,
    ToolCall,
)

from .images import ChatImage

# What the database holds, and what a failed write was doing, in the storage errors' sentences.
_HISTORY = QT_TRANSLATE_NOOP("Core", "the conversation history")
_SAVING = QT_TRANSLATE_NOOP("Core", "save to the conversation history")

COMPONENT = "chat"

# Message status: what the user sees next to a reply.
COMPLETE = "complete"
STREAMING = "streaming"
INTERRUPTED = "interrupted"  # the engine died or the app closed mid-reply
STOPPED = "stopped"  # the user pressed Stop
FAILED = "error"
FORMAT_FAILED = "format_error"  # the engine's chat-format parser rejected the model's output (kept as it came)

# What became of a tool call the model asked for.
TOOL_PENDING = "pending"  # asked, not run yet (waiting for the user's approval)
TOOL_RUNNING = "running"  # allowed, and running now
TOOL_ALLOWED = "allowed"  # the user (or a rule) allowed it and it ran; ``result`` holds its output
TOOL_DENIED = "denied"  # the user refused it
TOOL_ERROR = "error"  # it ran and failed (or was stopped); ``result`` holds the error
TOOL_STATUSES = (TOOL_PENDING, TOOL_RUNNING, TOOL_ALLOWED, TOOL_DENIED, TOOL_ERROR)

# Structured output of a conversation.
OUTPUT_OFF = "off"
OUTPUT_JSON = "json"  # any JSON object
OUTPUT_SCHEMA = "schema"  # JSON following the conversation's schema
OUTPUT_MODES = (OUTPUT_OFF, OUTPUT_JSON, OUTPUT_SCHEMA)
EFFORTS = ("low", "medium", "high")

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
]
SCHEMA_VERSION = len(MIGRATIONS)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ToolCallRecord:
    """A tool call a reply asked for, and what became of it.

    Attributes:
        id: The call's id (a ``tool`` message quotes it as ``tool_call_id``).
        name: The function's name.
        arguments: The arguments as the model wrote them (JSON text).
        result: What the tool returned (or the error, for :data:`TOOL_ERROR`); None until it ran.
        status: :data:`TOOL_PENDING`, :data:`TOOL_RUNNING`, :data:`TOOL_ALLOWED`, :data:`TOOL_DENIED` or
            :data:`TOOL_ERROR`.
        duration_s: How long the tool ran.
    """

    id: str
    name: str
    arguments: str = ""
    result: str | None = None
    status: str = TOOL_PENDING
    duration_s: float | None = None

    @classmethod
    def from_call(cls, call: ToolCall) -> ToolCallRecord:
        return cls(call.id, call.name, call.arguments)

    def call(self) -> ToolCall:
        """The call as the client returned it (to send the history back to the model)."""
        return ToolCall(self.id, self.name, self.arguments)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "result": self.result,
                "status": self.status, "duration_s": self.duration_s}

    @classmethod
    def from_json(cls, data: Any) -> ToolCallRecord | None:
        """Read a stored record; None when it is too damaged to name a call."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("name"), str):
            return None
        arguments, result, status = data.get("arguments"), data.get("result"), data.get("status")
        return cls(data["id"], data["name"], arguments if isinstance(arguments, str) else "",
                   result if isinstance(result, str) else None,
                   status if status in TOOL_STATUSES else TOOL_PENDING, _number(data.get("duration_s")))


@dataclass(frozen=True)
class StructuredOutput:
    """A conversation's structured-output setting.

    Attributes:
        mode: :data:`OUTPUT_OFF`, :data:`OUTPUT_JSON` (any JSON object) or :data:`OUTPUT_SCHEMA`.
        schema: The JSON schema as the user wrote it (kept while the mode is off or plain JSON, so
            switching back does not lose it).
    """

    mode: str = OUTPUT_OFF
    schema: str = ""

    def response_format(self) -> ResponseFormat | None:
        """What the request carries for this setting (None when off).

        Raises:
            ChatError: The mode is :data:`OUTPUT_SCHEMA` and the schema is not a valid JSON schema.
        """
        if self.mode == OUTPUT_JSON:
            return ResponseFormat()
        if self.mode == OUTPUT_SCHEMA:
            from strata_gui.core.runtime.structured import load_schema  # jsonschema, only when used

            return ResponseFormat(load_schema(self.schema))
        return None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "schema": self.schema}

    @classmethod
    def from_json(cls, data: Any) -> StructuredOutput:
        if not isinstance(data, dict):
            return cls()
        mode, schema = data.get("mode"), data.get("schema")
        return cls(mode if mode in OUTPUT_MODES else OUTPUT_OFF, schema if isinstance(schema, str) else "")


@dataclass(frozen=True)
class ThinkingSettings:
    """A conversation's thinking settings (None: the model's default).

    Attributes:
        enabled: Thinking on or off, for models that can switch it.
        effort: ``"low"``, ``"medium"`` or ``"high"``, for models that take an effort level.
        budget: Most thinking tokens per reply.
    """

    enabled: bool | None = None
    effort: Effort | None = None
    budget: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "effort": self.effort, "budget": self.budget}

    @classmethod
    def from_json(cls, data: Any) -> ThinkingSettings:
        if not isinstance(data, dict):
            return cls()
        enabled, effort, budget = data.get("enabled"), data.get("effort"), data.get("budget")
        return cls(enabled if isinstance(enabled, bool) else None,
                   effort if effort in EFFORTS else None,
                   budget if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0 else None)


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
    structured_output: StructuredOutput = field(default_factory=StructuredOutput)
    thinking: ThinkingSettings = field(default_factory=ThinkingSettings)

    def request_options(self, **more: Any) -> RequestOptions:
        """The request options its settings ask for (``more``: further :class:`RequestOptions` fields).

        Raises:
            ChatError: Its schema is not a valid JSON schema (structured output by schema).
        """
        t = self.thinking
        return RequestOptions(thinking=t.enabled, effort=t.effort, thinking_budget=t.budget,
                              response_format=self.structured_output.response_format(), **more)


@dataclass
class Message:
    """A stored message.

    ``role`` is ``"user"``, ``"assistant"``, ``"system"`` or ``"tool"``; a ``tool`` message's
    ``content`` is a call's result, ``tool_call_id`` and ``tool_name`` say which call.
    """

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
    thinking: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str = ""
    tool_name: str = ""


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _tool_calls(text: str | None) -> tuple[ToolCallRecord, ...]:
    try:
        value = json.loads(text or "[]")
    except (ValueError, TypeError):
        return ()
    if not isinstance(value, list):
        return ()
    return tuple(r for r in map(ToolCallRecord.from_json, value) if r is not None)


def _dump_calls(calls: Sequence[ToolCallRecord]) -> str:
    return json.dumps([c.to_json() for c in calls])


# Left by an app that closed (or was killed) during a tool call: nobody will run or answer them now.
_CLOSED_BEFORE_RUN = QT_TRANSLATE_NOOP("Core", "Not run: Strata closed before it was answered.")
_CLOSED_WHILE_RUNNING = QT_TRANSLATE_NOOP("Core", "Stopped: Strata closed while the tool ran.")


def _settle_tool_calls(db: sqlite3.Connection) -> None:
    """Calls saved waiting for an answer or running, from a run that ended: marked as not finished
    (they showed "running…" or "waiting for your answer" for ever)."""
    rows = db.execute("SELECT id, tool_calls_json FROM chat_messages WHERE tool_calls_json LIKE ? OR "
                      "tool_calls_json LIKE ?", (f'%"{TOOL_PENDING}"%', f'%"{TOOL_RUNNING}"%')).fetchall()
    for row in rows:
        calls = _tool_calls(row[1])
        settled = [replace(c, status=TOOL_ERROR,
                                       result=_CLOSED_BEFORE_RUN if c.status == TOOL_PENDING else _CLOSED_WHILE_RUNNING)
                   if c.status in (TOOL_PENDING, TOOL_RUNNING) else c for c in calls]
        if settled != list(calls):
            db.execute("UPDATE chat_messages SET tool_calls_json=? WHERE id=?", (_dump_calls(settled), row[0]))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


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
                _settle_tool_calls(db)
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
            return self.db.execute(sql, params)
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

    @staticmethod
    def _conversation(row: sqlite3.Row) -> Conversation:
        return Conversation(id=row["id"], title=row["title"], created_at=row["created_at"],
                            updated_at=row["updated_at"], system_prompt=row["system_prompt"],
                            sampling=SamplingParams.from_json(_loads(row["sampling_json"])), model=row["model"],
                            ran_on=row["ran_on"],
                            structured_output=StructuredOutput.from_json(_loads(row["output_json"])),
                            thinking=ThinkingSettings.from_json(_loads(row["thinking_json"])))

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
                    (conversation_id, role, content, status, now, json.dumps(settings or {}),
                     json.dumps((stats or ReplyStats()).to_json()), thinking, _dump_calls(tool_calls),
                     tool_call_id, tool_name))
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
                [(conversation_id, role, content, COMPLETE, now) for role, content in items])
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
                              ("tool_calls_json", _dump_calls(tool_calls) if tool_calls is not None else None)):
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
                calls = list(_tool_calls(row[0]))
                at = next((i for i, c in enumerate(calls) if c.id == record.id), None)
                if at is None:
                    calls.append(record)
                else:
                    calls[at] = record
                db.execute("UPDATE chat_messages SET tool_calls_json=? WHERE id=?", (_dump_calls(calls), message_id))
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, _SAVING) from exc

    @staticmethod
    def _message(row: sqlite3.Row) -> Message:
        return Message(id=row["id"], conversation_id=row["conversation_id"], role=row["role"],
                       content=row["content"], status=row["status"], created_at=row["created_at"],
                       settings=_loads(row["settings_json"]), stats=ReplyStats.from_json(_loads(row["stats_json"])),
                       ran_on=row["ran_on"], thinking=_text(row["thinking"]),
                       tool_calls=_tool_calls(row["tool_calls_json"]), tool_call_id=_text(row["tool_call_id"]),
                       tool_name=_text(row["tool_name"]))

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
