"""Real documents written by the tests: PDFs (text, encrypted, image-only) with fpdf2, DOCX files
with python-docx, and hostile ones (a zip bomb, a sparse 2 GB file, misnamed files)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from fpdf import FPDF

from tests.support.images import write_png


def page_text(page: int) -> str:
    """The words on page ``page`` of :func:`write_pdf`'s document: each page names its own
    lighthouse, so a question about one has one right page."""
    return (f"Lighthouse {page} stands on cape number {page}. Its keeper logs the storms, the ships and the "
            f"fog signals of cape {page} every night. ") * 12


def write_pdf(path: Path, pages: int = 12, *, password: str | None = None) -> Path:
    """A text PDF of ``pages`` pages (see :func:`page_text`); encrypted when ``password`` is given."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for page in range(1, pages + 1):
        pdf.add_page()
        pdf.multi_cell(0, 5, page_text(page))
    if password is not None:
        pdf.set_encryption(owner_password=password + "-owner", user_password=password)
    pdf.output(str(path))
    return path


def write_scanned_pdf(path: Path, tmp: Path) -> Path:
    """A PDF whose pages are pictures only (a scan): no text layer."""
    picture = write_png(tmp / "scan.png", seed=3)
    pdf = FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.image(str(picture), x=10, y=10, w=120)
    pdf.output(str(path))
    return path


def write_docx(path: Path) -> Path:
    """A Word document with two headings and paragraphs under each."""
    import docx

    document = docx.Document()
    document.add_heading("Harbour rules", level=1)
    document.add_paragraph("Boats moor on the east quay from April to October.")
    document.add_heading("Night watch", level=2)
    document.add_paragraph("The night watch rings the bell at midnight and at four.")
    document.add_heading("Fees", level=1)
    document.add_paragraph("A mooring costs twelve crowns a week.")
    document.save(str(path))
    return path


def write_docx_bomb(path: Path, inflated_bytes: int) -> Path:
    """A DOCX whose ``word/document.xml`` inflates to ``inflated_bytes`` from a few hundred KB."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as entry:
            entry.write(b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
            block = b"<w:p><w:r><w:t>" + b"a" * 1000 + b"</w:t></w:r></w:p>"
            written = 0
            while written < inflated_bytes:
                entry.write(block * 1024)
                written += len(block) * 1024
            entry.write(b"</w:body></w:document>")
    return path


def write_sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk space (a hole)."""
    with path.open("wb") as f:
        f.truncate(size)
    return path
