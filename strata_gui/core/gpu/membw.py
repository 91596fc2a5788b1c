"""System memory bandwidth as the CPU sees it: a short timed copy, measured once and kept.

A CPU engine (and the host part of a partial offload) decodes no faster than the CPU can stream
the weights from RAM. Spec sheets give the memory's peak, but what a CPU reaches depends on its
cores, its memory controller and the other programs running, so the figure is measured: the best
of a few copies of a buffer far larger than any cache, counted as bytes read plus bytes written
(STREAM's "copy" rule). It takes well under a second; it is optional (nothing waits for it) and
its result is kept in a small JSON file, so it runs once per machine, not on every start.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MIB = 1024 * 1024
COPY_BYTES = 256 * MIB
ROUNDS = 5


@dataclass(frozen=True)
class MeasuredBandwidth:
    """One measurement: GB/s (10^9 bytes per second) and how it was made."""

    gbps: float
    copy_bytes: int
    rounds: int
    measured_at: float

    @property
    def source(self) -> str:
        return f"measured: best of {self.rounds} copies of {self.copy_bytes // MIB} MiB"


def measure_copy_bandwidth(copy_bytes: int = COPY_BYTES, rounds: int = ROUNDS,
                           clock: Callable[[], float] = time.perf_counter) -> MeasuredBandwidth:
    """Time ``rounds`` copies of a ``copy_bytes`` buffer; the best gives the bandwidth (blocking).

    The source is filled with a non-zero byte first: a fresh zeroed buffer maps one shared zero
    page, which the CPU reads from its cache and would report a fantasy figure.
    """
    src = bytearray(b"\x5a") * copy_bytes
    dst = bytearray(copy_bytes)
    src_view, dst_view = memoryview(src), memoryview(dst)
    try:
        dst_view[:] = src_view  # faults in the destination's pages before timing
        best = float("inf")
        for _ in range(max(1, rounds)):
            start = clock()
            dst_view[:] = src_view
            best = min(best, clock() - start)
    finally:
        src_view.release()
        dst_view.release()
    gbps = 2 * copy_bytes / best / 1e9 if best > 0 else 0.0
    return MeasuredBandwidth(gbps, copy_bytes, max(1, rounds), time.time())


class CpuBandwidth:
    """The CPU's measured memory bandwidth, kept in ``path`` (JSON).

    Args:
        path: Where the measurement is kept.
        measure: The measurement (tests pass a smaller copy).
    """

    def __init__(self, path: Path, measure: Callable[[], MeasuredBandwidth] = measure_copy_bandwidth) -> None:
        self.path = path
        self._measure = measure
        self._cached: MeasuredBandwidth | None = None

    def known(self) -> MeasuredBandwidth | None:
        """The kept measurement, or None when there is none (or it cannot be read)."""
        if self._cached is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._cached = MeasuredBandwidth(float(data["gbps"]), int(data["copy_bytes"]), int(data["rounds"]),
                                                 float(data["measured_at"]))
            except (OSError, ValueError, KeyError, TypeError):
                return None
        return self._cached if self._cached.gbps > 0 else None

    def measure(self) -> MeasuredBandwidth:
        """Measure now (blocking, under a second) and keep the result."""
        result = self._measure()
        self._cached = result
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"gbps": result.gbps, "copy_bytes": result.copy_bytes,
                                             "rounds": result.rounds, "measured_at": result.measured_at}),
                                 encoding="utf-8")
        except OSError as exc:
            log.warning("cannot keep the memory bandwidth measurement in %s: %s", self.path, exc)
        return result

    def get(self) -> MeasuredBandwidth:
        """The kept measurement, measured first if there is none (blocking)."""
        return self.known() or self.measure()
