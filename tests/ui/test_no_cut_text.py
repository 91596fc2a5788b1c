"""No text is cut: every page of the composed app and its guide, at the two window sizes people use
most, in English and Chinese, light and dark. A label, button or combo box whose text needs more
room than it gets fails, as does a table column that cuts its header, unless the widget shortens
its text on purpose and shows the whole of it in a tooltip (tests/support/cut_text.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose, open_first_run
from strata_gui.core.app_services import build_app_services
from strata_gui.core.services import build_services
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.i18n import install_language
from strata_gui.ui.theme import apply_theme
from tests.support.cut_text import cut_texts

SIZES = ((1180, 760), (1600, 1000))


@pytest.fixture
def app_ui(qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop) -> Iterator[AppUi]:
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                choose_model=lambda: None, save_path=lambda _n: None))
    try:
        yield ui
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_no_text_is_cut_on_any_page(language: str, theme: str, qtbot: QtBot, qapp: QApplication,
                                    qasync_loop: asyncio.AbstractEventLoop) -> None:
    install_language(qapp, language)
    apply_theme(qapp, theme)
    try:
        services = build_app_services(build_services())
        bridge = AsyncBridge()
        ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                    choose_model=lambda: None, save_path=lambda _n: None))
        window = ui.window
        problems: list[str] = []
        try:
            window.show()
            for width, height in SIZES:
                window.resize(width, height)
                for index, title in enumerate(window.page_titles()):
                    window.show_page_index(index)
                    qtbot.wait(30)
                    problems += [f"{width}×{height} {title}: {p}" for p in cut_texts(window)]
                chat = ui.pages.chat
                window.show_page(chat)
                for toggle in (chat.settings_toggle, chat.load_options_toggle):
                    toggle.setChecked(True)
                    qtbot.wait(30)
                    problems += [f"{width}×{height} chat panel: {p}" for p in cut_texts(window)]
                    toggle.setChecked(False)
            guide = open_first_run(ui)
            guide.resize(*SIZES[0])
            qtbot.wait(50)
            problems += [f"guide: {p}" for p in cut_texts(guide)]
            guide.close()
        finally:
            window.close()
            qasync_loop.run_until_complete(bridge.shutdown())
            qasync_loop.run_until_complete(services.aclose())
            window.deleteLater()
        assert not problems, f"{len(problems)} cut text(s) ({language}, {theme}):\n" + "\n".join(
            dict.fromkeys(problems))
    finally:
        install_language(qapp, "en")
        apply_theme(qapp, "system")
