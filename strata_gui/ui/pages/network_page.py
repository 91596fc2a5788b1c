"""Network page: remote engines, serving the loaded model to other apps, and RPC workers.

Each section is a card. Work that talks to the network (checking an endpoint, starting the local
API) runs through the bridge; the local API's counters are copied into the page by a 1 s timer
while the page is visible.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QHideEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError, format_bytes
from strata_gui.core.pool import EnginePool, PoolActivity, PoolEvent, Priority, WaitingRequest, priority_of
from strata_gui.core.remote import RemoteEndpoint, RemoteService
from strata_gui.core.rpc import DEFAULT_RPC_PORT, RpcPool, WorkerStatus
from strata_gui.core.serve import LoadedModel, ServeService
from strata_gui.ui.bridge import AsyncBridge, CoroutineFactory, TaskHandle, follow
from strata_gui.ui.i18n import LiveTexts, core_text
from strata_gui.ui.pages.base import Page
from strata_gui.ui.pages.serve_activity import ActivityPanel


def _duration(seconds: float) -> str:
    """"42 s", "3 min", "1 h 05 min": idle and remaining times in the loaded-models list."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _label(text: str, name: str = "", *, wrap: bool = False) -> QLabel:
    label = QLabel(text)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    return label


def _table(headers: list[str], *, stretch: int = 0) -> QTableWidget:
    """A read-only table sized to its contents, column ``stretch`` taking the spare width."""
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    table.setWordWrap(False)
    return table


def _fit_rows(table: QTableWidget) -> None:
    """As tall as its rows (no empty band under two of them), a scroll bar from eight on."""
    rows = min(table.rowCount(), 8)
    table.setFixedHeight(table.horizontalHeader().height() + 2 * table.frameWidth()
                         + sum(table.rowHeight(r) for r in range(rows)))


def _card() -> tuple[QFrame, QVBoxLayout]:
    frame = QFrame()
    frame.setObjectName("card")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(16, 12, 16, 16)
    layout.setSpacing(8)
    return frame, layout


class NetworkPage(Page):
    """Beyond this computer: remote engines, the local API for other apps, RPC workers.

    Args:
        remote: The user's remote OpenAI-compatible endpoints.
        serve: The local API ("Serve to other apps").
        bridge: Runs network work and reports its errors.
        rpc: llama.cpp RPC workers and lending this machine (section hidden without it).
        pool: The engine pool: each loaded model's requests in use and waiting, and why they wait
            (without it, only the local API's own counters).
    """

    page_title = "Network"
    page_icon = "SP_DriveNetIcon"
    remotes_changed = Signal()  # an endpoint was added, removed or its model changed

    def __init__(self, remote: RemoteService, serve: ServeService, bridge: AsyncBridge,
                 parent: QWidget | None = None, rpc: RpcPool | None = None, pool: EnginePool | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.page_title = self.tr("Network")
        self._remote = remote
        self._serve = serve
        self._rpc = rpc
        self.activity: PoolActivity | None = pool.activity() if pool is not None else None
        self._bridge = bridge
        self.rpc_handle: TaskHandle | None = None
        self.remote_handle: TaskHandle | None = None
        self.serve_handle: TaskHandle | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.refresh_serve)
        # A burst of requests changes the pool's use many times a second: shown once per burst.
        self._activity_timer = QTimer(self)
        self._activity_timer.setSingleShot(True)
        self._activity_timer.setInterval(50)
        self._activity_timer.timeout.connect(self._show_activity)

        header = self.texts.header(lambda: self.tr("Network"), lambda: self.tr(
            "Chat with models served by other machines, serve your models to other apps, "
            "and pool GPUs of several computers."))
        body = QWidget()
        self.body_layout = QVBoxLayout(body)
        self.body_layout.setSpacing(16)
        self.body_layout.addWidget(self._build_remote())
        self.body_layout.addWidget(self._build_serve())
        if rpc is not None:
            self.body_layout.addWidget(self._build_rpc(rpc))
        self.body_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.addWidget(header)
        layout.addWidget(scroll, 1)
        follow(self, serve.requests, lambda _request: self.refresh_serve())
        if pool is not None:
            follow(self, pool.events, self._on_pool_event)

    # -- remote engines ----------------------------------------------------------------------------
    def _build_remote(self) -> QFrame:
        frame, layout = _card()
        layout.addWidget(_label(self.tr("Remote engines"), "sectionTitle"))
        layout.addWidget(_label(self.tr(
            "OpenAI-compatible servers on other machines (vLLM, SGLang, llama-server, another Strata). "
            "Choose one in the Chat page's engine list. API keys are stored in a file only you can "
            "read, never in the settings file or the log."), "muted", wrap=True))
        self.remote_list = QListWidget()
        self.remote_list.setMaximumHeight(140)
        self.remote_list.currentItemChanged.connect(self._on_remote_selected)
        self.remote_empty = _label(self.tr("No remote engines yet. Add a server's address below."), "muted")
        layout.addWidget(self.remote_empty)
        layout.addWidget(self.remote_list)
        self.remote_tools = QWidget()
        row = QHBoxLayout(self.remote_tools)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(_label(self.tr("Model:")))
        self.remote_model = QComboBox()
        self.remote_model.setMinimumWidth(240)
        self.remote_model.activated.connect(self._on_remote_model_chosen)
        row.addWidget(self.remote_model, 1)
        self.remote_models_button = QPushButton()
        self.texts.set(self.remote_models_button.setText, lambda: self.tr("Refresh models"))
        self.remote_models_button.clicked.connect(self.refresh_remote_models)
        self.remote_remove_button = QPushButton()
        self.texts.set(self.remote_remove_button.setText, lambda: self.tr("Remove"))
        self.remote_remove_button.clicked.connect(self.remove_selected_remote)
        row.addWidget(self.remote_models_button)
        row.addWidget(self.remote_remove_button)
        layout.addWidget(self.remote_tools)

        form = QFormLayout()
        self.remote_name = QLineEdit()
        self.texts.set(self.remote_name.setPlaceholderText, lambda: self.tr("e.g. Lab server"))
        self.remote_url = QLineEdit()
        self.remote_url.setPlaceholderText("http://192.168.1.20:8000/v1")
        self.remote_key = QLineEdit()
        self.remote_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.texts.set(self.remote_key.setPlaceholderText, lambda: self.tr("optional"))
        form.addRow(self.texts.label(lambda: self.tr("Name")), self.remote_name)
        form.addRow(self.texts.label(lambda: self.tr("Address")), self.remote_url)
        form.addRow(self.texts.label(lambda: self.tr("API key")), self.remote_key)
        layout.addLayout(form)
        add_row = QHBoxLayout()
        self.remote_status = _label("", "muted", wrap=True)
        self.remote_add_button = QPushButton()
        self.texts.set(self.remote_add_button.setText, lambda: self.tr("Add and check"))
        self.remote_add_button.clicked.connect(self.add_remote)
        add_row.addWidget(self.remote_status, 1)
        add_row.addWidget(self.remote_add_button)
        layout.addLayout(add_row)
        return frame

    def refresh_remotes(self) -> None:
        selected = self.selected_remote()
        try:
            endpoints = self._remote.endpoints()
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            endpoints = []
        self.remote_list.blockSignals(True)
        self.remote_list.clear()
        for ep in endpoints:
            key = self.tr("key") if ep.has_key else self.tr("no key")
            item = QListWidgetItem(f"{ep.name} — {ep.base_url} — {ep.model or self.tr('default model')} ({key})")
            item.setData(Qt.ItemDataRole.UserRole, ep.id)
            self.remote_list.addItem(item)
            if selected is not None and ep.id == selected.id:
                self.remote_list.setCurrentItem(item)
        self.remote_list.blockSignals(False)
        if self.remote_list.currentRow() < 0 and endpoints:
            self.remote_list.setCurrentRow(0)
        self.remote_empty.setVisible(not endpoints)
        self.remote_list.setVisible(bool(endpoints))
        self.remote_tools.setVisible(bool(endpoints))
        self._on_remote_selected(self.remote_list.currentItem(), None)

    def selected_remote(self) -> RemoteEndpoint | None:
        item = self.remote_list.currentItem()
        if item is None:
            return None
        ident = item.data(Qt.ItemDataRole.UserRole)
        return next((e for e in self._remote.endpoints() if e.id == ident), None)

    def _on_remote_selected(self, _item: QListWidgetItem | None, _prev: QListWidgetItem | None) -> None:
        ep = self.selected_remote()
        for w in (self.remote_model, self.remote_models_button, self.remote_remove_button):
            w.setEnabled(ep is not None)
        self.remote_model.clear()
        if ep is not None and ep.model:
            self.remote_model.addItem(ep.model)

    def add_remote(self) -> TaskHandle | None:
        name, url, key = self.remote_name.text().strip(), self.remote_url.text().strip(), self.remote_key.text()
        if not name or not url:
            self.remote_status.setText(self.tr("Enter a name and the server's address."))
            return None
        remote = self._remote

        async def check(_progress: object) -> tuple[RemoteEndpoint, list[str]]:
            return await remote.add_checked(name, url, key or None)

        self.remote_add_button.setEnabled(False)
        self.remote_status.setText(self.tr("Checking {0}…").format(url))
        handle = self._bridge.run(check, name=self.tr("Check remote engine"))
        handle.succeeded.connect(self._on_remote_added)
        handle.failed.connect(lambda exc: self.remote_status.setText(core_text(exc.message)))
        handle.finished.connect(lambda: self.remote_add_button.setEnabled(True))
        self.remote_handle = handle
        return handle

    def _on_remote_added(self, result: tuple[RemoteEndpoint, list[str]]) -> None:
        ep, models = result
        self.remote_status.setText(self.tr("Added {0}: %n model(s).", "", len(models)).format(ep.name))
        self.remote_name.clear()
        self.remote_url.clear()
        self.remote_key.clear()  # the key is only in the key store now
        self.refresh_remotes()
        self.remotes_changed.emit()

    def refresh_remote_models(self) -> TaskHandle | None:
        ep = self.selected_remote()
        if ep is None:
            return None
        remote = self._remote

        async def fetch(_progress: object) -> list[str]:
            return await remote.list_models(ep)

        handle = self._bridge.run(fetch, name=self.tr("List remote models"))

        def show(models: list[str]) -> None:
            self.remote_model.clear()
            self.remote_model.addItems(models)
            if ep.model in models:
                self.remote_model.setCurrentText(ep.model)
            self.remote_status.setText(self.tr("{0} serves %n model(s).", "", len(models)).format(ep.name))

        handle.succeeded.connect(show)
        handle.failed.connect(lambda exc: self.remote_status.setText(core_text(exc.message)))
        self.remote_handle = handle
        return handle

    def _on_remote_model_chosen(self, index: int) -> None:
        ep = self.selected_remote()
        if ep is None or index < 0:
            return
        try:
            self._remote.set_model(ep, self.remote_model.itemText(index))
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            return
        self.refresh_remotes()
        self.remotes_changed.emit()

    def remove_selected_remote(self) -> None:
        ep = self.selected_remote()
        if ep is None:
            return
        try:
            self._remote.remove(ep)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
        self.refresh_remotes()
        self.remotes_changed.emit()

    # -- serve to other apps -------------------------------------------------------------------------
    def _build_serve(self) -> QFrame:
        frame, layout = _card()
        layout.addWidget(_label(self.tr("Serve to other apps"), "sectionTitle"))
        layout.addWidget(_label(self.tr(
            "Other programs (editors, Open WebUI, agents, scripts) can use every model of your library "
            "through OpenAI, Ollama and Anthropic addresses: a model loads when a program asks for it, "
            "shares the engine the chat uses, and unloads when idle. Their requests appear in the Dashboard."),
            "muted", wrap=True))
        self.serve_state = _label("", wrap=True)
        layout.addWidget(self.serve_state)
        row = QHBoxLayout()
        row.addWidget(_label(self.tr("Port")))
        self.serve_port = QSpinBox()
        self.serve_port.setRange(1024, 65535)
        self.serve_port.setValue(self._serve.settings.serve_port or 8765)
        row.addWidget(self.serve_port)
        self.serve_lan = QCheckBox()
        self.texts.set(self.serve_lan.setText, lambda: self.tr("Allow other computers on the network (requires an API key)"))
        self.serve_lan.setChecked(self._serve.settings.serve_lan)
        row.addWidget(self.serve_lan, 1)
        self.serve_button = QPushButton(self.tr("Start serving"))
        self.serve_button.clicked.connect(self.toggle_serving)
        row.addWidget(self.serve_button)
        layout.addLayout(row)

        self._add_key_rows(layout)
        self.serve_url = QLineEdit()
        self.serve_url.setReadOnly(True)
        url_row = QHBoxLayout()
        url_row.addWidget(_label(self.tr("Address")))
        url_row.addWidget(self.serve_url, 1)
        layout.addLayout(url_row)
        layout.addWidget(_label(self.tr("Try it from a terminal:"), "muted"))
        self.curl = QPlainTextEdit()
        self.curl.setReadOnly(True)
        self.curl.setMaximumHeight(70)
        layout.addWidget(self.curl)
        self.serve_counts = _label("", "muted")
        layout.addWidget(self.serve_counts)

        self._add_loaded_models(layout)
        self.activity_panel = ActivityPanel(self._serve, self._bridge)
        layout.addWidget(self.activity_panel)
        return frame

    def _add_key_rows(self, layout: QVBoxLayout) -> None:
        """The API key's state and Generate new key; a new key with Copy, shown once."""
        key_row = QHBoxLayout()
        self.key_state = _label("", "muted")
        self.key_button = QPushButton(self.tr("Generate new key"))
        self.key_button.clicked.connect(self.generate_key)
        key_row.addWidget(self.key_state, 1)
        key_row.addWidget(self.key_button)
        layout.addLayout(key_row)
        self.new_key = QLineEdit()
        self.new_key.setReadOnly(True)
        self.new_key_note = _label(self.tr("Copy this key now: it is shown only once."), "muted")
        self.copy_key_button = QPushButton(self.tr("Copy"))
        self.copy_key_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.new_key.text()))
        new_row = QHBoxLayout()
        new_row.addWidget(self.new_key, 1)
        new_row.addWidget(self.copy_key_button)
        layout.addLayout(new_row)
        layout.addWidget(self.new_key_note)
        for w in (self.new_key, self.new_key_note, self.copy_key_button):
            w.hide()

    def _add_loaded_models(self, layout: QVBoxLayout) -> None:
        """The models the engines hold now (their requests in use and waiting), and Unload."""
        layout.addWidget(_label(self.tr("Loaded models"), "sectionTitle"))
        self.loaded_table = _table([self.tr("Model"), self.tr("Engine"), self.tr("Memory"), self.tr("In use"),
                                    self.tr("Waiting"), self.tr("Idle"), self.tr("Unloads in")])
        for col, tip in ((3, self.tr("Requests being answered, of the requests the model answers at once "
                                     "(Settings: Parallel requests per model)")),
                         (4, self.tr("Requests waiting for this model"))):
            header_item = self.loaded_table.horizontalHeaderItem(col)
            if header_item is not None:
                header_item.setToolTip(tip)
        self.loaded_table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.loaded_table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.loaded_table.itemSelectionChanged.connect(self._sync_unload)
        self.loaded_empty = _label(self.tr("No model is loaded. Programs load one by naming it."), "muted")
        unload_row = QHBoxLayout()
        unload_row.addWidget(self.loaded_empty)
        unload_row.addStretch(1)
        self.unload_button = QPushButton(self.tr("Unload"))
        self.unload_button.setToolTip(self.tr("Free the model's memory (after the requests using it end)."))
        self.unload_button.clicked.connect(self.unload_selected)
        unload_row.addWidget(self.unload_button)
        layout.addWidget(self.loaded_table)
        layout.addLayout(unload_row)
        self._loaded: list[LoadedModel] = []
        self._add_waiting(layout)

    def _add_waiting(self, layout: QVBoxLayout) -> None:
        """The requests the engine pool has not served yet: who asked, for what, why, since when."""
        self.waiting_title = _label(self.tr("Waiting requests"), "sectionTitle")
        self.waiting_table = _table([self.tr("From"), self.tr("Model"), self.tr("Why"), self.tr("Waited")],
                                    stretch=2)
        self.waiting_table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.waiting_table.setWordWrap(True)  # a reason is a sentence: shown whole, on more lines
        rows = self.waiting_table.verticalHeader()
        rows.setMinimumSectionSize(rows.defaultSectionSize())  # one-line rows as tall as the models'
        layout.addWidget(self.waiting_title)
        layout.addWidget(self.waiting_table)
        self.waiting_title.hide()
        self.waiting_table.hide()

    def refresh_loaded(self) -> None:
        """The models the engines hold now, with memory, use and idle time, and the requests waiting
        (every second while shown, and whenever the pool's use changes)."""
        selected = self.selected_loaded()
        self._loaded = list(self._serve.router.loaded())
        table = self.loaded_table
        table.setRowCount(len(self._loaded))
        for row, m in enumerate(self._loaded):
            expires = ("—" if m.expires_in_s is None else _duration(m.expires_in_s))
            active, slots, waiting = self._use_of(m)
            cells = [m.model.id, m.engine, format_bytes(m.memory_bytes),
                     self.tr("%1 of %n slot(s)", "", slots).replace("%1", str(active)),
                     str(waiting) if waiting else "—", "—" if m.busy else _duration(m.idle_s), expires]
            for col, text in enumerate(cells):
                table.setItem(row, col, QTableWidgetItem(text))
            if selected is not None and m.model.id == selected.model.id:
                table.selectRow(row)
        _fit_rows(table)
        self.loaded_table.setVisible(bool(self._loaded))
        self.loaded_empty.setVisible(not self._loaded)
        self._sync_unload()
        self.refresh_waiting()

    def _use_of(self, m: LoadedModel) -> tuple[int, int, int]:
        """(requests in use, parallel slots, requests waiting) of a loaded model, as the pool says
        (without the pool: the router's count on one slot each)."""
        if self.activity is None:
            return m.busy, max(1, m.busy), 0
        engine = next((e for e in self.activity.engines if e.engine.model == m.model.path
                       and e.engine.kind.name == m.model.kind and e.engine.spec.label == m.engine), None)
        waiting = self.activity.waiting_for(m.model.path)
        if engine is None:
            return m.busy, max(1, m.busy), waiting
        return engine.active, engine.slots, waiting

    def refresh_waiting(self) -> None:
        """Every request that waits, with its reason and how long it has waited."""
        waiting = self.activity.waiting if self.activity is not None else ()
        table = self.waiting_table
        table.setRowCount(len(waiting))
        now = time.monotonic()  # the pool's clock (its default): what WaitingRequest.since counts on
        for row, w in enumerate(waiting):
            why = core_text(w.reason) if w.reason else self.tr("Its model is loading")
            cells = [self._who(w), w.model.name if w.model is not None else self.tr("every model"), why,
                     _duration(max(0.0, now - w.since))]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                table.setItem(row, col, item)
        table.resizeRowsToContents()
        _fit_rows(table)
        self.waiting_title.setVisible(bool(waiting))
        table.setVisible(bool(waiting))

    def _who(self, w: WaitingRequest) -> str:
        """Who made a waiting request, in words ("Other apps (API)", "Chat", "Benchmark")."""
        names = {"chat": self.tr("Chat"), "images": self.tr("Images"), "api": self.tr("Other apps (API)"),
                 "benchmark": self.tr("Benchmark"), "engine update": self.tr("Engine update trial")}
        return names.get(w.user, w.user)

    def _on_pool_event(self, event: PoolEvent) -> None:
        if isinstance(event, PoolActivity):
            self.activity = event
            if self.isVisible() and not self._activity_timer.isActive():
                self._activity_timer.start()

    def _show_activity(self) -> None:
        self._show_counts()
        self.refresh_loaded()

    def selected_loaded(self) -> LoadedModel | None:
        rows = self.loaded_table.selectionModel().selectedRows() if self.loaded_table.selectionModel() else []
        return self._loaded[rows[0].row()] if rows and rows[0].row() < len(self._loaded) else None

    def _sync_unload(self) -> None:
        self.unload_button.setEnabled(self.selected_loaded() is not None)

    def unload_selected(self) -> TaskHandle | None:
        chosen = self.selected_loaded()
        if chosen is None:
            return None
        router = self._serve.router

        async def unload(_progress: object) -> None:
            await router.unload(chosen.model.id)

        handle = self._bridge.run(unload, name=self.tr("Unload {0}").format(chosen.model.id))
        handle.finished.connect(self.refresh_loaded)
        return handle

    def refresh_serve(self) -> None:
        svc = self._serve
        running = svc.running
        if running:
            where = self.tr("every network interface") if not svc.url.startswith("http://127.") else \
                self.tr("this computer only")
            state = self.tr("● Serving at {0} ({1}).").format(svc.url, where)
            if svc.taken_over is not None:
                state += " " + self.tr("Strata took over the model server that ran in the background (one copy "
                                       "of each model for the chat and other apps); it goes back to the "
                                       "background when you close Strata.")
            self.serve_state.setText(state)
        else:
            self.serve_state.setText(self.tr("Not serving. Start it to give other apps an address."))
        self.serve_button.setText(self.tr("Stop serving") if running else self.tr("Start serving"))
        self.serve_port.setEnabled(not running)
        if running and svc.port and self.serve_port.value() != svc.port:  # started elsewhere (a take-over)
            self.serve_port.setValue(svc.port)
        self.serve_lan.setEnabled(not running)
        self.key_state.setText(self.tr("An API key is set: clients must send it.") if svc.has_key
                               else self.tr("No API key: only programs on this computer can connect."))
        self.serve_url.setText(svc.url if running else f"http://127.0.0.1:{self.serve_port.value()}/v1")
        self.curl.setPlainText(svc.curl_example())
        self._show_counts()
        self.refresh_loaded()

    def _show_counts(self) -> None:
        """The local API's requests: since it started, answered now, and waiting in the pool."""
        c = self._serve.counters
        waiting = sum(1 for w in self.activity.waiting if priority_of(w.user) is Priority.API) \
            if self.activity is not None else 0
        self.serve_counts.setText(self.tr("Requests: {0} total · {1} active · {2} waiting · {3} completed · "
                                          "{4} failed · {5} refused (wrong key)").format(
            c.total, c.active, waiting, c.completed, c.failed, c.unauthorized))

    def generate_key(self) -> None:
        try:
            key = self._serve.generate_key()
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            return
        self.new_key.setText(key)
        for w in (self.new_key, self.new_key_note, self.copy_key_button):
            w.show()
        self.refresh_serve()

    def toggle_serving(self) -> TaskHandle:
        svc = self._serve
        if svc.running:
            async def stop(_progress: object) -> None:
                await svc.stop()

            handle = self._bridge.run(stop, name=self.tr("Stop serving"))
        else:
            try:
                svc.configure(port=self.serve_port.value(), lan=self.serve_lan.isChecked())
            except StrataError as exc:  # not saved: still start with these values
                self._bridge.error_occurred.emit(exc)

            async def start(_progress: object) -> str:
                return await svc.start()

            handle = self._bridge.run(start, name=self.tr("Start serving"))
        self.serve_button.setEnabled(False)
        handle.finished.connect(self._after_toggle)
        self.serve_handle = handle
        return handle

    def _after_toggle(self) -> None:
        self.serve_button.setEnabled(True)
        self.refresh_serve()

    # -- RPC workers / lend this GPU --------------------------------------------------------------------
    def _build_rpc(self, rpc: RpcPool) -> QFrame:
        frame, layout = _card()
        layout.addWidget(_label(self.tr("RPC workers / lend this GPU"), "sectionTitle"))
        layout.addWidget(_label(self.tr(
            "llama.cpp can spread a model's layers over the GPUs of several computers. On a computer "
            "that lends its GPU, start the RPC server; on the one that runs the model, add its address "
            "as a worker."), "muted", wrap=True))
        self.rpc_warning = QFrame()
        self.rpc_warning.setObjectName("notice")
        self.rpc_warning.setProperty("level", "warning")
        warn_layout = QVBoxLayout(self.rpc_warning)
        warn_layout.setContentsMargins(12, 8, 12, 8)
        warn_layout.addWidget(_label(self.tr(
            "rpc-server has no password and no encryption: anyone who can reach this port can use "
            "this computer's GPU and memory. Only expose it on a network you trust."), wrap=True))
        layout.addWidget(self.rpc_warning)

        lend = QHBoxLayout()
        lend.addWidget(_label(self.tr("Listen on")))
        self.rpc_host = QComboBox()
        self.rpc_host.setEditable(True)
        self.rpc_host.addItem("127.0.0.1")
        self.rpc_host.addItem("0.0.0.0")
        self.texts.set(self.rpc_host.setToolTip, lambda: self.tr("127.0.0.1: this computer only. 0.0.0.0 or a LAN address: "
                                         "other computers can connect."))
        lend.addWidget(self.rpc_host)
        lend.addWidget(_label(self.tr("Port")))
        self.rpc_port = QSpinBox()
        self.rpc_port.setRange(1, 65535)
        self.rpc_port.setValue(DEFAULT_RPC_PORT)
        lend.addWidget(self.rpc_port)
        self.rpc_devices = QLineEdit()
        self.texts.set(self.rpc_devices.setPlaceholderText, lambda: self.tr("devices, e.g. Vulkan0 (default: all)"))
        lend.addWidget(self.rpc_devices, 1)
        self.rpc_serve_button = QPushButton(self.tr("Lend this GPU"))
        self.rpc_serve_button.clicked.connect(self.toggle_lending)
        lend.addWidget(self.rpc_serve_button)
        layout.addLayout(lend)
        self.rpc_serve_state = _label("", "muted", wrap=True)
        layout.addWidget(self.rpc_serve_state)

        layout.addWidget(_label(self.tr("Workers this computer uses"), "sectionTitle"))
        self.rpc_enabled = QCheckBox()
        self.texts.set(self.rpc_enabled.setText, lambda: self.tr("Spread models over these workers (takes effect when the model "
                                             "loads next)"))
        self.rpc_enabled.setChecked(rpc.settings.rpc_enabled)
        self.rpc_enabled.toggled.connect(self._on_rpc_enabled)
        layout.addWidget(self.rpc_enabled)
        self.rpc_list = QListWidget()
        self.rpc_list.setMaximumHeight(120)
        self.rpc_empty = _label(self.tr("No workers yet. Add the address an RPC server shows, e.g. "
                                        "192.168.1.30:50052."), "muted", wrap=True)
        layout.addWidget(self.rpc_empty)
        layout.addWidget(self.rpc_list)
        row = QHBoxLayout()
        self.rpc_address = QLineEdit()
        self.rpc_address.setPlaceholderText("192.168.1.30:50052")
        self.rpc_add_button = QPushButton()
        self.texts.set(self.rpc_add_button.setText, lambda: self.tr("Add and check"))
        self.rpc_add_button.clicked.connect(self.add_worker)
        self.rpc_check_button = QPushButton()
        self.texts.set(self.rpc_check_button.setText, lambda: self.tr("Check all"))
        self.rpc_check_button.clicked.connect(self.check_workers)
        self.rpc_remove_button = QPushButton()
        self.texts.set(self.rpc_remove_button.setText, lambda: self.tr("Remove"))
        self.rpc_remove_button.clicked.connect(self.remove_worker)
        row.addWidget(self.rpc_address, 1)
        row.addWidget(self.rpc_add_button)
        row.addWidget(self.rpc_check_button)
        row.addWidget(self.rpc_remove_button)
        layout.addLayout(row)
        self.rpc_summary = _label("", "muted", wrap=True)
        layout.addWidget(self.rpc_summary)
        return frame

    def refresh_rpc(self) -> None:
        rpc = self._rpc
        if rpc is None:
            return
        server = rpc.server
        if server is not None and server.running:
            self.rpc_serve_state.setText(self.tr("● Lending this computer at {0}. Add this address as a worker "
                                                 "on the other computer.").format(server.address))
            self.rpc_serve_button.setText(self.tr("Stop lending"))
        else:
            self.rpc_serve_state.setText(self.tr("Not lending this computer."))
            self.rpc_serve_button.setText(self.tr("Lend this GPU"))
        lending = server is not None and server.running
        for w in (self.rpc_host, self.rpc_port, self.rpc_devices):
            w.setEnabled(not lending)
        self.rpc_list.clear()
        for address in rpc.workers:
            status = rpc.last_status.get(address)
            self.rpc_list.addItem(self._worker_text(address, status, address in rpc.dropped))
        self.rpc_empty.setVisible(not rpc.workers)
        self.rpc_list.setVisible(bool(rpc.workers))
        self.rpc_remove_button.setEnabled(bool(rpc.workers))
        self.rpc_check_button.setEnabled(bool(rpc.workers))
        memory = rpc.remote_memory_mb()
        self.rpc_summary.setText(self.tr("Workers add {0:,} MiB of free memory for models.").format(memory)
                                 if memory else "")

    def _worker_text(self, address: str, status: WorkerStatus | None, dropped: bool) -> str:
        if status is None:
            text = self.tr("{0} — not checked yet").format(address)
        elif not status.reachable:
            text = self.tr("{0} — unreachable: {1}").format(address, status.error)
        elif status.devices:
            devices = ", ".join(self.tr("{0} {1:,} MiB free").format(d.name, d.free_mb) for d in status.devices)
            text = self.tr("{0} — reachable: {1}").format(address, devices)
        else:
            text = self.tr("{0} — reachable ({1})").format(address, status.error)
        if dropped:
            text += self.tr(" — left out after it stopped answering")
        return text

    def _on_rpc_enabled(self, enabled: bool) -> None:
        if self._rpc is not None:
            try:
                self._rpc.set_enabled(enabled)
            except StrataError as exc:
                self._bridge.error_occurred.emit(exc)

    def add_worker(self) -> TaskHandle | None:
        rpc = self._rpc
        text = self.rpc_address.text().strip()
        if rpc is None or not text:
            return None
        try:
            address = rpc.add_worker(text)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
            return None
        self.rpc_address.clear()
        self.rpc_enabled.setChecked(rpc.settings.rpc_enabled)

        async def check(_progress: object) -> WorkerStatus:
            return await rpc.check(address)

        return self._run_rpc(check, self.tr("Check RPC worker"))

    def check_workers(self) -> TaskHandle | None:
        rpc = self._rpc
        if rpc is None:
            return None

        async def check(_progress: object) -> list[WorkerStatus]:
            return await rpc.check_all()

        return self._run_rpc(check, self.tr("Check RPC workers"))

    def _run_rpc(self, make: CoroutineFactory, name: str) -> TaskHandle:
        self.refresh_rpc()
        self.rpc_summary.setText(self.tr("Checking…"))
        handle = self._bridge.run(make, name=name)
        handle.finished.connect(self.refresh_rpc)
        self.rpc_handle = handle
        return handle

    def remove_worker(self) -> None:
        rpc = self._rpc
        row = self.rpc_list.currentRow()
        if rpc is None or not rpc.workers:
            return
        address = rpc.workers[row if row >= 0 else 0]
        try:
            rpc.remove_worker(address)
        except StrataError as exc:
            self._bridge.error_occurred.emit(exc)
        self.refresh_rpc()

    def toggle_lending(self) -> TaskHandle | None:
        rpc = self._rpc
        if rpc is None:
            return None
        if rpc.server is not None and rpc.server.running:
            async def stop(_progress: object) -> None:
                await rpc.stop_serving()

            return self._run_rpc(stop, self.tr("Stop lending"))
        host = self.rpc_host.currentText().strip() or "127.0.0.1"
        port = self.rpc_port.value()
        devices = [d.strip() for d in self.rpc_devices.text().split(",") if d.strip()] or None

        async def start(_progress: object) -> None:
            await rpc.serve(host, port, devices=devices)

        return self._run_rpc(start, self.tr("Lend this GPU"))

    # -- visibility ------------------------------------------------------------------------------------
    def on_shown(self) -> None:
        self.refresh_remotes()
        self.refresh_serve()
        self.refresh_rpc()
        self.timer.start()

    def hideEvent(self, event: QHideEvent) -> None:
        self.timer.stop()
        super().hideEvent(event)
