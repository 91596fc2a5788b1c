"""The chat page and models: a conversation keeps the model it was answered with, and dropped
GGUF files (real widgets offscreen, SQLite, the real CPU engine)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from strata_gui.core.chat.records import COMPLETE
from tests.chat.test_chat_page import Engines, _short, page_env  # noqa: F401  (the fixture)
from tests.parity.test_gui_cli_parity import gui
from tests.runtime.conftest import cpu_spec


@pytest.mark.engine
def test_a_reopened_conversation_goes_on_with_its_own_model(page_env, test_engines: Engines,  # noqa: F811
                                                            test_model: Path, tmp_path: Path) -> None:
    """Issue 48 item 5: the R1 chat reopened answered with another model and the header switched
    silently. A conversation keeps the model it was last answered with; a gone one is said plainly."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    other = tmp_path / "other-model.gguf"
    shutil.copyfile(test_model, other)
    first = page.new_conversation()  # made with test_model
    _short(service, first, 4)
    page.set_model(other)
    loop.run_until_complete(page.send_text("hello").wait())  # answered with the other model
    assert not errors
    assert [w.message.status for w in page.message_widgets.values()][-1] == COMPLETE
    assert service.store.conversation(first).model == str(other)

    page.set_model(test_model)
    second = page.new_conversation()
    assert page.model_label.text() == test_model.name
    page.open_conversation(first)
    assert service.model == other and page.model_label.text() == other.name
    assert not page.notice.isVisibleTo(page)

    # Its model deleted: the chat's model stays, the notice says why and offers to go on with it.
    page.open_conversation(second)
    assert service.model == test_model
    other.unlink()
    page.open_conversation(first)
    assert service.model == test_model and page.model_label.text() == test_model.name
    assert page.notice.isVisibleTo(page)
    assert "other-model.gguf, which is no longer on disk" in page.notice.text.text()
    assert page.notice.action_button.text() == f"Continue with {test_model.name}"
    page.notice.action_button.click()
    assert not page.notice.isVisibleTo(page)
    assert service.store.conversation(first).model == str(test_model)
    page.open_conversation(second)
    page.open_conversation(first)
    assert not page.notice.isVisibleTo(page)


@pytest.mark.engine
def test_the_picker_names_the_chosen_model_and_the_header_waits_for_its_engine(
        page_env, test_engines: Engines, test_model: Path, tmp_path: Path, qtbot: QtBot) -> None:  # noqa: F811
    """Issue 48 item 13: "Choose model…" stayed on the picker after a choice, and "engine ready" (the
    last model's) stayed in the header after another model was chosen, before it had loaded."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    assert page.model_button.text() == test_model.name  # the last session's model
    other = tmp_path / "other-model.gguf"
    shutil.copyfile(test_model, other)
    _short(service, page.new_conversation(), 4)
    loop.run_until_complete(page.send_text("hello").wait())
    assert not errors and "engine ready" in page.engine_state.text()

    page.library_models = [test_model, other]  # what the library read found
    page.model_menu.popup(page.model_button.mapToGlobal(page.model_button.rect().bottomLeft()))  # as a click does
    qtbot.waitUntil(page.model_menu.isVisible)
    next(a for a in page.model_menu.actions() if a.text() == other.name).trigger()
    page.model_menu.hide()
    assert service.model == other and page.model_button.text() == other.name
    assert "ready" not in page.engine_state.text()
    assert "starts with your first message" in page.engine_state.text()
    loop.run_until_complete(page.send_text("hello again").wait())
    assert not errors and "engine ready" in page.engine_state.text()
    running = service.running_engine
    assert running is not None and running.model == other


def _drop(widget: QWidget, files: list[Path]) -> None:
    """Drop ``files`` from the file manager onto ``widget`` (Qt's own drag events, as a drop sends them)."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(f)) for f in files])
    where = QPointF(widget.rect().center())
    enter = QDragEnterEvent(widget.rect().center(), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(where, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, drop)


def test_a_gguf_dropped_on_the_chat_page_is_its_model_and_stays_in_the_library(
        qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop, test_model: Path, tmp_path: Path) -> None:
    """Issue 48 item 6: a drop on the Chat page did nothing, and dropped files were forgotten on restart."""
    model = tmp_path / "dropped-chat.gguf"
    shutil.copyfile(test_model, model)
    broken = tmp_path / "half-downloaded.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00 cut short")
    for ui in gui(qtbot, qapp, qasync_loop):
        page = ui.pages.chat
        ui.window.show()
        ui.window.show_page(page)
        _drop(page, [model])
        assert page.drop_handle is not None
        qasync_loop.run_until_complete(page.drop_handle.wait())
        assert ui.services.chat.model == model and page.model_label.text() == model.name
        assert not page.notice.isVisibleTo(page)
        # dropped on the message box: a file the chat cannot use is said, not pasted as text or a picture
        page.input.insertFromMimeData(_urls([broken]))
        assert page.drop_handle is not None
        qasync_loop.run_until_complete(page.drop_handle.wait())
        assert page.notice.isVisibleTo(page) and "The Chat page uses chat models" in page.notice.text.text()
        assert page.input.toPlainText() == "" and not page.attachments.images
        assert ui.services.chat.model == model
    # a restart: the library (and the model picker) still lists the dropped file
    for ui in gui(qtbot, qapp, qasync_loop):
        listed = {e.path: e for e in qasync_loop.run_until_complete(ui.services.models.scan_library())}
        assert model in listed and not listed[model].broken
        assert model in qasync_loop.run_until_complete(ui.services.models.usable_models())


def _urls(files: list[Path]) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(f)) for f in files])
    return mime
