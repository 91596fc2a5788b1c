"""System memory bandwidth as the CPU sees it: a short timed copy, measured once and kept.

A CPU engine (and the host part of a partial offload) decodes no faster than the CPU can stream
the weights from RAM. Spec sheets give the memory's peak, but what a CPU reaches depends on its
cores, its memory controller and the other programs running, so the figure is measured: the best
of a few copies of a buffer far larger than any cache, counted as bytes read plus bytes written
(STREAM's "copy" rule), on every core at once as a CPU engine decodes (one core alone reaches a
fraction of what the memory gives: measured on one thread, a CPU engine's decode came out above
"100 % of the limit"). It takes well under a second; it is optional (nothing waits for it) and
its result is kept in a small JSON file, so it runs once per machine, not on every start.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.state_file import load_cache

log = logging.getLogger(__name__)

MIB = 1024 * 1024
COPY_BYTES = 256 * MIB
ROUNDS = 5
MAX_THREADS = 32
METHOD = "threads"  # what a kept figure was measured with (older ones, on one thread, are measured again)


@dataclass(frozen=True)
class MeasuredBandwidth:
    """One measurement: GB/s (10^9 bytes per second) and how it was made."""

    gbps: float
    copy_bytes: int
    rounds: int
    measured_at: float
    threads: int = 1

    @property
    def source(self) -> str:
        where = f" on {self.threads} threads" if self.threads > 1 else ""
        return f"measured: best of {self.rounds} copies of {self.copy_bytes // MIB} MiB{where}"


def measure_copy_bandwidth(copy_bytes: int = COPY_BYTES, rounds: int = ROUNDS,
                           clock: Callable[[], float] = time.perf_counter,
                           threads: int | None = None) -> MeasuredBandwidth:
    """Time ``rounds`` copies of ``copy_bytes`` split over ``threads`` threads copying at once (default:
    one per processor); the best round gives the bandwidth (blocking).

    Each thread copies its own part with ``ctypes.memmove``, which runs without the GIL, so the
    copies really overlap. The sources are filled with a non-zero byte first: a fresh zeroed buffer
    maps one shared zero page, which the CPU reads from its cache and would report a fantasy figure.
    """
    count = max(1, min(threads or os.cpu_count() or 1, MAX_THREADS))
    part = max(MIB, copy_bytes // count)
    # ctypes views of each thread's source and destination (kept: they hold the buffers in place)
    views = [((ctypes.c_char * part).from_buffer(bytearray(part)),
              (ctypes.c_char * part).from_buffer(bytearray(b"\x5a") * part)) for _ in range(count)]
    addresses = [(ctypes.addressof(dst), ctypes.addressof(src)) for dst, src in views]
    start_line = threading.Barrier(count + 1)
    finish_line = threading.Barrier(count + 1)
    stop = threading.Event()

    def copier(dst: int, src: int) -> None:
        while True:
            start_line.wait()
            if stop.is_set():
                return
            ctypes.memmove(dst, src, part)
            finish_line.wait()

    workers = [threading.Thread(target=copier, args=pair, name="strata-membw", daemon=True) for pair in addresses]
    for w in workers:
        w.start()
    best = float("inf")
    try:
        for round_ in range(max(1, rounds) + 1):  # the first round faults the destinations' pages in
            start_line.wait()
            began = clock()
            finish_line.wait()
            took = clock() - began
            if round_:
                best = min(best, took)
    finally:
        stop.set()
        start_line.wait()
        for w in workers:
            w.join()
    del views
    total = part * count
    gbps = 2 * total / best / 1e9 if best > 0 else 0.0
    return MeasuredBandwidth(gbps, total, max(1, rounds), time.time(), count)


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
            data = load_cache(self.path, dict)
            if data is None:
                return None
            try:
                if data.get("method") != METHOD:
                    return None  # measured on one thread by an earlier Strata: too low, measure again
                self._cached = MeasuredBandwidth(float(data["gbps"]), int(data["copy_bytes"]), int(data["rounds"]),
                                                 float(data["measured_at"]), int(data["threads"]))
            except (ValueError, KeyError, TypeError):
                return None
        return self._cached if self._cached.gbps > 0 else None

    def measure(self) -> MeasuredBandwidth:
        """Measure now (blocking, under a second) and keep the result."""
        result = self._measure()
        self._cached = result
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"gbps": result.gbps, "copy_bytes": result.copy_bytes,
                                             "rounds": result.rounds, "measured_at": result.measured_at,
                                             "threads": result.threads, "method": METHOD}),
                                 encoding="utf-8")
        except OSError as exc:
            log.warning("cannot keep the memory bandwidth measurement in %s: %s", self.path, exc)
        return result

    def get(self) -> MeasuredBandwidth:
        """The kept measurement, measured first if there is none (blocking)."""
        return self.known() or self.measure()
