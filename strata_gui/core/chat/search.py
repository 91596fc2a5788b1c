"""Search across all conversations: SQLite FTS5 over every message's text and thinking.

The index (``chat_messages_fts``, schema v7) uses FTS5's trigram tokenizer, so a search finds any
part of a word in any script (Chinese has no spaces between words: a word tokenizer would see a
whole sentence as one word), as the LIKE search it replaced did, without reading every message.
Each word of the search must appear in one message; words shorter than three characters cannot be
looked up in a trigram index, so a search with one is answered by a plain scan instead. Titles are
matched too. Results keep the conversation list's order (most recently active first), each with a
snippet of its best matching message.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

from .records import Conversation
from .schema import conversation_from_row
from .store import ConversationStore

MIN_INDEXED = 3  # the trigram tokenizer's shortest searchable word
SNIPPET_CHARS = 80  # around the match, in the conversation list
MARK_START, MARK_END = "\x02", "\x03"  # around each match in a snippet (the UI may show them bold)
ELLIPSIS = "…"


@dataclass(frozen=True)
class SearchHit:
    """A conversation that matched.

    Attributes:
        conversation: The conversation.
        snippet: Text around the first match of its best message, matches between
            :data:`MARK_START` and :data:`MARK_END`; "" when only its title matched.
        message_id: That message (None when only the title matched).
    """

    conversation: Conversation
    snippet: str = ""
    message_id: int | None = None


def _fts_query(words: list[str]) -> str:
    """Every word as an FTS5 phrase (quoted: the user's ``"``, ``*``, ``AND`` are text, not syntax)."""
    return " AND ".join('"' + w.replace('"', '""') + '"' for w in words)


def _like(word: str) -> str:
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def make_snippet(text: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """``text`` around the first of ``words`` found in it, every match marked, on one line."""
    flat = " ".join(text.split())
    folded = flat.casefold()
    found = [(at, len(w)) for w in words if (at := folded.find(w.casefold())) >= 0]
    if not found:
        return flat[:width] + (ELLIPSIS if len(flat) > width else "")
    first = min(at for at, _n in found)
    start = max(0, first - width // 3)
    end = min(len(flat), start + width)
    piece = flat[start:end]
    spans: list[tuple[int, int]] = []
    low = piece.casefold()
    for word in sorted({w.casefold() for w in words}, key=len, reverse=True):
        at = low.find(word)
        while at >= 0:
            if not any(a < at + len(word) and at < b for a, b in spans):
                spans.append((at, at + len(word)))
            at = low.find(word, at + len(word))
    for a, b in sorted(spans, reverse=True):
        piece = piece[:a] + MARK_START + piece[a:b] + MARK_END + piece[b:]
    return (ELLIPSIS if start > 0 else "") + piece + (ELLIPSIS if end < len(flat) else "")


def _matching_messages(db: sqlite3.Connection, words: list[str]) -> dict[int, tuple[int, str]]:
    """Conversation id -> (its best matching message, that message's text)."""
    if all(len(w) >= MIN_INDEXED for w in words):
        rows = db.execute(
            "SELECT m.conversation_id, m.id, m.content, m.thinking FROM chat_messages_fts f"
            " JOIN chat_messages m ON m.id = f.rowid WHERE chat_messages_fts MATCH ? ORDER BY f.rank",
            (_fts_query(words),)).fetchall()
    else:
        where = " AND ".join("(m.content LIKE ? ESCAPE '\\' OR m.thinking LIKE ? ESCAPE '\\')" for _ in words)
        params = [p for w in words for p in (_like(w), _like(w))]
        rows = db.execute(f"SELECT m.conversation_id, m.id, m.content, m.thinking FROM chat_messages m WHERE {where}"
                          " ORDER BY m.id DESC", params).fetchall()
    best: dict[int, tuple[int, str]] = {}
    for conversation_id, message_id, content, thinking in rows:
        if conversation_id not in best:
            text = content if any(w.casefold() in content.casefold() for w in words) else thinking
            best[conversation_id] = (message_id, text)
    return best


def search_conversations(store: ConversationStore, text: str, *, limit: int = 500) -> list[SearchHit]:
    """Conversations whose title or messages hold every word of ``text``, most recently active first
    (at most ``limit``; all of them when ``text`` is blank).

    Raises:
        StorageError: The database could not be read.
    """
    words = text.split()
    if not words:
        return [SearchHit(c) for c in store.conversations()]
    db = store.db
    try:
        found = _matching_messages(db, words)
        title_where = " AND ".join("title LIKE ? ESCAPE '\\'" for _ in words)
        titled = {int(r[0]) for r in db.execute(f"SELECT id FROM chat_conversations WHERE {title_where}",
                                                [_like(w) for w in words])}
        ids = sorted(set(found) | titled)
        rows = [] if not ids else db.execute(
            f"SELECT * FROM chat_conversations WHERE id IN ({','.join('?' * len(ids))})"
            " ORDER BY updated_at DESC, id DESC LIMIT ?", (*ids, limit)).fetchall()
    except sqlite3.Error as exc:
        raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not search the conversations: {reason}"), reason=exc),
                           hint=QT_TRANSLATE_NOOP("Core", "Try again; if it keeps failing, restart Strata.")) from exc
    hits = []
    for row in rows:
        conv = conversation_from_row(row)
        message_id, message_text = found.get(conv.id, (None, ""))
        hits.append(SearchHit(conv, make_snippet(message_text, words) if message_id is not None else "", message_id))
    return hits
