"""The conversation list's "⋯" menu: export the open conversation (Markdown, JSON, HTML) and
import conversations exported by ChatGPT or Open WebUI.

Each action asks for a file in a Qt file dialog opened window-modal (``open()``, not a nested
event loop), then does the work: an export writes the core's text, an import runs the core's
import on the bridge (the file is parsed off the event loop) and the list is refreshed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu, QToolButton, QWidget

from strata_gui.core.base import StrataError
from strata_gui.core.chat import EXPORT_SUFFIXES, ChatService, ImportResult, export_conversation, import_file
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.i18n import LiveTexts, error_line


def file_name(title: str, fmt: str) -> str:
    """A file name for the conversation ``title`` (characters no file system takes are dropped)."""
    stem = " ".join(re.sub(r'[\\/:*?"<>|\x00-\x1f]+', " ", title).split()).strip(" .")[:80] or "conversation"
    return stem + EXPORT_SUFFIXES[fmt]


class ConversationMenu(QToolButton):
    """The "⋯" button beside Rename and Delete.

    Args:
        service: The chat service (its store holds the conversations).
        bridge: Runs imports.
        current: The open conversation's id (None: export is disabled).

    Signals:
        reported(str, str): A line for the page's notice, and its level ("info", "error").
        imported(object): An import finished (its :class:`ImportResult`): the list is refreshed.
    """

    reported = Signal(str, str)
    imported = Signal(object)

    def __init__(self, service: ChatService, bridge: AsyncBridge, current: Callable[[], int | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self._service = service
        self._bridge = bridge
        self._current = current
        self.dialog: QFileDialog | None = None  # the file dialog open now
        self.import_task: TaskHandle | None = None
        self.setText("⋯")
        self.texts.set(self.setToolTip, lambda: self.tr("Export this conversation, or import conversations from ChatGPT or Open WebUI"))
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self)
        self.export_actions: dict[str, QAction] = {}
        for fmt, text in (("md", self.tr("Export as Markdown…")), ("json", self.tr("Export as JSON…")),
                          ("html", self.tr("Export as HTML…"))):
            self.export_actions[fmt] = menu.addAction(text)
            self.export_actions[fmt].triggered.connect(lambda _checked=False, f=fmt: self.ask_export(f))
        menu.addSeparator()
        self.import_action = menu.addAction(self.tr("Import from ChatGPT or Open WebUI…"), self.ask_import)
        menu.aboutToShow.connect(self._enable)
        self.setMenu(menu)

    def _enable(self) -> None:
        for action in self.export_actions.values():
            action.setEnabled(self._current() is not None)

    def _dialog(self, title: str, name_filter: str, on_file: Callable[[Path], object], *, save: bool,
                start: str = "") -> QFileDialog:
        dialog = QFileDialog(self.window(), title, start, name_filter)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save else QFileDialog.AcceptMode.AcceptOpen)
        dialog.setFileMode(QFileDialog.FileMode.AnyFile if save else QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda chosen: on_file(Path(chosen)))
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.open()
        return dialog

    # -- export ------------------------------------------------------------------------------------
    def ask_export(self, fmt: str) -> QFileDialog | None:
        conversation_id = self._current()
        conv = self._service.store.conversation(conversation_id) if conversation_id is not None else None
        if conv is None:
            return None
        filters = {"md": self.tr("Markdown (*.md)"), "json": self.tr("JSON (*.json)"), "html": self.tr("Web page (*.html)")}
        dialog = self._dialog(self.tr("Export conversation"), filters[fmt],
                              lambda path: self.export(conv.id, fmt, path), save=True,
                              start=str(Path.home() / file_name(conv.title, fmt)))
        dialog.setDefaultSuffix(EXPORT_SUFFIXES[fmt].lstrip("."))
        return dialog

    def export(self, conversation_id: int, fmt: str, path: Path) -> bool:
        """Write the conversation to ``path``; False (and a notice why) when it could not be."""
        try:
            text = export_conversation(self._service.store, conversation_id, fmt)
            path.write_text(text, encoding="utf-8")
        except StrataError as exc:
            self.reported.emit(error_line(exc), "error")
            return False
        except OSError as exc:
            self.reported.emit(self.tr("Could not write {0}: {1}").format(path, exc.strerror or exc), "error")
            return False
        self.reported.emit(self.tr("Exported to {0}").format(path), "info")
        return True

    # -- import ------------------------------------------------------------------------------------
    def ask_import(self) -> QFileDialog:
        return self._dialog(self.tr("Import conversations"), self.tr("Exports (*.json);;All files (*)"),
                            self.import_from, save=False)

    def import_from(self, path: Path) -> TaskHandle:
        """Import every conversation of ``path`` (none when the file is not right: the error says why)."""
        store = self._service.store
        handle = self._bridge.run(lambda _p: import_file(store, path), name=self.tr("Import conversations"),
                                  show_errors=False)
        handle.failed.connect(lambda exc: self.reported.emit(error_line(exc), "error"))
        handle.succeeded.connect(self._imported)
        self.import_task = handle
        return handle

    def _imported(self, result: ImportResult) -> None:
        n, source = len(result.conversation_ids), result.source
        text = (self.tr("Imported 1 conversation from {0}.").format(source) if n == 1
                else self.tr("Imported {0} conversations from {1}.").format(f"{n:,}", source))
        if result.skipped:
            text += " " + self.tr("Empty conversations left out: {0}.").format(f"{result.skipped:,}")
        self.imported.emit(result)  # opens the first one (which may say its model is not here) ...
        self.reported.emit(text, "info")  # ... and the import's own report is what stays on show
