"""Error and crash dialog: the message, a hint, details to copy, and the log to open."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QT_TRANSLATE_NOOP
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError
from strata_gui.ui.i18n import core_text

# The error tree's titles (core/base/errors.py), listed so lupdate collects them for ErrorDialog.
_TITLES = (
    QT_TRANSLATE_NOOP("ErrorDialog", "Something went wrong"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Settings problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Storage problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Not enough disk space"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Network problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Rate limited"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Download corrupted"),
    QT_TRANSLATE_NOOP("ErrorDialog", "GPU detection problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engine problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engine catalog problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engine download failed"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engine install failed"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Unsafe archive"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engine does not run here"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Tuning table rejected"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Model problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Not a valid GGUF file"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Hugging Face hub problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engine server problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Chat problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Image problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Speech problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Document problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Engines busy"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Tool problem"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Reply does not fit the chat format"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Unknown model"),
    QT_TRANSLATE_NOOP("ErrorDialog", "Wrong kind of model"),
)


class ErrorDialog(QDialog):
    """Shows one StrataError: headline, hint, collapsible details, Copy details, Open log."""

    def __init__(
        self,
        error: StrataError,
        *,
        log_file: Path,
        open_path: Callable[[Path], object],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.error = error
        self._log_file = log_file
        self._open_path = open_path
        self.setWindowTitle(self.tr(error.title))
        self.setMinimumWidth(520)
        self.message = QLabel(core_text(error.message))
        self.message.setWordWrap(True)
        self.message.setObjectName("sectionTitle")
        self.hint = QLabel(core_text(error.hint or ""))
        self.hint.setWordWrap(True)
        self.hint.setVisible(bool(error.hint))
        self.details = QPlainTextEdit(error.details or "")
        self.details.setReadOnly(True)
        self.details.setVisible(False)
        self.details.setMinimumHeight(180)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.toggle_button = QPushButton(self.tr("Show details"))
        self.toggle_button.setEnabled(bool(error.details))
        self.toggle_button.clicked.connect(self._toggle)
        self.copy_button = QPushButton(self.tr("Copy details"))
        self.copy_button.clicked.connect(self.copy_details)
        self.log_button = QPushButton(self.tr("Open log"))
        self.log_button.clicked.connect(lambda: self._open_path(self._log_file))
        for b in (self.toggle_button, self.copy_button, self.log_button):
            buttons.addButton(b, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.hint)
        layout.addWidget(self.details, 1)
        layout.addWidget(buttons)

    def details_text(self) -> str:
        parts = [self.error.message]
        if self.error.hint:
            parts.append(self.error.hint)
        if self.error.details:
            parts.append(self.error.details)
        parts.append(f"Log: {self._log_file}")
        return "\n\n".join(parts)

    def copy_details(self) -> None:
        QGuiApplication.clipboard().setText(self.details_text())

    def _toggle(self) -> None:
        show = not self.details.isVisible()
        self.details.setVisible(show)
        self.toggle_button.setText(self.tr("Hide details") if show else self.tr("Show details"))
