"""Dashboards: throughput over time (prefill and decode apart), GPU and engine over time, and the
benchmark that compares engines on this machine and sets the model's default engine."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QT_TRANSLATE_NOOP, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import ProgressCallback, StrataError, format_bytes, from_json, to_gib
from strata_gui.core.bench import (
    DEFAULT_DEPTH,
    BenchConfig,
    BenchResult,
    DashboardService,
    DraftSpeedup,
    ProcessSampler,
    Recommendation,
    RequestRecord,
    ServerCounters,
    spread,
)
from strata_gui.core.pool import EnginePool, PoolActivity, PoolEvent
from strata_gui.core.runtime import EngineSpec, percent_text
from strata_gui.ui.bridge import AsyncBridge, TaskHandle, follow
from strata_gui.ui.charts import BarChart, TimeSeriesChart, copy_chart_image
from strata_gui.ui.i18n import LiveTexts, core_text
from strata_gui.ui.image_dashboard import ImageDashboard
from strata_gui.ui.pages.base import Page
from strata_gui.ui.widgets import ProgressPanel

ALL = "__all__"
GPU_METRICS = (("load", str(QT_TRANSLATE_NOOP("DashboardPage", "Load %"))),
               ("vram", str(QT_TRANSLATE_NOOP("DashboardPage", "VRAM used (GiB)"))),
               ("gtt", str(QT_TRANSLATE_NOOP("DashboardPage", "Shared used (GiB)"))),
               ("temp", str(QT_TRANSLATE_NOOP("DashboardPage", "Temperature (°C)"))),
               ("power", str(QT_TRANSLATE_NOOP("DashboardPage", "Power (W)"))),
               ("clock", str(QT_TRANSLATE_NOOP("DashboardPage", "Core clock (MHz)"))))


# Where requests come from, as the metrics store records them, and their column titles.
SOURCES = (("chat", str(QT_TRANSLATE_NOOP("DashboardPage", "Chat"))),
           ("api-openai", str(QT_TRANSLATE_NOOP("DashboardPage", "OpenAI API"))),
           ("api-ollama", str(QT_TRANSLATE_NOOP("DashboardPage", "Ollama API"))),
           ("api-anthropic", str(QT_TRANSLATE_NOOP("DashboardPage", "Anthropic API"))))
LEGACY_SOURCES = {"api": "api-openai"}  # recorded before the local API spoke more than OpenAI

class TelemetrySource(Protocol):
    """Recent GPU samples: {gpu name: {metric: [(epoch s, value or None)]}} with GPU_METRICS keys.

    Sampled in the background between ``start(owner)`` and ``stop(owner)`` (the page is shown /
    hidden); the GPU page holds the same source with its own ownership.
    """

    def start(self, owner: object = None) -> None: ...
    def stop(self, owner: object = None) -> None: ...
    def history(self) -> dict[str, dict[str, list[tuple[float, float | None]]]]: ...


class _Filters(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QComboBox()
        self.engine = QComboBox()
        # Never taller than its combo boxes: spare height goes to the chart (or the empty message).
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel(self.tr("Model")))
        row.addWidget(self.model, 1)
        row.addWidget(QLabel(self.tr("Engine")))
        row.addWidget(self.engine, 1)

    def fill(self, models: list[str], engines: list[str]) -> None:
        for combo, values in ((self.model, models), (self.engine, engines)):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(self.tr("All"), ALL)
            for v in values:
                combo.addItem(v, v)
            idx = combo.findData(current)
            combo.setCurrentIndex(idx if idx >= 0 else 0)
            combo.blockSignals(False)

    def value(self, combo: QComboBox) -> str | None:
        data = combo.currentData()
        return None if data in (None, ALL) else str(data)


# Points further apart than these are not joined by a line (issue 48: a line was drawn across a gap).
REQUEST_GAP_S = 30 * 60  # requests: half an hour without one (the app closed, a night)
SAMPLE_GAP_S = 10.0  # 1 Hz samples: sampling stopped (the page hidden, the engine restarted)

class DashboardPage(Page):
    """Three tabs: Throughput, GPU & engine, Benchmark.

    Args:
        service: The Qt-free dashboard facade.
        bridge: Runs the benchmark and metric polls.
        telemetry: GPU history source (None: no GPU telemetry available).
        engine_pid: The running engine's pid, or None.
        engine_url: The running engine's base URL, or None (for ``/metrics``).
        engine_headers: What a request to the running engine carries (its key).
        models: Model files offered for benchmarking.
        choose_model: Asks the user for a GGUF file (None when cancelled).
        save_path: Asks where to export (suggested name → path or None).
        pool: The engine pool: the requests its engines answer now and those waiting are counted.
    """

    page_title = "Dashboard"
    page_icon = "SP_FileDialogContentsView"

    def __init__(
        self,
        service: DashboardService,
        bridge: AsyncBridge,
        *,
        telemetry: TelemetrySource | None = None,
        engine_pid: Callable[[], int | None] = lambda: None,
        engine_url: Callable[[], str | None] = lambda: None,
        engine_headers: Callable[[], dict[str, str]] = dict,
        models: Callable[[], list[Path]] = list,
        choose_model: Callable[[], str | None] = lambda: None,
        save_path: Callable[[str], str | None] = lambda _name: None,
        images_tab: ImageDashboard | None = None,
        pool: EnginePool | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.page_title = self.tr("Dashboard")
        self.service = service
        self.bridge = bridge
        self._telemetry = telemetry
        self._engine_url = engine_url
        self._engine_headers = engine_headers
        self._models = models
        self._choose_model = choose_model
        self._save_path = save_path
        self._process = ProcessSampler(engine_pid)
        self._records: list[RequestRecord] = []
        self._counters_task: TaskHandle | None = None
        self.bench_task: TaskHandle | None = None
        self.last_results: list[BenchResult] = []
        self.last_limits: list[dict[str, Any] | None] = []  # each result's share of the memory limit
        self.last_recommendation: Recommendation | None = None
        self.gpu_charts: dict[str, dict[str, TimeSeriesChart]] = {}

        self.tabs = QTabWidget()
        self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(self._build_throughput(), "")),
                       lambda: self.tr("Throughput"))
        self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(self._build_gpu(), "")),
                       lambda: self.tr("GPU and engine"))
        self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(self._build_benchmark(), "")),
                       lambda: self.tr("Benchmark"))
        self.images_tab = images_tab
        if images_tab is not None:
            self.texts.set(functools.partial(self.tabs.setTabText, self.tabs.addTab(images_tab, "")),
                           lambda: self.tr("Images"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.texts.header(lambda: self.tr("Dashboard"),
                                           lambda: self.tr("Prefill and decode speed of every request, GPU and engine over "
                                            "time, and a benchmark of the engines on this machine.")))
        layout.addWidget(self.tabs, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.tick)
        follow(self, service.requests, self._on_request)
        if pool is not None:
            self.show_activity(pool.activity())
            follow(self, pool.events, self._on_pool_event)

    # -- throughput tab -----------------------------------------------------------------------------
    def _build_throughput(self) -> QWidget:
        w = QWidget()
        self.filters = _Filters()
        self.filters.model.currentIndexChanged.connect(self.reload_history)
        self.filters.engine.currentIndexChanged.connect(self.reload_history)
        self.throughput_chart = TimeSeriesChart(
            self.tr("Tokens per second per request"),
            [(self.tr("Prefill"), "left"), (self.tr("Decode"), "right")],
            left_label=self.tr("prefill tok/s"), right_label=self.tr("decode tok/s"), markers=True, gap_s=REQUEST_GAP_S)
        # Each reply's decode speed as a share of the memory-bandwidth limit of the device it ran on
        # ("71 % of this GPU's memory limit") and its prefill as a share of the compute limit ("18 %
        # of this GPU's compute limit"), over time: shown once a request in view has one (remote
        # engines, the local API and short prompts have none).
        self.share_chart = TimeSeriesChart(
            self.tr("Share of the hardware's limits"),
            # Prefill first: the same colours as the throughput chart above (prefill, then decode).
            [(self.tr("Prefill of the compute limit"), "left"), (self.tr("Decode of the memory limit"), "left")],
            left_label=self.tr("% of limit"), markers=True, gap_s=REQUEST_GAP_S)
        self._filled_shares = False  # replies recorded before prefill shares were kept: filled once
        self.share_chart.setVisible(False)
        self.aggregates = QLabel()
        self.aggregates.setObjectName("muted")
        self.aggregates.setWordWrap(True)
        self.counters_label = QLabel(self.tr("No engine running."))
        self.counters_label.setObjectName("muted")
        # The pool's live use: requests answered now and waiting (shown while a model is loaded or a request waits).
        self.requests_now = QLabel()
        self.requests_now.setObjectName("muted")
        self.requests_now.hide()
        self.copy_throughput = QPushButton()
        self.texts.set(self.copy_throughput.setText, lambda: self.tr("Copy chart"))
        self.copy_throughput.clicked.connect(lambda: copy_chart_image(self.throughput_chart))
        self.export_csv = QPushButton()
        self.texts.set(self.export_csv.setText, lambda: self.tr("Export CSV…"))
        self.export_csv.clicked.connect(lambda: self.export("strata-requests.csv"))
        self.export_json = QPushButton()
        self.texts.set(self.export_json.setText, lambda: self.tr("Export JSON…"))
        self.export_json.clicked.connect(lambda: self.export("strata-stats.json"))
        # Who asked: the chat, or other apps through the local API (per model and per API).
        self.sources_table = QTableWidget(0, 1 + len(SOURCES))
        self.sources_table.setHorizontalHeaderLabels(
            [self.tr("Model")] + [self.tr(label) for _source, label in SOURCES])
        self.sources_table.verticalHeader().setVisible(False)
        self.sources_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.sources_table.horizontalHeader().setStretchLastSection(False)
        self.sources_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.sources_table.setMaximumHeight(120)
        self.empty_label = QLabel()
        self.texts.set(self.empty_label.setText, lambda: self.tr("No requests yet. Chat with a model and its speed appears here."))
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setObjectName("muted")
        buttons = QHBoxLayout()
        buttons.addWidget(self.counters_label, 1)
        buttons.addWidget(self.copy_throughput)
        buttons.addWidget(self.export_csv)
        buttons.addWidget(self.export_json)
        layout = QVBoxLayout(w)
        layout.addWidget(self.filters)
        layout.addWidget(self.aggregates)
        layout.addWidget(self.sources_table)
        # With no request yet the chart is hidden and the message takes its room (stretch 1 on both),
        # so the filters stay at the top instead of floating under an empty band.
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self.throughput_chart, 1)
        layout.addWidget(self.share_chart, 1)
        layout.addWidget(self.requests_now)
        layout.addLayout(buttons)
        return w

    def reload_history(self) -> None:
        """Re-read the history for the current filters (on show and on filter change)."""
        if not self._filled_shares:
            self._filled_shares = True
            self._fill_prefill_shares()
        self.filters.fill(self.service.store.distinct("model"), self.service.store.distinct("engine"))
        self._records = self.service.store.requests(model=self.filters.value(self.filters.model),
                                                    engine=self.filters.value(self.filters.engine))
        self.throughput_chart.clear()
        self.share_chart.clear()
        for r in self._records:
            self._plot(r)
        self._update_aggregates()

    def _fill_prefill_shares(self) -> None:
        """Older replies get their prefill share where it can be computed (their model is still in
        the library), once per run; the chart is drawn again when some did."""
        by_name = {path.name: path for path in self._models()}
        task = self.bridge.run(lambda _p: self.service.fill_prefill_shares(by_name.get), name="Prefill shares")
        task.succeeded.connect(lambda filled: self.reload_history() if filled else None)

    def _matches(self, r: RequestRecord) -> bool:
        m, e = self.filters.value(self.filters.model), self.filters.value(self.filters.engine)
        return (m is None or r.model == m) and (e is None or r.engine == e)

    def _plot(self, r: RequestRecord) -> None:
        self.throughput_chart.append(self.tr("Prefill"), r.at, r.prefill_tps)
        self.throughput_chart.append(self.tr("Decode"), r.at, r.decode_tps)
        if r.limit_share is not None:
            self.share_chart.append(self.tr("Decode of the memory limit"), r.at, r.limit_share * 100)
        if r.prefill_share is not None:
            self.share_chart.append(self.tr("Prefill of the compute limit"), r.at, r.prefill_share * 100)
        if r.limit_share is None and r.prefill_share is None:  # the same time axis as the chart above
            self.share_chart.include_time(r.at)

    def _on_request(self, r: RequestRecord) -> None:
        if self.filters.model.findData(r.model) < 0 or self.filters.engine.findData(r.engine) < 0:
            self.filters.fill(self.service.store.distinct("model"), self.service.store.distinct("engine"))
        if self._matches(r):
            self._records.append(r)
            self._plot(r)
            self._update_aggregates()

    def _update_aggregates(self) -> None:
        # A remote engine's rates are another machine's: "All" gives this machine's medians, and
        # says how many remote requests it left out (a remote engine chosen alone gets its own).
        local = [r for r in self._records if r.backend != "remote"]
        remote = len(self._records) - len(local)
        agg = self.service.store.aggregate(local or self._records)
        shown = bool(self._records)
        self.empty_label.setVisible(not shown)
        self.throughput_chart.setVisible(shown)
        self.share_chart.setVisible(agg.share_median is not None or agg.prefill_share_median is not None)
        self.aggregates.setVisible(shown)
        self._show_sources()

        def f(v: float | None, unit: str, scale: float = 1.0, digits: int = 0) -> str:
            return self.tr("n/a") if v is None else f"{v * scale:,.{digits}f} {unit}"

        self.aggregates.setText(self.tr(
            "%n request(s) · prefill median %2, p90 %3 · decode median %4, p90 %5 · time to first token "
            "median %6, p90 %7", "", agg.count)
            .replace("%2", f(agg.prefill_median, "tok/s")).replace("%3", f(agg.prefill_p90, "tok/s"))
            .replace("%4", f(agg.decode_median, "tok/s", digits=1)).replace("%5", f(agg.decode_p90, "tok/s", digits=1))
            .replace("%6", f(agg.ttft_median, "ms", 1000)).replace("%7", f(agg.ttft_p90, "ms", 1000))
            + ("" if agg.share_median is None else " · " + self.tr("decode median %1 % of the memory limit")
               .replace("%1", f"{agg.share_median * 100:.0f}"))
            + ("" if agg.prefill_share_median is None else " · " + self.tr("prefill median %1 % of the compute limit")
               .replace("%1", f"{agg.prefill_share_median * 100:.0f}"))
            + ("" if not (local and remote) else " · " + self.tr(
                "%n request(s) to remote engines not in these medians", "", remote)))

    def _show_sources(self) -> None:
        """Requests per model and per source (the chat, each API of the local API), shown once
        another app has asked: a chat-only history needs no table."""
        counts: dict[str, dict[str, int]] = {}
        for r in self._records:
            source = LEGACY_SOURCES.get(r.source, r.source)
            counts.setdefault(r.model, {}).setdefault(source, 0)
            counts[r.model][source] += 1
        table = self.sources_table
        table.setVisible(any(s != "chat" for per in counts.values() for s in per))
        table.setRowCount(len(counts))
        for row, (model, per) in enumerate(sorted(counts.items())):
            table.setItem(row, 0, QTableWidgetItem(model))
            for col, (source, _label) in enumerate(SOURCES, start=1):
                item = QTableWidgetItem(str(per.get(source, 0)))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, col, item)
        table.resizeColumnsToContents()

    def show_counters(self, c: ServerCounters | None) -> None:
        if c is None:
            self.counters_label.setText(self.tr("No engine running (or it has metrics off)."))
            return
        self.counters_label.setText(self.tr(
            "Engine since start: %1 prompt tokens at %2 · %3 generated at %4 · %5 busy, %6 waiting")
            .replace("%1", f"{c.prompt_tokens or 0:,.0f}")
            .replace("%2", f"{c.prefill_tps:,.0f} tok/s" if c.prefill_tps else "n/a")
            .replace("%3", f"{c.predicted_tokens or 0:,.0f}")
            .replace("%4", f"{c.decode_tps:,.1f} tok/s" if c.decode_tps else "n/a")
            .replace("%5", f"{c.requests_processing or 0:.0f}")
            .replace("%6", f"{c.requests_deferred or 0:.0f}"))

    def _on_pool_event(self, event: PoolEvent) -> None:
        if isinstance(event, PoolActivity):
            self.show_activity(event)

    def show_activity(self, activity: PoolActivity) -> None:
        """Count the requests the engines answer now and those waiting; per model in the tooltip."""
        if not activity.engines and not activity.waiting:
            self.requests_now.hide()
            return
        self.requests_now.setText(self.tr("Requests now: %1 active · %2 waiting")
                                  .replace("%1", str(activity.active)).replace("%2", str(len(activity.waiting))))
        lines = [self.tr("%1: %2 of %3 in use, %4 waiting").replace("%1", e.engine.model.name)
                 .replace("%2", str(e.active)).replace("%3", str(e.slots))
                 .replace("%4", str(activity.waiting_for(e.engine.model))) for e in activity.engines]
        self.requests_now.setToolTip("\n".join(lines))
        self.requests_now.show()

    def export(self, suggested: str) -> Path | None:
        target = self._save_path(suggested)
        if not target:
            return None
        path = Path(target)
        benches = self.service.store.bench_results(latest_only=False)
        try:
            self.service.export(path, self._records, benches)
        except StrataError as exc:
            self.bridge.error_occurred.emit(exc)
            return None
        self.counters_label.setText(self.tr("Exported to %s") % path)
        return path

    # -- GPU tab ---------------------------------------------------------------------------------------
    def _build_gpu(self) -> QWidget:
        body = QWidget()
        self.gpu_layout = QVBoxLayout(body)
        self.no_gpu_label = QLabel()
        self.texts.set(self.no_gpu_label.setText, lambda: self.tr(
            "No GPU telemetry on this machine. The engine's CPU and memory are shown below."))
        self.no_gpu_label.setObjectName("muted")
        self.gpu_layout.addWidget(self.no_gpu_label)
        self.engine_chart = TimeSeriesChart(
            self.tr("Engine process"), [(self.tr("CPU %"), "left"), (self.tr("Memory (GiB)"), "right")],
            window_s=600, left_label="%", right_label="GiB", gap_s=SAMPLE_GAP_S)
        self.engine_label = QLabel(self.tr("No engine running."))
        self.engine_label.setObjectName("muted")
        self.gpu_layout.addWidget(self.engine_label)
        self.gpu_layout.addWidget(self.engine_chart)
        self.gpu_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        return scroll

    def _gpu_chart(self, gpu: str, metric: str, label: str) -> TimeSeriesChart:
        charts = self.gpu_charts.get(gpu)
        if charts is None:
            charts = {}
            box = QGroupBox(gpu)
            grid = QGridLayout(box)
            for i, (key, title) in enumerate(GPU_METRICS):
                chart = TimeSeriesChart(self.tr(title), [(self.tr(title), "left")], window_s=600, gap_s=SAMPLE_GAP_S)
                chart.setMinimumHeight(170)
                chart._chart.legend().hide()
                grid.addWidget(chart, i // 3, i % 3)
                charts[key] = chart
            self.gpu_layout.insertWidget(self.gpu_layout.count() - 3, box)
            self.gpu_charts[gpu] = charts
        return charts[metric]

    def tick(self) -> None:
        """One refresh (1 Hz while the page is shown): new telemetry points, engine stats, counters."""
        if self._telemetry is not None:
            history = self._telemetry.history()
            self.no_gpu_label.setVisible(not history)
            for gpu, metrics in history.items():
                for key, title in GPU_METRICS:
                    points = metrics.get(key)
                    if points is None:
                        continue
                    chart = self._gpu_chart(gpu, key, title)
                    chart.extend(self.tr(title), points)
        sample = self._process.sample()
        if sample.cpu_percent is None:
            self.engine_label.setText(self.tr("No engine running."))
        else:
            self.engine_label.setText(self.tr("Engine: CPU %1 % · memory %2")
                                      .replace("%1", f"{sample.cpu_percent:.0f}")
                                      .replace("%2", format_bytes(sample.rss_bytes or 0)))
            self.engine_chart.append(self.tr("CPU %"), sample.at, sample.cpu_percent)
            self.engine_chart.append(self.tr("Memory (GiB)"), sample.at, to_gib(sample.rss_bytes or 0))
        if self._counters_task is None or not self._counters_task.is_running:
            url, headers = self._engine_url(), self._engine_headers()
            self._counters_task = self.bridge.run(lambda _p: self.service.server_counters(url, headers),
                                                  name="engine counters", show_errors=False)
            self._counters_task.succeeded.connect(self.show_counters)

    # -- benchmark tab ---------------------------------------------------------------------------------
    def _build_benchmark(self) -> QWidget:
        w = QWidget()
        form = self._build_workload_form()
        bars, choice = self._build_benchmark_results()
        layout = QVBoxLayout(w)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.results_table)
        layout.addLayout(bars, 1)
        layout.addWidget(self.recommendation_label)
        layout.addWidget(self.warnings_label)
        layout.addWidget(self.draft_label)
        layout.addLayout(choice)
        self.model_combo.currentIndexChanged.connect(self._show_saved)
        return w

    def _build_workload_form(self) -> QFormLayout:
        """The model, the engines to compare, the workload's sizes and depth, and Benchmark this model."""
        self.model_combo = QComboBox()
        self.model_combo.setMinimumWidth(320)
        self.browse_button = QPushButton()
        self.texts.set(self.browse_button.setText, lambda: self.tr("Browse…"))
        self.browse_button.clicked.connect(self._browse_model)
        self.engine_list = QListWidget()
        self.engine_list.setMaximumHeight(110)
        self.prefill_spin = QSpinBox()
        self.prefill_spin.setRange(16, 32768)
        self.prefill_spin.setValue(512)
        self.gen_spin = QSpinBox()
        self.gen_spin.setRange(8, 8192)
        self.gen_spin.setValue(128)
        self.reps_spin = QSpinBox()
        self.reps_spin.setRange(1, 20)
        self.reps_spin.setValue(3)
        self.depth_spin = QSpinBox()  # the long depth, like llama-bench -d (0: depth 0 only)
        self.depth_spin.setRange(0, 262144)
        self.depth_spin.setSingleStep(1024)
        self.depth_spin.setValue(DEFAULT_DEPTH)
        self.texts.set(self.depth_spin.setSpecialValueText, lambda: self.tr("off"))
        self.texts.set(self.depth_spin.setToolTip, lambda: self.tr("Also measure with this many tokens already in the context: which engine "
                                           "is fastest deep into a long conversation. 0 turns it off."))
        self.run_button = QPushButton()
        self.texts.set(self.run_button.setText, lambda: self.tr("Benchmark this model"))
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.start_benchmark)

        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.browse_button)
        form = QFormLayout()
        form.addRow(self.texts.label(lambda: self.tr("Model")), model_row)
        form.addRow(self.texts.label(lambda: self.tr("Engines")), self.engine_list)
        sizes = QHBoxLayout()
        for label, spin in ((self.tr("Prompt tokens"), self.prefill_spin), (self.tr("Generated tokens"), self.gen_spin),
                            (self.tr("Repetitions"), self.reps_spin), (self.tr("Depth"), self.depth_spin)):
            sizes.addWidget(QLabel(label))
            sizes.addWidget(spin)
        sizes.addStretch(1)
        sizes.addWidget(self.run_button)
        form.addRow(self.texts.label(lambda: self.tr("Workload")), sizes)
        return form

    def _build_benchmark_results(self) -> tuple[QHBoxLayout, QHBoxLayout]:
        """The progress, the results table, the prefill and decode charts, the recommendation, and
        the engine choice row (placed by :meth:`_build_benchmark`); returns the charts' and the choice's rows."""
        self.progress = ProgressPanel()
        self.results_table = QTableWidget(0, 8)
        self.texts.set(self.results_table.setHorizontalHeaderLabels, lambda: [self.tr("Engine"), self.tr("Backend"), self.tr("Depth"),
                                                      self.tr("Prefill tok/s"), self.tr("Of compute limit"),
                                                      self.tr("Decode tok/s"), self.tr("Of memory limit"),
                                                      self.tr("Status")])
        self.results_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.results_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results_table.verticalHeader().hide()
        self.results_table.setMaximumHeight(150)
        self.prefill_bars = BarChart(self.tr("Prefill (median)"), self.tr("tokens/s"))
        self.decode_bars = BarChart(self.tr("Decode (median)"), self.tr("tokens/s"))
        self.recommendation_label = QLabel()
        self.recommendation_label.setWordWrap(True)
        self.warnings_label = QLabel()
        self.draft_label = QLabel()  # the draft model's speed-up, when the model has one
        self.draft_label.setWordWrap(True)
        self.draft_label.hide()
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setObjectName("muted")
        self.choice_label = QLabel()
        self.choice_label.setObjectName("muted")
        self.use_button = QPushButton()
        self.texts.set(self.use_button.setText, lambda: self.tr("Always use this engine for the model"))
        self.use_button.clicked.connect(self.pin_recommended)
        self.auto_button = QPushButton()
        self.texts.set(self.auto_button.setText, lambda: self.tr("Choose automatically"))
        self.auto_button.clicked.connect(self.set_automatic)
        self.copy_bars = QPushButton()
        self.texts.set(self.copy_bars.setText, lambda: self.tr("Copy chart"))
        self.copy_bars.clicked.connect(lambda: copy_chart_image(self.decode_bars))

        bars = QHBoxLayout()
        bars.addWidget(self.prefill_bars)
        bars.addWidget(self.decode_bars)
        choice = QHBoxLayout()
        choice.addWidget(self.choice_label, 1)
        choice.addWidget(self.copy_bars)
        choice.addWidget(self.auto_button)
        choice.addWidget(self.use_button)
        return bars, choice

    def refresh_choices(self) -> None:
        current = self.model_combo.currentData()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        for path in self._models():
            self.model_combo.addItem(path.name, str(path))
        if current and self.model_combo.findData(current) < 0:
            self.model_combo.addItem(Path(current).name, current)
        idx = self.model_combo.findData(current)
        self.model_combo.setCurrentIndex(idx if idx >= 0 else 0)
        self.model_combo.blockSignals(False)
        checked = {self.engine_list.item(i).data(Qt.ItemDataRole.UserRole).id
                   for i in range(self.engine_list.count())
                   if self.engine_list.item(i).checkState() == Qt.CheckState.Checked}
        self.engine_list.clear()
        for spec in self.service.installed_engines():
            item = QListWidgetItem(f"{spec.label} ({spec.backend})")
            item.setData(Qt.ItemDataRole.UserRole, spec)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if not checked or spec.id in checked else Qt.CheckState.Unchecked)
            self.engine_list.addItem(item)
        if self.engine_list.count() == 0:
            self.engine_list.addItem(self.tr("No working engine installed — install one on the Engines page."))
        self._update_run_enabled()
        self._show_saved()

    def _update_run_enabled(self) -> None:
        running = self.bench_task is not None and self.bench_task.is_running
        self.run_button.setEnabled(not running and self.model_combo.count() > 0 and bool(self.selected_engines()))

    def selected_engines(self) -> list[EngineSpec]:
        out = []
        for i in range(self.engine_list.count()):
            item = self.engine_list.item(i)
            spec = item.data(Qt.ItemDataRole.UserRole)
            if isinstance(spec, EngineSpec) and item.checkState() == Qt.CheckState.Checked:
                out.append(spec)
        return out

    def _browse_model(self) -> None:
        chosen = self._choose_model()
        if chosen:
            if self.model_combo.findData(chosen) < 0:
                self.model_combo.addItem(Path(chosen).name, chosen)
            self.model_combo.setCurrentIndex(self.model_combo.findData(chosen))
            self._update_run_enabled()

    def current_model(self) -> Path | None:
        data = self.model_combo.currentData()
        return Path(data) if data else None

    def start_benchmark(self) -> TaskHandle | None:
        model = self.current_model()
        engines = self.selected_engines()
        if model is None or not engines:
            return None
        config = BenchConfig(self.prefill_spin.value(), self.gen_spin.value(), self.reps_spin.value(),
                             depth=self.depth_spin.value())

        service = self.service

        async def make(on_progress: ProgressCallback) -> tuple[list[BenchResult], Recommendation, list[DraftSpeedup],
                                                               list[dict[str, Any] | None]]:
            results, rec = await service.run_benchmark(model, engines, config, on_progress)
            speedups = await service.draft_speedups(model, results, engines, config, on_progress)
            limits = await service.benchmark_limits(model, results, engines)
            return results, rec, speedups, limits

        self.bench_task = self.bridge.run(make, name=f"Benchmark {model.name}")
        self.progress.attach(self.bench_task, self.tr("Benchmarking %s") % model.name)
        self.bench_task.succeeded.connect(lambda res: self.show_results(*res))
        self.bench_task.finished.connect(self._update_run_enabled)
        self._update_run_enabled()
        return self.bench_task

    def _show_saved(self) -> None:
        model = self.current_model()
        if model is None:
            return
        results, rec = self.service.saved_results(model)
        self.show_results(results, rec)
        if results:  # the shares are computed, not stored: work them out again for the saved runs
            engines = [self.engine_list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.engine_list.count())]
            specs = [e for e in engines if isinstance(e, EngineSpec)]
            task = self.bridge.run(lambda _p: self.service.benchmark_limits(model, results, specs),
                                   name="Benchmark limits")
            task.succeeded.connect(lambda limits: self._saved_limits(model, results, rec, limits))

    def _saved_limits(self, model: Path, results: list[BenchResult], rec: Recommendation,
                      limits: list[dict[str, Any] | None]) -> None:
        if self.current_model() == model and self.last_results is results:  # still the runs on show
            self.show_results(results, rec, (), limits)

    def show_results(self, results: list[BenchResult], rec: Recommendation,
                     speedups: Sequence[DraftSpeedup] = (), limits: Sequence[dict[str, Any] | None] = ()) -> None:
        """Show a benchmark; ``limits`` (per result) adds each run's share of the memory limit."""
        self.last_limits = list(limits) if len(limits) == len(results) else [None] * len(results)
        self.last_results, self.last_recommendation = results, rec
        lines = [self.tr("Draft model on {0}: decode {1:,.1f} → {2:,.1f} tok/s (×{3:.2f})").format(
            s.engine, s.decode_without, s.decode_with, s.speedup or 0.0) for s in speedups]
        self.draft_label.setText("\n".join(lines))
        self.draft_label.setVisible(bool(lines))
        name = self.service.engine_name
        self.results_table.setRowCount(len(results))

        def fmt(values: list[float], med: float | None, digits: int) -> str:
            if med is None:
                return "—"
            s = spread(values)
            return f"{med:,.{digits}f}" + (f" ± {s * 100:.0f} %" if s is not None else "")

        for row, (r, limit) in enumerate(zip(results, self.last_limits, strict=True)):
            prefill = (limit or {}).get("prefill")
            cells = [name(r.engine), r.backend, f"{r.depth:,}", fmt(r.prefill_tps, r.prefill_median, 0),
                     self._share_cell(prefill), fmt(r.decode_tps, r.decode_median, 1), self._share_cell(limit),
                     self.tr("ok") if r.ok else (core_text(r.error) if r.error else self.tr("failed"))]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 4 and isinstance(prefill, dict):
                    item.setToolTip(self.tr("Compute limit on {0}: {1:,.1f} TFLOPS ({2}), {3:,.2f} GFLOP per prompt "
                                            "token. {4}").format(prefill.get("device", ""), prefill.get("tflops") or 0,
                                                                 prefill.get("compute_type", ""),
                                                                 (prefill.get("flops_per_token") or 0) / 1e9,
                                                                 prefill.get("source", "")))
                if col == 6 and limit and limit.get("ceiling_tps"):
                    item.setToolTip(self.tr("Memory limit on {0}: {1:,.1f} MB read per token").format(
                        limit.get("device", ""), (limit.get("bytes_per_token") or 0) / 1e6))
                self.results_table.setItem(row, col, item)
        ok = [r for r in results if r.ok and r.depth == 0]  # the bars compare engines at depth 0
        # Only what was measured: a ceiling drawn as a bar beside it dwarfed the measurement (a
        # 14.5 tok/s decode beside a 2,383 tok/s limit); the shares are in the table.
        self.prefill_bars.set_data([name(r.engine) for r in ok], {self.tr("Prefill"): [r.prefill_median or 0 for r in ok]})
        self.decode_bars.set_data([name(r.engine) for r in ok], {self.tr("Decode"): [r.decode_median or 0 for r in ok]})
        if results:
            self.recommendation_label.setText(
                (self.tr("Fastest here: %s. ") % name(rec.engine) if rec.engine else "") + core_text(rec.reason)
                + (" " + core_text(rec.depth_note) if rec.depth_note else ""))
        else:
            self.recommendation_label.setText(self.tr("No benchmark for this model on this machine yet."))
        # A ROCm prefill on the untuned path: which tuning-table check failed, and the fix (once each).
        findings = [from_json(p["slow_path"]) for lim in self.last_limits
                    if isinstance(p := (lim or {}).get("prefill"), dict) and p.get("slow_path")]
        warnings = [*rec.warnings, *dict.fromkeys(findings)]
        self.warnings_label.setText("\n".join("⚠ " + core_text(w) for w in warnings))
        self.use_button.setEnabled(rec.engine is not None)
        self._show_choice()

    def _share_cell(self, limit: Any) -> str:
        """"18 % of 2,100 tok/s": a run's share of a ceiling; "—" where none is known."""
        if not isinstance(limit, dict) or not isinstance(limit.get("share"), (int, float)):
            return "—"
        return self.tr("{0} % of {1:,.0f} tok/s").format(percent_text(limit["share"]), limit["ceiling_tps"])

    def _show_choice(self) -> None:
        model = self.current_model()
        choice = self.service.default_engine(model) if model else None
        if choice is None:
            self.choice_label.setText(self.tr("Default engine: from the engine plan (not measured yet)."))
        elif choice.source == "user":
            self.choice_label.setText(self.tr("Default engine: %s (chosen by you).") % self.service.engine_name(choice.engine))
        else:
            self.choice_label.setText(self.tr("Default engine: %s (automatic, from the benchmark).")
                                      % self.service.engine_name(choice.engine))

    def pin_recommended(self) -> None:
        model = self.current_model()
        if model and self.last_recommendation and self.last_recommendation.engine:
            self.service.pin_engine(model, self.last_recommendation.engine)
            self._show_choice()

    def set_automatic(self) -> None:
        model = self.current_model()
        if model:
            self.service.automatic_engine(model)
            self._show_choice()

    # -- page life cycle ---------------------------------------------------------------------------------
    def on_shown(self) -> None:
        if self._telemetry is not None:
            self._telemetry.start(self)
        self.reload_history()
        self.refresh_choices()
        if self.images_tab is not None:
            self.images_tab.refresh()
        self.tick()
        self.timer.start()

    def hideEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        self.timer.stop()
        if self._telemetry is not None:
            self._telemetry.stop(self)
        super().hideEvent(event)

    def stop(self) -> None:
        self.timer.stop()
        if self._telemetry is not None:
            self._telemetry.stop(self)
        if self.bench_task is not None:
            self.bench_task.cancel()
