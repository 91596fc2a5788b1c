"""GPU page: one card per GPU with its gfx target, ROCm verdict, memory and live telemetry.

Detection runs through the bridge in an executor; telemetry is sampled by the core's
background thread, and a 1 s timer on the UI thread only copies the newest samples into the
widgets. Sampling pauses while the page is hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QHideEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError
from strata_gui.core.diagnostics import complete_host
from strata_gui.core.engines import DriverVerdict, GpuPick, ProbeFinding, RunDevice
from strata_gui.core.gpu import DriverState, GpuInfo, GpuReport, GpuService, GpuTelemetry, fmt_opt_bytes
from strata_gui.core.rpc import RpcDevice as RemoteDevice
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.gpu_widgets import GpuCard
from strata_gui.ui.i18n import LiveTexts, core_text
from strata_gui.ui.pages.base import Page
from strata_gui.ui.widgets import ProgressPanel


class GpuPage(Page):
    """What Strata sees: GPUs, gfx targets, memory, ROCm verdicts and live load/temp/power.

    Args:
        gpu_service: The core GPU facade (detection, system report).
        bridge: Runs detection off the UI thread and reports its errors.
        telemetry: The app's one GPU sampler (shared with the dashboard); a private one if None.
        remote_devices: The RPC workers' devices, as last checked.
        gpu_picks: Which GPUs models run on, with why (the engine resolver decides).
        run_on: Where the chosen engine really runs (the device it reports; the CPU for a CPU
            build or Vulkan on llvmpipe).
        choose_devices: Saves the user's GPU choice (GPU keys; empty: let Strata choose).
        driver_check: The catalog's driver verdict for the GPU models run on (None: nothing to check).
        ignore_driver_check: Saves the user's "use ROCm anyway" override.
    """

    page_title = "GPU"
    page_icon = "SP_ComputerIcon"
    detected = Signal(object)  # GpuReport, after each detection

    def __init__(self, gpu_service: GpuService, bridge: AsyncBridge, parent: QWidget | None = None,
                 *, remote_devices: Callable[[], list[RemoteDevice]] | None = None,
                 telemetry: GpuTelemetry | None = None,
                 gpu_picks: Callable[[], list[GpuPick]] | None = None,
                 choose_devices: Callable[[list[str]], object] | None = None,
                 driver_check: Callable[[], DriverVerdict | None] | None = None,
                 ignore_driver_check: Callable[[bool], object] | None = None,
                 rocm_findings: Callable[[GpuInfo], Sequence[ProbeFinding]] | None = None,
                 run_on: Callable[[], RunDevice] | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self._run_on = run_on
        self._driver_check = driver_check or (lambda: None)
        self._ignore_driver_check = ignore_driver_check
        self._gpu_picks = gpu_picks or list
        self._choose_devices = choose_devices
        self._rocm_findings = rocm_findings
        self.page_title = self.tr("GPU")
        self._remote_devices = remote_devices or list
        self._service = gpu_service
        self._bridge = bridge
        self.report: GpuReport | None = None
        self.telemetry = telemetry if telemetry is not None else GpuTelemetry(gpu_service)
        self.cards: list[GpuCard] = []
        self.detection_handle: TaskHandle | None = None  # the running detection, if any
        self.timer = QTimer(self)
        self.timer.setInterval(max(100, int(self.telemetry.interval * 1000)))
        self.timer.timeout.connect(self.refresh_telemetry)

        tools = self._build_tools()
        self.progress = ProgressPanel()
        self.banner = QFrame()
        self.banner.setObjectName("notice")
        self.banner_text = QLabel()
        self.banner_text.setWordWrap(True)
        banner_layout = QVBoxLayout(self.banner)
        banner_layout.setContentsMargins(12, 10, 12, 10)
        banner_layout.addWidget(self.banner_text)
        self.banner.hide()

        self._build_host_section()
        self._build_remote_section()
        self._build_devices_section()
        self._build_driver_section()
        scroll = self._build_content()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.texts.header(lambda: self.tr("GPU"), lambda: self.tr(
            "The graphics processors Strata sees, how much memory models can use, and whether the ROCm "
            "engines can drive them.")))
        layout.addLayout(tools)
        layout.addWidget(self.progress)
        layout.addWidget(scroll, 1)

    # -- sections (each owns its widgets; placed by __init__ / _build_content) ------------------------
    def _build_tools(self) -> QHBoxLayout:
        """Where the report came from, Detect again and Copy system report."""
        self.origin = QLabel()
        self.origin.setObjectName("muted")
        self.origin.setWordWrap(True)
        # Long replay paths must wrap, not widen the page.
        self.origin.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.refresh_button = QPushButton()
        self.texts.set(self.refresh_button.setText, lambda: self.tr("Detect again"))
        self.refresh_button.clicked.connect(self.detect)
        self.copy_button = QPushButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy system report"))
        self.texts.set(self.copy_button.setToolTip, lambda: self.tr("Copies a text report with a snapshot others can replay "
                                            "(strata gpu --snapshot FILE)."))
        self.copy_button.clicked.connect(self.copy_report)
        self.copy_button.setEnabled(False)
        self.copied = QLabel()
        self.copied.setObjectName("muted")
        tools = QHBoxLayout()
        tools.addWidget(self.origin, 1)
        tools.addWidget(self.copied)
        tools.addWidget(self.refresh_button)
        tools.addWidget(self.copy_button)
        return tools

    def _build_host_section(self) -> None:
        """This computer: its processor and memory."""
        self.host_box = QFrame()
        self.host_box.setObjectName("card")
        host_title = QLabel()
        self.texts.set(host_title.setText, lambda: self.tr("This computer"))
        host_title.setStyleSheet("font-size: 16px; font-weight: 600;")
        self.cpu_label = QLabel("—")
        self.ram_label = QLabel("—")
        host_grid = QGridLayout(self.host_box)
        host_grid.setContentsMargins(16, 10, 16, 12)
        host_grid.addWidget(host_title, 0, 0, 1, 2)
        for row, (key, value) in enumerate(((self.tr("CPU"), self.cpu_label), (self.tr("RAM"), self.ram_label)), 1):
            k = QLabel(key)
            k.setObjectName("muted")
            host_grid.addWidget(k, row, 0)
            host_grid.addWidget(value, row, 1)
        host_grid.setColumnStretch(1, 1)

    def _build_remote_section(self) -> None:
        # GPUs lent by other machines over llama.cpp RPC (Network page), as last checked.
        self.remote_box = QFrame()
        self.remote_box.setObjectName("card")
        remote_title = QLabel()
        self.texts.set(remote_title.setText, lambda: self.tr("Remote devices (RPC workers)"))
        remote_title.setStyleSheet("font-size: 16px; font-weight: 600;")
        self.remote_label = QLabel()
        self.remote_label.setWordWrap(True)
        self.remote_label.setTextFormat(Qt.TextFormat.PlainText)
        remote_layout = QVBoxLayout(self.remote_box)
        remote_layout.setContentsMargins(16, 10, 16, 12)
        remote_layout.addWidget(remote_title)
        remote_layout.addWidget(self.remote_label)
        self.remote_box.hide()

    def _build_devices_section(self) -> None:
        # Which GPUs models run on: one check box per GPU, with the resolver's reason under it.
        self.devices_box = QFrame()
        self.devices_box.setObjectName("card")
        devices_title = QLabel()
        self.texts.set(devices_title.setText, lambda: self.tr("Models run on"))
        devices_title.setStyleSheet("font-size: 16px; font-weight: 600;")
        self.devices_layout = QVBoxLayout(self.devices_box)
        self.devices_layout.setContentsMargins(16, 10, 16, 12)
        self.devices_layout.addWidget(devices_title)
        self.device_rows = QVBoxLayout()
        self.devices_layout.addLayout(self.device_rows)
        # What the engine itself reports: it may differ from the GPU ticked above (llvmpipe).
        self.engine_device = QLabel()
        self.engine_device.setWordWrap(True)
        self.engine_device.setTextFormat(Qt.TextFormat.PlainText)
        self.engine_device.hide()
        self.devices_layout.addWidget(self.engine_device)
        self.devices_auto = QPushButton()
        self.texts.set(self.devices_auto.setText, lambda: self.tr("Let Strata choose"))
        self.texts.set(self.devices_auto.setToolTip, lambda: self.tr("The discrete AMD GPU with the most memory; an integrated GPU only "
                                             "when there is no discrete one."))
        self.devices_auto.clicked.connect(lambda: self._save_devices([]))
        self.devices_error = QLabel()
        self.devices_error.setWordWrap(True)
        self.devices_error.hide()
        auto_row = QHBoxLayout()
        auto_row.addWidget(self.devices_error, 1)
        auto_row.addWidget(self.devices_auto)
        self.devices_layout.addLayout(auto_row)
        self.device_checks: dict[str, QCheckBox] = {}
        self.device_reasons: dict[str, QLabel] = {}
        self.devices_box.hide()

    def _build_driver_section(self) -> None:
        # The driver check: a known-bad driver moves ROCm out of the plan; the user may override.
        self.driver_box = QFrame()
        self.driver_box.setObjectName("notice")
        self.driver_box.setProperty("level", "warning")
        self.driver_text = QLabel()
        self.driver_text.setWordWrap(True)
        self.driver_text.setTextFormat(Qt.TextFormat.PlainText)
        self.driver_links = QLabel()
        self.driver_links.setWordWrap(True)
        self.driver_links.setOpenExternalLinks(True)
        self.driver_override = QCheckBox()
        self.texts.set(self.driver_override.setText, lambda: self.tr("Use ROCm anyway (I have checked this driver works)"))
        self.driver_override.toggled.connect(self._driver_override_toggled)
        driver_layout = QVBoxLayout(self.driver_box)
        driver_layout.setContentsMargins(12, 10, 12, 10)
        driver_layout.addWidget(self.driver_text)
        driver_layout.addWidget(self.driver_links)
        driver_layout.addWidget(self.driver_override)
        self.driver_box.hide()

    def _build_content(self) -> QScrollArea:
        """The page's scrolled body: banner, empty state, driver check, devices, GPU cards, remote
        devices, this computer and the notes, in that order."""
        self.empty = QLabel(self.tr("Open this page to detect GPUs."))
        self.empty.setObjectName("muted")
        self.empty.setWordWrap(True)
        self.notes = QLabel()
        self.notes.setObjectName("muted")
        self.notes.setWordWrap(True)
        self.notes.hide()

        self.cards_box = QWidget()
        self.cards_layout = QVBoxLayout(self.cards_box)
        self.cards_layout.setContentsMargins(0, 0, 0, 0)
        self.cards_layout.setSpacing(12)
        content = QWidget()
        content_layout = QVBoxLayout(content)
        content_layout.setContentsMargins(0, 0, 8, 0)
        content_layout.setSpacing(12)
        content_layout.addWidget(self.banner)
        content_layout.addWidget(self.empty)
        content_layout.addWidget(self.driver_box)
        content_layout.addWidget(self.devices_box)
        content_layout.addWidget(self.cards_box)
        content_layout.addWidget(self.remote_box)
        content_layout.addWidget(self.host_box)
        content_layout.addWidget(self.notes)
        content_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(content)
        return scroll

    # -- lifecycle -------------------------------------------------------------------------------
    def on_shown(self) -> None:
        """Detect on first visit; afterwards resume live telemetry."""
        if self.report is None:
            if self.detection_handle is None:
                self.detect()
        else:
            self.start_sampling()
            self.show_remote_devices()

    def hideEvent(self, event: QHideEvent) -> None:
        self.stop_sampling()
        super().hideEvent(event)

    def detect(self) -> None:
        if self.detection_handle is not None:
            return
        self.stop_sampling()
        self.refresh_button.setEnabled(False)
        self.empty.setText(self.tr("Detecting GPUs…"))
        handle = self._bridge.run(lambda _progress: self._service.detect_async(), name="Detect GPUs")
        self.detection_handle = handle
        self.progress.attach(handle, self.tr("Detecting GPUs"))
        handle.succeeded.connect(self.show_report)
        handle.failed.connect(self._detection_failed)
        handle.finished.connect(self._detection_finished)

    def _detection_finished(self) -> None:
        self.detection_handle = None
        self.refresh_button.setEnabled(True)

    def _detection_failed(self, error: object) -> None:
        self.empty.setText(self.tr("GPU detection failed: %s") % getattr(error, "message", error))
        self.empty.show()

    # -- content -----------------------------------------------------------------------------------
    def show_report(self, report: GpuReport) -> None:
        """Rebuild the cards for a detection result and start live telemetry."""
        self.stop_sampling()
        self.report = report
        for card in self.cards:
            card.setParent(None)
            card.deleteLater()
        self.cards = []
        host = complete_host(report.host)  # the same machine About describes, whatever the report's source
        self.cpu_label.setText(host.cpu_name + (self.tr(" (%d threads)") % host.cpu_threads
                                                if host.cpu_threads else ""))
        self.ram_label.setText(fmt_opt_bytes(host.ram_total))
        self.origin.setText(self.tr("Source: %s") % report.origin)
        self.copy_button.setEnabled(True)
        messages: list[tuple[str, str]] = []
        if not report.amd_gpus:
            text = self.tr("<b>No AMD GPU found.</b> Chat still works on the CPU engine — just slower. An AMD "
                           "Radeon GPU or Ryzen AI APU lets Strata use the ROCm or Vulkan engines.")
            if report.gpus:
                text += " " + self.tr("The Vulkan engine may also run on the GPU listed below.")
            messages.append(("info", text))
        status = report.driver_status
        if status is not None and status.state is not DriverState.OK:
            messages.append(("warning", f"<b>{status.message}</b><br>{status.hint or ''}"))
        if messages:
            level = "warning" if any(lv == "warning" for lv, _ in messages) else "info"
            self.banner.setProperty("level", level)
            self.banner.style().unpolish(self.banner)
            self.banner.style().polish(self.banner)
            self.banner_text.setText("<br><br>".join(text for _, text in messages))
            self.banner.show()
        else:
            self.banner.hide()
        notes = list(report.notes)
        if status is not None and status.state is DriverState.OK:
            notes.insert(0, status.message)
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))
        self.empty.hide()  # the banner speaks for an empty list
        for gpu in report.gpus:
            card = GpuCard(gpu, report.platform)
            self.cards_layout.addWidget(card)
            self.cards.append(card)
        self.show_probe_findings()
        self.telemetry.use_report(report)
        if self.isVisible():
            self.start_sampling()
        self.show_remote_devices()
        self.show_device_choice()
        self.show_driver_check()
        self.detected.emit(report)

    def show_driver_check(self) -> None:
        """Warn when the driver is known to break ROCm builds (with the reports), and offer the override."""
        verdict = self._driver_check()
        if verdict is None or verdict.ok:
            self.driver_box.hide()
            return
        if verdict.overridden:
            text = self.tr("Driver check: %s. You chose to use ROCm anyway.") % core_text(verdict.message)
        else:
            text = self.tr("Driver check: %s. Strata uses the Vulkan engine instead of ROCm.") % core_text(verdict.message)
        self.driver_text.setText(text)
        self.driver_links.setText(" · ".join(f'<a href="{link}">{link}</a>' for link in verdict.links))
        self.driver_links.setVisible(bool(verdict.links))
        self.driver_override.blockSignals(True)
        self.driver_override.setChecked(verdict.overridden)
        self.driver_override.blockSignals(False)
        self.driver_override.setVisible(self._ignore_driver_check is not None)
        self.driver_box.show()

    def _driver_override_toggled(self, checked: bool) -> None:
        if self._ignore_driver_check is None:
            return
        try:
            self._ignore_driver_check(checked)
        except StrataError as exc:
            self.driver_text.setText(exc.message)
            return
        self.show_driver_check()

    def show_device_choice(self) -> None:
        """One check box per GPU (checked: models run on it) and why it is in or out."""
        while self.device_rows.count():
            item = self.device_rows.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)
                widget.deleteLater()
        self.device_checks, self.device_reasons = {}, {}
        picks = self._gpu_picks()
        for pick in picks:
            check = QCheckBox(pick.name)
            check.setChecked(pick.chosen)
            check.toggled.connect(self._device_toggled)
            reason = QLabel(core_text(pick.reason))
            reason.setObjectName("muted")
            reason.setWordWrap(True)
            reason.setTextFormat(Qt.TextFormat.PlainText)
            self.device_rows.addWidget(check)
            self.device_rows.addWidget(reason)
            self.device_checks[pick.key] = check
            self.device_reasons[pick.key] = reason
        self.devices_box.setVisible(bool(picks) and self._choose_devices is not None)
        self._show_engine_device()

    def _show_engine_device(self) -> None:
        where = self._run_on() if self._run_on is not None else None
        if where is None or not where.engine:
            self.engine_device.hide()
            return
        devices = ", ".join(where.engine_devices) or self.tr("the processor")
        text = self.tr("The engine ({0}) reports: {1}").format(where.engine, devices)
        if where.on_cpu:
            text += "\n" + self.tr("Models run on the CPU, not the GPU ticked above: {0}").format(core_text(where.why))
            if where.fix:
                text += "\n" + core_text(where.fix)
        elif where.differs:
            text += "\n" + self.tr("This is not the GPU ticked above.")
        self.engine_device.setProperty("level", "warning" if where.on_cpu or where.differs else "")
        self.engine_device.setStyleSheet("color: #b45309;" if where.on_cpu or where.differs else "")
        self.engine_device.setText(text)
        self.engine_device.show()

    def _device_toggled(self, _checked: bool) -> None:
        self._save_devices([key for key, check in self.device_checks.items() if check.isChecked()])

    def _save_devices(self, keys: list[str]) -> None:
        if self._choose_devices is None:
            return
        try:
            self._choose_devices(keys)
        except StrataError as exc:
            self.devices_error.setText(exc.message)
            self.devices_error.show()
            return
        self.devices_error.hide()
        self.show_device_choice()
    def show_probe_findings(self) -> None:
        """Tell each card what the ROCm engines' last probes found on it (after installs and probes)."""
        if self._rocm_findings is None:
            return
        for card in self.cards:
            card.set_probe_findings(self._rocm_findings(card.gpu))

    def show_remote_devices(self) -> None:
        """List the RPC workers' devices (address, name, free of total memory)."""
        devices = self._remote_devices()
        lines = [self.tr("%1 on %2 — %3 MiB free of %4 MiB").replace("%1", d.name).replace("%2", d.address)
                 .replace("%3", f"{d.free_mb:,}").replace("%4", f"{d.total_mb:,}") for d in devices]
        self.remote_label.setText("\n".join(lines))
        self.remote_box.setVisible(bool(devices))

    def start_sampling(self) -> None:
        if not self.cards:
            return
        self.telemetry.start(self)
        self.timer.start()

    def stop_sampling(self) -> None:
        self.timer.stop()
        self.telemetry.stop(self)

    def refresh_telemetry(self) -> None:
        """Copy the shared sampler's newest values into the cards (cheap: no I/O on this thread)."""
        for card in self.cards:
            card.update_samples(self.telemetry.samples(card.gpu.key))

    def copy_report(self) -> None:
        if self.report is None:
            return
        samples = self.telemetry.latest() or None
        QGuiApplication.clipboard().setText(self._service.system_report(samples))
        self.copied.setText(self.tr("Report copied — paste it into a bug report."))
