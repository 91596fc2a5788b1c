"""What Strata knows about the machine's GPUs: plain data, no probing here."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strata_gui.core.base.progress import format_bytes
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

FamilyResolver = Callable[[str], "str | None"]
SNAPSHOT_FORMAT = "strata-gpu-snapshot"  # marks a replayable GPU snapshot (Linux or Windows)


class RocmVerdict(enum.Enum):
    """Can a ROCm engine drive this GPU?"""

    ROCM = "rocm"  # a ROCm build exists for its gfx target
    VULKAN_ONLY = "vulkan_only"  # AMD, known target, but no ROCm build covers it
    UNKNOWN_TARGET = "unknown_target"  # AMD device whose gfx target is not known yet
    FAMILY_UNKNOWN = "family_unknown"  # target known, but no engine catalog to ask
    NOT_AMD = "not_amd"  # NVIDIA/Intel/other: never a ROCm device


@dataclass
class GpuInfo:
    """One GPU as detected.

    Attributes:
        key: Stable id within one machine (``card0``, ``pci:0000:03:00.0``, ``luid:...``).
        vendor: ``AMD``, ``NVIDIA``, ``Intel`` ...
        vendor_id, device_id, revision: PCI ids (revision None when not reported).
        name: Marketing name.
        gfx_target: ``gfx1100`` or None when unknown.
        rocm_family: ROCm build family covering ``gfx_target`` (``gfx110X``) or None.
        integrated: True for APUs/iGPUs (they share system memory).
        vram_total: Dedicated memory in bytes (the carve-out on APUs), or None.
        shared_total: GTT / shared system memory the GPU may use, in bytes, or None.
        driver: Driver name and version as reported.
        pci_bus: ``0000:03:00.0`` (or what the OS reports).
        verdict: Whether ROCm can drive it.
        sources: How each fact was obtained (fact name → source).
        driver_version: The driver's own version (Windows: ``32.0.21013.1000``), or None.
        driver_date: The driver's date, ``YYYY-MM-DD``, or None.
        bf16: How it runs BF16 models: "fast", "slow", "unsupported" (None: unknown).
        visible_vram: VRAM the CPU can map through the PCI BAR, in bytes (all of it with Resizable
            BAR on; 256 MiB without), or None when not reported.
        bandwidth_gbps: Peak memory bandwidth in GB/s from the spec sheet (an APU: its system
            memory's), or None when the GPU id table does not know the product.
        compute_tflops: Peak matrix rates from the spec sheet, TFLOPS (TOPS for int8) per compute
            type (``fp16``, ``bf16``, ``int8``, ``fp32``); empty when the table does not know the product.
    """

    key: str
    vendor: str
    vendor_id: int
    device_id: int
    revision: int | None
    name: str
    gfx_target: str | None
    integrated: bool
    vram_total: int | None
    shared_total: int | None
    driver: str | None
    pci_bus: str | None
    rocm_family: str | None = None
    verdict: RocmVerdict = RocmVerdict.FAMILY_UNKNOWN
    sources: dict[str, str] = field(default_factory=dict)
    driver_version: str | None = None
    driver_date: str | None = None
    bf16: str | None = None
    bandwidth_gbps: float | None = None
    visible_vram: int | None = None
    compute_tflops: dict[str, float] = field(default_factory=dict)

    @property
    def is_amd(self) -> bool:
        return self.vendor_id == 0x1002

    @property
    def model_memory(self) -> int | None:
        """Memory a model can really use: VRAM on discrete cards, VRAM + GTT on APUs."""
        if self.integrated and self.shared_total is not None:
            return (self.vram_total or 0) + self.shared_total
        return self.vram_total

    def verdict_text(self) -> str:
        """The ROCm verdict in words, as the GPU page and ``strata gpu`` show it."""
        if self.verdict is RocmVerdict.ROCM:
            return f"ROCm via {self.rocm_family} build"
        if self.verdict is RocmVerdict.VULKAN_ONLY:
            return f"Vulkan only: no ROCm build for {self.gfx_target}"
        if self.verdict is RocmVerdict.UNKNOWN_TARGET:
            return "Unknown target: gfx target not known yet (Vulkan works; an engine probe can tell)"
        if self.verdict is RocmVerdict.NOT_AMD:
            return f"Not ROCm-eligible ({self.vendor} GPU); Vulkan may work"
        return f"{self.gfx_target}: ROCm family unknown (engine catalog not available)"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["verdict"] = self.verdict.value
        data["verdict_text"] = self.verdict_text()
        data["vendor_id"] = f"0x{self.vendor_id:04x}"
        data["device_id"] = f"0x{self.device_id:04x}"
        data["revision"] = None if self.revision is None else f"0x{self.revision:02x}"
        data["model_memory"] = self.model_memory
        return data


def apply_family(gpu: GpuInfo, family_of: FamilyResolver | None) -> None:
    """Set ``rocm_family`` and ``verdict`` from the gfx target and the engines catalog."""
    if not gpu.is_amd:
        gpu.rocm_family, gpu.verdict = None, RocmVerdict.NOT_AMD
    elif gpu.gfx_target is None:
        gpu.rocm_family, gpu.verdict = None, RocmVerdict.UNKNOWN_TARGET
    elif family_of is None:
        gpu.rocm_family, gpu.verdict = None, RocmVerdict.FAMILY_UNKNOWN
    else:
        family = family_of(gpu.gfx_target)
        gpu.rocm_family = family
        gpu.verdict = RocmVerdict.ROCM if family else RocmVerdict.VULKAN_ONLY
        gpu.sources["rocm_family"] = "engine catalog"


@dataclass(frozen=True)
class HostInfo:
    """CPU and RAM, shown with the GPUs (and alone when there is no GPU)."""

    cpu_name: str
    cpu_threads: int | None
    ram_total: int | None


class DriverState(enum.Enum):
    OK = "ok"
    MISSING = "missing"  # no AMD display driver at all
    TOO_OLD = "too_old"
    NO_HIP = "no_hip"  # driver present but its HIP runtime is not


@dataclass(frozen=True)
class DriverStatus:
    """The AMD Windows driver, the one thing users must install themselves."""

    state: DriverState
    version: str | None
    hip_runtime: str | None  # e.g. amdhip64_6.dll
    message: str
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "version": self.version,
            "hip_runtime": self.hip_runtime,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class GpuSample:
    """One telemetry reading; every field is None when its sensor is missing (never 0)."""

    time: float
    load_percent: float | None = None
    vram_used: int | None = None
    shared_used: int | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    core_clock_mhz: float | None = None
    asleep: bool = False  # runtime-suspended (laptop dGPU): idle, sensors deliberately not read

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class GpuReport:
    """Everything one detection found."""

    platform: str  # "linux" | "windows"
    origin: str  # where the facts came from (live machine, replayed tree, snapshot file)
    host: HostInfo
    gpus: list[GpuInfo]
    driver_status: DriverStatus | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def amd_gpus(self) -> list[GpuInfo]:
        return [g for g in self.gpus if g.is_amd]

    @property
    def primary(self) -> GpuInfo | None:
        """The AMD GPU Strata runs models on by default: ROCm-capable first, then discrete,
        then the most memory models can use."""
        ranked = sorted(self.amd_gpus, key=lambda g: (g.verdict is RocmVerdict.ROCM, not g.integrated,
                                                      g.model_memory or 0), reverse=True)
        return ranked[0] if ranked else None

    def label(self) -> str:
        """Short status-bar text: ``"Radeon RX 7900 XTX · gfx1100"`` or ``"CPU only"``."""
        gpu = self.primary
        if gpu is None:
            return T(QT_TRANSLATE_NOOP("Core", "CPU only"))  # a text the status bar translates
        return f"{gpu.name} · {gpu.gfx_target or 'gfx unknown'}"

    def to_dict(self, samples: dict[str, GpuSample] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "platform": self.platform,
            "origin": self.origin,
            "host": dataclasses.asdict(self.host),
            "gpus": [g.to_dict() for g in self.gpus],
            "driver_status": self.driver_status.to_dict() if self.driver_status else None,
            "notes": list(self.notes),
            "summary": self.summary_lines(),
            "primary": self.primary.key if self.primary else None,
        }
        if samples is not None:
            data["telemetry"] = {k: s.to_dict() for k, s in samples.items()}
        return data

    def summary_lines(self) -> list[str]:
        """A headline saying what Strata will run on."""
        if not self.amd_gpus:
            return [
                "No AMD GPU found.",
                "Chat still works on the CPU engine (slower); an AMD GPU or APU speeds it up.",
            ]
        return []

    def report(self, samples: dict[str, GpuSample] | None = None) -> str:
        """Plain-text report for ``strata gpu`` and "Copy system report"."""
        host = self.host
        lines = [f"GPU report ({self.platform}; {self.origin})"]
        cpu = host.cpu_name + (f", {host.cpu_threads} threads" if host.cpu_threads else "")
        lines.append(f"CPU: {cpu}")
        lines.append(f"RAM: {fmt_opt_bytes(host.ram_total)}")
        if self.driver_status is not None:
            lines.append(f"AMD driver: {self.driver_status.message}")
            if self.driver_status.hint:
                lines.append(f"  → {self.driver_status.hint}")
        if not self.gpus:
            lines.append("GPUs: none")
        for gpu in self.gpus:
            lines.extend(_gpu_lines(gpu, (samples or {}).get(gpu.key)))
        lines.extend(self.summary_lines())
        lines.extend(f"Note: {n}" for n in self.notes)
        return "\n".join(lines)


def format_mem(value: float) -> str:
    """Memory sizes in binary units, as GPU vendors count them (a 24 GB card → ``24.0 GiB``)."""
    return format_bytes(value)


def fmt_opt_bytes(value: int | None) -> str:
    return "n/a" if value is None else format_mem(value)


def fmt_sample_value(value: float | None, unit: str, digits: int = 0) -> str:
    """``"n/a"`` for a missing sensor, never ``0``."""
    return "n/a" if value is None else f"{value:.{digits}f} {unit}".rstrip()


def _gpu_lines(gpu: GpuInfo, sample: GpuSample | None) -> list[str]:
    rev = "" if gpu.revision is None else f" rev {gpu.revision:02X}"
    kind = "integrated (APU)" if gpu.integrated else "discrete"
    lines = [
        f"- {gpu.name} [{gpu.key}]",
        f"    PCI {gpu.vendor_id:04X}:{gpu.device_id:04X}{rev}, bus {gpu.pci_bus or 'n/a'}, {kind}",
        f"    gfx target: {gpu.gfx_target or ('gfx target unknown' if gpu.is_amd else 'n/a (not AMD)')}",
        f"    ROCm: {gpu.verdict_text()}",
        f"    VRAM: {fmt_opt_bytes(gpu.vram_total)}"
        + (f", shared (GTT): {fmt_opt_bytes(gpu.shared_total)}" if gpu.shared_total is not None else ""),
        f"    driver: {gpu.driver or 'n/a'}",
    ]
    if gpu.integrated and gpu.model_memory is not None:
        lines.append(f"    memory usable by models: {format_mem(gpu.model_memory)} (carve-out + shared)")
    if sample is not None and sample.asleep:
        lines.append("    now: asleep (power saving; sensors not read so it stays asleep)")
    elif sample is not None:
        lines.append(
            "    now: load {}, VRAM used {}, shared used {}, temp {}, power {}, clock {}".format(
                fmt_sample_value(sample.load_percent, "%"),
                fmt_opt_bytes(sample.vram_used),
                fmt_opt_bytes(sample.shared_used),
                fmt_sample_value(sample.temperature_c, "°C"),
                fmt_sample_value(sample.power_w, "W", 1),
                fmt_sample_value(sample.core_clock_mhz, "MHz"),
            )
        )
    lines.append("    sources: " + ", ".join(f"{k}={v}" for k, v in sorted(gpu.sources.items())))
    return lines
