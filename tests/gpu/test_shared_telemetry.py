"""One GPU telemetry source for the whole app: the GPU page and the dashboard share one sampler."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import UiHooks, compose
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.ui.bridge import AsyncBridge

TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"


def _samplers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "strata-gpu-telemetry" and t.is_alive()]


def test_gpu_page_and_dashboard_share_one_sampler(qtbot: QtBot, qapp: object, qasync_loop: asyncio.AbstractEventLoop,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(TREES / "strix-halo"))
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,  # type: ignore[arg-type]
                                                choose_model=lambda: None, save_path=lambda _n: None))
    async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not cond():
            assert asyncio.get_running_loop().time() < deadline, "timed out"
            await asyncio.sleep(0.05)

    async def scenario() -> None:
        ui.window.show()
        ui.window.show_page(ui.pages.gpu)
        await until(lambda: bool(ui.pages.gpu.cards) and services.telemetry.samples_taken >= 2)
        ui.window.show_page(ui.pages.dashboard)
        # The dashboard's charts read the same ring buffer: what the GPU page gathered is there.
        [(name, series)] = services.telemetry.history().items()
        assert "gfx1151" in name and len(series["load"]) >= 2
        # timed by the clock on the wall (the axis reads the time of day, not the system's uptime)
        assert all(abs(t - time.time()) < 120 for t, _v in series["load"])
        assert len(_samplers()) == 1  # never two threads reading the same sensors
        assert services.telemetry.running
        ui.window.show_page(ui.pages.chat)  # nobody looks at GPU telemetry: sampling stops
        await until(lambda: not services.telemetry.running)
        assert _samplers() == []

    try:
        qasync_loop.run_until_complete(scenario())
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()
