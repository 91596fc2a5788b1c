"""A PDF page as a picture with a passage marked: what clicking a citation shows.

PDFium (pypdfium2, the reader's library) draws the page and finds the passage on it: the page is
the one the citation names, and the marked rectangles are where PDFium's text search finds the
passage's first line on that page (in pixels of the picture).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


MAX_MARKED_LINES = 80
MAX_PIXELS = 40_000_000
"""The most pixels a drawn page has (160 MB of RGBA): a page's size is the file's to say, and a
hostile one (a huge MediaBox or UserUnit) would otherwise allocate gigabytes at the asked scale.
An A4 page at the usual 1.25 is under 1 Mpx."""


def fitted_scale(width: float, height: float, scale: float, max_pixels: int = MAX_PIXELS) -> float:
    """``scale``, or less so a ``width`` × ``height`` (points) page draws to at most ``max_pixels``.

    PDFium rounds each side up, so the bound solves (w·s + 1)(h·s + 1) ≤ max_pixels."""
    if width <= 0 or height <= 0 or (width * scale + 1) * (height * scale + 1) <= max_pixels:
        return scale
    area, sides = width * height, width + height
    return (math.sqrt(sides * sides + 4 * area * (max_pixels - 1)) - sides) / (2 * area)


def _lines(passage: str) -> list[str]:
    """The passage's lines as PDFium's search reads them (spaces collapsed; short scraps dropped)."""
    lines = [" ".join(raw.split()) for raw in passage.splitlines()]
    return [line for line in lines if len(line) >= 4][:MAX_MARKED_LINES]


def render_page(path: Path, page: int, passage: str = "", *, scale: float = 1.5) -> PageImage:
    """Draw page ``page`` (1-based) of the PDF at ``path`` and mark ``passage`` on it (blocking).

    A page that would draw to more than :data:`MAX_PIXELS` at ``scale`` is drawn smaller.

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
        return _drawn(pdf, page, passage, scale)
    except pdfium.PdfiumError as exc:
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "Cannot draw page {page} of {name}: {reason}"),
                              page=page, name=path.name, reason=exc)) from exc
    finally:
        pdf.close()


def _drawn(pdf: Any, page: int, passage: str, scale: float) -> PageImage:
    """The page drawn at ``scale`` (or less, see :func:`fitted_scale`), its objects closed whatever happens."""
    import pypdfium2 as pdfium

    pdf_page = pdf[page - 1]
    try:
        width, height = pdf_page.get_size()
        scale = fitted_scale(width, height, scale)
        bitmap = pdf_page.render(scale=scale, force_bitmap_format=pdfium.raw.FPDFBitmap_BGRA, rev_byteorder=True)
        try:
            marks = _marks(pdf_page, _lines(passage), scale) if passage.strip() else ()
            return PageImage(page, len(pdf), bitmap.width, bitmap.height, bitmap.stride,
                             bytes(bitmap.buffer), marks)
        finally:
            bitmap.close()
    finally:
        pdf_page.close()


def _marks(pdf_page: object, lines: list[str], scale: float) -> tuple[tuple[int, int, int, int], ...]:
    """Rectangles of the passage's lines, each searched for after the one before (a line that
    repeats elsewhere on the page is marked where the passage has it)."""
    textpage = pdf_page.get_textpage()  # type: ignore[attr-defined]
    height = pdf_page.get_height()  # type: ignore[attr-defined]
    out: list[tuple[int, int, int, int]] = []
    after = 0
    try:
        for line in lines:
            searcher = textpage.search(line, index=after, match_case=False)
            found = searcher.get_next()
            searcher.close()
            if not found:
                continue
            index, count = found
            after = index + count
            for i in range(textpage.count_rects(index, count)):
                left, bottom, right, top = textpage.get_rect(i)
                out.append((int(left * scale), int((height - top) * scale), max(1, int((right - left) * scale)),
                            max(1, int((top - bottom) * scale))))
        return tuple(out)
    finally:
        textpage.close()
