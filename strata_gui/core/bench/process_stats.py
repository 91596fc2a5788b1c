"""Ring-buffered time series and the engine process's CPU and memory (psutil)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import psutil


class RingSeries:
    """The last ``capacity`` (time, value) points; ``None`` values (sensor missing) are kept as gaps."""

    def __init__(self, capacity: int = 600) -> None:
        self._points: deque[tuple[float, float | None]] = deque(maxlen=capacity)

    def append(self, t: float, value: float | None) -> None:
        self._points.append((t, value))

    def points(self) -> list[tuple[float, float | None]]:
        return list(self._points)

    def last(self) -> float | None:
        return self._points[-1][1] if self._points else None

    def __len__(self) -> int:
        return len(self._points)


@dataclass(frozen=True)
class ProcessSample:
    at: float
    cpu_percent: float | None  # of one core (can exceed 100 with several threads)
    rss_bytes: int | None


class ProcessSampler:
    """Samples a process tree's CPU and resident memory. Call :meth:`sample` off the UI thread.

    Args:
        pid: Returns the engine's pid, or None while no engine runs.
        clock: Wall clock for timestamps.
    """

    def __init__(self, pid: Callable[[], int | None], clock: Callable[[], float] = time.time) -> None:
        self._pid = pid
        self._clock = clock
        self._procs: dict[int, psutil.Process] = {}

    def sample(self) -> ProcessSample:
        pid = self._pid()
        now = self._clock()
        if pid is None:
            self._procs.clear()
            return ProcessSample(now, None, None)
        try:
            root = self._procs.get(pid) or psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
            cpu = 0.0
            rss = 0
            alive: dict[int, psutil.Process] = {}
            for p in tree:
                proc = self._procs.get(p.pid, p)
                alive[p.pid] = proc
                cpu += proc.cpu_percent(None)  # first call per process returns 0.0 (baseline)
                rss += proc.memory_info().rss
            self._procs = alive
            return ProcessSample(now, cpu, rss)
        except psutil.Error:
            self._procs.clear()
            return ProcessSample(now, None, None)
