"""Documents in the app: attach a PDF in the chat (indexing with progress), ask, see the citations
under the reply, click one and see its page with the passage marked; the CLI gives the same
citations for the same question (parity). The real CPU engine, the real database, real widgets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose
from strata_gui.cli import run_command
from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.chat.documents import PassageDialog
from tests.support import gguf_model
from tests.support.documents import write_pdf
from tests.support.engines import TestEngines

HOOKS = UiHooks(open_path=lambda _p: None, choose_folder=lambda: None, choose_model=lambda: None,
                save_path=lambda _n: None)
QUESTION = "What does the keeper of cape 23 log?"
CTX = 1024


def _app(qapp: QApplication) -> tuple[AppServices, AsyncBridge, AppUi]:
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    return services, bridge, compose(services, bridge, qapp, HOOKS)


def _close(loop: asyncio.AbstractEventLoop, services: AppServices, bridge: AsyncBridge, ui: AppUi) -> None:
    ui.window.close()
    loop.run_until_complete(bridge.shutdown())
    loop.run_until_complete(services.aclose())
    ui.window.deleteLater()


def _key(citations: list[Any]) -> list[tuple[Any, ...]]:
    return [(c["number"], c["label"], c["page"], c["start"], c["end"]) for c in citations]


@pytest.mark.engine
def test_attach_ask_click_a_citation_and_the_cli_cites_the_same(
        qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, test_engines: TestEngines,
        test_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = write_pdf(tmp_path / "capes.pdf", pages=40)
    services, bridge, ui = _app(qapp)
    chat = ui.pages.chat
    try:
        ui.window.show()
        _engine, probe = qasync_loop.run_until_complete(services.engines.add_local(test_engines.cpu_dir, "cpu"))
        assert probe.usable, probe.message
        services.settings.update(context_size=CTX, parallel_slots=1)
        chat.set_model(test_model)
        conv = chat.new_conversation()
        services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=4, seed=1))
        handle = chat.attach_files([pdf])
        assert handle is not None and chat.documents_panel is not None and chat.documents_panel.isVisible()
        progress: list[object] = []
        handle.progress.connect(progress.append)
        qasync_loop.run_until_complete(asyncio.wait_for(handle.wait(), 60))
        assert handle.error is None, handle.error
        assert chat.documents_panel.list.count() == 1 and "capes.pdf" in chat.documents_panel.list.item(0).text()
        assert progress  # the bar moved ("Reading capes.pdf…")
        reply_handle = chat.send_text(QUESTION)
        assert reply_handle is not None
        qasync_loop.run_until_complete(asyncio.wait_for(reply_handle.wait(), 120))
        assert reply_handle.error is None, reply_handle.error
        reply = reply_handle.result
        widget = chat.message_widgets[reply.id]
        assert widget.sources.isVisible() and "[1] capes.pdf, page 23" in widget.sources.text()
        assert "most relevant passages" in widget.sources.text()
        gui = [c.to_json() for c in widget.sources.citations]
        # Clicking the first citation opens its page with the passage marked.
        widget.sources.linkActivated.emit("cite:0")
        dialog = next(w for w in qapp.topLevelWidgets() if isinstance(w, PassageDialog) and w.isVisible())
        assert dialog.render_task is not None
        qasync_loop.run_until_complete(asyncio.wait_for(dialog.render_task.wait(), 30))
        assert dialog.page_image is not None and dialog.page_image.page == 23 and dialog.page_image.marks
        assert dialog.page_view.pixmap() is not None and not dialog.page_view.pixmap().isNull()
        assert dialog.page_label.text() == "Page 23 of 40"
        dialog.close()
        # After a restart the reply still has its citations (kept with the message).
        stored = services.chat.store.message(reply.id)
        assert stored is not None and _key(stored.settings["documents"]["citations"]) == _key(gui)
    finally:
        _close(qasync_loop, services, bridge, ui)
    capsys.readouterr()
    assert run_command(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir), "--ctx-size", str(CTX),
                        "--parallel", "1", "--max-tokens", "4", "--seed", "1", "--attach", str(pdf), "--json",
                        QUESTION]) == 0
    cli = json.loads(capsys.readouterr().out)["citations"]
    assert _key(cli) == _key(gui) and cli[0]["page"] == 23


def test_the_documents_panel_removes_and_a_markdown_citation_opens_its_passage(
        qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    notes = tmp_path / "tides.md"
    notes.write_text("# Tides\n\n## Spring\n\nHigh water at the harbour is at noon in spring.\n", encoding="utf-8")
    services, bridge, ui = _app(qapp)
    chat = ui.pages.chat
    try:
        handle = chat.attach_files([notes])
        assert handle is not None
        qasync_loop.run_until_complete(asyncio.wait_for(handle.wait(), 30))
        panel = chat.documents_panel
        assert panel is not None and panel.list.count() == 1 and panel.title.text() == "Documents (1)"
        conv = chat.conversation_id
        assert conv is not None
        context = qasync_loop.run_until_complete(services.documents.context_for(conv, "When is high water?", 4096))
        assert context is not None and context.citations[0].label() == "tides.md › Tides › Spring"
        dialog = chat.open_citation(context.citations[0])
        assert dialog is not None and "High water at the harbour is at noon" in dialog.text_view.toPlainText()
        assert "Tides › Spring" in dialog.text_view.toPlainText() and not dialog.prev_button.isVisible()
        dialog.close()
        # The search choice lists the library's embedding models; choosing one is Settings' choice.
        embed = gguf_model.write_model(tmp_path / "models" / "strata-test-embed-F16.gguf",
                                       gguf_model.ModelSpec(pooling=1, name="Strata Test Embed"))
        services.models.set_model_dirs([embed.parent])
        listed = panel.list_models()
        assert listed is not None
        qasync_loop.run_until_complete(asyncio.wait_for(listed.wait(), 30))
        assert [panel.vectors.itemText(i) for i in range(panel.vectors.count())] == [
            "Full-text search only", "Full text and vectors: strata-test-embed-F16.gguf"]
        panel.vectors.activated.emit(1)
        assert services.settings.current.embedding_model == str(embed)
        panel.vectors.activated.emit(0)
        assert services.settings.current.embedding_model == ""
        removed = panel.remove_selected()
        assert removed is not None
        qasync_loop.run_until_complete(asyncio.wait_for(removed.wait(), 30))
        assert panel.list.count() == 0 and not panel.isVisible() and services.documents.documents(conv) == []
        # A document dropped (or pasted) on the message box is attached, never read as a picture or text.
        from PySide6.QtCore import QMimeData, QUrl

        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(write_pdf(tmp_path / "dropped.pdf", pages=2)))])
        chat.input.insertFromMimeData(mime)
        dropped = panel.task
        assert dropped is not None
        qasync_loop.run_until_complete(asyncio.wait_for(dropped.wait(), 30))
        assert chat.input.toPlainText() == "" and chat.attachments.images == []
        assert [d.name for d in services.documents.documents(conv)] == ["dropped.pdf"]
        bad = tmp_path / "photo.pdf"
        bad.write_bytes(b"\xff\xd8\xff\xe0" + b"\x00" * 64)
        failed = chat.attach_files([bad])
        assert failed is not None
        qasync_loop.run_until_complete(asyncio.wait_for(failed.wait(), 30))
        assert "photo.pdf is not what its name says: it is JPEG" in chat.notice.text.text()
    finally:
        _close(qasync_loop, services, bridge, ui)
