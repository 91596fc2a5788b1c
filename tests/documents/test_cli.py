"""`strata chat --attach` (repeatable; --json carries the citations) and `strata docs list|remove`,
through the real CLI, the real CPU engine and the real database file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.app_services import build_app_services
from strata_gui.core.base.errors import DocumentError
from strata_gui.core.config.services import build_services
from tests.support.documents import write_docx, write_pdf
from tests.support.engines import TestEngines


@pytest.mark.engine
def test_chat_attach_json_carries_the_citations(test_engines: TestEngines, test_model: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    pdf = write_pdf(tmp_path / "capes.pdf", pages=40)
    docx = write_docx(tmp_path / "harbour.docx")
    code = run_command(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "1024",
                        "--max-tokens", "4", "--seed", "1", "--attach", str(pdf), "--attach", str(docx), "--json",
                        "What does the keeper of cape 23 log?"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["reply"]
    assert data["documents"]["mode"] == "retrieved" and data["documents"]["search"] == "full text"
    assert "most relevant passages" in data["documents"]["summary"]
    first = data["citations"][0]
    assert first["number"] == 1 and first["name"] == "capes.pdf" and first["page"] == 23
    assert first["label"] == "capes.pdf, page 23" and first["path"] == str(pdf.resolve())
    assert len(data["documents"]["used"]) == len(data["citations"])
    # The passages reached the engine: the prompt is far longer than the question.
    assert data["stats"]["prompt_n"] + (data["stats"].get("cache_n") or 0) > 300


@pytest.mark.engine
def test_chat_attach_streams_which_happened(test_engines: TestEngines, test_model: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Tides\n\nHigh water at the harbour is at noon.\n", encoding="utf-8")
    code = run_command(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "1024",
                        "--max-tokens", "4", "--attach", str(notes), "When is high water?"])
    err = capsys.readouterr().err
    assert code == 0 and "attached: notes.md (1 passages indexed)" in err
    assert "fit the context: they went whole" in err and "[1] notes.md › Tides" in err


def test_chat_attach_refuses_a_bad_file_before_any_engine(test_model: Path, tmp_path: Path) -> None:
    fake = tmp_path / "scan.pdf"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    with pytest.raises(DocumentError, match=r"scan.pdf is not what its name says: it is PNG"):
        run_command(["chat", "-m", str(test_model), "--attach", str(fake), "hi"])


def test_docs_list_and_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def attach() -> int:
        app = build_app_services(build_services())
        try:
            conv = app.chat_store.create_conversation("capes").id
            return (await app.documents.attach(conv, write_pdf(tmp_path / "capes.pdf", pages=3))).document.id
        finally:
            await app.aclose()

    doc_id = asyncio.run(attach())
    assert run_command(["docs", "list", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == doc_id and listed["name"] == "capes.pdf" and listed["pages"] == 3
    assert listed["conversations"] == 1 and listed["chunks"] >= 3
    assert run_command(["docs", "list"]) == 0
    assert "capes.pdf  (pdf," in capsys.readouterr().out
    assert run_command(["docs", "remove", str(doc_id)]) == 0
    assert capsys.readouterr().out == f"Removed document {doc_id} and its index.\n"
    assert run_command(["docs", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    with pytest.raises(DocumentError, match=rf"No document {doc_id}"):
        run_command(["docs", "remove", str(doc_id)])
