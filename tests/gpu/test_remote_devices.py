"""The GPU page lists devices lent by RPC workers next to the local GPUs."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.rpc.workers import RpcDevice
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.gpu_page import GpuPage

TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"


def test_remote_devices_are_listed_with_their_memory(qtbot: QtBot) -> None:
    devices: list[RpcDevice] = []
    service = build_gpu_service(kernels_dir(), sysfs_root=TREES / "rx7900xtx")
    page = GpuPage(service, AsyncBridge(), remote_devices=lambda: list(devices))
    qtbot.addWidget(page)
    page.show_report(service.detect())
    assert not page.remote_box.isVisibleTo(page)
    devices.append(RpcDevice("RPC0", "192.168.1.30:50052", 24560, 23000))
    page.show_remote_devices()
    assert page.remote_box.isVisibleTo(page)
    assert "RPC0 on 192.168.1.30:50052 — 23,000 MiB free of 24,560 MiB" in page.remote_label.text()
    page.stop_sampling()
