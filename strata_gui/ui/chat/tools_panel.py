"""The chat's "Tools" panel: the MCP tool servers models may call, which are on, adding and importing.

Servers are a local command (spoken to over stdio) or a streamable-HTTP address; an
``{"mcpServers": {...}}`` JSON (Claude Desktop, Cursor, LM Studio) can be pasted or opened. Their
secret values (environment, headers) go to the key store (the core's :class:`McpServerStore`).
"Check" starts the enabled servers and lists their tools. Every call a model makes is still asked
about in the conversation.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError, shown
from strata_gui.core.tools import HTTP, STDIO, McpHost, McpServerConfig, McpServerStore, ToolCatalog
from strata_gui.ui.bridge import AsyncBridge, TaskHandle, follow
from strata_gui.ui.i18n import LiveTexts, core_text, error_line


class AddServerDialog(QDialog):
    """Name and either a command line (stdio) or an address (streamable HTTP)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.texts.set(self.setWindowTitle, lambda: self.tr("Add a tool server"))
        self.name = QLineEdit()
        self.texts.set(self.name.setPlaceholderText, lambda: self.tr("files"))
        self.target = QLineEdit()
        self.texts.set(self.target.setPlaceholderText, lambda: self.tr("npx -y @modelcontextprotocol/server-filesystem ~/notes  or  "
                                               "https://host/mcp"))
        self.problem = QLabel()
        self.problem.setObjectName("error")
        self.problem.setWordWrap(True)
        note = QLabel()
        self.texts.set(note.setText, lambda: self.tr("A command is started on this computer and spoken to over stdio; an address "
                              "(http:// or https://) is reached as a streamable-HTTP MCP server. Secrets such as "
                              "API keys: import a JSON file with \"env\" or \"headers\" (they are kept in the key "
                              "store)."))
        note.setObjectName("muted")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow(self.texts.label(lambda: self.tr("Name")), self.name)
        form.addRow(self.texts.label(lambda: self.tr("Command or address")), self.target)
        form.addRow(note)
        form.addRow(self.problem)
        form.addRow(buttons)
        self.config: McpServerConfig | None = None

    def build(self) -> McpServerConfig:
        """The server as entered.

        Raises:
            StrataError: The name or the command/address is missing or unusable.
        """
        from strata_gui.core.tools import parse_mcp_servers

        name, target = self.name.text().strip(), self.target.text().strip()
        if target.startswith(("http://", "https://")):
            entry: dict[str, object] = {"url": target}
        else:
            try:
                words = shlex.split(target)
            except ValueError as exc:
                raise StrataError(self.tr("The command line cannot be read: {0}").format(exc)) from exc
            entry = {"command": words[0] if words else "", "args": words[1:]}
        (config,) = parse_mcp_servers({"mcpServers": {name: entry}})
        return config

    def _accept(self) -> None:
        try:
            self.config = self.build()
        except StrataError as exc:
            self.problem.setText(core_text(exc.message))
            return
        self.accept()


class ImportDialog(QDialog):
    """Paste an ``mcpServers`` JSON, or open one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.texts.set(self.setWindowTitle, lambda: self.tr("Import tool servers"))
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText('{"mcpServers": {"files": {"command": "npx", "args": ["-y", '
                                     '"@modelcontextprotocol/server-filesystem", "~/notes"]}}}')
        self.open_button = QPushButton()
        self.texts.set(self.open_button.setText, lambda: self.tr("Open file…"))
        self.open_button.clicked.connect(self._open)
        self.problem = QLabel()
        self.problem.setObjectName("error")
        self.problem.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(self.tr("The mcpServers JSON of Claude Desktop, Cursor or LM Studio:")))
        layout.addWidget(self.text, 1)
        row = QHBoxLayout()
        row.addWidget(self.open_button)
        row.addWidget(self.problem, 1)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self.resize(560, 360)

    def _open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open an mcpServers JSON file"), "",
                                              self.tr("JSON files (*.json);;All files (*)"))
        if path:
            try:
                self.text.setPlainText(Path(path).read_text(encoding="utf-8"))
            except OSError as exc:
                self.problem.setText(str(exc.strerror or exc))


class ToolsPanel(QGroupBox):
    """The tool servers models may call from the chat, and which are on.

    Signals:
        changed(): servers were added, removed, turned on or off.

    Args:
        store: The saved servers (secrets in the key store) and "always allow".
        host: Runs the servers ("Check" lists their tools).
        bridge: Runs the check off the event loop's way and reports its errors.
    """

    changed = Signal()

    def __init__(self, store: McpServerStore, host: McpHost, bridge: AsyncBridge,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.texts.set(self.setTitle, lambda: self.tr("Tools"))
        self._store = store
        self._host = host
        self._bridge = bridge
        self.check_handle: TaskHandle | None = None
        self.servers = QListWidget()
        self.servers.itemChanged.connect(self._item_changed)
        self.servers.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.add_button = QPushButton()
        self.texts.set(self.add_button.setText, lambda: self.tr("Add…"))
        self.add_button.clicked.connect(self.ask_add)
        self.import_button = QPushButton()
        self.texts.set(self.import_button.setText, lambda: self.tr("Import JSON…"))
        self.import_button.clicked.connect(self.ask_import)
        self.remove_button = QPushButton()
        self.texts.set(self.remove_button.setText, lambda: self.tr("Remove"))
        self.remove_button.clicked.connect(self.remove_current)
        self.check_button = QPushButton()
        self.texts.set(self.check_button.setText, lambda: self.tr("Check"))
        self.texts.set(self.check_button.setToolTip, lambda: self.tr("Start the servers that are on and list their tools"))
        self.check_button.clicked.connect(self.check)
        self.report = QLabel()
        self.report.setTextFormat(Qt.TextFormat.PlainText)  # tool names and errors are the servers' words
        self.report.setObjectName("muted")
        self.report.setWordWrap(True)
        self.report.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        note = QLabel()
        self.texts.set(note.setText, lambda: self.tr("Ticked servers' tools are offered to models that can call tools. Every call asks "
                              "you first: Allow once, Always allow this tool, or Deny."))
        note.setObjectName("muted")
        note.setWordWrap(True)
        buttons = QHBoxLayout()
        for b in (self.add_button, self.import_button, self.remove_button, self.check_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addWidget(self.servers)
        layout.addLayout(buttons)
        layout.addWidget(self.report)
        follow(self, store.events, lambda _e: self.refresh())
        self.refresh()

    def refresh(self) -> None:
        """List the saved servers (on/off as saved)."""
        try:
            saved = self._store.servers()
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            saved = []
        current = self.servers.currentItem()
        chosen = current.data(Qt.ItemDataRole.UserRole) if current is not None else None
        self.servers.blockSignals(True)
        self.servers.clear()
        for s in saved:
            kind = self.tr("command") if s.transport == STDIO else self.tr("address") if s.transport == HTTP else ""
            item = QListWidgetItem(f"{s.name}  ({kind}: {s.target})")
            item.setData(Qt.ItemDataRole.UserRole, s.name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if s.enabled else Qt.CheckState.Unchecked)
            self.servers.addItem(item)
            if s.name == chosen:
                self.servers.setCurrentItem(item)
        self.servers.blockSignals(False)
        if not saved:
            self.report.setText(self.tr("No tool servers yet: add a command or an address, or import the "
                                        "mcpServers JSON of another app."))
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.remove_button.setEnabled(self.servers.currentItem() is not None)
        self.check_button.setEnabled(self.servers.count() > 0)

    def _item_changed(self, item: QListWidgetItem) -> None:
        name = str(item.data(Qt.ItemDataRole.UserRole))
        try:
            self._store.set_enabled(name, item.checkState() == Qt.CheckState.Checked)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
        self.changed.emit()

    def add(self, config: McpServerConfig) -> None:
        try:
            self._store.add(config)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            return
        self.changed.emit()

    def ask_add(self) -> None:
        dialog = AddServerDialog(self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.config is not None:
            self.add(dialog.config)

    def import_json(self, text: str) -> list[McpServerConfig]:
        """Save every server of a pasted ``mcpServers`` JSON (raises :class:`StrataError` if unusable)."""
        added = self._store.import_json(text)
        self.report.setText(self.tr("Imported: {0}").format(", ".join(s.name for s in added)))
        self.changed.emit()
        return added

    def ask_import(self) -> None:
        dialog = ImportDialog(self)
        while dialog.exec() == QDialog.DialogCode.Accepted:
            try:
                self.import_json(dialog.text.toPlainText())
                return
            except StrataError as exc:
                dialog.problem.setText(error_line(exc))

    def remove_current(self) -> None:
        item = self.servers.currentItem()
        if item is None:
            return
        try:
            self._store.remove(str(item.data(Qt.ItemDataRole.UserRole)))
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
        self.changed.emit()

    def check(self) -> TaskHandle:
        """Start the servers that are on and say which tools each offers (or why it cannot)."""
        host = self._host
        self.report.setText(self.tr("Starting the tool servers…"))
        handle = self._bridge.run(lambda _p: host.list_tools(), name=self.tr("Check tool servers"))
        handle.succeeded.connect(self._checked)
        self.check_handle = handle
        return handle

    def _checked(self, catalog: ToolCatalog) -> None:
        lines = []
        servers = sorted({t.server for t in catalog.tools})
        for server in servers:
            names = [t.name for t in catalog.tools if t.server == server]
            lines.append(self.tr("{0}: {1}").format(shown(server), shown(", ".join(names))))
        for problem in catalog.problems:
            lines.append(self.tr("{0}: {1}").format(shown(problem.server), shown(core_text(problem.error.message))))
        self.report.setText("\n".join(lines) or self.tr("No server is on."))

