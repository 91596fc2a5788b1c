"""Documents read into text blocks that keep where they came from (page, heading path).

One reader per format, each a maintained parser or the standard library:

- PDF: pypdfium2 (PDFium, Apache-2.0/BSD-3): Chrome's PDF engine, wheels for Windows and Linux,
  about a millisecond per text page (pypdf, pure Python, is ten to fifty times slower; PyMuPDF is
  AGPL; QtPdf cannot be used here, core is Qt-free). Its page numbers are the citations' pages.
- DOCX: ``word/document.xml`` read with :mod:`zipfile` and parsed as a stream
  (:mod:`xml.parsers.expat`, into ElementTree elements), the entry's declared size and its actual inflated
  size both capped while it streams (a zip bomb is refused after at most the cap is inflated,
  never whole) and any DTD or entity declaration refused by expat's own handlers, whatever
  the encoding (entity expansion). python-docx would inflate and parse the
  whole entry with lxml before anything could be checked.
- HTML: :class:`html.parser.HTMLParser` (scripts and styles skipped, ``h1``-``h6`` as headings,
  ``pre`` as code).
- Markdown, plain text and source code: decoded as UTF-8; invalid bytes become U+FFFD and the
  document says how many were replaced (a log file with one bad byte is still worth asking about).

Every file's first bytes are checked against what its name says before it is parsed; a file
larger than the cap is refused from its size, before a byte of it is read.
"""

from __future__ import annotations

import re
import xml.parsers.expat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, NoReturn
from xml.etree.ElementTree import Element, TreeBuilder

from strata_gui.core.base.errors import DocumentError
from strata_gui.core.base.progress import format_bytes
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

PDF, DOCX, HTML, MARKDOWN, TEXT, CODE = "pdf", "docx", "html", "markdown", "text", "code"
PARAGRAPH, HEADING, CODE_BLOCK, PAGE = "paragraph", "heading", "code", "page"

MAX_FILE_BYTES = 256 * 1024 * 1024
"""The largest file read (a 300-page PDF is a few MB; a 2 GB file is refused from its size)."""
MAX_TEXT_BYTES = 64 * 1024 * 1024
"""The largest text file read (Markdown, HTML, code, text): it is read whole and decoded, and 64 MB
of text is some 20,000 pages."""
MAX_DOCX_XML_BYTES = 64 * 1024 * 1024
"""The most ``word/document.xml`` may inflate to (a 1,000-page Word file's is ~30 MB)."""

_EXTENSIONS = {
    ".pdf": PDF, ".docx": DOCX, ".html": HTML, ".htm": HTML, ".xhtml": HTML,
    ".md": MARKDOWN, ".markdown": MARKDOWN, ".txt": TEXT, ".text": TEXT, ".rst": TEXT, ".log": TEXT,
    ".csv": TEXT, ".tsv": TEXT,
}
CODE_EXTENSIONS = frozenset(
    [".py", ".pyi", ".c", ".h", ".cc", ".cpp", ".hpp", ".cxx", ".rs", ".go", ".java", ".kt", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".cs", ".rb", ".php", ".swift", ".m", ".scala", ".sh", ".bash", ".ps1", ".bat", ".sql", ".lua", ".pl", ".r", ".jl", ".zig", ".json", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".xml", ".css", ".cmake", ".mk"])
_SUFFIXES_SHOWN = "PDF, DOCX, HTML, Markdown, text, source code"

# First bytes of formats that are never text (what a misnamed file most often is).
_MAGIC = {b"%PDF-": "PDF", b"PK\x03\x04": "ZIP (or DOCX)", b"\x89PNG": "PNG", b"\xff\xd8\xff": "JPEG",
          b"GIF8": "GIF", b"\x7fELF": "program (ELF)", b"MZ": "Windows program", b"GGUF": "GGUF model",
          b"\x1f\x8b": "gzip", b"7z\xbc\xaf": "7-Zip", b"Rar!": "RAR", b"SQLite format 3": "SQLite database",
          b"%!PS": "PostScript", b"\xd0\xcf\x11\xe0": "old Office document (.doc/.xls)"}


@dataclass(frozen=True)
class Block:
    """A piece of a document in reading order.

    Attributes:
        text: Its text.
        kind: ``paragraph``, ``heading``, ``code`` or ``page`` (a PDF page's text, split later).
        page: The PDF page it is on (1-based), else None.
        heading: The headings above it, outermost first, joined with " › " ("" when none).
    """

    text: str
    kind: str = PARAGRAPH
    page: int | None = None
    heading: str = ""


@dataclass(frozen=True)
class DocumentText:
    """What a reader made of a file: its blocks, its format, and what the user must be told."""

    kind: str
    blocks: tuple[Block, ...]
    pages: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def kind_of(path: Path) -> str:
    """The format a file's name says it is (a name with no known suffix reads as text if it is)."""
    suffix = path.suffix.lower()
    if suffix in CODE_EXTENSIONS:
        return CODE
    return _EXTENSIONS.get(suffix, TEXT)


def read_document(path: Path, *, max_bytes: int = MAX_FILE_BYTES, max_docx_xml: int = MAX_DOCX_XML_BYTES) -> DocumentText:
    """Read ``path`` into blocks (blocking: run it off the event loop).

    Raises:
        DocumentError: It cannot be read, is larger than ``max_bytes``, is not what its name says,
            is an encrypted, damaged or scanned (no text layer) PDF, or a DOCX that inflates past
            ``max_docx_xml``.
    """
    kind = kind_of(path)
    head = checked_head(path, cap_for(path, max_bytes))
    _check_content(path, kind, head)
    if kind == PDF:
        return _read_pdf(path)
    if kind == DOCX:
        return _read_docx(path, max_docx_xml)
    text, notes = _decoded(path)
    if kind == HTML:
        return DocumentText(HTML, tuple(_html_blocks(text)), notes=notes)
    if kind == MARKDOWN:
        return DocumentText(MARKDOWN, tuple(markdown_blocks(text)), notes=notes)
    return DocumentText(kind, tuple(_plain_blocks(text, code=kind == CODE)), notes=notes)


def cap_for(path: Path, max_bytes: int = MAX_FILE_BYTES) -> int:
    """The largest ``path`` may be: ``max_bytes``, or less for text, which is read whole."""
    return max_bytes if kind_of(path) in (PDF, DOCX) else min(max_bytes, MAX_TEXT_BYTES)


def checked_head(path: Path, max_bytes: int) -> bytes:
    """The file's first bytes, after its size was checked against the cap (from ``stat``: a 2 GB
    file is refused without reading it)."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} is not a regular file."), name=path.name))
        if size > max_bytes:
            raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} is {size}, larger than the {cap} a document "
                                                            "may be."), name=path.name, size=format_bytes(size),
                                  cap=format_bytes(max_bytes)),
                                hint=QT_TRANSLATE_NOOP("Core", "Attach a smaller file, or the part of it you need."))
        with path.open("rb") as f:
            return f.read(4096)
    except OSError as exc:
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "Cannot read {name}: {reason}"), name=path.name,
                              reason=exc.strerror or exc)) from exc


def _magic(head: bytes) -> str | None:
    return next((what for magic, what in _MAGIC.items() if head.startswith(magic)), None)


def _not_what_it_says(path: Path, is_: str) -> DocumentError:
    return DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} is not what its name says: it is {what}."),
                           name=path.name, what=is_),
                         hint=QT_TRANSLATE_NOOP("Core", "Rename it to what it is, or attach the right file."))


def _check_content(path: Path, kind: str, head: bytes) -> None:
    found = _magic(head)
    if kind == PDF:
        if b"%PDF-" not in head[:1024]:  # the header may follow some junk (the spec allows it)
            raise _not_what_it_says(path, found or T(QT_TRANSLATE_NOOP("Core", "not a PDF")))
        return
    if kind == DOCX:
        if not head.startswith(b"PK\x03\x04"):
            raise _not_what_it_says(path, found or T(QT_TRANSLATE_NOOP("Core", "not a DOCX (Word) file")))
        return
    if found is not None or b"\x00" in head:
        raise _not_what_it_says(path, found or T(QT_TRANSLATE_NOOP("Core", "binary data, not text")))


def _decoded(path: Path) -> tuple[str, tuple[str, ...]]:
    """UTF-8 text (a BOM dropped); invalid bytes become U+FFFD and a note says how many."""
    data = path.read_bytes()
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count("\ufffd") - data.decode("utf-8-sig", errors="ignore").count("\ufffd")
    if bad <= 0:
        return text, ()
    return text, (T(QT_TRANSLATE_NOOP("Core", "{name} is not valid UTF-8: {count} invalid byte sequences were replaced with U+FFFD (�)."),
                    name=path.name, count=bad),)


# -- PDF -----------------------------------------------------------------------------------------------
_PDF_DAMAGED = QT_TRANSLATE_NOOP("Core", "{name} is a damaged PDF ({reason}).")


def _read_pdf(path: Path) -> DocumentText:
    import pypdfium2 as pdfium  # ~20 ms to load: only when a PDF is read

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium.raw.FPDF_ERR_PASSWORD:
            raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} is an encrypted PDF."), name=path.name),
                                hint=QT_TRANSLATE_NOOP("Core", "Save a copy without a password and attach that.")) \
                from exc
        raise DocumentError(T(_PDF_DAMAGED, name=path.name, reason=str(exc)),
                            hint=QT_TRANSLATE_NOOP("Core", "Open it in a PDF viewer and save it again.")) from exc
    try:
        blocks = list(_pdf_pages(pdf, path))
        pages = len(pdf)
    finally:
        pdf.close()
    if not blocks:
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} has no text layer (a scanned PDF?); Strata cannot "
                                                        "read text from images yet (no OCR)."), name=path.name),
                            hint=QT_TRANSLATE_NOOP("Core", "Run OCR on it in another program first."))
    return DocumentText(PDF, tuple(blocks), pages=pages)


def _pdf_pages(pdf: Any, path: Path) -> Iterator[Block]:
    import pypdfium2 as pdfium

    for index in range(len(pdf)):
        try:
            text = _page_text(pdf, index)
        except pdfium.PdfiumError as exc:
            raise DocumentError(T(_PDF_DAMAGED, name=path.name, reason=str(exc))) from exc
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        if text:
            yield Block(text, PAGE, page=index + 1)


def _page_text(pdf: Any, index: int) -> str:
    """A page's text; its page and text page are closed even when PDFium fails on it."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            return str(textpage.get_text_bounded())
        finally:
            textpage.close()
    finally:
        page.close()


# -- DOCX ----------------------------------------------------------------------------------------------
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DOCX_BOMB = QT_TRANSLATE_NOOP("Core", "{name} inflates to more than {cap} of text: it looks like a zip bomb, so "
                                       "it was not read.")


def _read_docx(path: Path, cap: int) -> DocumentText:
    damaged = T(QT_TRANSLATE_NOOP("Core", "{name} is not a readable DOCX file."), name=path.name)
    try:
        with zipfile.ZipFile(path) as zf:
            try:
                info = zf.getinfo("word/document.xml")
            except KeyError:
                raise DocumentError(damaged, hint=QT_TRANSLATE_NOOP("Core", "It has no word/document.xml.")) from None
            if info.file_size > cap:
                raise DocumentError(T(_DOCX_BOMB, name=path.name, cap=format_bytes(cap)))
            with zf.open(info) as stream:
                blocks = list(_docx_blocks(stream, path, cap))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, xml.parsers.expat.ExpatError, EOFError,
            OSError) as exc:
        raise DocumentError(damaged, details=str(exc)) from exc
    return DocumentText(DOCX, tuple(blocks))


class _DtdRefused(Exception):
    """Raised from expat's declaration handlers: the document declares a DTD or an entity."""


def _docx_parser(elements: list[Element]) -> xml.parsers.expat.XMLParserType:
    """An expat parser that builds ``w:p`` elements into ``elements`` and refuses any DTD.

    Expat is used directly (not through ElementTree) so its declaration handlers can refuse a
    DTD or an entity in whatever encoding the file is (expat reads UTF-16 from its BOM, where no
    ASCII ``<!DOCTYPE`` shows in the bytes); this is how defusedxml does it. Word never writes one.
    """
    parser = xml.parsers.expat.ParserCreate(namespace_separator="}")
    builder = TreeBuilder()

    def tag(name: str) -> str:
        return "{" + name if "}" in name else name

    def refuse(*_: Any) -> NoReturn:
        raise _DtdRefused

    def start(name: str, attrs: dict[str, str]) -> None:
        builder.start(tag(name), {tag(k): v for k, v in attrs.items()})

    def end(name: str) -> None:
        elements.append(builder.end(tag(name)))

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    return parser


def _docx_blocks(stream: Any, path: Path, cap: int) -> Iterator[Block]:
    """Paragraphs of ``word/document.xml``, parsed as it inflates (64 KiB at a time)."""
    ended: list[Element] = []
    parser = _docx_parser(ended)
    inflated = 0
    headings: list[str] = []
    try:
        while chunk := stream.read(65536):
            inflated += len(chunk)
            if inflated > cap:  # the declared size lied: stop at the cap, never inflate the rest
                raise DocumentError(T(_DOCX_BOMB, name=path.name, cap=format_bytes(cap)))
            parser.Parse(chunk, False)
            yield from _docx_paragraphs(ended, headings)
        parser.Parse(b"", True)
    except _DtdRefused:  # entity declarations (billion laughs, external files): Word never writes one
        raise DocumentError(T(QT_TRANSLATE_NOOP("Core", "{name} declares a DTD; Word files never do, so it was "
                                                        "not read."), name=path.name)) from None
    yield from _docx_paragraphs(ended, headings)


def _docx_paragraphs(ended: list[Element], headings: list[str]) -> Iterator[Block]:
    """The blocks of the ``w:p`` elements ended since the last call (their content then dropped)."""
    elements = ended[:]
    ended.clear()
    for elem in elements:
        if elem.tag == f"{_W}p":
            block = _docx_paragraph(elem, headings)
            elem.clear()
            if block is not None:
                yield block


def _docx_paragraph(p: Any, headings: list[str]) -> Block | None:
    parts: list[str] = []
    for node in p.iter():
        if node.tag == f"{_W}t" and node.text:
            parts.append(node.text)
        elif node.tag == f"{_W}tab":
            parts.append("\t")
        elif node.tag in (f"{_W}br", f"{_W}cr"):
            parts.append("\n")
    text = "".join(parts).strip()
    if not text:
        return None
    style = p.find(f"{_W}pPr/{_W}pStyle")
    name = (style.get(f"{_W}val") or "") if style is not None else ""
    level = re.fullmatch(r"(?i)heading\s*([1-9])|title", name)
    if level:
        depth = int(level.group(1) or 1)
        del headings[depth - 1:]
        headings.append(text)
        return Block(text, HEADING, heading=" › ".join(headings))
    return Block(text, PARAGRAPH, heading=" › ".join(headings))


# -- HTML ----------------------------------------------------------------------------------------------
_BLOCK_TAGS = frozenset(["p", "div", "li", "ul", "ol", "table", "tr", "td", "th", "section", "article", "header", "footer", "blockquote", "dd", "dt", "dl", "br", "hr", "main", "nav", "aside", "figure", "figcaption", "caption", "body"])


class _HtmlText(HTMLParser):
    """Text of an HTML page as blocks: headings set the heading path, ``pre`` stays a code block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.headings: list[str] = []
        self._parts: list[str] = []
        self._skip = 0
        self._pre = 0
        self._heading: int | None = None

    def flush(self) -> None:
        raw = "".join(self._parts)
        self._parts = []
        text = raw.strip("\n") if self._pre else re.sub(r"\s+", " ", raw).strip()
        if not text:
            return
        if self._heading is not None:
            del self.headings[self._heading - 1:]
            self.headings.append(text)
            self.blocks.append(Block(text, HEADING, heading=" › ".join(self.headings)))
        else:
            self.blocks.append(Block(text, CODE_BLOCK if self._pre else PARAGRAPH, heading=" › ".join(self.headings)))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "template", "noscript"):
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self._heading = int(tag[1])
        elif tag == "pre":
            self.flush()
            self._pre += 1
        elif tag in _BLOCK_TAGS:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "template", "noscript"):
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self._heading = None
        elif tag == "pre":
            self.flush()
            self._pre = max(0, self._pre - 1)
        elif tag in _BLOCK_TAGS:
            self.flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._parts.append(data)


def _html_blocks(text: str) -> list[Block]:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    parser.flush()
    return parser.blocks


# -- Markdown, text, code ------------------------------------------------------------------------------
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_blocks(text: str) -> Iterator[Block]:
    """Markdown as blocks: ``#`` headings set the heading path; fenced code stays one block."""
    headings: list[str] = []
    para: list[str] = []
    fence: str | None = None

    def paragraph() -> Iterator[Block]:
        body = "\n".join(para).strip()
        para.clear()
        if body:
            yield Block(body, CODE_BLOCK if fence else PARAGRAPH, heading=" › ".join(headings))

    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            para.append(line)
            if opened and opened.group(1) == fence:
                yield from paragraph()
                fence = None
            continue
        if opened:
            yield from paragraph()
            fence = opened.group(1)
            para.append(line)
            continue
        heading = _ATX.match(line)
        if heading:
            yield from paragraph()
            del headings[len(heading.group(1)) - 1:]
            headings.append(heading.group(2))
            yield Block(heading.group(2), HEADING, heading=" › ".join(headings))
        elif not line.strip():
            yield from paragraph()
        else:
            para.append(line)
    yield from paragraph()


def _plain_blocks(text: str, *, code: bool) -> Iterator[Block]:
    """Paragraphs (blank-line separated); for source code each block is a code block."""
    for part in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        if part.strip():
            yield Block(part.strip("\n") if code else part.strip(), CODE_BLOCK if code else PARAGRAPH)
