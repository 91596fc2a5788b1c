"""Documents, their chunks, full-text index and vectors in Strata's database file.

The tables live in the same SQLite file as the conversations (prefix ``docs_``, component
``documents`` in the shared ``schema_version`` table, its own migrations), so a backup of one file
holds a chat with its documents. A document is stored once per content (its SHA-256): attaching an
unchanged file again, or the same file to another conversation, reuses its chunks, full-text index
and vectors. ``docs_attached`` says which conversation has which document under which name.

Full text: FTS5 with the Porter stemmer (``unicode61``), and a trigram index for Chinese, Japanese
and Korean, both reading their text from ``docs_chunks`` (external content), kept by triggers. Vectors: one row per chunk and embedding model
(float32 BLOB); the chunks with no row for the current model are the ones still to embed, so an
embedding engine that fails mid-index leaves full text usable and the vectors resume later.

Threads: storing a long document's chunks (and both full-text indexes), the cascade that deletes
one, and reading its vectors take seconds, so :class:`~.service.DocumentService` runs them on
worker threads, off the GUI's event loop. The connection is opened with
``check_same_thread=False`` and every method holds the store's lock, so the calls on it are
serialised whichever thread makes them.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.storage import open_database, storage_error

from .chunking import Chunk

COMPONENT = "documents"
_WHAT = QT_TRANSLATE_NOOP("Core", "the document index")
_SAVING = QT_TRANSLATE_NOOP("Core", "save to the document index")

MIGRATIONS: list[Sequence[str]] = [
    (
        """CREATE TABLE docs_documents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            sha256 TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            size INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            pages INTEGER NOT NULL DEFAULT 0,
            notes TEXT NOT NULL DEFAULT '',
            indexed_at REAL NOT NULL
        )""",
        """CREATE TABLE docs_chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id INTEGER NOT NULL REFERENCES docs_documents(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            text TEXT NOT NULL,
            heading TEXT NOT NULL DEFAULT '',
            page INTEGER,
            start INTEGER NOT NULL,
            end INTEGER NOT NULL
        )""",
        "CREATE INDEX docs_chunks_by_document ON docs_chunks(document_id, ordinal)",
        "CREATE VIRTUAL TABLE docs_chunks_fts USING fts5(text, heading, content='docs_chunks', content_rowid='id',"
        " tokenize='porter unicode61 remove_diacritics 2')",
        # Chinese, Japanese and Korean have no spaces between words, which unicode61 needs: a
        # trigram index beside it finds their passages by the question's runs of three characters.
        "CREATE VIRTUAL TABLE docs_chunks_cjk USING fts5(text, heading, content='docs_chunks', content_rowid='id',"
        " tokenize='trigram')",
        """CREATE TRIGGER docs_chunks_fts_added AFTER INSERT ON docs_chunks BEGIN
            INSERT INTO docs_chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
            INSERT INTO docs_chunks_cjk(rowid, text, heading) VALUES (new.id, new.text, new.heading);
        END""",
        """CREATE TRIGGER docs_chunks_fts_deleted AFTER DELETE ON docs_chunks BEGIN
            INSERT INTO docs_chunks_fts(docs_chunks_fts, rowid, text, heading)
                VALUES ('delete', old.id, old.text, old.heading);
            INSERT INTO docs_chunks_cjk(docs_chunks_cjk, rowid, text, heading)
                VALUES ('delete', old.id, old.text, old.heading);
        END""",
        """CREATE TABLE docs_vectors (
            chunk_id INTEGER NOT NULL REFERENCES docs_chunks(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (chunk_id, model)
        )""",
        """CREATE TABLE docs_attached (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL,
            document_id INTEGER NOT NULL REFERENCES docs_documents(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            path TEXT NOT NULL,
            attached_at REAL NOT NULL,
            UNIQUE (conversation_id, document_id)
        )""",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _serialised(method: Callable[Concatenate[DocumentStore, _P], _R]) -> Callable[Concatenate[DocumentStore, _P], _R]:
    """Run the method holding the store's lock: one call on the connection at a time, whatever
    thread it comes from (the service runs the heavy ones on worker threads)."""
    def locked(self: DocumentStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)
    functools.update_wrapper(locked, method)
    return locked


@dataclass(frozen=True)
class StoredDocument:
    """A document as one conversation has it (or, from :meth:`DocumentStore.all_documents`, as stored).

    Attributes:
        id: The document's id (shared by every conversation that attached the same content).
        name: The file name it was attached as.
        path: Where it was read from (a PDF's pages are shown from there).
        kind: Its format (``pdf``, ``docx`` ...).
        size: Its size in bytes.
        chars: Characters of text read from it.
        pages: Pages (PDF), else 0.
        chunks: Chunks it was cut into.
        notes: What the reader had to say (invalid UTF-8 replaced ...), one per line.
        conversation_id: The conversation it is attached to (0 from ``all_documents``).
        sha256: Its content hash.
        conversations: How many conversations have it (``all_documents`` only).
    """

    id: int
    name: str
    path: str
    kind: str
    size: int
    chars: int
    pages: int
    chunks: int
    notes: str
    conversation_id: int = 0
    sha256: str = ""
    conversations: int = 0


@dataclass(frozen=True)
class StoredChunk:
    """A chunk with its document's name (what a citation shows)."""

    id: int
    document_id: int
    ordinal: int
    text: str
    heading: str
    page: int | None
    start: int
    end: int
    name: str = ""
    path: str = ""


class DocumentStore:
    """The document tables of Strata's database file.

    Args:
        path: The database file (``":memory:"`` for none).
        clock: Wall clock for timestamps.
    """

    def __init__(self, path: Path, clock: Callable[[], float] = time.time, *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self._clock = clock
        self.busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self.notice: str | None = None

    @_serialised
    def open(self) -> DocumentStore:
        """Open (creating or migrating the tables) and drop links to conversations deleted meanwhile."""
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
                self.prune()
            except BaseException:
                self._db = None
                raise

        self._db, self.notice = open_database(self.path, setup, what=_WHAT, clock=self._clock,
                                              isolation_level=None, timeout=self.busy_timeout,
                                              check_same_thread=False)
        return self

    @_serialised
    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.open()
        assert self._db is not None
        return self._db

    @_serialised
    def schema_version(self) -> int:
        row = self.db.execute("SELECT version FROM schema_version WHERE component=?", (COMPONENT,)).fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        db = self.db
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "The document index was written by a newer Strata "
                                                           "(schema {schema})."), schema=current),
                               hint=QT_TRANSLATE_NOOP("Core", "Update Strata to use these documents."))
        for version in range(current + 1, SCHEMA_VERSION + 1):
            with self.transaction():
                for statement in MIGRATIONS[version - 1]:
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO schema_version(component, version) VALUES (?, ?)",
                           (COMPONENT, version))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (holding the store's lock); sqlite3 errors become :class:`StorageError`."""
        with self._lock:
            yield from self._transaction()

    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, _SAVING) from exc

    @_serialised
    def prune(self) -> None:
        """Forget links to conversations that no longer exist, and documents no conversation has."""
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM sqlite_master WHERE name='chat_conversations'").fetchone():
                db.execute("DELETE FROM docs_attached WHERE conversation_id NOT IN (SELECT id FROM chat_conversations)")
            db.execute("DELETE FROM docs_documents WHERE id NOT IN (SELECT document_id FROM docs_attached)")

    # -- documents ----------------------------------------------------------------------------------
    @_serialised
    def find(self, sha256: str) -> int | None:
        """The id of the document with this content, if it was indexed."""
        row = self.db.execute("SELECT id FROM docs_documents WHERE sha256=?", (sha256,)).fetchone()
        return int(row[0]) if row else None

    @_serialised
    def attach_stored(self, conversation_id: int, sha256: str, name: str, path: str) -> int | None:
        """Attach the stored document with this content, if there is one (its id; None when none).

        One transaction: a document pruned meanwhile is not there to attach (None), never a
        link to a document that is gone."""
        with self.transaction() as db:
            row = db.execute("SELECT id FROM docs_documents WHERE sha256=?", (sha256,)).fetchone()
            if row is None:
                return None
            self._attach(db, conversation_id, int(row[0]), name, path)
            return int(row[0])

    @_serialised
    def add_document(self, sha256: str, kind: str, size: int, chars: int, pages: int, notes: str,
                     chunks: Sequence[Chunk], attach_to: tuple[int, str, str]) -> tuple[int, bool]:
        """Store a document and its chunks (indexed for full text) and attach it, in one transaction.

        The same content stored meanwhile (the same file attached twice at once) is reused, not
        stored again.

        Args:
            attach_to: (conversation id, the file's name, its path).

        Returns:
            The document's id, and whether it was stored now (False: it was stored meanwhile).
        """
        with self.transaction() as db:
            cur = db.execute("INSERT INTO docs_documents(sha256, kind, size, chars, pages, notes, indexed_at)"
                             " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sha256) DO NOTHING",
                             (sha256, kind, size, chars, pages, notes, self._clock()))
            if cur.rowcount:
                doc_id = int(cur.lastrowid or 0)
                db.executemany("INSERT INTO docs_chunks(document_id, ordinal, text, heading, page, start, end)"
                               " VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [(doc_id, c.ordinal, c.text, c.heading, c.page, c.start, c.end) for c in chunks])
            else:
                doc_id = int(db.execute("SELECT id FROM docs_documents WHERE sha256=?", (sha256,)).fetchone()[0])
            self._attach(db, attach_to[0], doc_id, attach_to[1], attach_to[2])
        return doc_id, bool(cur.rowcount)

    @_serialised
    def replace_chunks(self, doc_id: int, kind: str, chars: int, pages: int, notes: str,
                       chunks: Sequence[Chunk]) -> None:
        """Index a document again (its chunks, full text; its vectors go with the old chunks)."""
        with self.transaction() as db:
            db.execute("DELETE FROM docs_chunks WHERE document_id=?", (doc_id,))
            db.execute("UPDATE docs_documents SET kind=?, chars=?, pages=?, notes=?, indexed_at=? WHERE id=?",
                       (kind, chars, pages, notes, self._clock(), doc_id))
            db.executemany("INSERT INTO docs_chunks(document_id, ordinal, text, heading, page, start, end)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)",
                           [(doc_id, c.ordinal, c.text, c.heading, c.page, c.start, c.end) for c in chunks])

    @_serialised
    def attach(self, conversation_id: int, doc_id: int, name: str, path: str) -> None:
        """Give ``conversation_id`` the document (again: its name and path are updated)."""
        with self.transaction() as db:
            self._attach(db, conversation_id, doc_id, name, path)

    def _attach(self, db: sqlite3.Connection, conversation_id: int, doc_id: int, name: str, path: str) -> None:
        db.execute("INSERT INTO docs_attached(conversation_id, document_id, name, path, attached_at)"
                   " VALUES (?, ?, ?, ?, ?) ON CONFLICT(conversation_id, document_id)"
                   " DO UPDATE SET name=excluded.name, path=excluded.path",
                   (conversation_id, doc_id, name, path, self._clock()))

    @_serialised
    def detach(self, conversation_id: int, doc_id: int) -> None:
        """Take the document from the conversation; stored content nobody has any more goes too."""
        with self.transaction() as db:
            db.execute("DELETE FROM docs_attached WHERE conversation_id=? AND document_id=?", (conversation_id, doc_id))
            db.execute("DELETE FROM docs_documents WHERE id=? AND id NOT IN (SELECT document_id FROM docs_attached)",
                       (doc_id,))

    @_serialised
    def delete_document(self, doc_id: int) -> bool:
        """Delete a document from every conversation, with its index. False when there was none."""
        with self.transaction() as db:
            return db.execute("DELETE FROM docs_documents WHERE id=?", (doc_id,)).rowcount > 0

    _LISTED = ("SELECT d.id, a.name, a.path, d.kind, d.size, d.chars, d.pages, d.notes, d.sha256, a.conversation_id,"
               " (SELECT COUNT(*) FROM docs_chunks c WHERE c.document_id=d.id) AS chunks"
               " FROM docs_attached a JOIN docs_documents d ON d.id=a.document_id")

    @_serialised
    def documents(self, conversation_id: int) -> list[StoredDocument]:
        """The conversation's documents, in the order they were attached."""
        rows = self.db.execute(self._LISTED + " WHERE a.conversation_id=? ORDER BY a.id", (conversation_id,))
        return [_document(r) for r in rows]

    @_serialised
    def all_documents(self) -> list[StoredDocument]:
        """Every stored document once (named as it was last attached), with how many conversations have it."""
        rows = self.db.execute(
            "SELECT d.id, a.name, a.path, d.kind, d.size, d.chars, d.pages, d.notes, d.sha256, 0 AS conversation_id,"
            " (SELECT COUNT(*) FROM docs_chunks c WHERE c.document_id=d.id) AS chunks,"
            " (SELECT COUNT(*) FROM docs_attached x WHERE x.document_id=d.id) AS conversations"
            " FROM docs_documents d JOIN docs_attached a ON a.id=(SELECT MAX(id) FROM docs_attached"
            " WHERE document_id=d.id) ORDER BY d.id")
        return [_document(r, conversations=int(r["conversations"])) for r in rows]

    # -- chunks -------------------------------------------------------------------------------------
    @_serialised
    def chunks(self, doc_ids: Sequence[int]) -> list[StoredChunk]:
        """Every chunk of these documents, in document order."""
        if not doc_ids:
            return []
        marks = ",".join("?" * len(doc_ids))
        rows = self.db.execute(f"SELECT * FROM docs_chunks WHERE document_id IN ({marks}) ORDER BY document_id,"
                               " ordinal", tuple(doc_ids))
        return [_chunk(r) for r in rows]

    @_serialised
    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, StoredChunk]:
        """Chunks by id (those that still exist)."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.db.execute(f"SELECT * FROM docs_chunks WHERE id IN ({marks})", tuple(chunk_ids))
        return {int(r["id"]): _chunk(r) for r in rows}

    @_serialised
    def full_text(self, query: str, doc_ids: Sequence[int], limit: int, *, table: str = "docs_chunks_fts") -> list[int]:
        """Chunk ids of these documents matching the FTS5 ``query``, best (bm25) first.

        A word in the passage's heading path weighs five times one in its text: the heading names
        what the section is about (on SQLite's C API reference, 20 questions: 17 of 20 answers in
        the top 3 with equal weights, 18 with 5 or 10). ``table`` is ``docs_chunks_cjk`` for the
        trigram index (see :func:`~.retrieval.cjk_query`)."""
        if not doc_ids or not query:
            return []
        marks = ",".join("?" * len(doc_ids))
        try:
            rows = self.db.execute(
                f"SELECT f.rowid FROM {table} f JOIN docs_chunks c ON c.id=f.rowid"
                f" WHERE {table} MATCH ? AND c.document_id IN ({marks})"
                f" ORDER BY bm25({table}, 1.0, 5.0) LIMIT ?", (query, *doc_ids, limit)).fetchall()
        except sqlite3.OperationalError:  # a query FTS5 cannot parse finds nothing (never an error)
            return []
        return [int(r[0]) for r in rows]

    # -- vectors ------------------------------------------------------------------------------------
    @_serialised
    def missing_vectors(self, doc_ids: Sequence[int], model: str) -> list[StoredChunk]:
        """Chunks of these documents with no vector from ``model`` yet (to embed)."""
        if not doc_ids:
            return []
        marks = ",".join("?" * len(doc_ids))
        rows = self.db.execute(f"SELECT c.* FROM docs_chunks c WHERE c.document_id IN ({marks}) AND NOT EXISTS"
                               " (SELECT 1 FROM docs_vectors v WHERE v.chunk_id=c.id AND v.model=?)"
                               " ORDER BY c.document_id, c.ordinal", (*doc_ids, model))
        return [_chunk(r) for r in rows]

    @_serialised
    def add_vectors(self, model: str, vectors: Sequence[tuple[int, bytes]]) -> None:
        """Keep vectors (float32 bytes) for chunks; one transaction per batch, so a crash keeps the batches before."""
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO docs_vectors(chunk_id, model, vector) VALUES (?, ?, ?)",
                           [(cid, model, blob) for cid, blob in vectors])

    @_serialised
    def count_chunks(self, doc_ids: Sequence[int]) -> int:
        """How many chunks these documents have."""
        if not doc_ids:
            return 0
        marks = ",".join("?" * len(doc_ids))
        return int(self.db.execute(f"SELECT COUNT(*) FROM docs_chunks WHERE document_id IN ({marks})",
                                   tuple(doc_ids)).fetchone()[0])

    @_serialised
    def count_vectors(self, doc_ids: Sequence[int], model: str) -> int:
        """How many chunks of these documents have a vector from ``model``."""
        if not doc_ids:
            return 0
        marks = ",".join("?" * len(doc_ids))
        row = self.db.execute(f"SELECT COUNT(*) FROM docs_vectors v JOIN docs_chunks c ON c.id=v.chunk_id"
                              f" WHERE c.document_id IN ({marks}) AND v.model=?", (*doc_ids, model)).fetchone()
        return int(row[0])

    @_serialised
    def vectors(self, doc_ids: Sequence[int], model: str) -> list[tuple[int, bytes]]:
        """(chunk id, float32 bytes) of these documents' chunks that have a vector from ``model``."""
        if not doc_ids:
            return []
        marks = ",".join("?" * len(doc_ids))
        rows = self.db.execute(f"SELECT v.chunk_id, v.vector FROM docs_vectors v JOIN docs_chunks c ON c.id=v.chunk_id"
                               f" WHERE c.document_id IN ({marks}) AND v.model=? ORDER BY v.chunk_id",
                               (*doc_ids, model))
        return [(int(r[0]), bytes(r[1])) for r in rows]


def _document(row: sqlite3.Row, conversations: int = 0) -> StoredDocument:
    return StoredDocument(int(row["id"]), row["name"], row["path"], row["kind"], int(row["size"]), int(row["chars"]),
                          int(row["pages"]), int(row["chunks"]), row["notes"], int(row["conversation_id"]),
                          row["sha256"], conversations)


def _chunk(row: sqlite3.Row) -> StoredChunk:
    return StoredChunk(int(row["id"]), int(row["document_id"]), int(row["ordinal"]), row["text"], row["heading"],
                       row["page"], int(row["start"]), int(row["end"]))
