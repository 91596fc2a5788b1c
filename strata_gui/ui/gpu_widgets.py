"""Widgets of the GPU page: sparklines, memory bars and one card per GPU."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.engines import ProbeFinding
from strata_gui.core.gpu import GpuInfo, GpuSample, RocmVerdict, fmt_opt_bytes, format_mem
from strata_gui.ui.i18n import LiveTexts, core_text

PROBE_OK, PROBE_FAILED, PROBE_PENDING = "#15803d", "#b91c1c", "#b45309"
VERDICT_COLOURS = {
    RocmVerdict.ROCM: "#15803d",
    RocmVerdict.VULKAN_ONLY: "#b45309",
    RocmVerdict.UNKNOWN_TARGET: "#b45309",
    RocmVerdict.FAMILY_UNKNOWN: "#b45309",
    RocmVerdict.NOT_AMD: None,
}


class Sparkline(QWidget):
    """A small line chart of the last samples with a title and the current value.

    Missing values (``None``) leave gaps; when the newest is missing the value reads "n/a".

    Args:
        title: Shown top-left ("Load").
        fixed_max: Top of the y axis; None scales to the data.
        floor_max: Smallest top of the y axis when scaling (keeps noise flat).
    """

    def __init__(self, title: str, *, fixed_max: float | None = None, floor_max: float = 1.0,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.fixed_max = fixed_max
        self.floor_max = floor_max
        self.values: list[float | None] = []
        self.value_text = self.tr("n/a")
        self.setMinimumSize(150, 64)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(200, 64)

    def set_values(self, values: Sequence[float | None], value_text: str) -> None:
        self.values = list(values)
        self.value_text = value_text
        self.update()

    def paintEvent(self, event: object) -> None:
        pal = self.palette()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        p.setPen(QPen(pal.color(QPalette.ColorRole.Mid), 1))
        p.setBrush(pal.color(QPalette.ColorRole.AlternateBase))
        p.drawRoundedRect(rect, 6, 6)
        muted = pal.color(QPalette.ColorRole.PlaceholderText)
        p.setPen(muted)
        text_rect = rect.adjusted(8, 4, -8, 0)
        p.drawText(text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, self.title)
        font = p.font()
        font.setBold(True)
        p.setFont(font)
        p.setPen(pal.color(QPalette.ColorRole.Text) if self.value_text != self.tr("n/a") else muted)
        p.drawText(text_rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop, self.value_text)
        plot = rect.adjusted(8, 24, -8, -6)
        present = [v for v in self.values if v is not None]
        if not present:
            p.setPen(muted)
            font.setBold(False)
            p.setFont(font)
            p.drawText(plot, Qt.AlignmentFlag.AlignCenter, self.tr("no sensor") if self.values else self.tr("waiting…"))
            p.end()
            return
        top = self.fixed_max or max(self.floor_max, max(present) * 1.15)
        n = max(len(self.values), 2)
        step = plot.width() / (n - 1)
        colour = pal.color(QPalette.ColorRole.Highlight)
        line = QPainterPath()
        fill = QPainterPath()
        started = False
        last_x = plot.left()
        last_point: QPointF | None = None
        for i, v in enumerate(self.values):
            if v is None:
                started = False
                continue
            x = plot.left() + i * step
            y = plot.bottom() - plot.height() * max(0.0, min(1.0, v / top))
            if not started:
                line.moveTo(x, y)
                if fill.isEmpty():
                    fill.moveTo(x, plot.bottom())
                else:
                    fill.lineTo(x, plot.bottom())
                fill.lineTo(x, y)
                started = True
            else:
                line.lineTo(x, y)
                fill.lineTo(x, y)
            last_x = x
            last_point = QPointF(x, y)
        fill.lineTo(QPointF(last_x, plot.bottom()))
        fill.closeSubpath()
        shade = QColor(colour)
        shade.setAlpha(50)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(shade)
        p.drawPath(fill)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setPen(QPen(colour, 1.6))
        p.drawPath(line)
        if last_point is not None:  # marks the newest value (and makes a lone sample visible)
            p.setBrush(colour)
            p.drawEllipse(last_point, 2.5, 2.5)
        p.end()


class MemoryBar(QWidget):
    """Title, a bar and "used of total" for one kind of GPU memory."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(title)
        self.caption = QLabel()
        self.caption.setObjectName("muted")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(10)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title)
        top.addStretch(1)
        top.addWidget(self.caption)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        layout.addLayout(top)
        layout.addWidget(self.bar)

    def set_usage(self, used: int | None, total: int | None) -> None:
        if total:
            fraction = 0.0 if used is None else max(0.0, min(1.0, used / total))
            self.bar.setValue(round(fraction * 1000))
            used_text = fmt_opt_bytes(used)
            self.caption.setText(self.tr("%s of %s used") % (used_text, format_mem(total)))
        else:
            self.bar.setValue(0)
            self.caption.setText(self.tr("size n/a"))


def _value(v: float | None, unit: str, digits: int = 0) -> str:
    return QCoreApplication.translate("Sparkline", "n/a") if v is None else f"{v:.{digits}f} {unit}"


class GpuCard(QFrame):
    """One GPU: identity, ROCm verdict, memory bars and live sparklines."""

    def __init__(self, gpu: GpuInfo, platform: str = "linux", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.setObjectName("card")
        self.gpu = gpu
        self.name = QLabel(gpu.name)
        self.name.setStyleSheet("font-size: 16px; font-weight: 600;")
        self.name.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        kind = QLabel(self.tr("Integrated (APU)") if gpu.integrated else self.tr("Discrete"))
        kind.setObjectName("muted")
        header = QHBoxLayout()
        header.addWidget(self.name)
        header.addStretch(1)
        header.addWidget(kind)

        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.set_probe_findings([])

        details = self._build_details(gpu)

        self.vram_bar = MemoryBar(self.tr("VRAM carve-out") if gpu.integrated else self.tr("VRAM"))
        self.vram_bar.setToolTip(gpu.sources.get("vram_total", ""))
        self.vram_bar.set_usage(None, gpu.vram_total)
        self.shared_bar: MemoryBar | None = None
        self.model_memory: QLabel | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 14)
        layout.setSpacing(8)
        layout.addLayout(header)
        layout.addWidget(self.verdict)
        layout.addLayout(details)
        layout.addWidget(self.vram_bar)
        if gpu.integrated:
            self.shared_bar = MemoryBar(self.tr("Shared system memory (GTT)") if platform == "linux"
                                        else self.tr("Shared system memory"))
            self.shared_bar.setToolTip(gpu.sources.get("shared_total", ""))
            self.shared_bar.set_usage(None, gpu.shared_total)
            layout.addWidget(self.shared_bar)
            if gpu.model_memory is not None:
                self.model_memory = QLabel(self.tr("Models can use up to %s on this APU (carve-out + shared memory).")
                                           % format_mem(gpu.model_memory))
                self.model_memory.setObjectName("muted")
                self.model_memory.setWordWrap(True)
                layout.addWidget(self.model_memory)

        self._build_live_section(gpu, layout)

    def _build_details(self, gpu: GpuInfo) -> QGridLayout:
        """gfx target, ROCm family, driver and PCI ids, two per row (each value's source as its tooltip)."""
        details = QGridLayout()
        details.setHorizontalSpacing(16)
        details.setVerticalSpacing(4)
        gfx_text = gpu.gfx_target or (self.tr("gfx target unknown") if gpu.is_amd else self.tr("n/a (not AMD)"))
        family = gpu.rocm_family or (self.tr("none") if gpu.verdict is RocmVerdict.VULKAN_ONLY
                                     else self.tr("unknown") if gpu.is_amd else self.tr("n/a"))
        rev = "" if gpu.revision is None else f" rev {gpu.revision:02X}"
        pci = f"{gpu.vendor_id:04X}:{gpu.device_id:04X}{rev}" + (f" · {gpu.pci_bus}" if gpu.pci_bus else "")
        rows = [
            (self.tr("gfx target"), gfx_text),
            (self.tr("ROCm family"), family),
            (self.tr("Driver"), gpu.driver or self.tr("n/a")),
            (self.tr("PCI"), pci),
        ]
        self.detail_values: dict[str, QLabel] = {}
        for i, (label, value) in enumerate(rows):
            key = QLabel(label)
            key.setObjectName("muted")
            val = QLabel(value)
            val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            val.setToolTip(gpu.sources.get(("gfx_target", "rocm_family", "driver", "pci_ids")[i], ""))
            details.addWidget(key, i // 2, (i % 2) * 2)
            details.addWidget(val, i // 2, (i % 2) * 2 + 1)
            self.detail_values[label] = val
        details.setColumnStretch(1, 1)
        details.setColumnStretch(3, 1)
        return details

    def _build_live_section(self, gpu: GpuInfo, layout: QVBoxLayout) -> None:
        """Load, temperature and power sparklines and the core clock, under the card's other rows
        (for an AMD GPU only: Strata reads live sensors through the AMD driver)."""
        self.load = Sparkline(self.tr("Load"), fixed_max=100)
        self.temperature = Sparkline(self.tr("Temperature"), floor_max=60)
        # On APUs the sensor covers the whole package, CPU included.
        self.power = Sparkline(self.tr("Power (CPU + GPU)") if gpu.integrated else self.tr("Power"), floor_max=30)
        self.clock = QLabel(self.tr("Core clock: %s") % self.tr("n/a"))
        self.clock.setObjectName("muted")
        if not gpu.is_amd:
            # Strata reads live sensors only through the AMD driver: say so instead of empty charts.
            self.vram_bar.setVisible(gpu.vram_total is not None)
            if self.shared_bar is not None:
                self.shared_bar.setVisible(gpu.shared_total is not None)
            self.clock.setText(self.tr("Strata shows live load, temperature and power for AMD GPUs only."))
            layout.addWidget(self.clock)
            return
        charts = QHBoxLayout()
        charts.setSpacing(8)
        for chart in (self.load, self.temperature, self.power):
            charts.addWidget(chart)
        layout.addLayout(charts)
        layout.addWidget(self.clock)

    def set_probe_findings(self, findings: Sequence[ProbeFinding]) -> None:
        """Say what the installed ROCm engines' probes found on this GPU (the catalog's verdict only
        says a build exists for it: a green "ROCm" next to a build that failed here misleads)."""
        text, colour = self._verdict_text(), VERDICT_COLOURS.get(self.gpu.verdict)
        if findings and self.gpu.is_amd:
            best = findings[0]
            if best.works:
                text, colour = self.tr("ROCm works: %s passed its check on this GPU") % best.label, PROBE_OK
            elif best.verdict == "not probed":
                text = self.tr("%s — the installed %s is not checked yet") % (text, best.label)
                colour = PROBE_PENDING
            else:
                text = self.tr("ROCm does not work here yet: the installed %s failed its check (%s). "
                               "Strata uses the next engine.") % (best.label, core_text(best.message))
                colour = PROBE_FAILED
        self.verdict.setText(text)
        if colour:
            self.verdict.setObjectName("")
            self.verdict.setStyleSheet(f"color: {colour}; font-weight: 600;")
        else:
            self.verdict.setStyleSheet("")
            self.verdict.setObjectName("muted")

    def _verdict_text(self) -> str:
        gpu = self.gpu
        if gpu.verdict is RocmVerdict.ROCM:
            return self.tr("ROCm via %s build") % gpu.rocm_family
        if gpu.verdict is RocmVerdict.VULKAN_ONLY:
            return self.tr("Vulkan only: no ROCm build for %s") % gpu.gfx_target
        if gpu.verdict is RocmVerdict.UNKNOWN_TARGET:
            return self.tr("Unknown target: this GPU is newer than Strata's table. The Vulkan engine works; "
                           "a ROCm engine's start-up can name its gfx target.")
        if gpu.verdict is RocmVerdict.NOT_AMD:
            return self.tr("Not ROCm-eligible (%s GPU); the Vulkan engine may use it") % gpu.vendor
        return self.tr("%s: ROCm family unknown (engine catalog not loaded)") % gpu.gfx_target

    def update_samples(self, history: list[GpuSample]) -> None:
        """Show the newest sample and the recent history."""
        if not self.gpu.is_amd:
            return
        last = history[-1] if history else None
        self.vram_bar.set_usage(last.vram_used if last else None, self.gpu.vram_total)
        if self.shared_bar is not None:
            self.shared_bar.set_usage(last.shared_used if last else None, self.gpu.shared_total)
        self.load.set_values([s.load_percent for s in history], _value(last.load_percent if last else None, "%"))
        self.temperature.set_values([s.temperature_c for s in history],
                                    _value(last.temperature_c if last else None, "°C"))
        self.power.set_values([s.power_w for s in history], _value(last.power_w if last else None, "W", 1))
        if last is not None and last.asleep:
            self.clock.setText(self.tr("Asleep to save power: it wakes when a model runs on it"))
        else:
            self.clock.setText(self.tr("Core clock: %s") % _value(last.core_clock_mhz if last else None, "MHz"))
