"""GPU telemetry cost and UI smoothness, on captured sysfs trees.

1. CPU cost of sampling: CPU time per sample (mean over many), expressed as % of one core at
   1 Hz; then a real 1 Hz run of the background sampler against an idle baseline of the same
   length (process CPU time), printed as a ratio.
2. Event-loop stall while the GPU page updates: a 5 ms asyncio ticker on the app's qasync loop
   measures how late it wakes, with the GPU page live (sampling stressed at 20 Hz, UI refresh
   at 20 Hz) vs the same loop with the page hidden (baseline).

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gpu_sampling.py [seconds]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("STRATA_HOME", tempfile.mkdtemp(prefix="strata-bench-"))

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.service import build_gpu_service

TREES = ROOT / "tests" / "data" / "gpu" / "linux"


def cost_per_sample(case: str, n: int = 2000) -> float:
    service = build_gpu_service(kernels_dir(), sysfs_root=TREES / case)
    sampler = service.sampler(service.detect().gpus)
    sampler.sample_once()
    t0 = time.process_time()
    for _ in range(n):
        sampler.sample_once()
    return (time.process_time() - t0) / n


def real_1hz_run(case: str, seconds: float) -> tuple[float, float]:
    """(CPU seconds with the sampler running, CPU seconds idle) over the same wall time."""
    service = build_gpu_service(kernels_dir(), sysfs_root=TREES / case)
    sampler = service.sampler(service.detect().gpus, interval=1.0)
    t0 = time.process_time()
    time.sleep(seconds)
    idle = time.process_time() - t0
    t0 = time.process_time()
    sampler.start()
    time.sleep(seconds)
    sampler.stop()
    busy = time.process_time() - t0
    return busy, idle


# PySide6 6.12.0 on CPython 3.11 drops one reference to None on every void-returning Qt call
# (None is only immortal from 3.12), which aborts the interpreter after a few thousand calls.
# This ballast of extra references keeps the stress run alive; it does not change timings.
_NONE_BALLAST = [None] * 5_000_000 if sys.version_info < (3, 12) else []


def event_loop_stall(seconds: float) -> tuple[list[float], list[float]]:
    from PySide6.QtWidgets import QApplication

    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.event_loop import new_event_loop
    from strata_gui.ui.pages.gpu_page import GpuPage

    app = QApplication.instance() or QApplication([])
    loop = new_event_loop(app)
    service = build_gpu_service(kernels_dir(), sysfs_root=TREES / "laptop-780m-rx7600")
    service.interval = 0.05  # 20 Hz: 20x the default rate, to make any stall visible
    page = GpuPage(service, AsyncBridge())
    page.resize(900, 1000)
    refresh_ms: list[float] = []
    original_refresh = page.refresh_telemetry

    def timed_refresh() -> None:
        t = time.perf_counter()
        original_refresh()
        page.repaint()  # include the paint the refresh causes
        refresh_ms.append((time.perf_counter() - t) * 1000)

    page.timer.timeout.disconnect()
    page.timer.timeout.connect(timed_refresh)

    async def ticker(duration: float) -> list[float]:
        late: list[float] = []
        period = 0.005
        end = time.perf_counter() + duration
        while time.perf_counter() < end:
            t = time.perf_counter()
            await asyncio.sleep(period)
            late.append((time.perf_counter() - t - period) * 1000)
        return late

    async def scenario() -> tuple[list[float], list[float]]:
        page.show()
        page.on_shown()
        assert page.detection_handle is not None
        await page.detection_handle.wait()
        await asyncio.sleep(0.3)
        live = await ticker(seconds)
        samples = page.telemetry.samples_taken
        page.hide()
        await asyncio.sleep(0.1)
        baseline = await ticker(seconds)
        print(f"  (page took {samples} samples and refreshed its cards at 20 Hz during the live run; "
              f"UI-thread time per refresh incl. repaint: median {statistics.median(refresh_ms):.2f} ms, "
              f"max {max(refresh_ms):.2f} ms)")
        return live, baseline

    try:
        result: tuple[list[float], list[float]] = loop.run_until_complete(scenario())
        return result
    finally:
        page.close()
        loop.close()


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    print("1) CPU cost of telemetry sampling (captured sysfs trees, read from disk)")
    for case in ("rx7900xtx", "laptop-780m-rx7600", "strix-halo"):
        per = cost_per_sample(case)
        print(f"  {case:22s} {per * 1e6:7.1f} µs CPU per sample  ->  {per * 100:.3f} % of one core at 1 Hz")
    busy, idle = real_1hz_run("rx7900xtx", seconds)
    print(f"  real 1 Hz run, {seconds:.0f} s: process CPU {busy * 1000:.1f} ms with sampler vs "
          f"{idle * 1000:.1f} ms idle baseline -> sampler adds {(busy - idle) / seconds * 100:.3f} % of one core")
    print("2) Event-loop stall while the GPU page updates (5 ms ticker lateness)")
    live, base = event_loop_stall(min(seconds, 5.0))
    print(f"  page live  : median {statistics.median(live):.2f} ms, p99 {pct(live, 0.99):.2f} ms, "
          f"max {max(live):.2f} ms")
    print(f"  baseline   : median {statistics.median(base):.2f} ms, p99 {pct(base, 0.99):.2f} ms, "
          f"max {max(base):.2f} ms")
    print(f"  ratio p99 live/baseline: {pct(live, 0.99) / max(pct(base, 0.99), 1e-3):.2f}x")


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # skip finalization: freeing the None ballast would trip the same PySide6 bug
