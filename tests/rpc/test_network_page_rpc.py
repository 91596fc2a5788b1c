"""The Network page's RPC section with real workers, a real qasync loop and real widgets."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import pytest

from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.remote.service import RemoteService
from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.runtime.rpc_server import RpcServerProcess
from strata_gui.core.serve.service import ServeService
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.network_page import NetworkPage
from tests.rpc.conftest import rpc_spec
from tests.serve.test_network_page import finish
from tests.support.engines import TestEngines, free_port
from tests.support.pool import library_router, real_pool
from tests.support.settings import settings_service

pytestmark = pytest.mark.engine


def test_add_check_workers_and_lend(qtbot, qasync_loop: asyncio.AbstractEventLoop,  # type: ignore[no-untyped-def]
                                    two_workers: list[RpcServerProcess], test_engines: TestEngines) -> None:
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    settings = settings_service()
    engines = real_pool(http)
    chat = ChatService(ConversationStore(paths.database_file).open(), engines, http, settings)
    secrets = FileSecretStore(paths.config_dir / "secrets.json")
    rpc = RpcPool(settings, lambda: [rpc_spec(test_engines)], pool=engines)
    bridge = AsyncBridge()
    errors: list = []  # type: ignore[type-arg]
    bridge.error_occurred.connect(errors.append)
    page = NetworkPage(RemoteService(paths.config_dir / "remote.json", secrets, http),
                       ServeService(settings, secrets, library_router(chat)), bridge, rpc=rpc)
    qtbot.addWidget(page)
    page.resize(1000, 1300)
    page.show()
    try:
        page.on_shown()
        assert page.rpc_empty.isVisible() and page.rpc_warning.isVisible()
        assert "Not lending" in page.rpc_serve_state.text()
        for w in two_workers:
            page.rpc_address.setText(w.address)
            finish(qasync_loop, page.add_worker())
        assert page.rpc_list.count() == 2 and page.rpc_enabled.isChecked()
        assert all("reachable: RPC0" in page.rpc_list.item(i).text() for i in range(2))
        assert "MiB of free memory" in page.rpc_summary.text()
        dead = f"127.0.0.1:{free_port()}"
        page.rpc_address.setText(dead)
        finish(qasync_loop, page.add_worker())
        assert "unreachable" in page.rpc_list.item(2).text()
        page.rpc_list.setCurrentRow(2)
        page.remove_worker()
        assert rpc.workers == [w.address for w in two_workers]

        port = free_port()
        page.rpc_port.setValue(port)
        page.rpc_devices.setText("CPU")
        finish(qasync_loop, page.toggle_lending())
        assert not errors, errors
        assert f"Lending this computer at 127.0.0.1:{port}" in page.rpc_serve_state.text()
        if os.environ.get("STRATA_SCREENSHOTS"):
            page.grab().save(str(Path(os.environ["STRATA_SCREENSHOTS"]) / "network_page_rpc.png"))
        finish(qasync_loop, page.toggle_lending())
        assert "Not lending" in page.rpc_serve_state.text() and rpc.server is None
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(rpc.aclose())
        qasync_loop.run_until_complete(chat.aclose())
        qasync_loop.run_until_complete(engines.aclose())
        qasync_loop.run_until_complete(http.aclose())
