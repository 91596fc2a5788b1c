"""The first-run guide: from a fresh install to a chat in a few clicks.

Steps: the GPUs found and the engine plan → download the recommended engine → pick a starter
model that fits this GPU → download it → open a chat. Offline (or when GitHub cannot be
reached) it says so and offers "Add local build…" and "Open GGUF…" instead. The guide can be
skipped at any point; the app remembers that and Settings can run it again.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import ModelError, Progress, ProgressCallback, StrataError, format_bytes
from strata_gui.core.engines import EnginePlan, EngineResolver, EngineService, InstalledEngine, SetupOutcome
from strata_gui.core.gpu import GpuReport, GpuService
from strata_gui.core.models import ModelService, StarterFit, StarterModel, Verdict, judge_starters, recommend
from strata_gui.core.runtime import Backend, backend_label
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.i18n import core_text, error_text
from strata_gui.ui.widgets import ProgressPanel

log = logging.getLogger(__name__)

STEP_SETUP, STEP_MODELS, STEP_READY, STEP_OFFLINE = range(4)
_BACKENDS = {b.value: b.label for b in (Backend.ROCM, Backend.VULKAN, Backend.CPU)}
_VERDICT_COLOURS = {Verdict.FULL_GPU: "#15803d", Verdict.PARTIAL: "#b45309",
                    Verdict.CPU_ONLY: "#6b7280", Verdict.WONT_FIT: "#b91c1c"}


def _label(text: str = "", name: str | None = None, *, wrap: bool = True) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(wrap)
    label.setTextFormat(Qt.TextFormat.RichText if text.startswith("<") else Qt.TextFormat.AutoText)
    if name:
        label.setObjectName(name)
    return label


def _card() -> tuple[QFrame, QVBoxLayout]:
    frame = QFrame()
    frame.setObjectName("card")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(14, 12, 14, 12)
    layout.setSpacing(6)
    return frame, layout


class FirstRunGuide(QDialog):
    """The guide: a dialog that takes over the main window's whole content area while it runs
    (:meth:`MainWindow.cover`), so no page shows through it; it keeps a dialog's accept/reject/Esc.

    Args:
        gpu: Detects the GPUs (its last report is reused when there is one).
        engines: Plans, installs and probes engines.
        models: Downloads the starter model, opens local GGUF files, judges fits.
        bridge: Runs the core coroutines.
        starters: The curated models (``load_starters(kernels_dir() / STARTERS_FILE)``).
        resolver: The engine resolver (GPU targets, and which installed engine would run).
        offline: Settings' offline mode: nothing is downloaded.
        choose_folder: Asks for a folder (a local llama.cpp build); None when cancelled.
        choose_model: Asks for a .gguf file; None when cancelled.

    Signals:
        chat_requested(Path): the user finished with a model to chat with.
        engine_ready(InstalledEngine): an engine was installed or registered and works.
    """

    chat_requested = Signal(object)
    engine_ready = Signal(object)

    def __init__(
        self,
        gpu: GpuService,
        engines: EngineService,
        models: ModelService,
        bridge: AsyncBridge,
        *,
        starters: Sequence[StarterModel],
        resolver: EngineResolver,
        offline: bool,
        choose_folder: Callable[[], str | None],
        choose_model: Callable[[], str | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._gpu = gpu
        self._engines = engines
        self._models = models
        self._bridge = bridge
        self._starters = list(starters)
        self._resolver = resolver
        self._gpu_targets = resolver.gpu_targets
        self.offline = offline
        self._choose_folder = choose_folder
        self._choose_model = choose_model
        self._started = False
        self._running: set[TaskHandle] = set()
        self.report: GpuReport | None = None
        self.plan: EnginePlan | None = None
        self.engine: InstalledEngine | None = None
        self.model_path: Path | None = None
        self.fits: list[StarterFit] = []
        self.offline_reason = ""
        self.check_handle: TaskHandle | None = None
        self.engine_handle: TaskHandle | None = None
        self.model_handle: TaskHandle | None = None
        self.local_handle: TaskHandle | None = None
        self.setWindowTitle(self.tr("Welcome to Strata"))
        self.setModal(False)
        self.resize(760, 600)
        self._build()
        self._go(STEP_SETUP)

    # -- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        self.heading = _label("", "pageTitle")
        self.steps = _label("", "muted")
        self.stack = QStackedWidget()
        self.stack.addWidget(self._build_setup())
        self.stack.addWidget(self._build_models())
        self.stack.addWidget(self._build_ready())
        self.stack.addWidget(self._build_offline())

        self.skip_button = QPushButton(self.tr("Skip guide"))
        self.skip_button.setToolTip(self.tr("You can run the guide again from Settings."))
        self.skip_button.clicked.connect(self.reject)
        self.back_button = QPushButton(self.tr("Back"))
        self.back_button.clicked.connect(self._back)
        self.primary_button = QPushButton()
        self.primary_button.setDefault(True)
        for b in (self.skip_button, self.back_button):
            b.setAutoDefault(False)
        self.primary_button.clicked.connect(self._primary)
        buttons = QHBoxLayout()
        buttons.addWidget(self.skip_button)
        buttons.addStretch(1)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.primary_button)

        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        line.setFrameShadow(QFrame.Shadow.Sunken)
        # The guide fills the window's content area; its text keeps a readable width in the middle.
        body = QWidget()
        body.setMaximumWidth(900)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addStretch(1)
        outer.addWidget(body, 100)
        outer.addStretch(1)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(24, 20, 24, 16)
        layout.setSpacing(10)
        layout.addWidget(self.heading)
        layout.addWidget(self.steps)
        layout.addWidget(self.stack, 1)
        layout.addWidget(line)
        layout.addLayout(buttons)

    def _build_setup(self) -> QWidget:
        page = QWidget()
        self.setup_intro = _label(self.tr("Strata looks at your graphics hardware and picks the llama.cpp "
                                          "engine that runs models fastest on it."), "muted")
        gpu_card, gpu_layout = _card()
        gpu_layout.addWidget(_label(self.tr("Your hardware"), "sectionTitle"))
        self.gpu_label = _label(self.tr("Detecting GPUs…"))
        self.gpu_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gpu_layout.addWidget(self.gpu_label)
        plan_card, plan_layout = _card()
        plan_layout.addWidget(_label(self.tr("Engine plan"), "sectionTitle"))
        self.plan_label = _label(self.tr("Checking the available engine builds…"))
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        plan_layout.addWidget(self.plan_label)
        self.engine_progress = ProgressPanel()
        self.engine_progress.cancel_button.setObjectName("cancel-engine")
        self.engine_status = _label()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(10)
        layout.addWidget(self.setup_intro)
        layout.addWidget(gpu_card)
        layout.addWidget(plan_card)
        layout.addWidget(self.engine_progress)
        layout.addWidget(self.engine_status)
        layout.addStretch(1)
        return page

    def _build_models(self) -> QWidget:
        page = QWidget()
        intro = _label(self.tr("Pick a model to start with. Each one is judged against your GPU's memory; "
                               "you can download others later from the Models page."), "muted")
        self.target_label = _label("", "muted")
        self.model_list = QTreeWidget()
        self.model_list.setObjectName("starter-models")
        self.model_list.setHeaderLabels([self.tr("Model"), self.tr("Size"), self.tr("On this computer")])
        self.model_list.setRootIsDecorated(False)
        self.model_list.setAlternatingRowColors(True)
        self.model_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.model_list.setWordWrap(True)
        header = self.model_list.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.model_list.itemSelectionChanged.connect(self._selection_changed)
        self.model_list.itemDoubleClicked.connect(lambda *_: self.download_model())
        self.model_description = _label("", "muted")
        self.model_progress = ProgressPanel()
        self.model_progress.cancel_button.setObjectName("cancel-model")
        self.model_status = _label()
        self.open_gguf_button = QPushButton(self.tr("I already have a model: Open GGUF…"))
        self.open_gguf_button.setFlat(True)
        self.open_gguf_button.clicked.connect(self.open_gguf)
        row = QHBoxLayout()
        row.addWidget(self.open_gguf_button)
        row.addStretch(1)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addWidget(intro)
        layout.addWidget(self.target_label)
        layout.addWidget(self.model_list, 1)
        layout.addWidget(self.model_description)
        layout.addWidget(self.model_progress)
        layout.addWidget(self.model_status)
        layout.addLayout(row)
        return page

    def _build_ready(self) -> QWidget:
        page = QWidget()
        card, card_layout = _card()
        card_layout.addWidget(_label(self.tr("Everything is in place"), "sectionTitle"))
        self.ready_label = _label()
        card_layout.addWidget(self.ready_label)
        hint = _label(self.tr("The engine starts when you send your first message; loading a model takes "
                              "a few seconds. Settings → \"Run the first-run guide again\" brings this guide back."),
                      "muted")
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(10)
        layout.addWidget(card)
        layout.addWidget(hint)
        layout.addStretch(1)
        return page

    def _build_offline(self) -> QWidget:
        page = QWidget()
        self.offline_label = _label()
        self.offline_gpu_label = _label("", "muted")
        engine_card, engine_layout = _card()
        engine_layout.addWidget(_label(self.tr("Use a llama.cpp build you already have"), "sectionTitle"))
        engine_layout.addWidget(_label(self.tr("Choose the folder that holds llama-server (for example "
                                               "build/bin) and the backend it was built with."), "muted"))
        self.backend_combo = QComboBox()
        for key, name in _BACKENDS.items():
            self.backend_combo.addItem(name, key)
        self.add_local_button = QPushButton(self.tr("Add local build…"))
        self.add_local_button.clicked.connect(self.add_local_build)
        row = QHBoxLayout()
        row.addWidget(_label(self.tr("Backend:"), wrap=False))
        row.addWidget(self.backend_combo)
        row.addWidget(self.add_local_button)
        row.addStretch(1)
        engine_layout.addLayout(row)
        self.local_status = _label()
        engine_layout.addWidget(self.local_status)
        model_card, model_layout = _card()
        model_layout.addWidget(_label(self.tr("Use a model file you already have"), "sectionTitle"))
        model_layout.addWidget(_label(self.tr("Any .gguf file works; split models: choose the first part."),
                                      "muted"))
        self.offline_open_button = QPushButton(self.tr("Open GGUF…"))
        self.offline_open_button.clicked.connect(self.open_gguf)
        row2 = QHBoxLayout()
        row2.addWidget(self.offline_open_button)
        row2.addStretch(1)
        model_layout.addLayout(row2)
        self.offline_model_status = _label()
        model_layout.addWidget(self.offline_model_status)
        self.retry_button = QPushButton(self.tr("Try again"))
        self.retry_button.clicked.connect(self.retry_online)
        retry_row = QHBoxLayout()
        retry_row.addWidget(self.retry_button)
        retry_row.addStretch(1)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(10)
        layout.addWidget(self.offline_label)
        layout.addLayout(retry_row)
        layout.addWidget(self.offline_gpu_label)
        layout.addWidget(engine_card)
        layout.addWidget(model_card)
        layout.addStretch(1)
        return page

    # -- navigation ---------------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.stack.currentIndex()

    def _go(self, step: int) -> None:
        self.stack.setCurrentIndex(step)
        titles = {
            STEP_SETUP: self.tr("Your GPU and engine"),
            STEP_MODELS: self.tr("Choose a starter model"),
            STEP_READY: self.tr("Ready to chat"),
            STEP_OFFLINE: self.tr("Set up without a connection"),
        }
        self.heading.setText(titles[step])
        names = [self.tr("GPU and engine"), self.tr("Starter model"), self.tr("Chat")]
        current = {STEP_SETUP: 0, STEP_MODELS: 1, STEP_READY: 2, STEP_OFFLINE: 0}[step]
        parts = [f"<b>{i + 1}. {html.escape(n)}</b>" if i == current else f"{i + 1}. {html.escape(n)}"
                 for i, n in enumerate(names)]
        self.steps.setText("  ›  ".join(parts))
        self._refresh_buttons()

    def _busy(self) -> bool:
        return bool(self._running)

    def _track(self, handle: TaskHandle) -> TaskHandle:
        """Count ``handle`` as running until its ``finished`` (then the buttons are refreshed)."""
        self._running.add(handle)

        def done() -> None:
            self._running.discard(handle)
            self._refresh_buttons()

        handle.finished.connect(done)
        self._refresh_buttons()
        return handle

    def _refresh_buttons(self) -> None:
        busy = self._busy()
        step = self.step
        self.back_button.setVisible(step in (STEP_MODELS, STEP_READY))
        self.skip_button.setVisible(step != STEP_READY)  # nothing left to skip
        self.back_button.setEnabled(not busy)
        primary = self.primary_button
        if step == STEP_SETUP:
            if self.engine is not None:
                primary.setText(self.tr("Next"))
                primary.setEnabled(not busy)
            else:
                primary.setText(self.tr("Download engine"))
                primary.setEnabled(not busy and self.plan is not None and bool(self.plan.included))
        elif step == STEP_MODELS:
            primary.setText(self.tr("Download model"))
            primary.setEnabled(not busy and self.selected_starter() is not None)
        else:
            primary.setText(self.tr("Open chat"))
            primary.setEnabled(not busy and self.model_path is not None)
        self.model_list.setEnabled(self.model_handle not in self._running)

    def _back(self) -> None:
        self._go(STEP_MODELS if self.step == STEP_READY else STEP_SETUP)

    def _primary(self) -> None:
        step = self.step
        if step == STEP_SETUP:
            if self.engine is not None:
                self._show_models()
            else:
                self.download_engine()
        elif step == STEP_MODELS:
            self.download_model()
        else:
            self.open_chat()

    # -- step 1: GPU, plan ------------------------------------------------------------------------
    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._started:
            self.start()

    @property
    def started(self) -> bool:
        """Whether the checks of step 1 were started."""
        return self._started

    def start(self) -> TaskHandle:
        """Detect GPUs, find a working installed engine and (online) make the engine plan."""
        self._started = True
        offline = self.offline

        async def work(_p: ProgressCallback) -> tuple[GpuReport, InstalledEngine | None, EnginePlan | None]:
            report = self._gpu.last_report or await self._gpu.detect_async()
            targets = self._gpu_targets()
            # The engine that would run is the resolver's answer, as everywhere else.
            await self._resolver.prepare()
            chosen = self._resolver.resolve(None).chosen
            engine = next((e for e in self._engines.installed() if chosen and e.id == chosen.id), None)
            plan = None if offline else await self._engines.plan(targets)
            return report, engine, plan

        self.check_handle = self._bridge.run(work, name=self.tr("Check GPU and engines"), show_errors=False)
        self.check_handle.succeeded.connect(self._on_checked)
        self.check_handle.failed.connect(self._on_check_failed)
        return self._track(self.check_handle)

    def _on_checked(self, result: tuple[GpuReport, InstalledEngine | None, EnginePlan | None]) -> None:
        self.report, self.engine, self.plan = result
        self._show_gpus()
        if self.plan is None:
            self.offline_reason = self.tr("Strata is in offline mode, so it will not download engines or models. "
                                          "You can use what you already have on this computer.")
            self._show_offline()
            return
        self._show_plan()

    def _on_check_failed(self, err: StrataError) -> None:
        if self.report is None and self._gpu.last_report is not None:
            self.report = self._gpu.last_report
        self._show_gpus()
        self.offline_reason = self.tr("Strata could not reach the engine releases: %s") % core_text(err.message)
        self._show_offline()

    def _show_gpus(self) -> None:
        report = self.report
        gpus = report.gpus if report is not None else []
        if not gpus:
            text = self.tr("No graphics card was found. Models will run on the processor "
                           "(slower, but everything works).")
        else:
            lines = []
            for g in gpus:
                facts = []
                memory = g.vram_total or 0
                if g.integrated and g.shared_total:
                    facts.append(self.tr("%s shared memory") % format_bytes(memory + g.shared_total))
                elif memory:
                    facts.append(self.tr("%s VRAM") % format_bytes(memory))
                if g.gfx_target:
                    facts.append(g.gfx_target)
                if g.is_amd:
                    facts.append(g.verdict_text())
                lines.append(f"<b>{html.escape(g.name)}</b><br><span>{html.escape(' · '.join(facts))}</span>")
            text = "<br>".join(lines)
        self.gpu_label.setTextFormat(Qt.TextFormat.RichText)
        self.gpu_label.setText(text)
        self.offline_gpu_label.setText(self.tr("Hardware: %s") % (report.label() if report else self.tr("unknown")))

    def _show_plan(self) -> None:
        plan = self.plan
        assert plan is not None
        rows = []
        n = 0
        for c in plan.candidates:
            name = backend_label(c.backend)
            if c.included:
                n += 1
                size = f" · {format_bytes(c.asset.size)}" if c.asset and c.asset.size else ""
                first = self.tr(" (recommended)") if n == 1 else ""
                rows.append(f"<b>{n}. {html.escape(name)}{first}</b>{html.escape(size)}<br>"
                            f"<span style='color: palette(placeholder-text)'>{html.escape(core_text(c.reason))}</span>")
            else:
                rows.append(f"<span style='color: gray'>{html.escape(self.tr('Not used: %s') % name)} — "
                            f"{html.escape(core_text(c.reason))}</span>")
        if not plan.included:
            rows.insert(0, html.escape(self.tr("No engine build for this computer was found in the releases.")))
        self.plan_label.setText("<br>".join(rows))
        if self.engine is not None:
            self.engine_status.setText(self.tr("Already installed and working: %s. Nothing to download.")
                                       % self._engine_name(self.engine))
        else:
            self.engine_status.setText(self.tr("Strata downloads the first build and checks that it runs; if it "
                                               "cannot use your GPU, it tries the next one."))
        self._refresh_buttons()

    @staticmethod
    def _engine_name(engine: InstalledEngine) -> str:
        return f"{backend_label(engine.backend)} {engine.tag}"

    # -- step 1b: engine download ----------------------------------------------------------------
    def download_engine(self) -> TaskHandle | None:
        if self._busy() or self.plan is None:
            return None
        targets = self._gpu_targets()

        async def work(p: ProgressCallback) -> SetupOutcome:
            return await self._engines.setup(targets, p)

        handle = self._bridge.run(work, name=self.tr("Download engine"), show_errors=False)
        self.engine_handle = handle
        self.engine_progress.attach(handle, self.tr("Downloading the engine"))
        self.engine_status.setText("")
        handle.succeeded.connect(self._on_engine_done)
        handle.failed.connect(lambda err: self.engine_status.setText(
            self.tr("The engine could not be installed: %s") % error_text(err)))
        handle.cancelled.connect(lambda: self.engine_status.setText(
            self.tr("Cancelled: no engine was installed. The part already downloaded is kept, "
                    "so trying again continues where it stopped.")))
        return self._track(handle)

    def _on_engine_done(self, outcome: SetupOutcome) -> None:
        if outcome.chosen is None:
            tried = ("\n".join(f"• {core_text(a.summary)}" for a in outcome.attempts)
                     or self.tr("• nothing could be tried"))
            self.engine_status.setText(self.tr("No engine works on this computer yet:\n%s\n"
                                               "Add a local build from the Engines page, or try again later.") % tried)
            return
        self.engine = outcome.chosen
        self.plan = outcome.plan  # a build rejected on the way is now listed as tried, not recommended
        self._show_plan()
        probe = self._engines.last_probe(outcome.chosen.id)
        detail = f" — {core_text(probe.message)}" if probe is not None else ""
        self.engine_status.setText(self.tr("Installed: %s") % self._engine_name(outcome.chosen) + detail)
        self.engine_ready.emit(outcome.chosen)
        self._refresh_buttons()

    # -- step 2: starter models -------------------------------------------------------------------
    def _show_models(self) -> None:
        target = self._models.memory_target()
        ctx = self._models.context_size
        self.fits = judge_starters(self._starters, target, self._models.ram_bytes, ctx)
        best = recommend(self.fits)
        if target.usable_bytes > 0:
            self.target_label.setText(self.tr("Judged for %1: %2 usable, %3-token context")
                                      .replace("%1", core_text(target.name)).replace("%2", format_bytes(target.usable_bytes))
                                      .replace("%3", str(ctx)))
        else:
            self.target_label.setText(self.tr("No GPU memory known: judged for the processor and %1 of RAM.")
                                      .replace("%1", format_bytes(self._models.ram_bytes)))
        self.model_list.clear()
        for fit in self.fits:
            m = fit.model
            title = m.name + (self.tr(" (recommended)") if fit is best else "")
            item = QTreeWidgetItem([title, format_bytes(m.size), self._verdict_text(fit)])
            item.setData(0, Qt.ItemDataRole.UserRole, m.id)
            item.setToolTip(0, f"{m.repo}/{m.file}")
            item.setForeground(2, QBrush(QColor(_VERDICT_COLOURS[fit.estimate.verdict])))
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if not fit.runs:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsSelectable)
                item.setForeground(0, QBrush(QColor("#9ca3af")))
            self.model_list.addTopLevelItem(item)
            if fit is best:
                item.setSelected(True)
                self.model_list.setCurrentItem(item)
        self._go(STEP_MODELS)
        self._selection_changed()

    def _verdict_text(self, fit: StarterFit) -> str:
        e = fit.estimate
        if e.verdict is Verdict.FULL_GPU:
            return self.tr("Fits fully on the GPU")
        if e.verdict is Verdict.PARTIAL:
            return self.tr("Partly on the GPU (%1 of %2 layers)").replace("%1", str(e.gpu_layers)).replace(
                "%2", str(e.total_layers))
        if e.verdict is Verdict.CPU_ONLY:
            return self.tr("Fits in system RAM — runs on the CPU")
        return self.tr("Too large for this computer")

    def selected_starter(self) -> StarterModel | None:
        items = self.model_list.selectedItems()
        if not items:
            return None
        key = items[0].data(0, Qt.ItemDataRole.UserRole)
        return next((s for s in self._starters if s.id == key), None)

    def select_starter(self, starter_id: str) -> bool:
        for i in range(self.model_list.topLevelItemCount()):
            item = self.model_list.topLevelItem(i)
            if item is None:
                continue
            if item.data(0, Qt.ItemDataRole.UserRole) == starter_id and item.flags() & Qt.ItemFlag.ItemIsSelectable:
                self.model_list.clearSelection()
                item.setSelected(True)
                self.model_list.setCurrentItem(item)
                return True
        return False

    def _selection_changed(self) -> None:
        s = self.selected_starter()
        if s is None:
            self.model_description.setText("")
        else:
            licence = self.tr(" Licence: %s.") % s.license if s.license else ""
            self.model_description.setText(f"{core_text(s.description)}{licence}\n{s.repo} · {s.file}")
        self._refresh_buttons()

    def download_model(self) -> TaskHandle | None:
        starter = self.selected_starter()
        if starter is None or self._busy():
            return None
        models = self._models

        async def work(p: ProgressCallback) -> Path:
            p(Progress(0, None, self.tr("Looking up %s") % starter.repo))
            detail = await models.detail(starter.repo)
            quant = next((q for q in detail.quants if any(f.path == starter.file for f in q.files)), None)
            if quant is None:
                raise ModelError(f"{starter.repo} no longer has {starter.file}.",
                                 hint="Choose another starter model, or search on the Models page.")
            downloads = models.downloads
            job = downloads.enqueue(detail, quant)
            try:
                paths = await downloads.wait(job.job_id, p)
            except asyncio.CancelledError:
                downloads.cancel(job.job_id)  # Cancel here means "not this one": drop the partial file
                await downloads.wait_stopped(job.job_id)
                raise
            return paths[0]

        handle = self._bridge.run(work, name=self.tr("Download %s") % starter.name, show_errors=False)
        self.model_handle = handle
        self.model_progress.attach(handle, self.tr("Downloading %s") % starter.name)
        self.model_status.setText("")
        handle.succeeded.connect(self._on_model_done)
        handle.failed.connect(lambda err: self.model_status.setText(
            self.tr("The download failed: %s") % error_text(err)))
        handle.cancelled.connect(lambda: self.model_status.setText(self.tr("Download cancelled.")))
        return self._track(handle)

    def _on_model_done(self, path: Path) -> None:
        self.model_path = path
        self._show_ready()

    # -- step 3: ready ----------------------------------------------------------------------------
    def _show_ready(self) -> None:
        engine = self.tr("Engine: %s") % (self._engine_name(self.engine) if self.engine
                                          else self.tr("none yet (add one on the Engines page)"))
        model = self.tr("Model: %s") % (self.model_path.name if self.model_path else "")
        self.ready_label.setText(f"{html.escape(engine)}<br>{html.escape(model)}")
        self._go(STEP_READY)

    def open_chat(self) -> None:
        if self.model_path is None:
            return
        self.chat_requested.emit(self.model_path)
        self.accept()

    # -- offline ----------------------------------------------------------------------------------
    def _show_offline(self) -> None:
        self.offline_label.setText(self.offline_reason)
        self.retry_button.setVisible(not self.offline)
        gpus = self._gpu_targets()
        want = "rocm" if any(g.gfx for g in gpus) else ("vulkan" if gpus else "cpu")
        self.backend_combo.setCurrentIndex(max(0, self.backend_combo.findData(want)))
        if self.engine is not None:
            self.local_status.setText(self.tr("Already installed and working: %s.") % self._engine_name(self.engine))
        self._go(STEP_OFFLINE)

    def retry_online(self) -> TaskHandle | None:
        if self._busy():
            return None
        self._go(STEP_SETUP)
        return self.start()

    def add_local_build(self) -> TaskHandle | None:
        folder = self._choose_folder()
        if not folder or self._busy():
            return None
        backend = str(self.backend_combo.currentData())
        targets = self._gpu_targets()

        async def work(_p: ProgressCallback) -> Any:
            return await self._engines.add_local(Path(folder), backend, targets[0] if targets else None)

        handle = self._bridge.run(work, name=self.tr("Add local build"), show_errors=False)
        self.local_handle = handle
        self.local_status.setText(self.tr("Checking %s…") % folder)
        handle.succeeded.connect(self._on_local_added)
        handle.failed.connect(lambda err: self.local_status.setText(
            self.tr("Not added: %s") % error_text(err)))
        return self._track(handle)

    def _on_local_added(self, result: Any) -> None:
        engine, probe = result
        if probe.usable:
            self.engine = engine
            self.local_status.setText(self.tr("Added %s: %s") % (engine.id, core_text(probe.message)))
            self.engine_ready.emit(engine)
        else:
            self.local_status.setText(self.tr("Added %s, but it does not run here: %s")
                                      % (engine.id, core_text(probe.message)))

    def open_gguf(self) -> TaskHandle | None:
        path = self._choose_model()
        if not path or self._busy():
            return None

        async def work(_p: ProgressCallback) -> Any:
            return await self._models.open_file(Path(path), keep=True)

        handle = self._bridge.run(work, name=self.tr("Open GGUF"), show_errors=False)
        self.local_handle = handle
        status = self.offline_model_status if self.step == STEP_OFFLINE else self.model_status
        handle.succeeded.connect(lambda entry: self._on_gguf_opened(Path(path), entry, status))
        handle.failed.connect(lambda err: status.setText(
            self.tr("Cannot use this file: %s") % error_text(err)))
        return self._track(handle)

    def _on_gguf_opened(self, path: Path, entry: Any, status: QLabel) -> None:
        self.model_path = path
        status.setText(self.tr("Ready: %s (%s)") % (path.name, format_bytes(getattr(entry, "size", 0) or 0)))
        if self.step != STEP_OFFLINE:
            self._show_ready()
        else:
            self._refresh_buttons()

    # -- closing ----------------------------------------------------------------------------------
    def done(self, result: int) -> None:
        """Closing (finish, Skip, Esc, the window's close button) stops whatever still runs."""
        for h in (self.check_handle, self.engine_handle, self.model_handle, self.local_handle):
            if h is not None and h.is_running:
                h.cancel()
        super().done(result)
