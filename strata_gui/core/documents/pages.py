"""A PDF page as a picture with a passage marked: what clicking a citation shows.

PDFium (pypdfium2, the reader's library) draws the page and finds the passage on it: the page is
the one the citation names, and the marked rectangles are where PDFium's text search finds the
passage's first line on that page (in pixels of the picture).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import DocumentError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T


@dataclass(frozen=True)
class PageImage:
    """A drawn page: RGBA pixels (``stride`` bytes a row) and the passage's rectangles (x, y, w, h)."""

    page: int
    pages: int
    width: int
    height: int
    stride: int
    rgba: bytes
    marks: tuple[tuple[int, int, int, int], ...]


def _probe_text(passage: str) -> str:
    """The passage's first line of substance (how it is searched for on the page)."""
    for raw in passage.splitlines():
        line = " ".join(raw.split())
        if len(line) >= 8:
            return line[:80]
    return " ".join(passage.split())[:80]


def render_page(path: Path, page: int, passage: str = "", *, scale: float = 1.5) -> PageImage:
    """Draw page ``page`` (1-based) of the PDF at ``path`` and mark ``passage`` on it (blocking).

    Raises:
        DocumentError: The file is gone, damaged or encrypted, or has no such page.
    """
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except (pdfium.PdfiumError, OSError) as exc:
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "Cannot open {name}: {reason}"), name=path.name, reason=exc),
                            hint=QT_TRANSLATE_NOOP("Core", "The file may have moved since it was attached; attach it "
                                                           "again.")) from exc
    try:
        if not 1 <= page <= len(pdf):
            raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} has no page {page}."), name=path.name, page=page))
        pdf_page = pdf[page - 1]
        bitmap = pdf_page.render(scale=scale, force_bitmap_format=pdfium.raw.FPDFBitmap_BGRA, rev_byteorder=True)
        marks = _marks(pdf_page, _probe_text(passage), scale) if passage.strip() else ()
        image = PageImage(page, len(pdf), bitmap.width, bitmap.height, bitmap.stride, bytes(bitmap.buffer), marks)
        bitmap.close()
        pdf_page.close()
        return image
    finally:
        pdf.close()


def _marks(pdf_page: object, probe: str, scale: float) -> tuple[tuple[int, int, int, int], ...]:
    textpage = pdf_page.get_textpage()  # type: ignore[attr-defined]
    try:
        searcher = textpage.search(probe, match_case=False)
        found = searcher.get_next()
        searcher.close()
        if not found:
            return ()
        index, count = found
        height = pdf_page.get_height()  # type: ignore[attr-defined]
        out = []
        for i in range(textpage.count_rects(index, count)):
            left, bottom, right, top = textpage.get_rect(i)
            out.append((int(left * scale), int((height - top) * scale), max(1, int((right - left) * scale)),
                        max(1, int((top - bottom) * scale))))
        return tuple(out)
    finally:
        textpage.close()
