"""GPU history for the dashboard, replayed from a captured machine (Strix Halo APU)."""

from __future__ import annotations

import time
from pathlib import Path

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.history import GpuTelemetry
from strata_gui.core.gpu.service import build_gpu_service

TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"


def test_history_samples_in_background_and_reports_gtt_on_apus() -> None:
    gpu = build_gpu_service(kernels_dir(), sysfs_root=TREES / "strix-halo")
    history = GpuTelemetry(gpu, seconds=60, interval=0.05)
    history.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            data = history.history()
            if data and len(next(iter(data.values()))["load"]) >= 3:
                break
            time.sleep(0.05)
    finally:
        history.stop()
    [(name, metrics)] = data.items()
    assert "gfx1151" in name
    assert len(metrics["load"]) >= 3
    assert all(v is not None and v > 0 for _, v in metrics["gtt"])  # shared memory in use is reported
    assert set(metrics) == {"load", "vram", "gtt", "temp", "power", "clock"}


def test_no_gpu_machine_has_no_history() -> None:
    gpu = build_gpu_service(kernels_dir(), sysfs_root=TREES / "no-gpu")
    history = GpuTelemetry(gpu, interval=0.05)
    history.start()  # detects the GPUs off this thread, then samples those it found
    history.stop()  # waits for that detection: whatever it started has started
    assert history.history() == {} and history.samples_taken == 0
