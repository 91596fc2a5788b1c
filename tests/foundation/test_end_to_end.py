"""The whole app wired together: a local engine registered on the Engines side becomes the chat's
engine, a reply streams into the Chat page, and its speed lands on the Dashboard."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import UiHooks, compose
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.ui.bridge import AsyncBridge
from tests.support.engines import TestEngines


@pytest.mark.engine
def test_engine_to_chat_to_dashboard(qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop,
                                     test_engines: TestEngines, test_model: Path) -> None:
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                     choose_model=lambda: None, save_path=lambda _n: None))
    window = ui.window
    pages = ui.pages
    try:
        window.show()
        engine, probe = qasync_loop.run_until_complete(services.engines.add_local(test_engines.cpu_dir, "cpu"))
        assert probe.usable, probe.message
        assert [s.id for s in services.chat.plan] == [engine.id]
        pages.chat.set_model(test_model)
        assert services.base.settings.last_model == str(test_model)
        conv = pages.chat.new_conversation()
        # Short replies: the random test model's text trips llama-server's reply parser on long ones.
        services.chat.store.update_settings(conv, sampling=SamplingParams(max_tokens=48, seed=3))
        handle = pages.chat.send_text("Hello there")
        assert handle is not None
        qasync_loop.run_until_complete(asyncio.wait_for(handle.wait(), 120))
        assert handle.error is None, handle.error
        reply = handle.result
        assert reply.content and reply.stats.decode_tps
        # The reply's speed is on the dashboard, as a point on each series.
        window.show_page(pages.dashboard)
        qtbot.waitUntil(lambda: len(pages.dashboard.throughput_chart.values("Decode")) == 1)
        assert pages.dashboard.throughput_chart.values("Decode")[0] == pytest.approx(reply.stats.decode_tps)
        assert "1 request ·" in pages.dashboard.aggregates.text()
        # The About report names the engine and the chat's engine order.
        assert engine.id in pages.about.report()
    finally:
        window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        window.deleteLater()
