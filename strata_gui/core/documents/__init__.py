"""Documents attached to conversations: readers, chunks on structure, the SQLite index (FTS5 and
vectors), hybrid retrieval and citations."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.documents.chunking import Chunk, chunk_blocks, document_text
    from strata_gui.core.documents.embedding import Embedder, PoolEmbedder
    from strata_gui.core.documents.pages import PageImage, render_page
    from strata_gui.core.documents.readers import MAX_FILE_BYTES, Block, DocumentText, kind_of, read_document
    from strata_gui.core.documents.service import (
        HYBRID,
        RETRIEVED,
        WHOLE,
        Attached,
        Citation,
        DocumentContext,
        DocumentsChanged,
        DocumentService,
        citations_of,
        with_sources,
    )
    from strata_gui.core.documents.store import DocumentStore, StoredChunk, StoredDocument

__all__ = [
    "HYBRID",
    "MAX_FILE_BYTES",
    "RETRIEVED",
    "WHOLE",
    "Attached",
    "Block",
    "Chunk",
    "Citation",
    "DocumentContext",
    "DocumentService",
    "DocumentStore",
    "DocumentText",
    "DocumentsChanged",
    "Embedder",
    "PageImage",
    "PoolEmbedder",
    "StoredChunk",
    "StoredDocument",
    "chunk_blocks",
    "citations_of",
    "document_text",
    "kind_of",
    "read_document",
    "render_page",
    "with_sources",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "chunking": ["Chunk", "chunk_blocks", "document_text"],
    "embedding": ["Embedder", "PoolEmbedder"],
    "pages": ["PageImage", "render_page"],
    "readers": ["MAX_FILE_BYTES", "Block", "DocumentText", "kind_of", "read_document"],
    "service": ["HYBRID", "RETRIEVED", "WHOLE", "Attached", "Citation", "DocumentContext", "DocumentsChanged",
                "DocumentService", "citations_of", "with_sources"],
    "store": ["DocumentStore", "StoredChunk", "StoredDocument"],
})
