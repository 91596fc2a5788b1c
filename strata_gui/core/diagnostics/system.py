"""Facts about this machine and this install, for `strata system` and the About page."""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import psutil

from strata_gui import __version__
from strata_gui.core.base.progress import format_bytes
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.gpu import HostInfo


def _dist_version(*names: str) -> str:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def _cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        try:
            for line in cpuinfo.read_text(errors="replace").splitlines():
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
    return platform.processor() or platform.machine() or "unknown"


@dataclass(frozen=True)
class SystemInfo:
    """What `strata system` prints; also the body of "Copy report"."""

    app_version: str
    python_version: str
    qt_version: str
    os: str
    machine: str
    cpu: str
    cpu_cores_logical: int
    cpu_cores_physical: int
    ram_total_bytes: int
    frozen: bool
    executable: str
    directories: dict[str, str]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    def report(self) -> str:
        """Plain-text report for humans and bug trackers."""
        lines = [
            f"Strata {self.app_version}",
            f"Python {self.python_version}, Qt (PySide6) {self.qt_version}",
            f"OS: {self.os} ({self.machine})",
            f"CPU: {self.cpu} — {self.cpu_cores_physical} cores / {self.cpu_cores_logical} threads",
            f"RAM: {format_bytes(self.ram_total_bytes)}",
            f"Executable: {self.executable}{' (frozen bundle)' if self.frozen else ''}",
            "Folders:",
        ]
        lines += [f"  {name}: {path}" for name, path in self.directories.items()]
        return "\n".join(lines)


def collect_system_info(paths: AppPaths) -> SystemInfo:
    """Gather the facts without importing Qt (the Qt version comes from package metadata)."""
    return SystemInfo(
        app_version=__version__,
        python_version=platform.python_version(),
        qt_version=_dist_version("PySide6-Essentials", "PySide6"),
        os=platform.platform(),
        machine=platform.machine(),
        cpu=_cpu_name(),
        cpu_cores_logical=psutil.cpu_count(logical=True) or 0,
        cpu_cores_physical=psutil.cpu_count(logical=False) or 0,
        ram_total_bytes=int(psutil.virtual_memory().total),
        frozen=bool(getattr(sys, "frozen", False)),
        executable=sys.executable,
        directories=paths.as_dict(),
    )


def complete_host(host: HostInfo) -> HostInfo:
    """``host`` with what its source could not tell (CPU name, threads, RAM) read from this machine.

    The GPU report's host comes from the same place as its GPUs (sysfs, WMI, a captured tree);
    when that source has no CPU or RAM facts, the GPU page would read "unknown CPU, RAM n/a" while
    About describes the machine: both now show the same facts.
    """
    cpu = host.cpu_name if host.cpu_name and host.cpu_name != "unknown CPU" else _cpu_name()
    threads = host.cpu_threads or psutil.cpu_count(logical=True) or None
    ram = host.ram_total or int(psutil.virtual_memory().total)
    return dataclasses.replace(host, cpu_name=cpu, cpu_threads=threads, ram_total=ram)
