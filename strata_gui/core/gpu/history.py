"""The app's one GPU telemetry source, shared by the GPU page (live cards) and the dashboard (charts).

One background sampler reads every detected GPU into a ring buffer (10 minutes at 1 Hz by default).
It runs while at least one consumer holds it (:meth:`GpuTelemetry.start` / :meth:`stop` with the
consumer as owner), so the GPU page and the dashboard never sample twice or stop each other.
Detection and sampling run on background threads, never on the UI thread.
"""

from __future__ import annotations

import threading
import time

from strata_gui.core.gpu.model import GpuInfo, GpuReport, GpuSample
from strata_gui.core.gpu.service import GpuService
from strata_gui.core.gpu.telemetry import TelemetrySampler

GIB = 1024**3


def sample_points(samples: list[GpuSample], to_wall: float = 0.0) -> dict[str, list[tuple[float, float | None]]]:
    """GPU samples → the dashboard's metric series (None stays None: a gap, never a zero).

    ``to_wall`` is added to each sample's time: samples are timed on the sampler's monotonic
    clock (rates stay right when the wall clock jumps), charts label their axis with the time of day.
    """

    def gb(v: int | None) -> float | None:
        return None if v is None else v / GIB

    return {
        "load": [(s.time + to_wall, s.load_percent) for s in samples],
        "vram": [(s.time + to_wall, gb(s.vram_used)) for s in samples],
        "gtt": [(s.time + to_wall, gb(s.shared_used)) for s in samples],
        "temp": [(s.time + to_wall, s.temperature_c) for s in samples],
        "power": [(s.time + to_wall, s.power_w) for s in samples],
        "clock": [(s.time + to_wall, s.core_clock_mhz) for s in samples],
    }


class GpuTelemetry:
    """Samples every detected GPU in the background while someone is looking.

    Args:
        gpu: The GPU service (its detector gives the telemetry source).
        seconds: History length at ``interval`` seconds per sample.
        interval: Sampling period.
    """

    def __init__(self, gpu: GpuService, seconds: int = 600, interval: float | None = None) -> None:
        self._gpu = gpu
        self._interval = interval if interval is not None else gpu.interval
        self._seconds = seconds
        self._sampler: TelemetrySampler | None = None
        self._gpus: list[GpuInfo] = []
        self._owners: set[int] = set()
        self._lock = threading.Lock()
        self._starter: threading.Thread | None = None

    @property
    def interval(self) -> float:
        return self._interval

    @property
    def running(self) -> bool:
        with self._lock:
            return self._sampler is not None and self._sampler.running

    @property
    def samples_taken(self) -> int:
        with self._lock:
            return self._sampler.samples_taken if self._sampler is not None else 0

    def use_report(self, report: GpuReport) -> None:
        """Sample these GPUs from now on (after a new detection); keeps running if it was."""
        with self._lock:
            if [g.key for g in report.gpus] == [g.key for g in self._gpus] and self._sampler is not None:
                return
            old, self._sampler = self._sampler, None
            self._gpus = list(report.gpus)
            if self._gpus:
                self._sampler = self._gpu.sampler(self._gpus, interval=self._interval,
                                                  history=max(2, int(self._seconds / self._interval)))
            restart = bool(self._owners) and self._sampler is not None
            sampler = self._sampler
        if old is not None:
            old.stop()
        if restart and sampler is not None:
            sampler.start()

    def start(self, owner: object = None) -> None:
        """``owner`` (a page) wants samples: start sampling (detecting first, off this thread, if needed)."""
        with self._lock:
            self._owners.add(id(owner))
            sampler = self._sampler
        if sampler is not None:
            sampler.start()
            return
        if self._starter is not None and self._starter.is_alive():
            return
        self._starter = threading.Thread(target=self._detect_then_start, name="strata-gpu-telemetry-start",
                                         daemon=True)
        self._starter.start()

    def _detect_then_start(self) -> None:
        report = self._gpu.last_report or self._gpu.detect()
        self.use_report(report)
        with self._lock:
            sampler = self._sampler if self._owners else None
        if sampler is not None:
            sampler.start()

    def stop(self, owner: object = None) -> None:
        """``owner`` no longer needs samples; sampling stops when nobody does."""
        with self._lock:
            self._owners.discard(id(owner))
            idle = not self._owners
            sampler = self._sampler
        if idle:
            self._join_starter()
            if sampler is not None:
                sampler.stop()

    def close(self) -> None:
        """Stop for everyone (app shutdown)."""
        with self._lock:
            self._owners.clear()
            sampler = self._sampler
        self._join_starter()
        if sampler is not None:
            sampler.stop()

    def _join_starter(self) -> None:
        starter, self._starter = self._starter, None
        if starter is not None and starter is not threading.current_thread():
            starter.join(10)

    def samples(self, key: str) -> list[GpuSample]:
        """The samples kept for one GPU, oldest first."""
        with self._lock:
            sampler = self._sampler
        return sampler.history(key) if sampler is not None else []

    def latest(self) -> dict[str, GpuSample]:
        with self._lock:
            sampler = self._sampler
        return sampler.latest() if sampler is not None else {}

    def history(self) -> dict[str, dict[str, list[tuple[float, float | None]]]]:
        """The dashboard's series per AMD GPU (every GPU when none is AMD), named for people, timed in
        epoch seconds."""
        with self._lock:
            gpus, sampler = list(self._gpus), self._sampler
        if sampler is None:
            return {}
        shown = [g for g in gpus if g.is_amd] or gpus
        clock = getattr(sampler.source, "clock", time.monotonic)  # what the samples were timed with
        to_wall = time.time() - clock()
        return {f"{g.name} ({g.gfx_target or 'gfx unknown'})": sample_points(sampler.history(g.key), to_wall)
                for g in shown}
