"""Engines page: the plan with its reasons, installed engines with their state, and actions.

Everything long (listing releases, downloads, probes) runs through the bridge with a progress
bar and Cancel; the page only shows what the core's :class:`EngineService` reports.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QT_TRANSLATE_NOOP, Signal
from PySide6.QtGui import QBrush, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QPushButton,
    QScrollArea,
    QTabBar,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import ProgressCallback, StrataError, format_bytes
from strata_gui.core.engines import (
    Candidate,
    EnginePlan,
    EngineService,
    GpuTarget,
    InstalledEngine,
    SetupOutcome,
)
from strata_gui.core.runtime import IMAGE, INSTALLABLE, SPEECH, TEXT, EngineKind, backend_label, kind_named
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.i18n import LiveTexts, core_text, error_line
from strata_gui.ui.pages.base import Page
from strata_gui.ui.widgets import ProgressPanel

if TYPE_CHECKING:
    from strata_gui.core.bench import EngineUpdater, TrialOutcome, UpdateOffer, UpdateSurvey
    from strata_gui.core.engines import UpdateEntry

_STATE_TEXT = {"works": str(QT_TRANSLATE_NOOP("EnginesPage", "Works")),
               "no_device": str(QT_TRANSLATE_NOOP("EnginesPage", "No device")),
               "failed": str(QT_TRANSLATE_NOOP("EnginesPage", "Failed"))}
_ACTION_TEXT = {"promoted": str(QT_TRANSLATE_NOOP("EnginesPage", "Promoted")),
                "refused": str(QT_TRANSLATE_NOOP("EnginesPage", "Refused")),
                "trial passed": str(QT_TRANSLATE_NOOP("EnginesPage", "Trial passed")),
                "rolled back": str(QT_TRANSLATE_NOOP("EnginesPage", "Rolled back")),
                "rolled back automatically": str(QT_TRANSLATE_NOOP("EnginesPage", "Rolled back automatically")),
                "not finished": str(QT_TRANSLATE_NOOP("EnginesPage", "Not finished"))}


def _section(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("sectionTitle")
    font = label.font()
    font.setBold(True)
    font.setPointSizeF(font.pointSizeF() * 1.1)
    label.setFont(font)
    return label


class EnginesPage(Page):
    """Plan, install, probe, pin and remove llama.cpp engines.

    Args:
        engine_service: The core engines facade.
        bridge: Runs core coroutines and reports their errors.
        updater: Engine updates (check, trial, roll back, history); None: plain installs only.
    """

    page_title = "Engines"
    page_icon = "SP_DriveNetIcon"
    engines_changed = Signal()  # installed/removed/pinned/probed: the chat plan may change

    def __init__(self, engine_service: EngineService, bridge: AsyncBridge, parent: QWidget | None = None, *,
                 updater: EngineUpdater | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.page_title = self.tr("Engines")
        self._service = engine_service
        self._bridge = bridge
        self._updater = updater
        self._offers: dict[str, UpdateOffer] = {}  # the build in use's id -> the newer build offered
        self._looked_at: list[str] = []  # the releases the last check looked at, and why each was skipped
        self.last_trial: TrialOutcome | None = None
        self._gpus: list[GpuTarget] = engine_service.gpus_from_settings()
        self.plan: EnginePlan | None = None
        self.last_handle: TaskHandle | None = None
        self._updates: dict[str, Candidate] = {}
        self._running = False
        # Rows refer to these lists by index: Python objects are not stored in Qt item data.
        self._plan_rows: list[Candidate] = []
        self._engine_rows: list[InstalledEngine] = []
        self._kind: EngineKind = TEXT  # which engines the page shows: the chat's (llama.cpp) or the images' (stable-diffusion.cpp)
        self._plans: dict[EngineKind, EnginePlan] = {}

        header = self.texts.header(lambda: self.tr("Engines"), lambda: self._subtitle(self._kind))
        self.header = header
        tools = self._build_tools()
        self.progress = ProgressPanel()
        self.notes = QLabel()
        self.notes.setObjectName("muted")
        self.notes.setWordWrap(True)
        self.notes.hide()

        plan_actions = self._build_plan_section()
        inst_actions = self._build_installed_section()

        # In a scroll area: at the smallest window (820×560) the three tables were squeezed to one
        # row each; now each keeps a few rows and the page scrolls.
        content = QWidget()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        layout = QVBoxLayout(content)
        layout.setContentsMargins(24, 20, 24, 20)
        layout.setSpacing(10)
        layout.addWidget(header)
        layout.addWidget(self.kind_tabs)
        layout.addLayout(tools)
        layout.addWidget(self.progress)
        layout.addWidget(self.notes)
        layout.addWidget(self.updates_notice)
        layout.addWidget(self._section(lambda: self.tr("Plan for this machine")))
        layout.addWidget(self.plan_empty)
        layout.addWidget(self.plan_tree, 2)
        layout.addLayout(plan_actions)
        layout.addWidget(self._section(lambda: self.tr("Installed engines")))
        layout.addWidget(self.installed_empty)
        layout.addWidget(self.installed_tree, 2)
        layout.addLayout(inst_actions)
        self.history_title = self._section(lambda: self.tr("Update history"))
        layout.addWidget(self.history_title)
        layout.addWidget(self.history_empty)
        layout.addWidget(self.history_tree, 1)
        for w in (self.history_title, self.history_empty, self.history_tree):
            w.setVisible(updater is not None)
        self._show_gpus()
        self.refresh_installed()

    # -- sections (each owns its widgets; __init__ stacks them) ---------------------------------
    def _build_tools(self) -> QHBoxLayout:
        """The text / image engine tabs, the GPUs planned for, Refresh plan and Set up automatically."""
        self.gpu_label = QLabel()
        self.gpu_label.setObjectName("muted")
        self.gpu_label.setWordWrap(True)  # beside two buttons at the smallest window
        self.setup_button = QPushButton()
        self.texts.set(self.setup_button.setText, lambda: self.tr("Set up automatically"))
        self.texts.set(self.setup_button.setToolTip, lambda: self.tr("Install and test the planned engines in order until one works"))
        self.setup_button.clicked.connect(self.setup_automatically)
        self.refresh_button = QPushButton()
        self.texts.set(self.refresh_button.setText, lambda: self.tr("Refresh plan"))
        self.refresh_button.clicked.connect(self.refresh_plan)
        self.kind_tabs = QTabBar()
        for index, kind in enumerate(INSTALLABLE):
            self.kind_tabs.addTab("")
            self.texts.set(functools.partial(self.kind_tabs.setTabText, index),
                           functools.partial(self._kind_text, kind, "tab"))
        self.kind_tabs.setExpanding(False)
        self.kind_tabs.currentChanged.connect(lambda i: self.show_kind(INSTALLABLE[i]))
        tools = QHBoxLayout()
        tools.addWidget(self.gpu_label, 1)
        tools.addWidget(self.refresh_button)
        tools.addWidget(self.setup_button)
        return tools

    def _build_plan_section(self) -> QHBoxLayout:
        """The plan's builds in the order they are tried, and Install selected."""
        self.plan_tree = QTreeWidget()
        self.texts.set(self.plan_tree.setHeaderLabels, lambda: [self.tr("Order"), self.tr("Backend"), self.tr("Build"), self.tr("Why")])
        self.plan_tree.setRootIsDecorated(False)
        self.plan_tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.plan_tree.header().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.plan_tree.itemSelectionChanged.connect(self._sync_buttons)
        _show_rows(self.plan_tree, 3)
        self.plan_empty = QLabel()
        self.texts.set(self.plan_empty.setText, lambda: self.tr("No plan yet. Press “Refresh plan” to read the available releases."))
        self.plan_empty.setObjectName("muted")
        self.install_button = QPushButton()
        self.texts.set(self.install_button.setText, lambda: self.tr("Install selected"))
        self.install_button.clicked.connect(self.install_selected)
        plan_actions = QHBoxLayout()
        plan_actions.addStretch(1)
        plan_actions.addWidget(self.install_button)
        return plan_actions

    def _build_installed_section(self) -> QVBoxLayout:
        """The installed engines with their actions, and the update history."""
        updater = self._updater
        self.installed_tree = QTreeWidget()
        self.texts.set(self.installed_tree.setHeaderLabels, lambda: [self.tr("Engine"), self.tr("Backend"), self.tr("Version"),
                                             self.tr("State"), self.tr("Tuning table")])
        self.installed_tree.setRootIsDecorated(False)
        self.installed_tree.header().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.installed_tree.itemSelectionChanged.connect(self._sync_buttons)
        self.installed_empty = QLabel()
        self.installed_empty.setObjectName("muted")
        self.installed_empty.setWordWrap(True)
        self.probe_button = QPushButton()
        self.texts.set(self.probe_button.setText, lambda: self.tr("Test"))
        self.texts.set(self.probe_button.setToolTip, lambda: self.tr("Run the engine's device check with its launch environment"))
        self.probe_button.clicked.connect(self.probe_selected)
        self.pin_button = QPushButton(self.tr("Always use"))
        self.pin_button.clicked.connect(self.toggle_pin)
        self.update_button = QPushButton()
        self.texts.set(self.update_button.setText, lambda: self.tr("Update"))
        self.update_button.clicked.connect(self.update_selected)
        self.remove_button = QPushButton()
        self.texts.set(self.remove_button.setText, lambda: self.tr("Remove"))
        self.remove_button.clicked.connect(self.remove_selected)
        self.add_local_button = QPushButton()
        self.texts.set(self.add_local_button.setText, lambda: self.tr("Add local build…"))
        self.add_local_button.clicked.connect(self._ask_local_folder)
        self.gc_button = QPushButton()
        self.texts.set(self.gc_button.setText, lambda: self.tr("Remove old versions"))
        self.gc_button.clicked.connect(self.garbage_collect)
        self.check_updates_button = QPushButton()
        self.texts.set(self.check_updates_button.setText, lambda: self.tr("Check for updates"))
        self.texts.set(self.check_updates_button.setToolTip, lambda: self.tr("See which newer builds exist (from the saved list when offline)"))
        self.check_updates_button.clicked.connect(self.check_updates)
        self.check_updates_button.setVisible(updater is not None)
        self.rollback_button = QPushButton()
        self.texts.set(self.rollback_button.setText, lambda: self.tr("Roll back"))
        self.texts.set(self.rollback_button.setToolTip, lambda: self.tr("Use the last good build of this kind again"))
        self.rollback_button.clicked.connect(self.rollback_selected)
        self.rollback_button.setVisible(updater is not None)
        self.updates_notice = QLabel()
        self.updates_notice.setObjectName("muted")
        self.updates_notice.setWordWrap(True)
        self.updates_notice.setOpenExternalLinks(True)
        self.updates_notice.hide()
        self.history_tree = QTreeWidget()
        self.texts.set(self.history_tree.setHeaderLabels, lambda: [self.tr("When"), self.tr("What"), self.tr("Build"), self.tr("Details")])
        self.history_tree.setRootIsDecorated(False)
        self.history_tree.header().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.history_empty = QLabel()
        self.texts.set(self.history_empty.setText, lambda: self.tr("No engine update has been tried yet. “Update” tries a new build on this "
                                            "machine first and keeps the current one unless the new one works and is "
                                            "not slower."))
        self.history_empty.setObjectName("muted")
        self.history_empty.setWordWrap(True)
        for tree in (self.installed_tree, self.history_tree):
            _show_rows(tree, 3)
        # Two rows: the selected engine's actions, then the page's; in one row, eight buttons were cut
        # at the smallest window ("加本地构建").
        selected = QHBoxLayout()
        selected.addStretch(1)
        for b in (self.probe_button, self.pin_button, self.update_button, self.rollback_button, self.remove_button):
            selected.addWidget(b)
        general = QHBoxLayout()
        general.addWidget(self.add_local_button)
        general.addWidget(self.gc_button)
        general.addWidget(self.check_updates_button)
        general.addStretch(1)
        inst_actions = QVBoxLayout()
        inst_actions.addLayout(selected)
        inst_actions.addLayout(general)
        return inst_actions

    # -- inputs -------------------------------------------------------------------------
    def set_gpus(self, gpus: Sequence[GpuTarget]) -> None:
        """Plan for these GPUs (the composition root calls this after GPU detection)."""
        self._gpus = list(gpus)
        self._show_gpus()

    def on_shown(self) -> None:
        self.refresh_installed()
        if self.plan is None and not self._busy():
            self.refresh_plan()

    @property
    def kind(self) -> EngineKind:
        """The engines shown: the chat's (llama.cpp) or the images' (stable-diffusion.cpp)."""
        return self._kind

    def _section(self, text: Callable[[], str]) -> QLabel:
        """A section title that follows the language."""
        label = _section("")
        self.texts.set(label.setText, text)
        return label

    def _kind_text(self, kind: EngineKind, what: str) -> str:
        """The page's sentences about one kind of engine (its tab, subtitle, set-up title, empty list)."""
        texts = {
            TEXT.name: {
                "tab": self.tr("Text engines (llama.cpp)"),
                "subtitle": self.tr("The llama.cpp builds Strata runs models with. Strata picks the fastest one that "
                                    "really works on this machine: ROCm for your GPU's family, then Vulkan, then the "
                                    "processor."),
                "setup": self.tr("Setting up the best engine"),
                "empty": self.tr("No engines installed. “Set up automatically” installs the best one for this "
                                 "machine, or “Add local build…” registers a llama-server you built yourself.")},
            IMAGE.name: {
                "tab": self.tr("Image engines (stable-diffusion.cpp)"),
                "subtitle": self.tr("The stable-diffusion.cpp builds the Images page draws with. Strata tries them in "
                                    "the same order: ROCm for your GPU's family, then Vulkan, then the processor, and "
                                    "moves to the next one when a build cannot load a model."),
                "setup": self.tr("Setting up the image engines"),
                "empty": self.tr("No image engines installed. “Set up automatically” installs the best one for this "
                                 "machine, or “Add local build…” registers an sd-server you built yourself.")},
            SPEECH.name: {
                "tab": self.tr("Speech engines (whisper.cpp)"),
                "subtitle": self.tr("The whisper.cpp builds that turn speech into text (the chat's microphone, "
                                    "dropped recordings, /v1/audio/transcriptions). Tried in the same order: ROCm, "
                                    "Vulkan, then the processor."),
                "setup": self.tr("Setting up the speech engines"),
                "empty": self.tr("No speech engines installed. whisper.cpp publishes Windows builds only: on Linux, "
                                 "“Add local build…” registers a whisper-server you built yourself.")},
        }
        return texts.get(kind.name, texts[TEXT.name])[what]

    def _subtitle(self, kind: EngineKind) -> str:
        return self._kind_text(kind, "subtitle")

    def show_kind(self, kind: EngineKind | str) -> None:
        """Show the text or the image engines: their plan, set-up and installed builds."""
        kind = kind_named(kind)
        if kind == self._kind:
            return
        self._kind = kind
        self.header.subtitle.setText(self._subtitle(kind))
        self.kind_tabs.blockSignals(True)
        self.kind_tabs.setCurrentIndex(INSTALLABLE.index(kind))
        self.kind_tabs.blockSignals(False)
        self.plan = None
        self.plan_tree.clear()
        self._plan_rows = []
        self.notes.hide()
        plan = self._plans.get(kind)
        if plan is not None:
            self._show_plan(plan)
        else:
            self.plan_empty.show()
            self.refresh_installed()
            if self.isVisible() and not self._busy():
                self.refresh_plan()

    def _show_gpus(self) -> None:
        if self._gpus:
            text = ", ".join(f"{g.name} ({g.label()})" if g.name != g.label() else g.label() for g in self._gpus)
            self.gpu_label.setText(self.tr("Planning for: {gpus}").format(gpus=text))
        else:
            self.gpu_label.setText(self.tr("No AMD GPU known: planning for the processor. "
                                           "Set a gfx target in Settings to plan for a GPU."))

    @property
    def _gpu(self) -> GpuTarget | None:
        return self._gpus[0] if self._gpus else None

    def _busy(self) -> bool:
        return self._running

    def _start(self, make: Any, name: str, on_done: Any) -> TaskHandle | None:
        """Run ``make`` with the progress panel; its outcome (or its error) is said in :attr:`notes`
        after, so no button ends in silence."""
        if self._busy():
            return None
        handle = self._bridge.run(make, name=name)
        self.last_handle = handle
        self._running = True
        self.progress.attach(handle, name)
        self._say(name + "…")
        handle.succeeded.connect(on_done)
        handle.failed.connect(lambda err: self._say(error_line(err)))
        handle.cancelled.connect(lambda: self._say(self.tr("Stopped.")))
        handle.finished.connect(self._after_task)
        self._sync_buttons()
        return handle

    def _say(self, text: str) -> None:
        """Show an action's progress or outcome under the buttons."""
        self.notes.setText(text)
        self.notes.setVisible(bool(text))

    def _after_task(self) -> None:
        self._running = False
        self.refresh_installed()
        self._sync_buttons()
        self.engines_changed.emit()

    # -- plan ---------------------------------------------------------------------------
    def refresh_plan(self) -> TaskHandle | None:
        gpus = list(self._gpus)
        kind = self._kind

        async def work(_p: ProgressCallback) -> EnginePlan:
            plan = await self._service.plan(gpus, kind=kind)
            if self._updater is not None:
                self._set_survey(await self._updater.survey())
            return plan

        return self._start(work, self.tr("Reading releases"), self._show_read_plan)

    def _show_read_plan(self, plan: EnginePlan) -> None:
        """The plan, and what was read: how many builds will be tried, the first one, and the plan's notes."""
        self._show_plan(plan)
        if plan.candidates and plan.candidates[0].kind != self._kind:
            return
        included = plan.included
        if included:
            first = included[0]
            line = self.tr("Plan read: %n build(s) to try, %1 first.", "", len(included)).replace(
                "%1", backend_label(first.backend))
        else:
            line = self.tr("Plan read: no build fits this machine; see the reasons below.")
        self._say("\n".join([line] + [core_text(n) for n in plan.notes]))

    def _show_plan(self, plan: EnginePlan) -> None:
        kind = plan.candidates[0].kind if plan.candidates else self._kind
        self._plans[kind] = plan
        if kind != self._kind:  # the user switched while it was read: kept for when they come back
            return
        self.plan = plan
        self.plan_tree.clear()
        self._plan_rows = list(plan.candidates)
        muted = self.palette().brush(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text)
        n = 0
        for cand in plan.candidates:
            if cand.included:
                n += 1
                build = cand.asset.name if cand.asset else ""
                if cand.asset and cand.asset.size:
                    build += f"  ({format_bytes(cand.asset.size)})"
                item = QTreeWidgetItem([str(n), backend_label(cand.backend), build, core_text(cand.reason)])
            else:
                item = QTreeWidgetItem(["–", backend_label(cand.backend), self.tr("not used"),
                                        core_text(cand.reason)])
                for col in range(4):
                    item.setForeground(col, QBrush(muted))
            item.setToolTip(3, core_text(cand.reason))
            self.plan_tree.addTopLevelItem(item)
        for col in range(3):
            self.plan_tree.resizeColumnToContents(col)
        self.plan_empty.setVisible(not plan.candidates)
        self.notes.setText("\n".join(core_text(n) for n in plan.notes))
        self.notes.setVisible(bool(plan.notes))
        if self._updater is None:
            self._updates = {e.id: c for e, c in self._service.updates(plan)}
        self.refresh_installed()

    def selected_candidate(self) -> Candidate | None:
        items = self.plan_tree.selectedItems()
        if not items:
            return None
        row = self.plan_tree.indexOfTopLevelItem(items[0])
        cand = self._plan_rows[row] if 0 <= row < len(self._plan_rows) else None
        return cand if cand is not None and cand.included else None

    def select_candidate(self, backend: str) -> bool:
        """Select the first included candidate of ``backend`` (keyboard-free selection for tests/tours)."""
        for i, cand in enumerate(self._plan_rows):
            item = self.plan_tree.topLevelItem(i)
            if cand.included and cand.backend == backend and item is not None:
                self.plan_tree.setCurrentItem(item)
                return True
        return False

    def install_selected(self) -> TaskHandle | None:
        cand = self.selected_candidate()
        if cand is None:
            return None
        gpu = self._gpu

        async def work(p: ProgressCallback) -> list[tuple[InstalledEngine, Any]]:
            engine = await self._service.install(cand, p, gpu)
            return [(engine, await self._service.probe(engine, gpu))]

        return self._start(work, self.tr("Installing {name}").format(name=cand.asset.name if cand.asset else ""),
                           self._show_probes)

    def setup_automatically(self) -> TaskHandle | None:
        gpus = list(self._gpus)
        kind = self._kind

        async def work(p: ProgressCallback) -> SetupOutcome:
            return await self._service.setup(gpus, p, kind=kind)

        title = self._kind_text(kind, "setup")
        return self._start(work, title, self._show_outcome)

    def _show_outcome(self, outcome: SetupOutcome) -> None:
        self._show_plan(outcome.plan)
        lines = [core_text(n) for n in outcome.notices]
        if outcome.chosen is not None:
            chosen = outcome.chosen
            lines.append(self.tr("Using {engine}.").format(engine=f"{backend_label(chosen.backend)} {chosen.tag}"))
        else:
            lines.append(self.tr("No engine works on this machine; see the states below."))
        self.notes.setText("\n".join(lines))
        self.notes.show()

    # -- installed ----------------------------------------------------------------------
    def refresh_installed(self) -> None:
        selected = self.selected_engine()
        keep = selected.id if selected else None
        self.installed_tree.clear()
        engines = [e for e in self._service.installed() if e.kind == self._kind]
        self._engine_rows = engines
        for e in engines:
            probe = self._service.last_probe(e.id)
            if probe is None:
                state = self.tr("Not tested yet")
            else:
                state = f"{self.tr(_STATE_TEXT.get(probe.verdict, probe.verdict))}: {core_text(probe.message)}"
            name = self._service.display_name(e) + (
                self.tr("  (always used)") if e.id == self._service.settings.pinned_engine else "")
            if e.id in self._updates:
                name += self.tr("  · update {tag} available").format(tag=self._updates[e.id].tag)
            tip = probe.details[-1500:] if probe and probe.details else state
            if e.unverified:
                state += self.tr("  · unverified download")
                tip = self.tr("{asset} had no published checksum, so this engine could not be verified "
                              "against its publisher's build.").format(asset=e.asset) + "\n\n" + tip
            name += self._update_state(e)
            item = QTreeWidgetItem([name, backend_label(e.backend), e.tag, state, self._tuning_text(e)])
            item.setToolTip(0, e.id)  # the folder name, for support
            item.setToolTip(3, tip)
            self.installed_tree.addTopLevelItem(item)
            if e.id == keep:
                self.installed_tree.setCurrentItem(item)
        for col in range(3):
            self.installed_tree.resizeColumnToContents(col)
        self.installed_empty.setVisible(not engines)
        self.installed_empty.setText(self._kind_text(self._kind, "empty"))
        self._show_history()
        self._sync_buttons()

    def _tuning_text(self, engine: InstalledEngine) -> str:
        if engine.backend != "rocm":
            return self.tr("not used by this backend")
        if engine.tuning is None:
            return self.tr("none for this build")
        _env, notices = self._service.launch_env(engine, self._gpu)
        rejected = [n for n in notices if "tuning table" in n]
        return rejected[0] if rejected else self.tr("valid: prefill uses tuned kernels")

    def selected_engine(self) -> InstalledEngine | None:
        items = self.installed_tree.selectedItems()
        if not items:
            return None
        row = self.installed_tree.indexOfTopLevelItem(items[0])
        return self._engine_rows[row] if 0 <= row < len(self._engine_rows) else None

    def select_engine(self, engine_id: str) -> bool:
        for i, e in enumerate(self._engine_rows):
            item = self.installed_tree.topLevelItem(i)
            if e.id == engine_id and item is not None:
                self.installed_tree.setCurrentItem(item)
                return True
        return False

    def probe_selected(self) -> TaskHandle | None:
        engine = self.selected_engine()
        engines = [engine] if engine else list(self._engine_rows)
        gpu = self._gpu

        async def work(_p: ProgressCallback) -> list[tuple[InstalledEngine, Any]]:
            return [(e, await self._service.probe(e, gpu)) for e in engines]

        return self._start(work, self.tr("Testing engines"), self._show_probes)

    def _show_probes(self, results: list[tuple[InstalledEngine, Any]]) -> None:
        """One line per engine tested, as `strata engines probe` prints it."""
        self._say("\n".join(f"{e.id}: {self.tr(_STATE_TEXT.get(r.verdict, r.verdict))}: {core_text(r.message)}"
                             for e, r in results) or self.tr("No engines installed."))

    def toggle_pin(self) -> None:
        engine = self.selected_engine()
        if engine is None:
            return
        pinned = self._service.settings.pinned_engine == engine.id
        self._service.pin(None if pinned else engine.id)
        self.refresh_installed()
        self.engines_changed.emit()

    def remove_selected(self) -> None:
        engine = self.selected_engine()
        if engine is not None:
            self._service.remove(engine.id)
            self.refresh_installed()
            self.engines_changed.emit()

    def update_selected(self) -> TaskHandle | None:
        """Update the selected engine: with the updater, a trial decides whether the new build is used.

        With no newer build known yet, the updater first looks (as `strata engines update` does) and
        says "All engines are up to date." when there is none."""
        engine = self.selected_engine()
        if engine is None:
            return None
        cand = self._updates.get(engine.id)
        gpu = self._gpu
        updater, offer = self._updater, self._offers.get(engine.id)
        if updater is not None and offer is not None:
            async def trial(p: ProgressCallback) -> TrialOutcome:
                return await updater.trial(offer, on_progress=p)

            return self._start(trial, self.tr("Trying {tag} on this machine").format(tag=offer.tag),
                               self._show_trial)
        if updater is not None:
            return self._update_after_check(updater, engine)
        if cand is None:
            return None

        async def work(p: ProgressCallback) -> InstalledEngine:
            new = await self._service.install(cand, p, gpu)
            await self._service.probe(new, gpu)
            return new

        def done(_e: object) -> None:
            self._updates.pop(engine.id, None)

        return self._start(work, self.tr("Updating {engine}").format(engine=engine.id), done)

    def _update_after_check(self, updater: EngineUpdater, engine: InstalledEngine) -> TaskHandle | None:
        """Look for a newer build of ``engine``; try it when there is one, else say there is nothing to do."""

        async def check_then_try(p: ProgressCallback) -> tuple[UpdateSurvey, TrialOutcome | None]:
            survey = await updater.survey()
            offer = next((o for o in survey.offers if o.current.id == engine.id and not o.held), None)
            return survey, None if offer is None else await updater.trial(offer, on_progress=p)

        def done(result: tuple[UpdateSurvey, TrialOutcome | None]) -> None:
            survey, trial = result
            if trial is None:
                self._set_survey(survey)
            else:
                self._show_trial(trial)

        return self._start(check_then_try, self.tr("Looking for a newer build of {engine}").format(engine=engine.tag),
                           done)

    # -- updates: check, trial, roll back, history -----------------------------------------------------
    def check_updates(self) -> TaskHandle | None:
        """Read what is new for every installed kind (a quiet notice; nothing is installed)."""
        updater = self._updater
        if updater is None:
            return None

        async def work(_p: ProgressCallback) -> UpdateSurvey:
            return await updater.survey()

        return self._start(work, self.tr("Checking for updates"), self._set_survey)

    def _set_survey(self, survey: UpdateSurvey) -> None:
        """The offers, then a line per release the check skipped (refused when, older than what):
        a refused release is not a wall, and the user sees which one is offered instead."""
        self._looked_at = [core_text(c.line()) for c in survey.candidates if c.verdict == "skipped"]
        self._looked_at += [core_text(n) for n in survey.notes()]
        self.updates_notice.setToolTip("\n".join(core_text(line) for line in survey.candidate_lines()))
        self._set_offers(survey.offers)
        if survey.offers:  # each offer is a line of the notice above
            self._say(self.tr("%n newer build(s) found; see above.", "", len(survey.offers)))
        else:
            self._say("\n".join(core_text(line) for line in survey.summary()))

    def _set_offers(self, offers: list[UpdateOffer]) -> None:
        self._offers = {o.current.id: o for o in offers}
        self._updates = {o.current.id: o.candidate for o in offers}
        lines = [self.tr("{backend} {tag} ({date}) is available; you use {current}. "
                         "<a href=\"{url}\">Release notes</a>").format(
                     backend=backend_label(o.candidate.backend), tag=o.tag, date=o.published_at[:10] or "?",
                     current=o.current.tag, url=o.notes_url)
                 + (self.tr(" (from the saved release list)") if o.cached else "")
                 + (" " + self.tr("Not tried: {why}.").format(why=core_text(o.held)) if o.held else "")
                 for o in offers]
        lines += [html.escape(line) for line in self._looked_at]  # release names come from the feed
        self.updates_notice.setText("<br>".join(lines))
        self.updates_notice.setVisible(bool(lines))
        self.refresh_installed()

    def _show_trial(self, outcome: TrialOutcome) -> None:
        self.last_trial = outcome
        self._looked_at = []  # what the check skipped was before this trial's decision
        self.updates_notice.setToolTip("")
        self._offers.pop(outcome.offer.current.id, None)
        self._updates.pop(outcome.offer.current.id, None)
        self._set_offers(list(self._offers.values()))
        self.notes.setText(core_text(outcome.message))
        self.notes.show()

    def rollback_selected(self) -> UpdateEntry | None:
        """Use the last good build of the selected engine's kind again; with none kept, say so."""
        engine = self.selected_engine()
        if self._updater is None or engine is None:
            return None
        try:
            entry = self._updater.rollback(engine.id)
        except StrataError as exc:  # "no earlier build": an outcome to read here, not an error dialog
            self._say(error_line(exc))
            return None
        self._say(core_text(entry.message))
        self.refresh_installed()
        self.engines_changed.emit()
        return entry

    def _update_state(self, engine: InstalledEngine) -> str:
        role = self._service.ledger.role(engine) if self._updater is not None else None
        if role == "last good":
            return self.tr("  · last good build (kept to roll back to)")
        if role == "updated":
            return self.tr("  · in use since its update")
        return ""

    def _can_roll_back(self, engine: InstalledEngine | None) -> bool:
        return self._updater is not None and engine is not None and self._service.ledger.can_roll_back(engine)

    def _show_history(self) -> None:
        if self._updater is None:
            return
        self.history_tree.clear()
        entries = list(reversed(self._service.ledger.history()))
        for h in entries:
            when = datetime.fromtimestamp(h.at).strftime("%Y-%m-%d %H:%M")
            message = core_text(h.message)
            item = QTreeWidgetItem([when, self.tr(_ACTION_TEXT.get(h.action, h.action)), h.engine, message])
            item.setToolTip(3, message)
            self.history_tree.addTopLevelItem(item)
        for col in range(3):
            self.history_tree.resizeColumnToContents(col)
        self.history_empty.setVisible(not entries)

    def garbage_collect(self) -> list[str]:
        removed = self._service.garbage_collect()
        self.notes.setText(self.tr("Removed: {ids}").format(ids=", ".join(removed)) if removed
                           else self.tr("No old versions to remove."))
        self.notes.show()
        self.refresh_installed()
        return removed

    def _ask_local_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, self.tr("Folder holding %1").replace("%1", self._kind.binary))
        if not folder:
            return
        # the build tells its backend (its libraries, its device list): asked only to override that
        detect = self.tr("Detect from the build (recommended)")
        backends = [detect, "rocm", "vulkan", "cpu"]
        backend, ok = QInputDialog.getItem(self, self.tr("Add local build"), self.tr("This build's backend:"),
                                           backends, 0, False)
        if ok:
            self.add_local_folder(Path(folder), None if backend == detect else backend)

    def add_local_folder(self, folder: Path, backend: str | None) -> TaskHandle | None:
        gpu = self._gpu
        kind = self._kind

        async def work(_p: ProgressCallback) -> list[tuple[InstalledEngine, Any]]:
            return [await self._service.add_local(folder, backend, gpu, kind=kind)]

        return self._start(work, self.tr("Testing {folder}").format(folder=folder.name), self._show_probes)

    def _sync_buttons(self) -> None:
        busy = self._busy()
        engine = self.selected_engine()
        self.install_button.setEnabled(not busy and self.selected_candidate() is not None)
        self.setup_button.setEnabled(not busy)
        self.refresh_button.setEnabled(not busy)
        self.add_local_button.setEnabled(not busy)
        for b in (self.probe_button,):
            b.setEnabled(not busy and bool(self._engine_rows))
        for b in (self.pin_button, self.remove_button):
            b.setEnabled(not busy and engine is not None)
        # with the updater, Update and Roll back say "up to date" / "no earlier build" rather than stay grey
        updater = self._updater is not None
        self.update_button.setEnabled(not busy and engine is not None and (
            updater or engine.id in self._updates)
            and not (engine.id in self._offers and self._offers[engine.id].held))
        self.rollback_button.setEnabled(not busy and updater and engine is not None)
        self.check_updates_button.setEnabled(not busy)
        self.pin_button.setVisible(self._kind.follows_choices)  # the pin is the chat's engine choice
        pinned = engine is not None and self._service.settings.pinned_engine == engine.id
        self.pin_button.setText(self.tr("Choose automatically") if pinned else self.tr("Always use"))


def _show_rows(tree: QTreeWidget, rows: int) -> None:
    """Keep room for the header and ``rows`` rows however little room the window has."""
    line = tree.fontMetrics().height() + 8  # a row's text and its padding in the styles Strata uses
    tree.setMinimumHeight(line * (rows + 1) + 2 * tree.frameWidth())
