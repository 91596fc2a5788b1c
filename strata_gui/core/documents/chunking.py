"""Chunks cut on a document's structure, each keeping its source.

A chunk never spans two PDF pages or two sections (a heading starts a new chunk); within one,
paragraphs are gathered up to the target size, a code block stays whole while it fits, and a block
larger than the most a chunk may hold is cut at line ends (then at spaces, then anywhere). The
offsets are character offsets into the document's text as :func:`document_text` joins it, so a
citation can point at the passage.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .readers import CODE_BLOCK, HEADING, Block

TARGET_CHARS = 1200
"""About 300 tokens: a passage that answers a question, with room for several in a prompt."""
MAX_CHARS = 2000
SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Chunk:
    """A passage of a document and where it is.

    Attributes:
        ordinal: Its place in the document (0-based).
        text: Its text.
        page: The PDF page (1-based), else None.
        heading: The heading path above it ("" when none).
        start: Offset of its first character in the document's text.
        end: Offset just past its last character.
    """

    ordinal: int
    text: str
    page: int | None
    heading: str
    start: int
    end: int


def document_text(blocks: Sequence[Block]) -> str:
    """The document's text: its blocks joined by blank lines (what chunk offsets count in)."""
    return SEPARATOR.join(b.text for b in blocks)


def chunk_blocks(blocks: Sequence[Block], *, target: int = TARGET_CHARS, most: int = MAX_CHARS) -> list[Chunk]:
    """Cut ``blocks`` into chunks of about ``target`` characters (never more than ``most``)."""
    out: list[Chunk] = []
    group: list[tuple[str, int]] = []  # (text, offset) of the pieces gathered
    where: tuple[int | None, str] | None = None
    offset = 0

    def close() -> None:
        if group:
            start = group[0][1]
            end = group[-1][1] + len(group[-1][0])
            text = SEPARATOR.join(t for t, _ in group)
            assert where is not None
            out.append(Chunk(len(out), text, where[0], where[1], start, end))
            group.clear()

    for block in blocks:
        here = (block.page, block.heading)
        if here != where or block.kind == HEADING:
            close()
            where = here
        for piece, at in _pieces(block, offset, most):
            size = sum(len(t) + len(SEPARATOR) for t, _ in group)
            whole_code = block.kind == CODE_BLOCK and group
            if group and (size + len(piece) > target or whole_code):
                close()
            group.append((piece, at))
        offset += len(block.text) + len(SEPARATOR)
    close()
    return out


def _pieces(block: Block, offset: int, most: int) -> Iterator[tuple[str, int]]:
    """``block`` as pieces of at most ``most`` characters with their offsets (cut at line ends,
    then spaces, then anywhere); a block that fits is one piece. A PDF page is cut at its lines
    into paragraph-sized pieces, so its chunks gather like paragraphs."""
    text = block.text
    limit = most if block.kind != "page" else min(most, max(400, most // 2))
    start = 0
    while start < len(text):
        if len(text) - start <= limit:
            yield text[start:], offset + start
            return
        cut = text.rfind("\n", start, start + limit)
        if cut <= start:
            cut = text.rfind(" ", start, start + limit)
        if cut <= start:
            cut = start + limit
        yield text[start:cut], offset + start
        start = cut + (1 if cut < len(text) and text[cut] in "\n " else 0)
