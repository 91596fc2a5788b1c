"""The message input: Enter sends, Shift+Enter inserts a new line."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget


class ChatInput(QPlainTextEdit):
    """Plain-text input that grows to a few lines.

    Signals:
        submitted(str): Enter was pressed with non-blank text.
    """

    submitted = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(self.tr("Message the model…  (Enter sends, Shift+Enter adds a line)"))
        self.setTabChangesFocus(True)
        self.setFixedHeight(76)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.AltModifier)
        ):
            text = self.toPlainText()
            if text.strip():
                self.submitted.emit(text)
            event.accept()
            return
        super().keyPressEvent(event)
