"""The Network page's Activity view: the local API's recent requests, live, and its two switches
(apps may manage the library; request bodies are kept)."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError
from strata_gui.core.serve import ActivityEntry, ServeService
from strata_gui.ui.bridge import AsyncBridge, follow
from strata_gui.ui.i18n import LiveTexts

SHOWN = 200  # rows in the table (the core keeps a few hundred more)
# A wide value of each column, its width measured once (the model column stretches).
_SAMPLES = ("00:00:00", "255.255.255.255", "anthropic", "", "404", "99999 → 99999", "999 ms", "999.9 tok/s", "999 ms")


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


class ActivityPanel(QWidget):
    """Recent requests of the local API, newest first, with the captured body of the selected one.

    Args:
        serve: The local API (its activity list and settings).
        bridge: Reports a setting that could not be saved.
    """

    def __init__(self, serve: ServeService, bridge: AsyncBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._serve = serve
        self._bridge = bridge
        self.texts = LiveTexts(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self._add_switches(layout)
        title = QLabel(self.tr("Activity"))
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        self.table = QTableWidget(0, 9)
        self.table.setHorizontalHeaderLabels([
            self.tr("Time"), self.tr("Client"), self.tr("API"), self.tr("Model"), self.tr("Status"),
            self.tr("Tokens in → out"), self.tr("First token"), self.tr("Decode"), self.tr("Waited")])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self._size_columns()
        self.table.setMinimumHeight(160)
        self.table.itemSelectionChanged.connect(self._show_body)
        layout.addWidget(self.table)
        self.empty = QLabel(self.tr("No requests yet. Each request of another app appears here as it ends."))
        self.empty.setObjectName("muted")
        layout.addWidget(self.empty)
        self.body = QPlainTextEdit()
        self.body.setReadOnly(True)
        self.body.setMaximumHeight(140)
        self.body.hide()
        layout.addWidget(self.body)
        self.rows: list[ActivityEntry] = []
        for entry in serve.activity.entries:
            self.add(entry)
        follow(self, serve.activity.finished, self.add)

    def _size_columns(self) -> None:
        """Widths set once, from the titles and a wide sample of each column (the user may drag
        them): measuring the contents again re-read every row at each request, seconds on a busy server."""
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        metrics = self.table.fontMetrics()
        for col, sample in enumerate(_SAMPLES):
            if col != 3:
                header.resizeSection(col, max(header.sectionSizeHint(col), metrics.horizontalAdvance(sample) + 16))

    def _add_switches(self, layout: QVBoxLayout) -> None:
        row = QHBoxLayout()
        settings = self._serve.settings
        self.model_routes = QCheckBox()
        self.texts.set(self.model_routes.setText, lambda: self.tr("Apps may download, copy and delete models"))
        self.model_routes.setToolTip(self.tr(
            "Ollama's /api/pull, /api/copy and /api/delete (Open WebUI's model manager uses them). "
            "Beyond this computer they need the API key, like every address."))
        self.model_routes.setChecked(settings.serve_model_routes)
        self.model_routes.toggled.connect(lambda on: self._save(self._serve.allow_model_routes, on, self.model_routes))
        self.capture = QCheckBox()
        self.texts.set(self.capture.setText, lambda: self.tr("Keep request bodies (keys and images left out)"))
        self.capture.setChecked(settings.serve_capture_bodies)
        self.capture.toggled.connect(lambda on: self._save(self._serve.capture_bodies, on, self.capture))
        row.addWidget(self.model_routes)
        row.addWidget(self.capture)
        row.addStretch(1)
        layout.addLayout(row)

    def _save(self, change: Callable[[bool], None], on: bool, box: QCheckBox) -> None:
        try:
            change(on)
        except StrataError as exc:
            box.blockSignals(True)
            box.setChecked(not on)
            box.blockSignals(False)
            self._bridge.error_occurred.emit(exc)

    def add(self, entry: ActivityEntry) -> None:
        """Show a finished request on top."""
        self.rows.insert(0, entry)
        del self.rows[SHOWN:]
        t = self.table
        t.insertRow(0)
        if t.rowCount() > SHOWN:
            t.removeRow(t.rowCount() - 1)
        tokens = "—" if entry.prompt_tokens is None and entry.output_tokens is None else \
            f"{entry.prompt_tokens if entry.prompt_tokens is not None else '?'} → " \
            f"{entry.output_tokens if entry.output_tokens is not None else '?'}"
        decode = f"{entry.decode_tps:.1f} tok/s" if entry.decode_tps else "—"
        cells = [time.strftime("%H:%M:%S", time.localtime(entry.at)), entry.client, entry.api,
                 entry.model or "—", str(entry.status), tokens, _seconds(entry.ttft_s), decode, _seconds(entry.wait_s)]
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            if col == 3:
                item.setToolTip(f"{entry.method} {entry.path}")
            t.setItem(0, col, item)
        self.empty.hide()

    def _show_body(self) -> None:
        model = self.table.selectionModel()
        rows = model.selectedRows() if model is not None else []
        entry = self.rows[rows[0].row()] if rows and rows[0].row() < len(self.rows) else None
        if entry is None:
            self.body.hide()
            return
        self.body.setPlainText(entry.request_body if entry.request_body is not None else self.tr(
            "No body kept: turn on “Keep request bodies” to see the next requests' bodies."))
        self.body.show()
