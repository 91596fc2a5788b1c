"""The language switches live: saving another language in Settings re-translates the open window
(sidebar, pages, a reply's statistics, the status bar) at once, and loses nothing the user had."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.client import ReplyStats
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.i18n import install_language, translators_of

ENGLISH_SIDEBAR = ["Chat", "Images", "Models", "Engines", "GPU", "Dashboard", "Network", "Settings", "About"]
CHINESE_SIDEBAR = ["聊天", "图像", "模型", "引擎", "GPU", "仪表盘", "网络", "设置", "关于"]


@pytest.fixture
def ui(qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop) -> Iterator[AppUi]:
    """The composed app in English, with a conversation whose reply has statistics."""
    install_language(qapp, "en")
    base = build_services()
    seeded = build_app_services(base)
    conv = seeded.chat.store.create_conversation("Lighthouses")
    seeded.chat.store.add_message(conv.id, "user", "Tell me about lighthouses.")
    seeded.chat.store.add_message(conv.id, "assistant", "They guide ships.",
                                  stats=ReplyStats(prompt_n=12, predicted_n=5, prefill_tps=310.5, decode_tps=42.25,
                                                   engine="CPU"))
    qasync_loop.run_until_complete(seeded.aclose())
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    composed = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                        choose_model=lambda: None, save_path=lambda _n: None))
    try:
        yield composed
    finally:
        composed.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        composed.window.deleteLater()
        install_language(qapp, "en")


def _choose_language(ui: AppUi, language: str) -> None:
    """As a user does: Settings ▸ Language, then Save."""
    settings = ui.pages.settings
    ui.window.show_page(settings)
    settings.language.setCurrentIndex(settings.language.findData(language))
    settings.save_button.click()


def _stats(ui: AppUi) -> str:
    chat = ui.pages.chat
    reply = next(w for w in chat.message_widgets.values() if w.message.role == "assistant")
    return reply.stats.text().replace("\u2060", "").replace("\u00a0", " ")


def test_saving_another_language_retranslates_the_open_window_and_keeps_what_was_there(
        qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, ui: AppUi) -> None:
    async def use() -> None:  # on the app's running loop, as the pages expect
        await _switch_back_and_forth(qapp, ui)

    qasync_loop.run_until_complete(use())


async def _switch_back_and_forth(qapp: QApplication, ui: AppUi) -> None:
    window, pages = ui.window, ui.pages
    window.show()
    for page in (pages.chat, pages.models, pages.engines, pages.dashboard, pages.settings):
        window.show_page(page)
    chat = pages.chat
    conversation = ui.services.chat.store.conversations()[0].id
    chat.open_conversation(conversation)
    while len(chat.message_widgets) < 2:
        await asyncio.sleep(0.01)
    chat.input.setPlainText("half a question about fog")
    window.statusBar().showMessage("GPU · engine: CPU")  # as start-up leaves it
    assert window.page_titles() == ENGLISH_SIDEBAR
    assert "decode 42.2 tok/s" in _stats(ui)
    bubbles = dict(chat.message_widgets)

    _choose_language(ui, "zh_CN")
    assert translators_of(qapp).language == "zh_CN"
    assert window.page_titles() == CHINESE_SIDEBAR
    assert pages.settings.save_button.text() == "保存" and pages.settings.status.text() == "已保存。"
    assert pages.settings.language.itemText(0) == "跟随系统"
    assert chat.send_button.text() == "发送" and chat.new_button.text() == "新对话"
    assert pages.models.header.title.text() == "模型"
    assert pages.engines.header.title.text() == "引擎" and pages.engines.refresh_button.text() == "刷新计划"
    assert "CPU" in window.statusBar().currentMessage() and "engine:" not in window.statusBar().currentMessage()
    stats = _stats(ui)
    assert "解码 42.2 tok/s" in stats and "decode" not in stats, stats
    # nothing was lost: the same conversation, the same bubbles, the message being typed
    assert chat.conversation_id == conversation and chat.message_widgets == bubbles
    assert chat.input.toPlainText() == "half a question about fog"

    _choose_language(ui, "en")
    assert window.page_titles() == ENGLISH_SIDEBAR
    assert chat.send_button.text() == "Send" and pages.settings.status.text() == "Saved."
    assert pages.engines.refresh_button.text() == "Refresh plan"
    assert "decode 42.2 tok/s" in _stats(ui)
    assert chat.input.toPlainText() == "half a question about fog"
