"""GPU telemetry over time for the dashboard: a background sampler with a 10-minute ring buffer.

Detection and sampling both run on the sampler's own thread, never on the UI thread.
"""

from __future__ import annotations

import threading

from strata_gui.core.gpu.model import GpuSample
from strata_gui.core.gpu.service import GpuService
from strata_gui.core.gpu.telemetry import TelemetrySampler

GIB = 1024**3


def sample_points(samples: list[GpuSample]) -> dict[str, list[tuple[float, float | None]]]:
    """GPU samples → the dashboard's metric series (None stays None: a gap, never a zero)."""

    def gb(v: int | None) -> float | None:
        return None if v is None else v / GIB

    return {
        "load": [(s.time, s.load_percent) for s in samples],
        "vram": [(s.time, gb(s.vram_used)) for s in samples],
        "gtt": [(s.time, gb(s.shared_used)) for s in samples],
        "temp": [(s.time, s.temperature_c) for s in samples],
        "power": [(s.time, s.power_w) for s in samples],
        "clock": [(s.time, s.core_clock_mhz) for s in samples],
    }


class GpuHistory:
    """Keeps the last ``seconds`` of telemetry for every AMD GPU while started.

    Args:
        gpu: The GPU service (its detector gives the telemetry source).
        seconds: History length at ``interval`` seconds per sample.
        interval: Sampling period.
    """

    def __init__(self, gpu: GpuService, seconds: int = 600, interval: float = 1.0) -> None:
        self._gpu = gpu
        self._seconds = seconds
        self._interval = interval
        self._sampler: TelemetrySampler | None = None
        self._names: dict[str, str] = {}
        self._lock = threading.Lock()
        self._starter: threading.Thread | None = None
        self._stopped = threading.Event()

    def start(self) -> None:
        """Begin sampling (detects first, on a worker thread, if nothing was detected yet)."""
        self._stopped.clear()
        if self._starter is not None and self._starter.is_alive():
            return
        self._starter = threading.Thread(target=self._start, name="strata-gpu-history", daemon=True)
        self._starter.start()

    def _start(self) -> None:
        report = self._gpu.last_report or self._gpu.detect()
        gpus = [g for g in report.gpus if g.is_amd] or report.gpus
        if not gpus or self._stopped.is_set():
            return
        with self._lock:
            if self._sampler is None:
                self._names = {g.key: f"{g.name} ({g.gfx_target or 'gfx unknown'})" for g in gpus}
                self._sampler = self._gpu.sampler(gpus, interval=self._interval,
                                                  history=max(2, int(self._seconds / self._interval)))
            sampler = self._sampler
        if not self._stopped.is_set():
            sampler.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._starter is not None:
            self._starter.join(10)
            self._starter = None
        with self._lock:
            sampler = self._sampler
        if sampler is not None:
            sampler.stop()

    def history(self) -> dict[str, dict[str, list[tuple[float, float | None]]]]:
        with self._lock:
            sampler, names = self._sampler, dict(self._names)
        if sampler is None:
            return {}
        return {names.get(key, key): sample_points(sampler.history(key)) for key in names}
