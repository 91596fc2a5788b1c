"""No text is cut: every page of the composed app and its guide, at the two window sizes people use
most, in English and Chinese, light and dark. A label, button or combo box whose text needs more
room than it gets fails, as does a table column that cuts its header, unless the widget shortens
its text on purpose and shows the whole of it in a tooltip (tests/support/cut_text.py)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication, QLabel, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from strata_gui.app import UiHooks, compose, open_first_run
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.client import ReplyStats
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.i18n import install_language
from strata_gui.ui.theme import apply_theme
from tests.support.cut_text import cut_texts, squeezed_views
from tests.support.engines import TestEngines

SIZES = ((820, 560), (1180, 760), (1600, 1000))  # 820×560: the smallest the window allows
SHOTS = Path(os.environ["STRATA_CUT_SHOTS"]) if os.environ.get("STRATA_CUT_SHOTS") else None


@pytest.fixture
def lived_in(tmp_path: Path, test_model: Path, test_engines: TestEngines,
             qasync_loop: asyncio.AbstractEventLoop) -> Path:
    """A Strata home with what a user has after a while: an engine of their own, models with long
    file names, and a conversation with replies and their statistics."""
    library = tmp_path / "my models"
    library.mkdir()
    for name in ("strata-test-llama-gqa-mixture-of-experts-Q4_K_M-00001-of-00001.gguf", "tiny-F16.gguf"):
        shutil.copy(test_model, library / name)
    base = build_services()
    base.settings_service.update(model_dirs=[str(library)], last_model=str(library / "tiny-F16.gguf"))
    services = build_app_services(base)
    try:
        qasync_loop.run_until_complete(services.engines.add_local(test_engines.cpu_dir, "cpu"))
        conv = services.chat.store.create_conversation("A conversation with a rather long title about lighthouses")
        services.chat.store.add_message(conv.id, "user", "Tell me about lighthouses.")
        services.chat.store.add_message(conv.id, "assistant", "They guide ships.",
                                        stats=ReplyStats(prompt_n=12, predicted_n=5, prefill_tps=310.5,
                                                         decode_tps=42.25, engine="CPU (your build: bin)"))
    finally:
        qasync_loop.run_until_complete(services.aclose())
    return library


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "zh_CN", "live:zh_CN"])  # live: switched after the window was built
@pytest.mark.engine
def test_no_text_is_cut_on_any_page(language: str, theme: str, qtbot: QtBot, qapp: QApplication,
                                    qasync_loop: asyncio.AbstractEventLoop, lived_in: Path) -> None:
    live = language.startswith("live:")
    language = language.removeprefix("live:")
    install_language(qapp, "en" if live else language)
    apply_theme(qapp, theme)
    try:
        services = build_app_services(build_services())
        bridge = AsyncBridge()
        ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                    choose_model=lambda: None, save_path=lambda _n: None))
        window = ui.window
        if live:
            for role in ui.pages.roles:  # every page built in English, then the language switched
                ui.pages.get(role)
            install_language(qapp, language)
        problems: list[str] = []

        async def visit() -> None:  # on the app's running loop, as the pages expect
            nonlocal problems
            window.show()
            for width, height in SIZES:
                window.resize(width, height)
                for index, title in enumerate(window.page_titles()):
                    window.show_page_index(index)
                    await asyncio.sleep(0.05)
                    problems += [f"{width}×{height} {title}: {p}" for p in cut_texts(window)]
                    problems += [f"{width}×{height} {title}: {p}" for p in squeezed_views(window)]
                    if SHOTS:  # STRATA_CUT_SHOTS=DIR keeps what was checked, to look at
                        SHOTS.mkdir(parents=True, exist_ok=True)
                        window.grab().save(str(SHOTS / f"{language}-{theme}-{width}-{index:02d}.png"))
                chat = ui.pages.chat
                window.show_page(chat)
                if chat.conversation_id is None and services.chat.store.conversations():
                    chat.open_conversation(services.chat.store.conversations()[0].id)
                    await asyncio.sleep(0.05)
                    problems += [f"{width}×{height} conversation: {p}" for p in cut_texts(window)]
                for toggle in (chat.settings_toggle, chat.load_options_toggle):
                    toggle.setChecked(True)
                    await asyncio.sleep(0.05)
                    problems += [f"{width}×{height} chat panel: {p}" for p in cut_texts(window)]
                    toggle.setChecked(False)
            guide = open_first_run(ui)
            guide.resize(*SIZES[0])
            await asyncio.sleep(0.1)
            problems += [f"guide: {p}" for p in cut_texts(guide)]
            guide.close()
            problems += await _dialogs_cut(window)

        try:
            qasync_loop.run_until_complete(visit())
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


async def _dialogs_cut(window: QWidget) -> list[str]:
    """Cut texts in the app's dialogs at the size they open with: the error dialog, and Qt's own file
    dialog (the one Strata's Open/Attach/Choose buttons show; Qt's catalogue translates it)."""
    from PySide6.QtWidgets import QFileDialog

    from strata_gui.core.base import NetworkError
    from strata_gui.ui.dialogs import ErrorDialog

    error = ErrorDialog(NetworkError("Could not reach the hub", hint="Check your network or proxy."),
                        log_file=Path("strata.log"), open_path=lambda _p: None, parent=window)
    files = QFileDialog(window, window.tr("Open model"), str(Path.home()))
    files.setOption(QFileDialog.Option.DontUseNativeDialog)  # what Linux desktops without a portal show
    problems: list[str] = []
    for dialog, name in ((error, "error dialog"), (files, "file dialog")):
        dialog.show()
        await asyncio.sleep(0.1)
        # (its file list's column headers are Qt's own, sized by Qt for the dialog's default width)
        problems += [f"{name}: {p}" for p in cut_texts(dialog) if dialog is not files or "column" not in p]
        if dialog is files and QCoreApplication.translate("QFileDialog", "Look in:") != "Look in:":  # translated
            english = [w.text() for w in dialog.findChildren(QLabel) + dialog.findChildren(QPushButton)
                       if w.isVisible() and re.fullmatch(r"[&A-Za-z .:…]*[A-Za-z][&A-Za-z .:…]*", w.text())]
            problems += [f"{name}: {t!r} left in English" for t in english]
        dialog.close()
        dialog.deleteLater()
    return problems


def test_the_check_breaks_lines_where_qt_does(qtbot: QtBot) -> None:
    """A wrapped label is cut only by a piece Qt cannot break: an English word wider than the label,
    never a Chinese sentence (no spaces, a break between any two characters)."""
    from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

    box = QWidget()
    qtbot.addWidget(box)
    layout = QVBoxLayout(box)
    labels = [QLabel("还没有图像模型：请在“模型”页获取，或点击“浏览…”选择文件。"),
              QLabel("Pneumonoultramicroscopicsilicovolcanoconiosis strikes")]
    for label in labels:
        label.setWordWrap(True)
        label.setFixedWidth(120)
        layout.addWidget(label)
    box.show()
    problems = cut_texts(box)
    assert len(problems) == 1 and "Pneumono" in problems[0] and "a word needs" in problems[0]
