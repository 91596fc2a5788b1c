"""The Dashboard's Images tab: seconds per image and per step for each image engine (from every
picture made on the Images page), and "Benchmark this model" for image models."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import ProgressCallback
from strata_gui.core.bench import DashboardService, ImageEngineStats
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.charts import BarChart, copy_chart_image
from strata_gui.ui.i18n import LiveTexts
from strata_gui.ui.widgets import ProgressPanel


class ImageDashboard(QWidget):
    """Image engines compared: what everyday use measured, and a benchmark on demand.

    Args:
        service: The Qt-free dashboard facade (image statistics and the image benchmark).
        bridge: Runs the benchmark.
        models: Reads the library's image model files.
        choose_model: Asks the user for an image model file (None when cancelled).
    """

    def __init__(self, service: DashboardService, bridge: AsyncBridge, *, models: Callable[[], Awaitable[list[Path]]],
                 choose_model: Callable[[], str | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.service = service
        self.bridge = bridge
        self._models = models
        self._choose_model = choose_model
        self.bench_task: TaskHandle | None = None
        self.models_task: TaskHandle | None = None
        self.last_results: list[ImageEngineStats] = []

        self.usage_table = self._table([self.tr("Engine"), self.tr("Backend"), self.tr("Images"),
                                        self.tr("Seconds per image"), self.tr("Seconds per step")])
        self.usage_empty = QLabel()
        self.texts.set(self.usage_empty.setText, lambda: self.tr("No images yet. Make one on the Images page and its speed appears here."))
        self.usage_empty.setObjectName("muted")
        self.usage_empty.setWordWrap(True)

        self.model_combo = QComboBox()
        self.model_combo.setMinimumWidth(360)
        self.browse_button = QPushButton()
        self.texts.set(self.browse_button.setText, lambda: self.tr("Browse…"))
        self.browse_button.clicked.connect(self._browse)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.browse_button)
        self.size_spin = QSpinBox()
        self.size_spin.setRange(64, 2048)
        self.size_spin.setSingleStep(64)
        self.size_spin.setValue(512)
        self.size_spin.setSuffix(" px")
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(1, 150)
        self.steps_spin.setValue(20)
        self.reps_spin = QSpinBox()
        self.reps_spin.setRange(1, 10)
        self.reps_spin.setValue(2)
        for spin in (self.size_spin, self.steps_spin, self.reps_spin):
            spin.setMaximumWidth(140)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        form.addRow(self.texts.label(lambda: self.tr("Model")), model_row)
        form.addRow(self.texts.label(lambda: self.tr("Image size (square)")), self.size_spin)
        form.addRow(self.texts.label(lambda: self.tr("Steps")), self.steps_spin)
        form.addRow(self.texts.label(lambda: self.tr("Timed runs per engine")), self.reps_spin)
        self.run_button = QPushButton()
        self.texts.set(self.run_button.setText, lambda: self.tr("Benchmark this model"))
        self.texts.set(self.run_button.setToolTip, lambda: self.tr("Each image engine makes the same image: one warm-up, then the timed runs. "
                                           "Nothing is added to the gallery."))
        self.run_button.clicked.connect(self.start_benchmark)
        self.progress = ProgressPanel()
        self.bench_table = self._table([self.tr("Engine"), self.tr("Backend"), self.tr("Images"),
                                        self.tr("Seconds per image"), self.tr("Seconds per step")])
        self.bench_table.hide()
        self.bars = BarChart(self.tr("Images per minute (benchmark)"), self.tr("images/min"))
        self.bars.hide()
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.copy_button = QPushButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy chart"))
        self.copy_button.clicked.connect(lambda: copy_chart_image(self.bars))
        self.copy_button.hide()
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_button)
        run_row.addStretch(1)
        run_row.addWidget(self.copy_button)

        layout = QVBoxLayout(self)
        layout.addWidget(self._heading(self.tr("Measured while you made images")))
        layout.addWidget(self.usage_empty)
        layout.addWidget(self.usage_table)
        layout.addWidget(self._heading(self.tr("Benchmark an image model")))
        layout.addLayout(form)
        layout.addLayout(run_row)
        layout.addWidget(self.progress)
        layout.addWidget(self.summary)
        layout.addWidget(self.bench_table)
        layout.addWidget(self.bars, 1)
        layout.addStretch(0)

    @staticmethod
    def _heading(text: str) -> QLabel:
        label = QLabel(text)
        label.setObjectName("sectionTitle")
        label.setStyleSheet("font-weight: 600;")
        return label

    @staticmethod
    def _table(headers: list[str]) -> QTableWidget:
        table = QTableWidget(0, len(headers))
        table.setHorizontalHeaderLabels(headers)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.verticalHeader().hide()
        table.setMaximumHeight(150)
        return table

    # -- showing ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the recorded image batches and the image models on offer."""
        if self.models_task is None or not self.models_task.is_running:
            self.models_task = self.bridge.run(lambda _p: self._models(), name="Find image models",
                                               show_errors=False)
            self.models_task.succeeded.connect(self._offer_models)
        stats = self.service.image_stats(source="images")
        self._fill(self.usage_table, stats)
        self.usage_table.setVisible(bool(stats))
        self.usage_empty.setVisible(not stats)

    def _offer_models(self, library: list[Path]) -> None:
        current = self.model_combo.currentData()
        self.model_combo.clear()
        for p in library:
            self.model_combo.addItem(p.name, str(p))
        if current:
            self._select(Path(current))

    def _fill(self, table: QTableWidget, stats: list[ImageEngineStats]) -> None:
        table.setRowCount(len(stats))
        for row, s in enumerate(stats):
            cells = [s.engine, s.backend.upper() if s.backend in ("cpu", "rocm") else s.backend.capitalize(),
                     str(s.images), f"{s.seconds_per_image:.2f}" if s.seconds_per_image is not None else "–",
                     f"{s.seconds_per_step:.3f}" if s.seconds_per_step is not None else "–"]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col >= 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, col, item)

    def _select(self, path: Path) -> None:
        idx = self.model_combo.findData(str(path))
        if idx < 0:
            self.model_combo.insertItem(0, path.name, str(path))
            idx = 0
        self.model_combo.setCurrentIndex(idx)

    def _browse(self) -> None:
        chosen = self._choose_model()
        if chosen:
            self._select(Path(chosen))

    # -- the benchmark ------------------------------------------------------------------------------
    def start_benchmark(self) -> TaskHandle | None:
        data = self.model_combo.currentData()
        if not data:
            self.summary.setText(self.tr("Choose an image model first (the library's image models are listed)."))
            return None
        if self.bench_task is not None and self.bench_task.is_running:
            return None
        model, reps = Path(data), self.reps_spin.value()
        size, steps = self.size_spin.value(), self.steps_spin.value()
        service = self.service

        async def work(p: ProgressCallback) -> list[ImageEngineStats]:
            return await service.run_image_benchmark(model, reps, p,
                                                     {"width": size, "height": size, "steps": steps})

        handle = self.bridge.run(work, name="Image benchmark")
        self.bench_task = handle
        self._started = time.monotonic()
        self.run_button.setEnabled(False)
        self.summary.setText("")
        self.progress.attach(handle, self.tr("Benchmarking %1").replace("%1", model.name))
        handle.succeeded.connect(self._show_results)
        handle.cancelled.connect(lambda: self.summary.setText(self.tr("Benchmark cancelled.")))
        handle.finished.connect(lambda: self.run_button.setEnabled(True))
        return handle

    def _show_results(self, stats: list[ImageEngineStats]) -> None:
        self.last_results = list(stats)
        self._fill(self.bench_table, stats)
        self.bench_table.setVisible(bool(stats))
        ok = [s for s in stats if s.seconds_per_image]
        self.bars.set_data([s.engine for s in ok],
                           {self.tr("images/min"): [60.0 / (s.seconds_per_image or 1.0) for s in ok]})
        self.bars.setVisible(bool(ok))
        self.copy_button.setVisible(bool(ok))
        if not ok:
            self.summary.setText(self.tr("No image engine finished the benchmark: see the engine logs."))
        else:
            best = ok[0]
            self.summary.setText(self.tr("Fastest here: %1, %2 s per image (%3 s per step).")
                                 .replace("%1", best.engine).replace("%2", f"{best.seconds_per_image:.2f}")
                                 .replace("%3", f"{best.seconds_per_step:.3f}" if best.seconds_per_step else "–"))
        self.refresh()
