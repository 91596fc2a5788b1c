"""The preset picker in a conversation's settings: choose a preset for the open conversation,
save the settings shown as a preset, share one as a file (export, import) or delete one."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QInputDialog, QMenu, QToolButton, QWidget

from strata_gui.core.base import StrataError
from strata_gui.core.chat import (
    ChatService,
    Preset,
    PresetStore,
    ThinkingSettings,
    apply_preset,
    matching_preset,
)
from strata_gui.ui.chat.settings_panel import ConversationSettingsPanel
from strata_gui.ui.i18n import LiveTexts, error_line


class PresetBar(QWidget):
    """A preset picker, "Save as preset…" and a menu to import, export or delete presets.

    Args:
        presets: The saved presets.
        panel: The conversation settings it reads (save) and fills (choose).
        service: The chat service (its store holds the conversation's settings).
        current: The open conversation's id (None: choosing only fills the panel).
        enabled_tools: The tool servers switched on now (saved with a preset); None: no tools here.
        set_tools: Switches on exactly the named tool servers (a chosen preset's tools).

    Signals:
        reported(str, str): A line for the page's notice and its level.
        applied(object): A preset was chosen for the open conversation.
    """

    reported = Signal(str, str)
    applied = Signal(object)

    def __init__(self, presets: PresetStore, panel: ConversationSettingsPanel, service: ChatService,
                 current: Callable[[], int | None], *, enabled_tools: Callable[[], list[str]] | None = None,
                 set_tools: Callable[[tuple[str, ...]], object] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.presets = presets
        self._panel = panel
        self._service = service
        self._current = current
        self._enabled_tools = enabled_tools
        self._set_tools = set_tools
        self.dialog: QFileDialog | None = None
        self.picker = QComboBox()
        self.texts.set(self.picker.setToolTip, lambda: self.tr("System prompt, sampling, thinking and tools saved under a name"))
        self.picker.activated.connect(self._chosen)
        self.save_button = QToolButton()
        self.texts.set(self.save_button.setText, lambda: self.tr("Save as…"))
        self.texts.set(self.save_button.setToolTip, lambda: self.tr("Save these settings as a preset"))
        self.save_button.clicked.connect(self.ask_save)
        self.more = QToolButton()
        self.more.setText("⋯")
        self.more.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.more)
        self.import_action = menu.addAction(self.tr("Import a preset file…"))
        self.import_action.triggered.connect(self.ask_import)
        self.export_action = menu.addAction(self.tr("Export this preset…"))
        self.export_action.triggered.connect(self.ask_export)
        self.delete_action = menu.addAction(self.tr("Delete this preset"))
        self.delete_action.triggered.connect(self.delete_chosen)
        menu.aboutToShow.connect(self._enable)
        self.more.setMenu(menu)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.picker, 1)
        row.addWidget(self.save_button)
        row.addWidget(self.more)
        self.refresh()

    # -- the list -------------------------------------------------------------------------------------
    def refresh(self, selected: str | None = None) -> None:
        """Fill the picker; ``selected`` (or the preset the open conversation's settings match) is shown."""
        try:
            presets = self.presets.presets()
        except StrataError as exc:
            self.reported.emit(error_line(exc), "error")
            presets = []
        if selected is None:
            conversation_id = self._current()
            conv = self._service.store.conversation(conversation_id) if conversation_id is not None else None
            match = matching_preset(presets, conv.system_prompt, conv.sampling, conv.thinking) if conv else None
            selected = match.name if match else ""
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItem(self.tr("No preset"), "")
        for preset in presets:
            self.picker.addItem(preset.name, preset.name)
        self.picker.setCurrentIndex(max(0, self.picker.findData(selected)))
        self.picker.blockSignals(False)

    @property
    def chosen(self) -> str:
        return str(self.picker.currentData() or "")

    def _enable(self) -> None:
        for action in (self.export_action, self.delete_action):
            action.setEnabled(bool(self.chosen))

    # -- choosing and saving --------------------------------------------------------------------------
    def _chosen(self, index: int) -> None:
        name = str(self.picker.itemData(index) or "")
        if name:
            self.choose(name)

    def choose(self, name: str) -> Preset | None:
        """Use the preset ``name`` in the open conversation (its settings are copied into it)."""
        try:
            preset = self.presets.require(name)
            conversation_id = self._current()
            if conversation_id is not None:
                apply_preset(self._service.store, conversation_id, preset)
            if preset.tools is not None and self._set_tools is not None:
                self._set_tools(preset.tools)
        except StrataError as exc:
            self.reported.emit(error_line(exc), "error")
            return None
        self._panel.load(preset.system_prompt, preset.sampling, self._panel.structured_output())
        self.refresh(name)
        self.applied.emit(preset)
        return preset

    def ask_save(self) -> None:
        name, ok = QInputDialog.getText(self, self.tr("Save as preset"), self.tr("Preset name:"), text=self.chosen)
        if ok:
            self.save_as(name)

    def save_as(self, name: str) -> Preset | None:
        """Save the settings shown (and the conversation's thinking, the tools on now) as ``name``."""
        conversation_id = self._current()
        conv = self._service.store.conversation(conversation_id) if conversation_id is not None else None
        tools = tuple(self._enabled_tools()) if self._enabled_tools is not None else None
        candidate = Preset(name, self._panel.system_prompt.toPlainText(), self._panel.sampling(),
                           conv.thinking if conv else ThinkingSettings(), tools)
        try:
            preset = self.presets.save(Preset.from_json(candidate.to_json()))  # the name checked as a file's is
        except StrataError as exc:
            self.reported.emit(error_line(exc), "error")
            return None
        self.refresh(preset.name)
        self.reported.emit(self.tr("Saved the preset “{0}”.").format(preset.name), "info")
        return preset

    def delete_chosen(self) -> None:
        if self.chosen:
            self.presets.delete(self.chosen)
            self.refresh("")

    # -- sharing ----------------------------------------------------------------------------------------
    def _dialog(self, title: str, on_file: Callable[[Path], object], *, save: bool, start: str = "") -> QFileDialog:
        dialog = QFileDialog(self.window(), title, start, self.tr("Presets (*.json)"))
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save else QFileDialog.AcceptMode.AcceptOpen)
        dialog.setFileMode(QFileDialog.FileMode.AnyFile if save else QFileDialog.FileMode.ExistingFile)
        if save:
            dialog.setDefaultSuffix("json")
        dialog.fileSelected.connect(lambda chosen: on_file(Path(chosen)))
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.open()
        return dialog

    def ask_export(self) -> QFileDialog | None:
        name = self.chosen
        if not name:
            return None
        stem = " ".join(re.sub(r'[\\/:*?"<>|\x00-\x1f]+', " ", name).split()) or "preset"
        return self._dialog(self.tr("Export preset"), lambda path: self.export_to(name, path), save=True,
                            start=str(Path.home() / f"{stem}.json"))

    def export_to(self, name: str, path: Path) -> bool:
        try:
            self.presets.export_file(name, path)
        except StrataError as exc:
            self.reported.emit(error_line(exc), "error")
            return False
        self.reported.emit(self.tr("Exported to {0}").format(path), "info")
        return True

    def ask_import(self) -> QFileDialog:
        return self._dialog(self.tr("Import preset"), self.import_from, save=False)

    def import_from(self, path: Path) -> Preset | None:
        try:
            preset = self.presets.import_file(path)
        except StrataError as exc:
            self.reported.emit(error_line(exc), "error")
            return None
        self.refresh(preset.name)
        self.reported.emit(self.tr("Imported the preset “{0}”.").format(preset.name), "info")
        return preset
