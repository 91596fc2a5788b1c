"""Every format read through its real parser from files the test writes, and every kind of bad
input refused with a clear error (the error tree's DocumentError, with the file's name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_gui.core.base.errors import DocumentError
from strata_gui.core.documents import chunk_blocks, document_text, kind_of, read_document
from strata_gui.core.documents.readers import CODE_BLOCK, HEADING, MAX_DOCX_XML_BYTES, MAX_FILE_BYTES, PAGE
from tests.support.documents import (
    write_docx,
    write_docx_bomb,
    write_pdf,
    write_scanned_pdf,
    write_sparse,
)
from tests.support.images import write_png


def test_a_pdf_reads_page_by_page_and_its_chunks_keep_their_pages(tmp_path: Path) -> None:
    doc = read_document(write_pdf(tmp_path / "capes.pdf", pages=5))
    assert doc.kind == "pdf" and doc.pages == 5
    assert [b.page for b in doc.blocks] == [1, 2, 3, 4, 5] and all(b.kind == PAGE for b in doc.blocks)
    assert "Lighthouse 3 stands on cape number 3" in doc.blocks[2].text
    chunks = chunk_blocks(doc.blocks)
    assert {c.page for c in chunks} == {1, 2, 3, 4, 5} and len(chunks) > 5  # pages longer than a chunk split
    text = document_text(doc.blocks)
    for chunk in chunks:  # each chunk's offsets point at its passage in the document's text
        first_line = chunk.text.splitlines()[0]
        assert text[chunk.start:chunk.start + len(first_line)] == first_line
        assert f"cape number {chunk.page}" in chunk.text or f"cape {chunk.page}" in chunk.text


def test_docx_markdown_html_and_code_keep_their_structure(tmp_path: Path) -> None:
    docx = read_document(write_docx(tmp_path / "harbour.docx"))
    assert [b.heading for b in docx.blocks if b.kind != HEADING] == [
        "Harbour rules", "Harbour rules › Night watch", "Fees"]
    md = tmp_path / "guide.md"
    md.write_text("# Install\n\nRun the setup.\n\n## Linux\n\n```sh\n# not a heading\nmake\n```\n\n# Use\n\nOpen it.\n",
                  encoding="utf-8")
    blocks = read_document(md).blocks
    code = next(b for b in blocks if b.kind == CODE_BLOCK)
    assert "# not a heading" in code.text and code.heading == "Install › Linux"
    assert [b.heading for b in blocks][-1] == "Use"
    html = tmp_path / "page.html"
    html.write_text("<html><head><style>p{}</style><script>var x;</script></head><body><h1>Tides</h1>"
                    "<p>High water at <b>noon</b>.</p><h2>Spring</h2><pre>x = 1\n  y = 2</pre></body></html>",
                    encoding="utf-8")
    hb = read_document(html).blocks
    assert [(b.kind, b.text, b.heading) for b in hb] == [
        (HEADING, "Tides", "Tides"), ("paragraph", "High water at noon.", "Tides"),
        (HEADING, "Spring", "Tides › Spring"), (CODE_BLOCK, "x = 1\n  y = 2", "Tides › Spring")]
    src = tmp_path / "tool.py"
    src.write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n", encoding="utf-8")
    assert kind_of(src) == "code" and [b.text for b in read_document(src).blocks] == [
        "def a():\n    return 1", "def b():\n    return 2"]


def test_invalid_utf8_is_replaced_and_said(tmp_path: Path) -> None:
    bad = tmp_path / "log.txt"
    bad.write_bytes("caf\u00e9 ok\n\n".encode() + b"broken \xff\xfe byte and \xc3 here\n")
    doc = read_document(bad)
    assert "\ufffd" in document_text(doc.blocks) and "café ok" in document_text(doc.blocks)
    assert len(doc.notes) == 1 and "log.txt is not valid UTF-8" in doc.notes[0] and "3 invalid" in doc.notes[0]


def test_an_encrypted_a_damaged_and_a_scanned_pdf_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"locked.pdf is an encrypted PDF") as enc:
        read_document(write_pdf(tmp_path / "locked.pdf", pages=1, password="secret"))
    assert enc.value.hint and "without a password" in enc.value.hint
    good = write_pdf(tmp_path / "good.pdf", pages=3).read_bytes()
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(good[: len(good) // 3])
    with pytest.raises(DocumentError, match=r"damaged.pdf is a damaged PDF"):
        read_document(damaged)
    with pytest.raises(DocumentError, match=r"scan.pdf has no text layer .*\(no OCR\)") as scan:
        read_document(write_scanned_pdf(tmp_path / "scan.pdf", tmp_path))
    assert scan.value.hint and "OCR" in scan.value.hint


def test_files_that_are_not_what_their_names_say(tmp_path: Path) -> None:
    png_as_pdf = write_png(tmp_path / "report.pdf")
    with pytest.raises(DocumentError, match=r"report.pdf is not what its name says: it is PNG"):
        read_document(png_as_pdf)
    text_as_docx = tmp_path / "letter.docx"
    text_as_docx.write_text("just words", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"letter.docx is not what its name says: it is not a DOCX"):
        read_document(text_as_docx)
    pdf_as_text = tmp_path / "notes.txt"
    pdf_as_text.write_bytes(write_pdf(tmp_path / "x.pdf", pages=1).read_bytes())
    with pytest.raises(DocumentError, match=r"notes.txt is not what its name says: it is PDF"):
        read_document(pdf_as_text)
    zip_not_docx = tmp_path / "fake.docx"
    zip_not_docx.write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    with pytest.raises(DocumentError, match=r"fake.docx is not a readable DOCX file"):
        read_document(zip_not_docx)


def test_a_2_gb_file_is_refused_from_its_size_with_the_cap(tmp_path: Path) -> None:
    for name, cap in (("huge.pdf", "256.0 MiB"), ("huge.txt", "64.0 MiB")):  # text is read whole: a lower cap
        huge = write_sparse(tmp_path / name, 2 * 1024**3)
        with pytest.raises(DocumentError, match=rf"{name} is 2\.0 GiB, larger than the {cap} a document may be"):
            read_document(huge)  # refused from its size: the message is made before any read
    assert MAX_FILE_BYTES == 256 * 1024**2


def test_a_docx_zip_bomb_is_refused_by_its_declared_and_its_actual_size(tmp_path: Path) -> None:
    bomb = write_docx_bomb(tmp_path / "bomb.docx", MAX_DOCX_XML_BYTES + (1 << 20))
    assert bomb.stat().st_size < 2 * 1024**2  # a few hundred KB that inflate past the cap
    with pytest.raises(DocumentError, match=r"bomb.docx inflates to more than 64.0 MiB of text: it looks like a zip "
                                            "bomb"):
        read_document(bomb)
    # The cap is the reader's: a lower one refuses a smaller bomb the same way.
    with pytest.raises(DocumentError, match=r"eight.docx inflates to more than 2.0 MiB"):
        read_document(write_docx_bomb(tmp_path / "eight.docx", 8 * 1024**2), max_docx_xml=2 * 1024**2)


def test_a_docx_that_declares_a_small_size_and_inflates_more_is_refused(tmp_path: Path) -> None:
    """The declared size lies (patched to 1,000 bytes in both headers): the entry is read no
    further than it says, and what was read is not a whole document."""
    import struct
    import zipfile

    liar = tmp_path / "liar.docx"
    body = b'<w:document xmlns:w="x"><w:body>' + b"<w:p><w:r><w:t>aaaa</w:t></w:r></w:p>" * 200_000 + \
        b"</w:body></w:document>"
    with zipfile.ZipFile(liar, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/document.xml", body)
    data = bytearray(liar.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, 1000)
    struct.pack_into("<I", data, central + 24, 1000)
    liar.write_bytes(bytes(data))
    assert zipfile.ZipFile(liar).getinfo("word/document.xml").file_size == 1000
    with pytest.raises(DocumentError, match=r"liar.docx is not a readable DOCX file"):
        read_document(liar)


def test_a_docx_with_a_dtd_is_refused(tmp_path: Path) -> None:
    import zipfile

    laughs = tmp_path / "laughs.docx"
    with zipfile.ZipFile(laughs, "w") as zf:
        zf.writestr("word/document.xml", '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><w:document/>')
    with pytest.raises(DocumentError, match=r"laughs.docx declares a DTD"):
        read_document(laughs)


def _docx_with(path: Path, document_xml: bytes) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("word/document.xml", document_xml)
    return path


_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def test_a_utf16_docx_with_a_dtd_is_refused_and_one_without_is_read(tmp_path: Path) -> None:
    """Expat reads UTF-16 from its BOM, where no ASCII ``<!DOCTYPE`` can be seen in the bytes: the
    DTD is refused by the parser itself, in any encoding, before an entity is expanded."""
    laughs = ('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE d [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;">]>'
              f'<w:document xmlns:w="{_W_NS}"><w:body><w:p><w:r><w:t>&b;</w:t></w:r></w:p></w:body></w:document>')
    for encoding in ("utf-16", "utf-16-be", "utf-16-le"):
        data = laughs.encode(encoding)
        if encoding != "utf-16":
            data = "\ufeff".encode(encoding) + data
        with pytest.raises(DocumentError, match=r"laughs.docx declares a DTD"):
            read_document(_docx_with(tmp_path / "laughs.docx", data))
    # A DOCTYPE with no entities, and an entity declared in an external subset, are refused the same.
    bare = ('<?xml version="1.0"?><!DOCTYPE d SYSTEM "http://example.invalid/x.dtd">'
            f'<w:document xmlns:w="{_W_NS}"/>').encode("utf-16")
    with pytest.raises(DocumentError, match=r"bare.docx declares a DTD"):
        read_document(_docx_with(tmp_path / "bare.docx", bare))
    plain = (f'<?xml version="1.0" encoding="UTF-16"?><w:document xmlns:w="{_W_NS}"><w:body>'
             '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Tides</w:t></w:r></w:p>'
             '<w:p><w:r><w:t>High water</w:t><w:tab/><w:t>at noon.</w:t></w:r></w:p></w:body></w:document>')
    doc = read_document(_docx_with(tmp_path / "plain.docx", plain.encode("utf-16")))
    assert [(b.kind, b.text, b.heading) for b in doc.blocks] == [
        (HEADING, "Tides", "Tides"), ("paragraph", "High water\tat noon.", "Tides")]


def test_a_huge_pdf_page_is_drawn_within_the_pixel_cap_with_its_passage_marked(tmp_path: Path) -> None:
    """A page's size is the file's to say: 7,200 points square would be 9,000 × 9,000 pixels
    (324 MB, copied twice) at the citation's scale; it is drawn within 40 Mpx, the passage's
    mark where its text is on the smaller picture. An ordinary page keeps the asked scale."""
    from fpdf import FPDF

    from strata_gui.core.documents import render_page

    huge = tmp_path / "poster.pdf"
    pdf = FPDF(unit="pt", format=(7200, 7200))
    pdf.set_font("helvetica", size=200)
    pdf.add_page()
    pdf.set_xy(3600, 3600)
    pdf.cell(text="Harbour tides")
    pdf.output(str(huge))
    image = render_page(huge, 1, "Harbour tides", scale=1.25)
    assert image.width * image.height <= 40_000_000
    assert image.width == image.height > 6000  # shrunk only as far as the cap needs
    [(x, y, _width, _height)] = image.marks
    assert image.width // 2 - 50 <= x < image.width * 3 // 4 and image.height // 2 - 200 <= y < image.height * 3 // 4
    assert len(image.rgba) == image.stride * image.height
    normal = render_page(write_pdf(tmp_path / "capes.pdf", pages=1), 1, scale=1.25)
    assert (normal.width, normal.height) == (745, 1053)  # A4 (595.3 × 841.9 points) at 1.25, rounded up
