"""The chat page can run a conversation on a remote engine (real widgets, real HTTP server)."""

from __future__ import annotations

import asyncio

import httpx

from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.service import build_remote_service
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.chat_page import ChatPage
from tests.support.pool import real_pool
from tests.support.remote_server import WORDS, openai_like_server
from tests.support.settings import settings_service


def test_choose_remote_engine_and_chat(qtbot, qasync_loop: asyncio.AbstractEventLoop) -> None:  # type: ignore[no-untyped-def]
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    service = ChatService(ConversationStore(paths.database_file).open(), real_pool(http), http,
                          settings_service())
    remote = build_remote_service(paths.config_dir, http)
    bridge = AsyncBridge()
    errors: list = []  # type: ignore[type-arg]
    bridge.error_occurred.connect(errors.append)
    page = ChatPage(service, bridge, remote=remote)
    qtbot.addWidget(page)
    page.resize(950, 700)  # the chat page's share of the main window's first size
    page.show()
    try:
        with openai_like_server() as base:
            remote.set_model(remote.add("gpu box", base), "org/Model-7B")
            page.on_shown()
            assert page.run_on.isVisible() and page.run_on.count() == 2
            # Every choice reads whole (an endpoint added after the first show once left "This com").
            qtbot.waitUntil(lambda: page.run_on.width() > max(
                page.run_on.fontMetrics().horizontalAdvance(page.run_on.itemText(i)) for i in range(2)), timeout=2000)
            page.run_on.setCurrentIndex(1)
            assert service.remote is not None
            assert "gpu box" in page.engine_state.text() and not page.model_button.isEnabled()
            page.new_conversation()
            handle = page.send_text("hello")
            assert handle is not None
            done: list[bool] = []
            handle.finished.connect(lambda: done.append(True))

            async def wait() -> None:
                while not done:
                    await asyncio.sleep(0.02)

            qasync_loop.run_until_complete(asyncio.wait_for(wait(), 20))
            assert not errors
            assert page.conversation_id is not None
            msg = service.store.messages(page.conversation_id)[-1]
            assert msg.status == COMPLETE and msg.content == "".join(WORDS)
            assert msg.ran_on == "remote:gpu box · org/Model-7B"
            page.refresh_conversations()
            tip = page.conversation_list.item(0).toolTip()
            assert "Last reply: remote engine gpu box · org/Model-7B" in tip
            assert "gpu box · org/Model-7B (remote)" in page.message_widgets[msg.id].stats.text()
            page.run_on.setCurrentIndex(0)
            assert service.remote is None and page.model_button.isEnabled()
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(service.aclose())
        qasync_loop.run_until_complete(service.pool.aclose())
        qasync_loop.run_until_complete(http.aclose())
