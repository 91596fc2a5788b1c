"""Progress snapshots for long work, and a meter that turns byte counts into rate and ETA.

Long work in the core is an ``async def`` taking ``on_progress: ProgressCallback``; it is
cancelled by cancelling its task (``asyncio.CancelledError``), and releases files, sockets and
processes in ``finally``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Progress:
    """One snapshot of a long task.

    Attributes:
        done: Units done so far (bytes, items, tokens ...).
        total: Units in all, or None when unknown (indeterminate progress).
        message: What is happening, for a status label.
        rate: Units per second, or None when not yet known.
        eta: Seconds left, or None when not known.
        unit: "bytes" or "items" (how to format done/total/rate).
    """

    done: float = 0
    total: float | None = None
    message: str = ""
    rate: float | None = None
    eta: float | None = None
    unit: str = "items"

    @property
    def fraction(self) -> float | None:
        """Share done in [0, 1], or None when the total is unknown."""
        if not self.total:
            return None
        return max(0.0, min(1.0, self.done / self.total))

    def describe(self) -> str:
        """One line such as ``"120.0 MiB of 197.0 MiB · 25.3 MiB/s · 3 s left"``."""
        parts: list[str] = []
        if self.message:
            parts.append(self.message)
        if self.unit == "bytes":
            if self.total:
                parts.append(f"{format_bytes(self.done)} of {format_bytes(self.total)}")
            elif self.done:
                parts.append(format_bytes(self.done))
            if self.rate:
                parts.append(f"{format_bytes(self.rate)}/s")
        elif self.total:
            parts.append(f"{int(self.done)} of {int(self.total)}")
        if self.eta is not None and self.eta >= 0:
            parts.append(f"{format_duration(self.eta)} left")
        return " · ".join(parts)


ProgressCallback = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    """A ProgressCallback that ignores everything."""


def format_bytes(n: float) -> str:
    """Sizes of memory and files in binary units (``24.0 GiB``), the one unit Strata shows.

    Why binary: VRAM is counted in powers of two (a "24 GB" card has 24.0 GiB), and a model's
    size is read against the VRAM it must fit in, so both must use the same unit.
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


GIB = 1024**3


def to_gib(n: float) -> float:
    """Bytes → GiB (chart axes and other places that show a bare number next to "GiB")."""
    return float(n) / GIB


def format_duration(seconds: float) -> str:
    """``"45 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


class RateMeter:
    """Turns a growing count into Progress snapshots with a smoothed rate and an ETA.

    Emission is throttled (``min_interval`` seconds) so a download loop can call
    :meth:`update` on every chunk without flooding the UI.

    Args:
        total: Units expected, or None.
        on_progress: Where snapshots go.
        message: Message carried in every snapshot.
        unit: "bytes" or "items".
        start: Units already done before this meter started (e.g. a resumed download); they
            count toward ``done`` but not toward the rate.
        clock: Monotonic clock in seconds (injected for tests).
        window: Seconds of history used for the rate.
        min_interval: Minimum seconds between two emitted snapshots.
    """

    def __init__(
        self,
        total: float | None,
        on_progress: ProgressCallback,
        *,
        message: str = "",
        unit: str = "bytes",
        start: float = 0,
        clock: Callable[[], float] = time.monotonic,
        window: float = 3.0,
        min_interval: float = 0.1,
    ) -> None:
        self.total = total
        self.done = start
        self._on_progress = on_progress
        self._message = message
        self._unit = unit
        self._clock = clock
        self._window = window
        self._min_interval = min_interval
        now = clock()
        self._samples: deque[tuple[float, float]] = deque([(now, start)])
        self._last_emit = float("-inf")

    def set_message(self, message: str) -> None:
        self._message = message

    def snapshot(self) -> Progress:
        now = self._clock()
        self._samples.append((now, self.done))
        while len(self._samples) > 2 and now - self._samples[0][0] > self._window:
            self._samples.popleft()
        t0, d0 = self._samples[0]
        rate = (self.done - d0) / (now - t0) if now - t0 > 0.05 else None
        eta = None
        if rate and self.total is not None and rate > 0:
            eta = max(0.0, (self.total - self.done) / rate)
        return Progress(self.done, self.total, self._message, rate, eta, self._unit)

    def update(self, delta: float, *, force: bool = False) -> None:
        """Add ``delta`` units; emit a snapshot if enough time passed (or ``force``)."""
        self.done += delta
        now = self._clock()
        if force or now - self._last_emit >= self._min_interval:
            self._last_emit = now
            self._on_progress(self.snapshot())

    def finish(self) -> None:
        """Emit a final snapshot regardless of throttling."""
        self.update(0, force=True)
