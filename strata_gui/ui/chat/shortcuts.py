"""The chat page's keyboard shortcuts.

Ctrl+N starts a new chat, Esc closes the find bar or else stops the reply, Ctrl+F finds in the
conversation, Ctrl+K opens the model picker, Ctrl+L puts the cursor in the message box and
Ctrl+Shift+Space starts and stops a recording for speech to text (the microphone button records
while held). They live on the chat page, so they act only while it is shown; the window's own (Ctrl+1…9 for the
pages, Ctrl+Q) and the other pages' (Ctrl+S on Settings, Ctrl+Enter and Esc on Images) use other
keys or are hidden then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QPoint
from PySide6.QtGui import QKeySequence, QShortcut

if TYPE_CHECKING:
    from strata_gui.ui.pages.chat_page import ChatPage

# (keys, what it does): shown in the buttons' tooltips too.
NEW_CHAT = "Ctrl+N"
STOP = "Esc"
FIND = "Ctrl+F"
MODEL_PICKER = "Ctrl+K"
MESSAGE_BOX = "Ctrl+L"
PUSH_TO_TALK = "Ctrl+Shift+Space"  # first press records, the next one stops and transcribes


def escape(page: ChatPage) -> None:
    """Esc: close the find bar when it is open, else stop the reply being written."""
    if page.find_bar.isVisible():
        page.find_bar.close_bar()
    elif page.is_busy:
        page.stop()


def open_model_picker(page: ChatPage) -> None:
    """Ctrl+K: the model menu under its button (not while a remote engine answers: it has its own model)."""
    button = page.model_button
    if not button.isEnabled() or not button.isVisible():
        return
    # popup(), not the button's showMenu(): that one runs a nested event loop until the menu closes.
    page.model_menu.popup(button.mapToGlobal(QPoint(0, button.height())))


def focus_message_box(page: ChatPage) -> None:
    page.input.setFocus()
    cursor = page.input.textCursor()
    cursor.movePosition(cursor.MoveOperation.End)
    page.input.setTextCursor(cursor)


def add_chat_shortcuts(page: ChatPage) -> list[QShortcut]:
    """Create the chat page's shortcuts (they live as long as the page)."""
    actions = ((NEW_CHAT, page.new_conversation), (STOP, lambda: escape(page)),
               (FIND, page.find_bar.open_bar), (MODEL_PICKER, lambda: open_model_picker(page)),
               (MESSAGE_BOX, lambda: focus_message_box(page)),
               (PUSH_TO_TALK, lambda: page.voice.toggle_recording() if page.voice is not None else None))
    made = []
    for keys, action in actions:
        made.append(QShortcut(QKeySequence(keys), page, action))
    # Spelled out (not through an alias): lupdate finds only QCoreApplication.translate(...) calls.
    page.new_button.setToolTip(QCoreApplication.translate("ChatPage", "New chat ({0})").format(NEW_CHAT))
    page.stop_button.setToolTip(QCoreApplication.translate("ChatPage", "Stop the reply ({0})").format(STOP))
    page.model_button.setToolTip(QCoreApplication.translate("ChatPage", "Choose the model ({0})").format(MODEL_PICKER))
    return made
