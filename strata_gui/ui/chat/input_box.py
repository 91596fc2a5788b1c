"""The message input: Enter sends, Shift+Enter inserts a new line; pasted or dropped pictures
and documents become attachments instead of text."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from strata_gui.ui.chat.attachments import has_images, local_files, model_files, raw_images
from strata_gui.ui.i18n import LiveTexts


class ChatInput(QPlainTextEdit):
    """Plain-text input that grows to a few lines.

    Signals:
        submitted(str): Enter was pressed with non-blank text (or with images attached).
        images_received(list): Pictures were pasted or dropped: ``[(bytes, name), ...]``.
        models_received(list): GGUF model files were dropped: ``[Path, ...]``.
        files_received(list): Other local files were pasted or dropped (pictures or documents; the
            page sorts them): ``[Path, ...]``. Emitted instead of ``images_received`` when a page
            takes documents (``takes_files``).
    """

    submitted = Signal(str)
    images_received = Signal(list)
    models_received = Signal(list)
    files_received = Signal(list)
    # Set by the page: Enter may send a message that is only images.
    has_attachments = False
    # Set by the page when it attaches documents: local files go to it as paths, never read here.
    takes_files = False

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.texts.set(self.setPlaceholderText, lambda: self.tr("Message the model…  (Enter sends, Shift+Enter adds a line)"))
        self.setTabChangesFocus(True)
        self.setFixedHeight(76)
        # Set by the page: transcribes a dropped recording (True: the drop was audio, not text).
        self.take_audio: Callable[[QMimeData], bool] | None = None

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.AltModifier)
        ):
            text = self.toPlainText()
            if text.strip() or self.has_attachments:
                self.submitted.emit(text)
            event.accept()
            return
        super().keyPressEvent(event)

    # Paste and drop both end here (QPlainTextEdit routes drops through insertFromMimeData).
    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return has_images(source) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        if self.take_audio is not None and self.take_audio(source):
            return
        models = model_files(source)
        if models:
            self.models_received.emit(models)
        files = local_files(source) if self.takes_files else []
        if files:
            self.files_received.emit(files)
            return
        if has_images(source):
            found = raw_images(source)
            if found:
                self.images_received.emit(found)
                return
        if not models:  # a dropped model is not pasted as its path
            super().insertFromMimeData(source)
