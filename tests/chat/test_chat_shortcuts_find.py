"""The chat page's shortcuts (Ctrl+N, Esc, Ctrl+F, Ctrl+K, Ctrl+L) and its find bar, pressed on
the real page in an active window (a shortcut only fires there), over a real SQLite store; Esc
stops a reply of the real CPU engine."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QTextEdit

from strata_gui.core.chat.records import STOPPED
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.ui.chat.find_bar import CURRENT_COLOUR, MATCH_COLOUR
from tests.chat import test_chat_page
from tests.chat.test_chat_page import wait_until
from tests.runtime.conftest import cpu_spec
from tests.support import engines as _engines

CTRL = Qt.KeyboardModifier.ControlModifier
page_env = test_chat_page.page_env  # the chat page's fixture: a real store, bridge and pool


def _active(page) -> bool:  # type: ignore[no-untyped-def]
    """Whether the page's window is active (asked again until it is: offscreen activation is
    asynchronous, and an earlier test's window going away can take it back)."""
    if QApplication.activeWindow() is page.window():
        return True
    page.window().raise_()
    page.window().activateWindow()
    return False


def _activate(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: _active(page), timeout=10_000)


def _fill(service, texts: list[tuple[str, str]]) -> int:  # type: ignore[no-untyped-def]
    conv = service.store.create_conversation("notes")
    service.store.add_messages(conv.id, texts)
    return int(conv.id)


def test_ctrl_n_ctrl_l_and_ctrl_k(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, _loop, errors = page_env
    page.on_shown()
    _activate(qtbot, page)
    before = len(service.store.conversations())
    qtbot.keyClick(page.conversation_list, Qt.Key.Key_N, CTRL)
    assert len(service.store.conversations()) == before + 1
    assert page.conversation_id == service.store.conversations()[0].id
    # Ctrl+L: from the conversation list back to the message box
    page.conversation_list.setFocus()
    qtbot.waitUntil(page.conversation_list.hasFocus)
    qtbot.keyClick(page.conversation_list, Qt.Key.Key_L, CTRL)
    qtbot.waitUntil(page.input.hasFocus)
    # Ctrl+K from the message box opens the model picker (and types nothing)
    qtbot.keyClick(page.input, Qt.Key.Key_K, CTRL)
    qtbot.waitUntil(page.model_menu.isVisible)
    assert page.input.toPlainText() == ""
    page.model_menu.close()
    assert "Ctrl+N" in page.new_button.toolTip() and "Ctrl+K" in page.model_button.toolTip()
    assert not errors


def _highlights(view: QTextEdit | QPlainTextEdit) -> list[tuple[str, str]]:
    return [(s.cursor.selectedText(), s.format.background().color().name()) for s in view.extraSelections()]


def test_ctrl_f_finds_counts_highlights_and_esc_closes(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, _loop, _errors = page_env
    filler = [item for i in range(8) for item in (("user", f"question {i}"), ("assistant", "nothing here " * 40))]
    conv_id = _fill(service, [("user", "Where is the Apple?"), ("assistant", "The apple is on the table; an APPLE a day."),
                              *filler, ("user", "last apple")])
    page.on_shown()
    page.open_conversation(conv_id)
    _activate(qtbot, page)
    qtbot.keyClick(page.input, Qt.Key.Key_F, CTRL)
    bar = page.find_bar
    assert bar.isVisible() and bar.field.hasFocus()
    qtbot.keyClicks(bar.field, "apple")
    qtbot.waitUntil(lambda: bar.count_label.text() == "1 of 4")  # case-insensitive, in every loaded message
    first = bar.matches[0].target
    assert isinstance(first, QTextEdit)
    assert _highlights(first) == [("Apple", CURRENT_COLOUR.name())]
    # Enter goes to the next match, Shift+Enter back; the last one is scrolled into view.
    qtbot.keyClick(bar.field, Qt.Key.Key_Return)
    assert bar.count_label.text() == "2 of 4"
    second = bar.matches[1].target
    assert _highlights(second) == [("apple", CURRENT_COLOUR.name()), ("APPLE", MATCH_COLOUR.name())]
    assert _highlights(first) == [("Apple", MATCH_COLOUR.name())]
    qtbot.keyClick(bar.field, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(bar.field, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count_label.text() == "4 of 4"  # wraps around
    last = bar.matches[3].target
    viewport = page.scroll_area.viewport()
    top = last.mapTo(viewport, last.rect().topLeft()).y()
    assert 0 <= top < viewport.height()
    bar.field.setText("pear")
    qtbot.waitUntil(lambda: bar.count_label.text() == "No matches")
    assert not any(_highlights(m) for m in (first, second, last))
    bar.field.setText("apple")
    qtbot.waitUntil(lambda: len(bar.matches) == 4)
    qtbot.keyClick(bar.field, Qt.Key.Key_Escape)
    assert not bar.isVisible() and not _highlights(first)
    # (the window's focus child: offscreen, the window may have lost its activation meanwhile)
    assert page.window().focusWidget() is page.input


def test_find_reaches_code_blocks(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, _loop, _errors = page_env
    conv_id = _fill(service, [("user", "code?"), ("assistant", "Here:\n\n```python\nneedle = 1\n```\n")])
    page.open_conversation(conv_id)
    page.find_bar.open_bar()
    page.find_bar.field.setText("needle")
    assert page.find_bar.search() == 1
    label = page.find_bar.matches[0].target
    assert label.selectedText() == "needle"


@pytest.mark.engine
def test_esc_stops_the_reply(page_env, test_engines: _engines.TestEngines, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, loop, _errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    page.on_shown()
    conv_id = page.new_conversation()
    service.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=900, seed=5))
    _activate(qtbot, page)
    handle = page.send_text("tell me a long story")
    assert handle is not None

    async def scenario() -> None:
        await wait_until(lambda: any(w.message.role == "assistant" and len(w.text) > 20
                                     for w in page.message_widgets.values()))
        await wait_until(lambda: _active(page), timeout=10)
        qtbot.keyClick(page.input, Qt.Key.Key_Escape)
        await handle.wait()

    loop.run_until_complete(scenario())
    assert handle.was_cancelled
    reply = next(w for w in page.message_widgets.values() if w.message.role == "assistant")
    assert reply.message.status == STOPPED
