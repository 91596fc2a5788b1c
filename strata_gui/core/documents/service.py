"""Documents attached to conversations: indexing, retrieval, and what a question sends with it.

A document that fits the model's context with room to spare (half of it: the conversation and
the reply need the rest) goes whole, as numbered passages; otherwise the passages most relevant
to the question are retrieved (hybrid: FTS5 and vectors fused; full text alone when no embedding
model is chosen or its engine fails) and go numbered with their sources. Either way the reply
keeps which passages went, and the ones retrieved first are its citations.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import DocumentError, StrataError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import Progress, ProgressCallback, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

from .chunking import Chunk, chunk_blocks, document_text
from .embedding import BATCH, Embedder
from .readers import MAX_FILE_BYTES, cap_for, checked_head, read_document
from .retrieval import CANDIDATES, VectorMatrix, cjk_query, full_text_query, fuse, pack
from .store import DocumentStore, StoredChunk, StoredDocument

log = logging.getLogger(__name__)
_R = TypeVar("_R")

WHOLE, RETRIEVED = "whole", "retrieved"
FULL_TEXT, HYBRID = "full text", "full text + vectors"
CHARS_PER_TOKEN = 4
"""A rough count of characters per token (English prose): how much of the context a document fills."""
ROOM_SHARE = 0.5
"""A document goes whole while it fills at most this share of the context."""
CITED = 5
"""Passages retrieved for a question (and shown as its citations)."""


@dataclass(frozen=True)
class DocumentsChanged:
    """The documents of a conversation changed (attached, removed, indexed again)."""

    conversation_id: int


@dataclass(frozen=True)
class Citation:
    """A passage a reply used, numbered as the model saw it.

    Attributes:
        number: Its number in the prompt ([1], [2] ...).
        chunk_id: The stored chunk.
        document_id: Its document.
        name: The document's file name.
        path: Where the document was read from.
        page: The PDF page (1-based), else None.
        heading: The heading path above it.
        start: Character offset of the passage in the document's text.
        end: Offset just past it.
        text: The passage.
    """

    number: int
    chunk_id: int
    document_id: int
    name: str
    path: str
    page: int | None
    heading: str
    start: int
    end: int
    text: str = ""

    def label(self) -> str:
        """"report.pdf, page 3", "guide.md › Install › Linux", or the name alone."""
        if self.page is not None:
            return T(QT_TRANSLATE_NOOP("Core", "{name}, page {page}"), name=self.name, page=self.page)
        if self.heading:
            return f"{self.name} › {self.heading}"
        return self.name

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "chunk_id": self.chunk_id, "document_id": self.document_id, "name": self.name,
                "path": self.path, "page": self.page, "heading": self.heading, "start": self.start, "end": self.end,
                "label": self.label()}

    @classmethod
    def from_json(cls, data: Any) -> Citation | None:
        """A citation read back from a reply's settings (None when damaged)."""
        if not isinstance(data, dict):
            return None
        try:
            page = data.get("page")
            return cls(int(data["number"]), int(data["chunk_id"]), int(data["document_id"]), str(data["name"]),
                       str(data.get("path") or ""), int(page) if isinstance(page, int) else None,
                       str(data.get("heading") or ""), int(data.get("start") or 0), int(data.get("end") or 0))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class DocumentContext:
    """What a question sends of its conversation's documents, and what the reply records.

    Attributes:
        mode: ``whole`` (every passage went) or ``retrieved`` (the most relevant ones).
        search: ``full text`` or ``full text + vectors`` (how passages were ranked).
        prompt: The sources as the model reads them, numbered.
        citations: The passages ranked first, numbered as in ``prompt``.
        used: Every chunk id that went with the question.
        note: Why the search was full text only, when it was (no embedding model, a failure).
    """

    mode: str
    search: str
    prompt: str
    citations: tuple[Citation, ...]
    used: tuple[int, ...]
    note: str = ""

    def summary(self) -> str:
        """One sentence for the user: which happened."""
        if self.mode == WHOLE:
            text = T(QT_TRANSLATE_NOOP("Core", "The attached documents fit the context: they went whole with the "
                                               "question."))
        else:
            text = T(QT_TRANSLATE_NOOP("Core", "The attached documents are too long for the context: the {count} most "
                                               "relevant passages went with the question ({search})."),
                     count=len(self.used), search=self.search)
        return f"{text} {self.note}" if self.note else text

    def record(self) -> dict[str, Any]:
        """What a reply keeps (its settings' ``documents``)."""
        return {"mode": self.mode, "search": self.search, "summary": self.summary(), "used": list(self.used),
                "citations": [c.to_json() for c in self.citations]}


def citations_of(settings: Any) -> list[Citation]:
    """The citations a reply recorded (from its settings), in order."""
    record = settings.get("documents") if isinstance(settings, dict) else None
    items = record.get("citations") if isinstance(record, dict) else None
    return [c for c in (Citation.from_json(i) for i in items or []) if c is not None]


@dataclass(frozen=True)
class Attached:
    """A document attached: what was stored, whether its index was reused, and its vectors' state."""

    document: StoredDocument
    reused: bool
    vectors_missing: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class _Read:
    kind: str
    size: int
    chars: int
    pages: int
    notes: tuple[str, ...]
    chunks: list[Chunk]


def _read(path: Path, max_bytes: int) -> _Read:
    """Read and chunk ``path`` (blocking, on a worker: no database here)."""
    document = read_document(path, max_bytes=max_bytes)
    return _Read(document.kind, path.stat().st_size, len(document_text(document.blocks)), document.pages,
                 document.notes, chunk_blocks(document.blocks))


def _hash(path: Path, max_bytes: int) -> str:
    max_bytes = cap_for(path, max_bytes)
    checked_head(path, max_bytes)  # a file over the cap is refused from its size, never hashed
    digest = hashlib.sha256()
    try:
        f = path.open("rb")
    except OSError as exc:
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "Cannot read {name}: {reason}"), name=path.name,
                              reason=exc.strerror or exc)) from exc
    with f:
        read = 0
        while block := f.read(1 << 20):
            read += len(block)
            if read > max_bytes:  # grew since it was checked: read_document refuses it with the cap
                break
            digest.update(block)
    return digest.hexdigest()


class DocumentService:
    """Each conversation's documents.

    Args:
        store: The document tables.
        embedder: The embedding model chosen now (None: full text only).
        max_bytes: The largest file attached.
    """

    def __init__(self, store: DocumentStore, embedder: Callable[[], Embedder | None] = lambda: None, *,
                 max_bytes: int = MAX_FILE_BYTES) -> None:
        self.store = store
        self.embedder = embedder
        self.max_bytes = max_bytes
        self.events: Listeners[DocumentsChanged] = Listeners()
        self._matrices: dict[tuple[str, tuple[int, ...]], tuple[int, VectorMatrix | None]] = {}
        self.last_embedding_error = ""  # why the last embedding stopped ("" when it did not)

    # -- attaching ----------------------------------------------------------------------------------
    async def attach(self, conversation_id: int, path: Path, on_progress: ProgressCallback = no_progress, *,
                     embed: bool = True) -> Attached:
        """Index ``path`` (or reuse the index of the same content) and attach it to the conversation.

        Vectors are made when an embedding model is chosen (and ``embed``: else the first question
        makes them); if its engine fails they are left for later (``vectors_missing``), and the
        full text is usable at once. Cancelling before the
        text is stored stores nothing; cancelling while embedding keeps the batches done.

        Raises:
            DocumentError: The file cannot be read (see :func:`read_document`); nothing is stored.
            StorageError: The database could not be written.
        """
        path = Path(path)
        on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Reading {name}…"), name=path.name)))
        digest = await run_blocking(_hash, path, self.max_bytes, name="strata-document-hash")
        where = (conversation_id, path.name, str(path.resolve()))
        known = await _off_loop(self.store.attach_stored, conversation_id, digest, where[1], where[2])
        notes: tuple[str, ...] = ()
        if known is not None:
            found, reused = known, True
        else:
            read = await run_blocking(_read, path, self.max_bytes, name="strata-document-read")
            notes = read.notes
            on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Indexing {name}…"), name=path.name)))
            found, stored = await _off_loop(self.store.add_document, digest, read.kind, read.size, read.chars,
                                            read.pages, "\n".join(notes), read.chunks, where)
            reused = not stored
        self.events.emit(DocumentsChanged(conversation_id))
        missing = await self.embed_missing([found], on_progress) if embed else 0
        return Attached(await _off_loop(self._document, conversation_id, found), reused, missing, notes)

    async def reindex(self, conversation_id: int, doc_id: int, on_progress: ProgressCallback = no_progress) -> Attached:
        """Read the document's file again and rebuild its index (and vectors).

        Raises:
            DocumentError: The conversation has no such document, or its file cannot be read now.
        """
        doc = await _off_loop(self._document, conversation_id, doc_id)
        on_progress(Progress(0, None, T(QT_TRANSLATE_NOOP("Core", "Reading {name}…"), name=doc.name)))
        read = await run_blocking(_read, Path(doc.path), self.max_bytes, name="strata-document-read")
        await _off_loop(self.store.replace_chunks, doc_id, read.kind, read.chars, read.pages, "\n".join(read.notes),
                        read.chunks)
        self._matrices.clear()
        self.events.emit(DocumentsChanged(conversation_id))
        missing = await self.embed_missing([doc_id], on_progress)
        return Attached(await _off_loop(self._document, conversation_id, doc_id), False, missing, read.notes)

    async def remove(self, conversation_id: int, doc_id: int) -> None:
        """Take a document from a conversation (its index goes when no conversation has it: a
        cascade through its chunks and both full-text indexes, run off the event loop)."""
        await _off_loop(self.store.detach, conversation_id, doc_id)
        self._matrices.clear()
        self.events.emit(DocumentsChanged(conversation_id))

    def delete(self, doc_id: int) -> bool:
        """Delete a stored document from every conversation (``strata docs remove``)."""
        gone = self.store.delete_document(doc_id)
        self._matrices.clear()
        return gone

    async def forget_deleted(self) -> None:
        """Drop the links of deleted conversations, and documents no conversation has any more."""
        await _off_loop(self.store.prune)
        self._matrices.clear()

    def documents(self, conversation_id: int) -> list[StoredDocument]:
        return self.store.documents(conversation_id)

    def all_documents(self) -> list[StoredDocument]:
        return self.store.all_documents()

    def _document(self, conversation_id: int, doc_id: int) -> StoredDocument:
        for doc in self.store.documents(conversation_id):
            if doc.id == doc_id:
                return doc
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "This conversation has no document {id}."), id=doc_id))

    # -- vectors ------------------------------------------------------------------------------------
    async def embed_missing(self, doc_ids: Sequence[int], on_progress: ProgressCallback = no_progress) -> int:
        """Embed the chunks of these documents that have no vector from the current model yet.

        Returns the count still missing: 0 when done (or when no embedding model is chosen: then
        nothing is missing, full text is all there is); more when the engine failed (logged; the
        next question or re-index resumes from there). Cancelling keeps the batches done.
        """
        embedder = self.embedder()
        if embedder is None:
            return 0
        todo = await _off_loop(self.store.missing_vectors, doc_ids, embedder.key)
        total = len(todo)
        for start in range(0, total, BATCH):
            batch = todo[start:start + BATCH]
            on_progress(Progress(start, total, T(QT_TRANSLATE_NOOP("Core", "Embedding passages…"))))
            try:
                vectors = await embedder.embed([_embedded_text(c) for c in batch])
            except StrataError as exc:
                log.warning("embedding stopped after %d of %d passages: %s", start, total, exc.message)
                self.last_embedding_error = exc.message
                return total - start
            await _off_loop(self.store.add_vectors, embedder.key,
                            [(c.id, pack(v)) for c, v in zip(batch, vectors, strict=True)])
        if total:
            on_progress(Progress(total, total, T(QT_TRANSLATE_NOOP("Core", "Embedding passages…"))))
        return 0

    # -- questions ----------------------------------------------------------------------------------
    async def search(self, conversation_id: int, question: str, limit: int = CITED) -> tuple[list[StoredChunk], str, str]:
        """The passages of the conversation's documents most relevant to ``question``.

        Returns:
            The chunks best first, how they were ranked (``full text`` or ``full text + vectors``),
            and why vectors were not used when they were not ("" otherwise).
        """
        docs = await _off_loop(self.store.documents, conversation_id)  # a long insert may hold the store
        doc_ids = [d.id for d in docs]
        rankings = await _off_loop(self._full_text_rankings, doc_ids, question)
        search, note = FULL_TEXT, ""
        nearest, note = await self._nearest(doc_ids, question)
        if nearest is not None:
            rankings.append(nearest)
            search = HYBRID
        ids = fuse(rankings)[:limit]
        found = await _off_loop(self.store.chunks_by_id, ids)
        names = {d.id: d for d in docs}
        out = []
        for cid in ids:
            chunk = found.get(cid)
            if chunk is not None:
                doc = names[chunk.document_id]
                out.append(_named(chunk, doc))
        return out, search, note

    def _full_text_rankings(self, doc_ids: list[int], question: str) -> list[list[int]]:
        """The FTS5 rankings of the question (blocking: run off the loop)."""
        rankings = [self.store.full_text(full_text_query(question), doc_ids, CANDIDATES)]
        cjk = cjk_query(question)
        if cjk:  # words with no spaces between them: the trigram index's ranking joins the fusion
            rankings.append(self.store.full_text(cjk, doc_ids, CANDIDATES, table="docs_chunks_cjk"))
        return rankings

    async def _nearest(self, doc_ids: list[int], question: str) -> tuple[list[int] | None, str]:
        """Chunk ids nearest the question's vector; None (and why) when vectors cannot be used."""
        embedder = self.embedder()
        if embedder is None:
            return None, T(QT_TRANSLATE_NOOP("Core", "No embedding model is chosen, so the search was full text "
                                                     "only."))
        missing = 0
        if await _off_loop(self._vectors_missing, doc_ids, embedder.key):
            missing = await self.embed_missing(doc_ids)  # resumed here after an engine failed mid-index
        try:
            query = (await embedder.embed([question]))[0]
        except StrataError as exc:
            log.warning("the question could not be embedded: %s", exc.message)
            return None, T(QT_TRANSLATE_NOOP("Core", "The embedding engine failed ({error}), so the search was full "
                                                     "text only."), error=exc.message.rstrip("."))
        matrix = await _off_loop(self._matrix, embedder.key, doc_ids)
        if matrix is None:
            return None, ""
        note = T(QT_TRANSLATE_NOOP("Core", "{count} passages have no vectors yet."), count=missing) if missing else ""
        return matrix.nearest(query), note

    def _vectors_missing(self, doc_ids: list[int], key: str) -> bool:
        return self.store.count_vectors(doc_ids, key) < self.store.count_chunks(doc_ids)

    def _matrix(self, key: str, doc_ids: list[int]) -> VectorMatrix | None:
        """The documents' vectors as one matrix, kept while they do not change (blocking: reading
        10,000 vectors takes ~100 ms, run off the loop)."""
        cache_key = (key, tuple(sorted(doc_ids)))
        count = self.store.count_vectors(doc_ids, key)  # cheap; reading 10,000 vectors is not (~100 ms)
        cached = self._matrices.get(cache_key)
        if cached is not None and cached[0] == count:
            return cached[1]
        matrix = VectorMatrix.of(self.store.vectors(doc_ids, key))
        self._matrices[cache_key] = (count, matrix)
        return matrix

    async def context_for(self, conversation_id: int, question: str, context_tokens: int) -> DocumentContext | None:
        """What ``question`` sends of the conversation's documents (None when it has none)."""
        docs = await _off_loop(self.store.documents, conversation_id)  # a long insert may hold the store
        if not docs:
            return None
        ranked, search, note = await self.search(conversation_id, question)
        budget = int(max(context_tokens, 0) * ROOM_SHARE * CHARS_PER_TOKEN)
        if sum(d.chars for d in docs) <= budget:
            names = {d.id: d for d in docs}
            sent = [_named(c, names[c.document_id]) for c in await _off_loop(self.store.chunks, [d.id for d in docs])]
            return _context(WHOLE, search, sent, [c.id for c in ranked][:3], note)
        kept: list[StoredChunk] = []
        for chunk in ranked:
            if kept and sum(len(c.text) for c in kept) + len(chunk.text) > budget:
                break
            kept.append(chunk)
        return _context(RETRIEVED, search, kept, [c.id for c in kept], note)

    def passage(self, chunk_id: int) -> StoredChunk | None:
        """A stored passage (what clicking a citation opens); None when its document was removed."""
        return self.store.chunks_by_id([chunk_id]).get(chunk_id)


async def _off_loop(fn: Callable[..., _R], *args: Any) -> _R:
    """Run a call on the document store off the event loop (the store serialises the calls)."""
    return await run_blocking(fn, *args, name="strata-documents-db")


def _named(chunk: StoredChunk, doc: StoredDocument) -> StoredChunk:
    return replace(chunk, name=doc.name, path=doc.path)


def _embedded_text(chunk: StoredChunk) -> str:
    return f"{chunk.heading}\n{chunk.text}" if chunk.heading else chunk.text


def _source(number: int, chunk: StoredChunk) -> str:
    where = chunk.name
    if chunk.page is not None:
        where += f", page {chunk.page}"
    elif chunk.heading:
        where += f" › {chunk.heading}"
    return f"[{number}] {where}\n{chunk.text}"


def _context(mode: str, search: str, sent: Sequence[StoredChunk], cited: Sequence[int], note: str) -> DocumentContext:
    """Number the passages sent; the cited ones (in their rank order) become the citations."""
    numbers = {c.id: n for n, c in enumerate(sent, start=1)}
    by_id = {c.id: c for c in sent}
    prompt = "\n\n".join(_source(numbers[c.id], c) for c in sent)
    citations = tuple(Citation(numbers[cid], cid, by_id[cid].document_id, by_id[cid].name, by_id[cid].path,
                               by_id[cid].page, by_id[cid].heading, by_id[cid].start, by_id[cid].end, by_id[cid].text)
                      for cid in cited if cid in numbers)
    return DocumentContext(mode, search, prompt, citations, tuple(c.id for c in sent), note)


INSTRUCTION = ("Answer the question from the numbered sources below. Cite the sources you use by their number, "
               "like [1].")


def with_sources(question: str, context: DocumentContext) -> str:
    """The user's message as the model reads it: the instruction, the sources, then the question."""
    return f"{INSTRUCTION}\n\n{context.prompt}\n\nQuestion: {question}"

