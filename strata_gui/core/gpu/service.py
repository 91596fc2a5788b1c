"""The GPU facade the app and the CLI use: detect, sample, report, capture, replay.

:func:`build_gpu_service` picks the detector: a replayed snapshot file or sysfs tree when one
is given (argument or ``STRATA_GPU_SNAPSHOT`` / ``STRATA_SYSFS_ROOT``), else the live machine.
"""

from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import GpuDetectionError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.gpu.ids import BandwidthRow, ComputeRow, GpuIdTable, load_gpu_table, normalise_gfx
from strata_gui.core.gpu.linux import LinuxGpuDetector, LinuxTelemetrySource, capture_linux_tree
from strata_gui.core.gpu.model import (
    SNAPSHOT_FORMAT,
    FamilyResolver,
    GpuInfo,
    GpuReport,
    GpuSample,
    HostInfo,
    apply_family,
)
from strata_gui.core.gpu.tree import DirTree, MappingTree

if TYPE_CHECKING:  # the Windows replay, telemetry and engine-output parsers load when used: start-up needs none
    from strata_gui.core.gpu.telemetry import TelemetrySampler, TelemetrySource

SNAPSHOT_VERSION = 1
REPORT_SNAPSHOT_MARKER = "----- replayable GPU snapshot (strata gpu --snapshot FILE) -----"
ENV_SYSFS_ROOT = "STRATA_SYSFS_ROOT"
ENV_SNAPSHOT = "STRATA_GPU_SNAPSHOT"


class GpuDetector(Protocol):
    """One way of finding GPUs (live Linux, live Windows, a replayed snapshot)."""

    platform: str

    def detect(self) -> GpuReport:
        """Blocking: reads files/registry/APIs."""

    def telemetry_source(self, gpus: list[GpuInfo]) -> TelemetrySource:
        """The matching sensor reader for the detected GPUs."""

    def capture(self) -> dict[str, Any]:
        """A snapshot that replays this machine elsewhere."""


def _stamp(platform: str) -> dict[str, Any]:
    return {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "platform": platform,
        "captured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


class LinuxSysfsSource:
    """Live ``/``, a captured folder, or the files of a Linux snapshot."""

    platform = "linux"

    def __init__(self, tree: DirTree | MappingTree, table: GpuIdTable) -> None:
        self.tree = tree
        self.detector = LinuxGpuDetector(tree, table)

    def detect(self) -> GpuReport:
        return self.detector.detect()

    def telemetry_source(self, gpus: list[GpuInfo]) -> TelemetrySource:
        return LinuxTelemetrySource(self.tree, gpus)

    def capture(self) -> dict[str, Any]:
        return {**_stamp("linux"), "files": capture_linux_tree(self.tree)}


class WindowsSnapshotSource:
    """A Windows machine replayed from a snapshot; PDH samples are cycled for live telemetry."""

    platform = "windows"

    def __init__(self, snapshot: dict[str, Any], table: GpuIdTable, origin: str) -> None:
        from strata_gui.core.gpu.windows import WindowsSnapshotDetector

        self.snapshot = snapshot
        self.detector = WindowsSnapshotDetector(snapshot, table, origin)

    def detect(self) -> GpuReport:
        return self.detector.detect()

    def telemetry_source(self, gpus: list[GpuInfo]) -> TelemetrySource:
        from strata_gui.core.gpu.windows import PdhTelemetrySource, cycle_samples

        return PdhTelemetrySource(gpus, cycle_samples([str(s) for s in self.snapshot.get("pdh") or []]))

    def capture(self) -> dict[str, Any]:
        return dict(self.snapshot)


class NoGpuSource:
    """Platforms Strata cannot probe (macOS): report the host and no GPU."""

    def __init__(self, platform: str, host: HostInfo) -> None:
        self.platform = platform
        self.host = host

    def detect(self) -> GpuReport:
        return GpuReport(platform=self.platform, origin="live", host=self.host, gpus=[],
                         notes=[f"GPU detection is not supported on {self.platform}."])

    def telemetry_source(self, gpus: list[GpuInfo]) -> TelemetrySource:
        return _EmptyTelemetry()

    def capture(self) -> dict[str, Any]:
        return {**_stamp(self.platform), "files": {}}


class _EmptyTelemetry:
    def sample(self) -> dict[str, GpuSample]:
        return {}


@dataclass(frozen=True)
class GpusDetected:
    """GPU detection finished: ``report`` is the new :attr:`GpuService.last_report`."""

    report: GpuReport


class GpuService:
    """Detects GPUs, resolves their ROCm family, and hands out telemetry samplers.

    Args:
        detector: Where the facts come from.
        family_of: gfx target → ROCm build family (from the engines catalog), or None when no
            catalog is available (the verdict then says "ROCm family unknown").
        interval: Default telemetry interval in seconds.
        bf16_of: gfx target → BF16 speed ("fast"/"slow"/"unsupported"), from the GPU id table.
        gfx_override: The user's "GPU target override" setting: used for AMD GPUs whose target
            could not be detected (detected targets are never overwritten).
        bandwidth_of: GPU name → spec-sheet memory bandwidth row, from the GPU id table.
        compute_of: GPU name → spec-sheet matrix rates row, from the GPU id table.
    """

    def __init__(self, detector: GpuDetector, family_of: FamilyResolver | None = None,
                 interval: float = 1.0, gfx_override: str | None = None,
                 bf16_of: Callable[[str], str | None] | None = None,
                 bandwidth_of: Callable[[str], BandwidthRow | None] | None = None,
                 compute_of: Callable[[str], ComputeRow | None] | None = None) -> None:
        self.detector = detector
        self.bandwidth_of = bandwidth_of
        self.compute_of = compute_of
        self.bf16_of = bf16_of
        self.family_of = family_of
        self.interval = interval
        self.gfx_override = normalise_gfx(gfx_override) if gfx_override else None
        self.last_report: GpuReport | None = None
        # Told on the loop after each :meth:`detect_async` (the plans and pages follow the GPUs).
        self.events: Listeners[GpusDetected] = Listeners()

    def detect(self) -> GpuReport:
        """Blocking detection (CLI, executors)."""
        report = self.detector.detect()
        for gpu in report.gpus:
            if gpu.is_amd and gpu.gfx_target is None and self.gfx_override:
                gpu.gfx_target = self.gfx_override
                gpu.sources["gfx_target"] = "settings: GPU target override"
            apply_family(gpu, self.family_of)
            if gpu.is_amd and gpu.gfx_target and self.bf16_of is not None:
                gpu.bf16 = self.bf16_of(gpu.gfx_target)
                if gpu.bf16:
                    gpu.sources["bf16"] = "GPU id table (bf16)"
            row = self.bandwidth_of(gpu.name) if self.bandwidth_of is not None and gpu.is_amd else None
            if row is not None:
                gpu.bandwidth_gbps = row.gbps
                gpu.sources["bandwidth"] = f"GPU id table: {row.source}" + (
                    f" ({row.system_memory})" if row.system_memory else "")
            rates = self.compute_of(gpu.name) if self.compute_of is not None and gpu.is_amd else None
            if rates is not None:
                gpu.compute_tflops = dict(rates.rates)
                gpu.sources["compute"] = f"GPU id table: {rates.source}"
        self.last_report = report
        return report

    def label(self) -> str:
        """Status text for the main window: the primary GPU, or "CPU only" (detects once if needed)."""
        return (self.last_report or self.detect()).label()

    async def detect_async(self) -> GpuReport:
        """Detection off the event loop (registry/WMI/sysfs reads can block); then a
        :class:`GpusDetected` event on the loop."""
        report = await run_blocking(self.detect, name="strata-gpu-detect")
        self.events.emit(GpusDetected(report))
        return report

    def sampler(self, gpus: list[GpuInfo], interval: float | None = None, history: int = 120) -> TelemetrySampler:
        """A (not yet started) background sampler for these GPUs."""
        from strata_gui.core.gpu.telemetry import TelemetrySampler

        return TelemetrySampler(self.detector.telemetry_source(gpus),
                                interval=self.interval if interval is None else interval, history=history)

    def resolve_from_engine_output(self, text: str) -> GpuReport:
        """Fill unknown gfx targets from engine output (ROCm start-up lines); updates the last report."""
        from strata_gui.core.gpu.engine_output import resolve_unknown_targets

        report = self.last_report or self.detect()
        report.gpus = resolve_unknown_targets(report.gpus, text, self.family_of)
        return report

    def capture(self) -> dict[str, Any]:
        """A snapshot that replays this machine (``strata gpu --snapshot FILE``)."""
        return self.detector.capture()

    def system_report(self, samples: dict[str, GpuSample] | None = None) -> str:
        """Text report followed by the replayable snapshot, for "Copy system report"."""
        report = self.last_report or self.detect()
        snapshot = json.dumps(self.capture(), indent=1, sort_keys=True)
        return f"{report.report(samples)}\n\n{REPORT_SNAPSHOT_MARKER}\n{snapshot}\n"


def parse_snapshot_text(text: str, origin: str) -> dict[str, Any]:
    """Decode a snapshot file, or a copied system report that contains one.

    Raises:
        GpuDetectionError: Not a Strata GPU snapshot.
    """
    if REPORT_SNAPSHOT_MARKER in text:
        text = text.split(REPORT_SNAPSHOT_MARKER, 1)[1]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GpuDetectionError(
            T(QT_TRANSLATE_NOOP("Core", "{origin} is not a GPU snapshot (invalid JSON at line {line})."), origin=origin,
              line=exc.lineno),
            hint=QT_TRANSLATE_NOOP("Core", "Use a file written by 'strata gpu --capture FILE' or a copied system "
                                           "report."),
        ) from exc
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        raise GpuDetectionError(
            T(QT_TRANSLATE_NOOP("Core", "{origin} is not a Strata GPU snapshot."), origin=origin),
            hint=QT_TRANSLATE_NOOP("Core", "Use a file written by 'strata gpu --capture FILE' or a copied system "
                                           "report."),
        )
    if data.get("version") != SNAPSHOT_VERSION or data.get("platform") not in ("linux", "windows"):
        raise GpuDetectionError(
            T(QT_TRANSLATE_NOOP("Core", "{origin} is a GPU snapshot this Strata version cannot read "
                                        "(version {version}, platform {platform})."),
              origin=origin, version=str(data.get("version")), platform=str(data.get("platform"))),
            hint=QT_TRANSLATE_NOOP("Core", "Update Strata, or capture the snapshot again with this version."),
        )
    return data


def load_snapshot(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GpuDetectionError(T(QT_TRANSLATE_NOOP("Core", "Could not read the GPU snapshot {path}: {reason}"),
                                  path=str(path), reason=str(exc.strerror or exc)),
                                hint=QT_TRANSLATE_NOOP("Core", "Check the path.")) from exc
    return parse_snapshot_text(text, str(path))


def detector_from_snapshot(snapshot: dict[str, Any], table: GpuIdTable, origin: str) -> GpuDetector:
    if snapshot["platform"] == "windows":
        return WindowsSnapshotSource(snapshot, table, f"replay of Windows snapshot {origin}")
    files = snapshot.get("files")
    if not isinstance(files, dict):
        raise GpuDetectionError(T(QT_TRANSLATE_NOOP("Core", "{origin}: the Linux snapshot has no files."),
                                  origin=origin),
                                hint=QT_TRANSLATE_NOOP("Core", "Capture it again with 'strata gpu --capture FILE'."))
    return LinuxSysfsSource(MappingTree({str(k): str(v) for k, v in files.items()},
                                        f"replay of Linux snapshot {origin}"), table)


def build_gpu_service(
    kernels_dir: Path,
    *,
    sysfs_root: Path | None = None,
    snapshot_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    family_of: FamilyResolver | None = None,
    host: HostInfo | None = None,
    platform: str = sys.platform,
    gfx_override: str | None = None,
) -> GpuService:
    """Choose the detector: explicit replay arguments, then environment overrides, then live.

    Args:
        kernels_dir: Folder holding ``amd-gpu-ids.json``.
        sysfs_root: Replay a captured Linux tree.
        snapshot_file: Replay a snapshot (Linux or Windows) or a copied system report.
        environ: Reads ``STRATA_SYSFS_ROOT`` / ``STRATA_GPU_SNAPSHOT`` when no argument is given.
        family_of: gfx → ROCm family resolver from the engines catalog.
        host: CPU/RAM facts for platforms without a sysfs (used on unsupported platforms).
        platform: ``sys.platform`` of the live machine.
        gfx_override: Settings' GPU target override, for AMD GPUs whose target is unknown.
    """
    env = environ or {}
    table = load_gpu_table(kernels_dir)
    if snapshot_file is None and sysfs_root is None:
        if env.get(ENV_SNAPSHOT):
            snapshot_file = Path(env[ENV_SNAPSHOT])
        elif env.get(ENV_SYSFS_ROOT):
            sysfs_root = Path(env[ENV_SYSFS_ROOT])
    detector: GpuDetector
    if snapshot_file is not None:
        detector = detector_from_snapshot(load_snapshot(snapshot_file), table, str(snapshot_file))
    elif sysfs_root is not None:
        if not sysfs_root.is_dir():
            raise GpuDetectionError(T(QT_TRANSLATE_NOOP("Core", "The sysfs root {path} is not a folder."),
                                      path=str(sysfs_root)),
                                    hint=QT_TRANSLATE_NOOP("Core", "Point --sysfs-root at a captured tree (it "
                                                                   "contains sys/class/drm)."))
        detector = LinuxSysfsSource(DirTree(sysfs_root), table)
    elif platform.startswith("linux"):
        detector = LinuxSysfsSource(DirTree(Path("/")), table)
    elif platform == "win32":
        from strata_gui.core.gpu.windows_probe import WindowsLiveSource

        detector = WindowsLiveSource(table)
    else:
        detector = NoGpuSource(platform, host or HostInfo("unknown CPU", None, None))
    return GpuService(detector, family_of=family_of, gfx_override=gfx_override, bf16_of=table.bf16_speed,
                      bandwidth_of=table.bandwidth_for, compute_of=table.compute_for)
