"""Network page with real widgets (offscreen), a real qasync loop, real HTTP servers and sockets."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.remote.service import RemoteService
from strata_gui.core.serve.service import ServeService
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.pages.network_page import NetworkPage
from tests.support.pool import library_router, real_pool
from tests.support.remote_server import openai_like_server
from tests.support.settings import settings_service


def wait(loop: asyncio.AbstractEventLoop, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async def poll() -> None:
        deadline = loop.time() + timeout
        while not predicate():
            assert loop.time() < deadline, "condition not met in time"
            await asyncio.sleep(0.02)

    loop.run_until_complete(poll())


def finish(loop: asyncio.AbstractEventLoop, handle: TaskHandle | None) -> None:
    assert handle is not None
    done: list[bool] = []
    handle.finished.connect(lambda: done.append(True))
    wait(loop, lambda: bool(done))


@pytest.fixture
def page_env(qtbot, qasync_loop: asyncio.AbstractEventLoop) -> Iterator[tuple]:  # type: ignore[no-untyped-def]
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    settings = settings_service(serve_port=0)
    chat = ChatService(ConversationStore(paths.database_file).open(), real_pool(http), http,
                       settings)
    secrets = FileSecretStore(paths.config_dir / "secrets.json")
    remote = RemoteService(paths.config_dir / "remote_engines.json", secrets, http)
    serve = ServeService(settings, secrets, library_router(chat))
    bridge = AsyncBridge()
    errors: list = []  # type: ignore[type-arg]
    bridge.error_occurred.connect(errors.append)
    page = NetworkPage(remote, serve, bridge, pool=chat.pool)
    qtbot.addWidget(page)
    page.resize(900, 900)
    page.show()
    page.on_shown()
    try:
        yield page, remote, serve, qasync_loop, http, paths
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(serve.stop())
        qasync_loop.run_until_complete(chat.aclose())
        qasync_loop.run_until_complete(chat.pool.aclose())
        qasync_loop.run_until_complete(http.aclose())


def test_add_remote_engine_through_the_form(page_env) -> None:  # type: ignore[no-untyped-def]
    page, remote, _serve, loop, _http, paths = page_env
    assert page.remote_empty.isVisible() and not page.remote_list.isVisible()
    with openai_like_server() as base:
        page.remote_name.setText("lab")
        page.remote_url.setText(base + "/v1")
        page.remote_key.setText("sk-lab-secret")
        finish(loop, page.add_remote())
        assert "1 model." in page.remote_status.text()  # counted: never "1 model(s)"
        assert page.remote_key.text() == "" and page.remote_list.count() == 1
        assert "org/Model-7B" in page.remote_list.item(0).text()
        assert remote.api_key(remote.get("lab")) == "sk-lab-secret"
        assert "sk-lab-secret" not in (paths.config_dir / "remote_engines.json").read_text()
        finish(loop, page.refresh_remote_models())
        assert page.remote_model.currentText() == "org/Model-7B"
    # An address where nothing answers: explained, and not saved.
    page.remote_name.setText("nowhere")
    page.remote_url.setText("http://127.0.0.1:9")
    finish(loop, page.add_remote())
    assert "Could not reach" in page.remote_status.text()
    assert [e.name for e in remote.endpoints()] == ["lab"]
    page.remove_selected_remote()
    assert remote.endpoints() == [] and page.remote_empty.isVisible()


def test_serve_key_shown_once_and_live_counts(page_env) -> None:  # type: ignore[no-untyped-def]
    page, _remote, serve, loop, http, _paths = page_env
    assert "Not serving" in page.serve_state.text()
    page.generate_key()
    key = page.new_key.text()
    assert key.startswith("strata-") and page.new_key.isVisible()
    assert "An API key is set" in page.key_state.text()
    page.serve_port.setMinimum(0)  # port 0: any free one, for the test
    page.serve_port.setValue(0)
    finish(loop, page.toggle_serving())
    assert serve.running and "Serving at http://127.0.0.1:" in page.serve_state.text()
    assert "Authorization: Bearer" in page.curl.toPlainText() and key not in page.curl.toPlainText()
    url = serve.url
    r = loop.run_until_complete(http.post(url + "/chat/completions", json={"messages": []}))
    assert r.status_code == 401
    page.refresh_serve()
    assert "1 refused" in page.serve_counts.text() and "0 waiting" in page.serve_counts.text()
    if os.environ.get("STRATA_SCREENSHOTS"):
        page.grab().save(str(Path(os.environ["STRATA_SCREENSHOTS"]) / "network_page.png"))
    finish(loop, page.toggle_serving())
    assert not serve.running and page.serve_button.text() == "Start serving"



def test_activity_lists_requests_live_and_the_switches_save_their_settings(page_env) -> None:  # type: ignore[no-untyped-def]
    page, _remote, serve, loop, http, _paths = page_env
    panel = page.activity_panel
    assert panel.empty.isVisibleTo(page) and panel.table.rowCount() == 0
    assert panel.model_routes.isChecked() and not panel.capture.isChecked()
    page.serve_port.setMinimum(0)
    page.serve_port.setValue(0)
    finish(loop, page.toggle_serving())
    chat = {"model": "no-such-model", "messages": [{"role": "user", "content": "hi"}]}
    r = loop.run_until_complete(http.post(serve.url + "/chat/completions", json=chat))
    assert r.status_code == 404
    wait(loop, lambda: panel.table.rowCount() == 1)  # live: no refresh asked for
    cells = [panel.table.item(0, c).text() for c in range(9)]
    assert cells[1:5] == ["127.0.0.1", "openai", "unknown", "404"] and cells[8] == "—"  # not the made-up name
    panel.table.selectRow(0)
    assert panel.body.isVisibleTo(page) and "Keep request bodies" in panel.body.toPlainText()
    # Capture on: the next request's body is kept, its key left out.
    panel.capture.setChecked(True)
    assert serve.settings.serve_capture_bodies
    r = loop.run_until_complete(http.post(serve.url + "/chat/completions", json=chat,
                                          headers={"Authorization": "Bearer sk-private"}))
    wait(loop, lambda: panel.table.rowCount() == 2)
    panel.table.selectRow(0)
    body = panel.body.toPlainText()
    assert '"no-such-model"' in body and "sk-private" not in body and "<redacted>" in body
    if os.environ.get("STRATA_SCREENSHOTS"):
        page.grab().save(str(Path(os.environ["STRATA_SCREENSHOTS"]) / "network_page_activity.png"))
    panel.model_routes.setChecked(False)
    assert not serve.settings.serve_model_routes
    finish(loop, page.toggle_serving())


def test_a_busy_server_keeps_the_activity_table_responsive(page_env) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QApplication, QHeaderView

    from strata_gui.core.serve.activity import ActivityEntry
    from strata_gui.ui.pages.serve_activity import SHOWN

    page, _remote, _serve, _loop, _http, _paths = page_env
    panel = page.activity_panel
    assert panel.table.isVisible()
    entries = [ActivityEntry(at=1.7e9 + i, client=f"192.168.1.{i % 250}", method="POST", path="/v1/chat/completions",
                             api="openai", model=f"org/model-{i % 7}-GGUF:Q4_K_M", status=200, duration_s=1.5,
                             wait_s=0.01, prompt_tokens=1200 + i, output_tokens=300, ttft_s=0.25, decode_tps=41.5)
               for i in range(2 * SHOWN)]
    for entry in entries:  # one request ending after another, each shown as it ends
        panel.add(entry)
        QApplication.processEvents()  # what the GUI does between two requests: lay out, paint
    assert panel.table.rowCount() == SHOWN and panel.table.item(0, 3).text() == entries[-1].model
    # Columns sized to their contents re-measured every row at each new one (2.8 s for 400 requests,
    # 0.4 s with fixed widths): the widths are set once, and the user may drag them.
    header = panel.table.horizontalHeader()
    assert all(header.sectionResizeMode(c) != QHeaderView.ResizeMode.ResizeToContents
               for c in range(panel.table.columnCount()))


@pytest.mark.engine
def test_loaded_models_list_shows_memory_and_idle_and_unloads(qtbot, qasync_loop: asyncio.AbstractEventLoop,  # type: ignore[no-untyped-def]
                                                              test_engines, test_model: Path) -> None:
    from strata_gui.core.runtime.engine import EngineSpec

    loop = qasync_loop
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    settings = settings_service(serve_port=0, context_size=512)
    chat = ChatService(ConversationStore(paths.database_file).open(), real_pool(http), http, settings)
    chat.set_plan([EngineSpec("cpu-test", "CPU", "cpu", test_engines.cpu_server)])
    chat.set_model(test_model, remember=False)
    secrets = FileSecretStore(paths.config_dir / "secrets.json")
    router = library_router(chat)
    serve = ServeService(settings, secrets, router)
    bridge = AsyncBridge()
    page = NetworkPage(RemoteService(paths.config_dir / "remote.json", secrets, http), serve, bridge,
                       pool=chat.pool)
    qtbot.addWidget(page)
    page.resize(900, 1000)
    page.show()
    try:
        page.on_shown()
        assert not page.loaded_table.isVisibleTo(page) and page.loaded_empty.isVisibleTo(page)

        async def ask() -> None:
            # A program asks for the model: it loads, is shown in use, and stays loaded afterwards.
            await router.refresh()
            async with router.borrow(test_model.stem):
                page.refresh_serve()
                assert page.loaded_table.item(0, 3).text() == "1 of 1 slot"  # its one slot answers it

        loop.run_until_complete(ask())
        page.refresh_serve()
        table = page.loaded_table
        assert table.isVisibleTo(page) and table.rowCount() == 1
        assert [table.item(0, c).text() for c in (0, 1, 3, 4)] == [test_model.stem, "CPU", "0 of 1 slot", "—"]
        assert "MiB" in table.item(0, 2).text() and table.item(0, 5).text().endswith(" s")
        assert not page.unload_button.isEnabled()
        table.selectRow(0)
        assert page.unload_button.isEnabled()
        if os.environ.get("STRATA_SCREENSHOTS"):
            page.grab().save(str(Path(os.environ["STRATA_SCREENSHOTS"]) / "network_page_loaded_models.png"))
        finish(loop, page.unload_selected())
        assert chat.pool.engines() == [] and table.rowCount() == 0 and page.loaded_empty.isVisibleTo(page)
    finally:
        loop.run_until_complete(bridge.shutdown())
        loop.run_until_complete(chat.aclose())
        loop.run_until_complete(chat.pool.aclose())
        loop.run_until_complete(http.aclose())


@pytest.mark.engine
def test_requests_waiting_for_a_model_are_shown_with_why_and_how_long(  # type: ignore[no-untyped-def]
        qtbot, qasync_loop: asyncio.AbstractEventLoop, test_engines, test_model: Path) -> None:
    """The chat holds the model's only slot and a program asks for the model: the loaded model shows
    its slot in use and one request waiting; the waiting request says who asked, why it waits and
    for how long (counting up while shown); it goes once it is served."""
    from strata_gui.core.runtime.engine import EngineSpec

    loop = qasync_loop
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    settings = settings_service(serve_port=0, context_size=512, parallel_slots=1)
    chat = ChatService(ConversationStore(paths.database_file).open(), real_pool(http), http, settings)
    chat.set_plan([EngineSpec("cpu-test", "CPU", "cpu", test_engines.cpu_server)])
    chat.set_model(test_model, remember=False)
    secrets = FileSecretStore(paths.config_dir / "secrets.json")
    router = library_router(chat)
    serve = ServeService(settings, secrets, router)
    bridge = AsyncBridge()
    page = NetworkPage(RemoteService(paths.config_dir / "remote.json", secrets, http), serve, bridge,
                       pool=chat.pool)
    qtbot.addWidget(page)
    page.resize(1000, 1000)
    page.show()
    served: list[str] = []

    async def program() -> None:
        async with router.borrow(test_model.stem) as upstream:
            served.append(upstream.engine)

    async def scenario() -> None:
        page.on_shown()
        await chat.ensure_engine()
        await router.refresh()
        engine = chat.running_engine
        assert engine is not None and engine.slots == 1
        lease = await chat.pool.lease_now(engine, "chat")  # the chat's reply holds the one slot
        assert lease is not None
        asked = asyncio.get_running_loop().create_task(program())
        try:
            table = page.waiting_table
            await wait_for(lambda: table.isVisibleTo(page) and table.rowCount() == 1
                           and table.item(0, 0).text() == "Other apps (API)")
            assert [table.item(0, c).text() for c in range(3)] == [
                "Other apps (API)", test_model.name, f"Waiting: 1 request ahead for {test_model.name}"]
            assert page.waiting_title.isVisibleTo(page)
            loaded = page.loaded_table
            assert [loaded.item(0, c).text() for c in (3, 4)] == ["1 of 1 slot", "1"]
            assert "1 active" not in page.serve_counts.text() and "1 waiting" in page.serve_counts.text()
            # How long it has waited counts up while the page is shown (its one-second refresh).
            await wait_for(lambda: table.item(0, 3) is not None and table.item(0, 3).text() == "1 s")
            if os.environ.get("STRATA_SCREENSHOTS"):
                page.grab().save(str(Path(os.environ["STRATA_SCREENSHOTS"]) / "network_page_waiting.png"))
        finally:
            lease.release()
        await asked
        await wait_for(lambda: not page.waiting_table.isVisibleTo(page))
        assert served == ["CPU"] and "0 waiting" in page.serve_counts.text()
        assert page.loaded_table.item(0, 4).text() == "—"

    try:
        loop.run_until_complete(scenario())
    finally:
        loop.run_until_complete(bridge.shutdown())
        loop.run_until_complete(chat.aclose())
        loop.run_until_complete(chat.pool.aclose())
        loop.run_until_complete(http.aclose())


async def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll inside one loop run (qasync callbacks must not fire between separate runs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)
