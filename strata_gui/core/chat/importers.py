"""Import conversations exported by ChatGPT and by Open WebUI.

Shapes read (as those programs write them; the tests build files of each by hand):

* **ChatGPT** (Settings ▸ Data controls ▸ Export: ``conversations.json``): a list of conversations,
  each ``{"title", "create_time", "update_time", "current_node", "mapping": {node id: {"message",
  "parent", "children"}}}``. A message is ``{"author": {"role"}, "create_time", "content":
  {"content_type", "parts" | "text" | "thoughts"}, "metadata"}``. The branch shown last is the one
  from ``current_node`` up to the root; edits left on other branches are not imported. ``thoughts``
  (reasoning models) become the next reply's thinking; hidden system messages are skipped.
* **Open WebUI** (Settings ▸ Chats ▸ Export, or a chat's ⋯ ▸ Download ▸ Export chat (.json)): a
  list of ``{"id", "title", "created_at", "updated_at", "chat": {"models", "history": {"currentId",
  "messages": {id: {"parentId", "role", "content", "timestamp", "model"}}}, "messages": [...]}}``;
  ``history`` is followed from ``currentId``, else the ``messages`` list is read in order. Thinking
  kept in a reply as ``<details type="reasoning">`` becomes the reply's thinking.

A file is read whole and checked before anything is saved; then every conversation in it is saved
in one transaction: a bad file (not JSON, another shape, too big) adds nothing, with an error that
says what was wrong.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.storage import storage_error

from .records import COMPLETE, storable
from .store import ConversationStore

MAX_IMPORT_BYTES = 512 * 1024 * 1024  # a heavy user's ChatGPT export is tens of MB; parsing 512 MB takes GBs
CHATGPT, OPEN_WEBUI = "ChatGPT", "Open WebUI"
ROLES = ("user", "assistant", "system", "tool")
_REASONING = re.compile(r'<details\s+type="reasoning"[^>]*>\s*(?:<summary>.*?</summary>)?(.*?)</details>\s*', re.S)
_SAVING = QT_TRANSLATE_NOOP("Core", "save the imported conversations")
_WRONG_SHAPE_HINT = QT_TRANSLATE_NOOP("Core", "Choose ChatGPT's conversations.json (from its data export) or a "
                                              "chat export of Open WebUI (.json).")


@dataclass
class ImportedMessage:
    role: str
    content: str
    created_at: float
    thinking: str = ""
    tool_name: str = ""


@dataclass
class ImportedConversation:
    title: str
    created_at: float
    updated_at: float
    model: str = ""
    messages: list[ImportedMessage] = field(default_factory=list)


@dataclass(frozen=True)
class ImportResult:
    """What an import added.

    Attributes:
        source: :data:`CHATGPT` or :data:`OPEN_WEBUI`.
        conversation_ids: The new conversations, in the file's order.
        messages: How many messages they hold.
        skipped: Conversations of the file without a message (not imported).
    """

    source: str
    conversation_ids: tuple[int, ...]
    messages: int
    skipped: int


def _wrong(message: str, **values: object) -> ChatError:
    return ChatError(T(message, **values), hint=_WRONG_SHAPE_HINT)


def _seconds(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value) / 1000.0 if value > 1e12 else float(value)  # some exports write milliseconds


def _text(value: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(p if isinstance(p, str) else str(p.get("text", "")) if isinstance(p, dict) else ""
                         for p in value).strip()
    return ""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# -- ChatGPT ---------------------------------------------------------------------------------------
def _chatgpt_text(content: dict[str, Any]) -> str:
    if isinstance(content.get("parts"), list):
        pieces = []
        for part in content["parts"]:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and "asset_pointer" in str(part.get("content_type", "")):
                pieces.append("[image]")
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
        return "\n".join(p for p in pieces if p)
    return content["text"] if isinstance(content.get("text"), str) else ""


def _chatgpt_branch(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the branch shown last, root first."""
    mapping = conv["mapping"]
    node_id = conv.get("current_node")
    if node_id not in mapping:  # no current node: the last leaf
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        node_id = leaves[-1] if leaves else None
    chain, seen = [], set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        if isinstance(node.get("message"), dict):
            chain.append(node["message"])
        node_id = node.get("parent")
    return chain[::-1]


def _chatgpt(conv: dict[str, Any], index: int) -> ImportedConversation:
    if not isinstance(conv.get("mapping"), dict):
        raise _wrong(QT_TRANSLATE_NOOP("Core", "Conversation {n} of the ChatGPT export has no message tree "
                                               "(“mapping”)."), n=index + 1)
    created = _seconds(conv.get("create_time"), 0.0)
    out = ImportedConversation(str(conv.get("title") or ""), created, _seconds(conv.get("update_time"), created),
                               str(conv.get("default_model_slug") or ""))
    thinking: list[str] = []
    for msg in _chatgpt_branch(conv):
        author, content, metadata = (_object(msg.get(key)) for key in ("author", "content", "metadata"))
        role = author.get("role")
        kind = content.get("content_type")
        if kind == "thoughts":  # a reasoning model's thinking, shown folded above its answer
            thinking += [t["content"] for t in content.get("thoughts") or []
                         if isinstance(t, dict) and isinstance(t.get("content"), str)]
            continue
        if role not in ROLES or kind == "reasoning_recap" or metadata.get("is_visually_hidden_from_conversation"):
            continue
        text = _chatgpt_text(content)
        mine = "\n\n".join(thinking) if role == "assistant" else ""
        if role == "assistant":
            thinking = []
        if not (text or mine):
            continue
        name = author.get("name") or ""
        out.messages.append(ImportedMessage(role, text, _seconds(msg.get("create_time"), created), mine,
                                            str(name) if role == "tool" else ""))
        out.model = out.model or str(metadata.get("model_slug") or "")
    return out


# -- Open WebUI --------------------------------------------------------------------------------------
def _webui_chain(chat: dict[str, Any]) -> list[dict[str, Any]]:
    history = chat.get("history")
    if isinstance(history, dict) and isinstance(history.get("messages"), dict) and history["messages"]:
        messages, node_id = history["messages"], history.get("currentId")
        chain, seen = [], set()
        while isinstance(node_id, str) and node_id in messages and node_id not in seen:
            seen.add(node_id)
            if isinstance(messages[node_id], dict):
                chain.append(messages[node_id])
            node_id = messages[node_id].get("parentId") if isinstance(messages[node_id], dict) else None
        if chain:
            return chain[::-1]
    listed = chat.get("messages")
    return [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []


def _open_webui(item: dict[str, Any], index: int) -> ImportedConversation:
    chat = item["chat"] if isinstance(item.get("chat"), dict) else item
    if not (isinstance(chat.get("history"), dict) or isinstance(chat.get("messages"), list)):
        raise _wrong(QT_TRANSLATE_NOOP("Core", "Chat {n} of the Open WebUI export has no messages "
                                               "(“history” or “messages”)."), n=index + 1)
    created = _seconds(item.get("created_at", chat.get("timestamp")), 0.0)
    models = chat.get("models")
    out = ImportedConversation(str(item.get("title") or chat.get("title") or ""), created,
                               _seconds(item.get("updated_at"), created),
                               str(models[0]) if isinstance(models, list) and models else "")
    for msg in _webui_chain(chat):
        role, text = msg.get("role"), _text(msg.get("content"))
        if role not in ROLES:
            continue
        thinking = "\n\n".join(re.sub(r"^> ?", "", t.strip(), flags=re.M) for t in _REASONING.findall(text))
        text = _REASONING.sub("", text).strip() if thinking else text
        if text or thinking:
            out.messages.append(ImportedMessage(role, text, _seconds(msg.get("timestamp"), created), thinking))
            out.model = out.model or str(msg.get("model") or "")
    return out


# -- reading and saving ------------------------------------------------------------------------------
def parse_export(data: Any) -> tuple[str, list[ImportedConversation]]:
    """The conversations of a parsed export file, and which program wrote it.

    Raises:
        ChatError: It is neither ChatGPT's nor Open WebUI's shape (nothing is returned in part).
    """
    items = data if isinstance(data, list) else [data] if isinstance(data, dict) else None
    if not items:
        raise _wrong(QT_TRANSLATE_NOOP("Core", "This file holds no conversations."))
    first = items[0]
    read: Callable[[dict[str, Any], int], ImportedConversation]
    if isinstance(first, dict) and "mapping" in first:
        source, read = CHATGPT, _chatgpt
    elif isinstance(first, dict) and ("chat" in first or "history" in first or "messages" in first):
        source, read = OPEN_WEBUI, _open_webui
    else:
        raise _wrong(QT_TRANSLATE_NOOP("Core", "This file is not an export of ChatGPT or Open WebUI."))
    conversations = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise _wrong(QT_TRANSLATE_NOOP("Core", "Item {n} of the file is not a conversation."), n=index + 1)
        conversations.append(read(item, index))
    return source, conversations


def read_export(path: Path) -> tuple[str, list[ImportedConversation]]:
    """Read and check an export file (blocking: run it off the event loop).

    Raises:
        ChatError: It cannot be read, is too big, is not JSON, or has another shape.
    """
    try:
        size = path.stat().st_size
        if size > MAX_IMPORT_BYTES:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{file} is {size} MB: more than the {limit} MB an import "
                                                        "reads."), file=path.name, size=size // 2**20,
                              limit=MAX_IMPORT_BYTES // 2**20),
                            hint=QT_TRANSLATE_NOOP("Core", "Split the export into smaller files."))
        raw = path.read_bytes()
    except OSError as exc:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "Cannot read {file}: {reason}"), file=path,
                          reason=exc.strerror or exc)) from exc
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{file} is not a JSON file ({reason})."), file=path.name,
                          reason=str(exc)[:120]), hint=_WRONG_SHAPE_HINT) from exc
    return parse_export(data)


def save_imported(store: ConversationStore, source: str, conversations: list[ImportedConversation]) -> ImportResult:
    """Save the conversations (those with messages) in one transaction: all of them, or none.

    Raises:
        StorageError: The database could not be written (nothing was added).
    """
    db, ids, count = store.db, [], 0
    kept = [c for c in conversations if c.messages]
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            for conv in kept:
                title = conv.title.strip() or " ".join(conv.messages[0].content.split())[:48] or source
                cur = db.execute("INSERT INTO chat_conversations(title, created_at, updated_at, model) VALUES (?, ?, ?, ?)",
                                 storable((title, conv.created_at, max(conv.updated_at, conv.created_at), conv.model)))
                ids.append(int(cur.lastrowid or 0))
                db.executemany(
                    "INSERT INTO chat_messages(conversation_id, role, content, status, created_at, thinking, tool_name)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [storable((ids[-1], m.role, m.content, COMPLETE, m.created_at, m.thinking, m.tool_name))
                     for m in conv.messages])
                count += len(conv.messages)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    except sqlite3.Error as exc:
        raise storage_error(exc, store.path, _SAVING) from exc
    return ImportResult(source, tuple(ids), count, len(conversations) - len(kept))


async def import_file(store: ConversationStore, path: Path) -> ImportResult:
    """Read ``path`` off the event loop, then save what it holds (the store is the loop thread's).

    Raises:
        ChatError: The file is not an export Strata reads (nothing was added).
        StorageError: The database could not be written (nothing was added).
    """
    source, conversations = await run_blocking(lambda: read_export(path), name="strata-import")
    return save_imported(store, source, conversations)
