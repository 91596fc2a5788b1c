"""The composed main window: pages, settings that persist, notices, About report, crashes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import CrashReporter, UiHooks, compose, run_self_test
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.about_page import AboutPage
from strata_gui.ui.pages.settings_page import SettingsPage


class Recorder:
    def __init__(self) -> None:
        self.opened: list[Path] = []
        self.folder: str | None = None

    def hooks(self) -> UiHooks:
        return UiHooks(open_path=self.opened.append, choose_folder=lambda: self.folder,
                       choose_model=lambda: None, save_path=lambda _n: None)


@pytest.fixture
def composed(qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop):
    """Build the real window (every service and page) and tear it all down afterwards."""
    made = []

    def make(rec: Recorder):
        app_services = build_app_services(build_services())
        bridge = AsyncBridge()
        ui = compose(app_services, bridge, qapp, rec.hooks())
        window = ui.window
        made.append((app_services, bridge, window))
        return app_services.base, bridge, window

    yield make
    for app_services, bridge, window in made:
        window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(app_services.aclose())
        window.deleteLater()


def _page(window, cls):
    return next(p for p in window.pages if isinstance(p, cls))


def test_window_has_its_pages_and_keyboard_navigation(qtbot: QtBot, qapp: QApplication, composed) -> None:
    _, _, window = composed(Recorder())
    window.show()
    assert window.page_titles() == ["Chat", "Images", "Models", "Engines", "GPU", "Dashboard", "Network", "Settings",
                                    "About"]
    about = _page(window, AboutPage)

    def active() -> bool:
        # The offscreen platform activates asynchronously, and an activation of nothing queued by an earlier test's
        # window (hidden, then deleted while this test waits) can land after this one: CI saw the window stay
        # inactive for 5 s with no other window shown. Ask again until it holds, as a user clicks the window again.
        if QApplication.activeWindow() is window:
            return True
        window.raise_()
        window.activateWindow()
        return False

    try:
        qtbot.waitUntil(active, timeout=10_000)
    except qtbot.TimeoutError:  # say what holds the activation
        shown = [f"{type(w).__name__} {w.windowTitle()!r}" for w in QApplication.topLevelWidgets() if w.isVisible()]
        pytest.fail(f"the window never became active: active {QApplication.activeWindow()!r}, modal "
                    f"{QApplication.activeModalWidget()!r}, popup {QApplication.activePopupWidget()!r}, "
                    f"visible top-level widgets {shown}")
    qtbot.keyClick(window, Qt.Key.Key_9, Qt.KeyboardModifier.ControlModifier)
    assert window.stack.currentWidget() is about
    window.show_page(about)
    assert about.isVisible()


def test_settings_page_saves_to_disk_and_applies_theme(qtbot: QtBot, qapp: QApplication, composed) -> None:
    rec = Recorder()
    services, _, window = composed(rec)
    page = _page(window, SettingsPage)
    page.theme.setCurrentIndex(page.theme.findData("dark"))
    page.hub_endpoint.setText("https://hf-mirror.example/")
    rec.folder = "/data/models"
    page.add_dir_button.click()
    page.add_dir_button.click()  # the same folder is not added twice
    page.update_tolerance.setValue(12)
    page.update_channel.setCurrentIndex(page.update_channel.findData("latest"))
    assert page.save()
    saved = json.loads(services.paths.settings_file.read_text())
    assert saved["update_tolerance_pct"] == 12 and saved["update_channel"] == "latest"
    assert saved["theme"] == "dark"
    assert saved["hub_endpoint"] == "https://hf-mirror.example"
    assert saved["model_dirs"] == ["/data/models"]
    assert qapp.palette().window().color().lightness() < 100  # dark theme is applied at once
    # A fresh start reads the same settings.
    assert build_services().settings.hub_endpoint == "https://hf-mirror.example"
    page.theme.setCurrentIndex(page.theme.findData("light"))
    assert page.save()
    assert qapp.palette().window().color().lightness() > 150


def test_parallel_requests_and_the_api_wait_limit_are_saved_as_shown(qtbot: QtBot, qapp: QApplication,
                                                                    composed) -> None:
    """"Automatic" parallel requests is saved as automatic (0), not turned into 1 by the page; the
    API wait limit is saved in seconds; the mouse wheel scrolling past either changes neither."""
    services, _, window = composed(Recorder())
    window.resize(1180, 500)
    window.show()
    page = _page(window, SettingsPage)
    window.show_page(page)
    assert page.parallel.value() == 0 and page.parallel.text() == "Automatic"
    assert page.api_wait.value() == 60 and page.api_wait.text() == "60 s"
    assert "at most 4" in page.parallel.toolTip() and "503" in page.api_wait.toolTip()

    page.parallel.setValue(3)
    page.api_wait.setValue(120)
    for box in (page.parallel, page.api_wait):
        before = box.value()
        _wheel_over(box)
        assert box.value() == before
    assert page.save()
    saved = json.loads(services.paths.settings_file.read_text())
    assert (saved["parallel_slots"], saved["api_wait_seconds"]) == (3, 120)
    assert (services.settings.parallel_slots, services.settings.api_wait_seconds) == (3, 120)

    page.parallel.setValue(0)  # back to Automatic: saved as automatic, not as one request
    assert page.parallel.text() == "Automatic" and page.save()
    assert json.loads(services.paths.settings_file.read_text())["parallel_slots"] == 0
    page.restore_defaults()
    assert page.parallel.text() == "Automatic" and page.api_wait.value() == 60


def test_settings_page_notices_follow_what_changed_and_theme_follows_the_service(
        qtbot: QtBot, qapp: QApplication, composed) -> None:
    services, _, window = composed(Recorder())
    page = _page(window, SettingsPage)
    assert page.save()
    assert page.status.text() == "Saved."  # nothing changed: no restart notice
    page.language.setCurrentIndex(page.language.findData("zh_CN"))
    try:
        assert page.save()
        assert page.status.text() == "已保存。"  # the language applies at once: no restart notice
    finally:
        page.language.setCurrentIndex(page.language.findData("en"))
        assert page.save()
    assert page.status.text() == "Saved."
    page.offline.setChecked(True)
    assert page.save()
    assert "apply after restarting" in page.status.text() and "language" not in page.status.text()
    # A theme change saved by anyone (not only this page's Save) is applied at once.
    services.settings_service.update(theme="dark")
    assert qapp.palette().window().color().lightness() < 100
    services.settings_service.update(theme="light")
    assert qapp.palette().window().color().lightness() > 150


def test_using_a_model_from_the_models_page_is_remembered_for_the_next_start(
        qtbot: QtBot, qapp: QApplication, composed, tmp_path: Path) -> None:
    from strata_gui.ui.pages.models_page import ModelsPage

    model = tmp_path / "picked.gguf"
    _, _, window = composed(Recorder())
    _page(window, ModelsPage).use_model.emit(model)
    assert build_services().settings.last_model == str(model)


def test_empty_hub_endpoint_shows_the_one_in_effect(qtbot: QtBot, qapp: QApplication, composed,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, window = composed(Recorder())
    page = _page(window, SettingsPage)
    assert page.hub_endpoint.text() == "" and page.hub_endpoint.placeholderText() == "https://huggingface.co"
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example/")
    _, _, window = composed(Recorder())
    page = _page(window, SettingsPage)
    assert page.hub_endpoint.text() == "" and page.hub_endpoint.placeholderText() == "https://hf-mirror.example"


def test_invalid_settings_are_explained_and_not_saved(qtbot: QtBot, qapp: QApplication, composed) -> None:
    services, _, window = composed(Recorder())
    page = _page(window, SettingsPage)
    page.github_api.setText("api.github.com")
    assert not page.save()
    assert "must start with http" in page.status.text()
    assert not services.paths.settings_file.exists()
    page.revert_button.click()
    assert page.github_api.text() == "https://api.github.com"


def test_folders_open_in_the_file_manager(qtbot: QtBot, qapp: QApplication, composed) -> None:
    rec = Recorder()
    services, _, window = composed(rec)
    page = _page(window, SettingsPage)
    page.findChild(type(page.save_button), "open-logs").click()
    assert rec.opened == [services.paths.log_dir]
    about = _page(window, AboutPage)
    about.open_logs_button.click()
    assert rec.opened[-1] == services.paths.log_dir


def test_corrupt_settings_notice_is_shown_once(qtbot: QtBot, qapp: QApplication, composed, _user_dirs_in_tmp: Path) -> None:
    cfg = _user_dirs_in_tmp / "config"
    cfg.mkdir(parents=True)
    (cfg / "settings.json").write_text("{{{")
    _, _, window = composed(Recorder())
    window.show()
    assert window.banner.isVisible()
    assert "could not be read" in window.banner.text.text()
    # Next start: the file was moved aside, so no notice.
    _, _, window2 = composed(Recorder())
    window2.show()
    assert not window2.banner.isVisible()


def test_about_report_is_copied(qtbot: QtBot, qapp: QApplication, composed) -> None:
    _, _, window = composed(Recorder())
    about = _page(window, AboutPage)
    about.copy_button.click()
    text = QApplication.clipboard().text()
    assert text.startswith("Strata ") and "Python" in text and "logs:" in text


def test_self_test_visits_every_page(qtbot: QtBot, qapp: QApplication, composed, qasync_loop: asyncio.AbstractEventLoop) -> None:
    _, bridge, window = composed(Recorder())
    window.show()
    problems = qasync_loop.run_until_complete(run_self_test(window, bridge, dwell=0.01))
    assert problems == []


def test_unhandled_exception_shows_dialog_and_app_keeps_running(
    qtbot: QtBot, qapp: QApplication, tmp_path: Path
) -> None:
    opened: list[Path] = []
    reporter = CrashReporter(tmp_path / "strata.log", opened.append)
    reporter.install()
    try:
        def buggy_slot() -> None:
            raise KeyError("missing-thing")

        with qtbot.waitSignal(reporter.crashed, timeout=3000):
            QTimer.singleShot(0, buggy_slot)
        qtbot.waitUntil(lambda: len(reporter.dialogs) == 1)
        dialog = reporter.dialogs[0]
        assert "KeyError" in dialog.message.text()
        dialog.copy_button.click()
        assert "missing-thing" in QApplication.clipboard().text()
        dialog.log_button.click()
        assert opened == [tmp_path / "strata.log"]
        # The event loop still runs: a later timer fires.
        fired: list[bool] = []
        QTimer.singleShot(0, lambda: fired.append(True))
        qtbot.waitUntil(lambda: fired == [True])
        dialog.close()
    finally:
        reporter.uninstall()


def test_only_the_chat_page_is_built_at_start_the_rest_on_first_visit(qtbot: QtBot, qapp: QApplication,
                                                                      composed) -> None:
    from strata_gui.ui.pages.chat_page import ChatPage
    from strata_gui.ui.pages.network_page import NetworkPage

    _, _, window = composed(Recorder())
    window.show()
    # Every entry is in the sidebar at once; only the page on screen was built.
    assert window.page_titles() == ["Chat", "Images", "Models", "Engines", "GPU", "Dashboard", "Network", "Settings",
                                    "About"]
    assert [type(p) for p in window.built_pages()] == [ChatPage]
    assert isinstance(window.stack.currentWidget(), ChatPage)
    built: list[int] = []
    window.page_built.connect(built.append)
    window.show_page_index(6)  # a click on "Network" builds it, shows it, and only it
    network = window.stack.currentWidget()
    assert isinstance(network, NetworkPage) and network.isVisible()
    assert built == [6]
    assert [type(p) for p in window.built_pages()] == [ChatPage, NetworkPage]
    window.show_page_index(0)
    window.show_page_index(6)  # a second visit reuses the page
    assert window.stack.currentWidget() is network and built == [6]


def test_ui_report_describes_the_window_a_script_cannot_see(
        qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    """STRATA_UI_REPORT: what scripts/windows-under-wine.sh reads to know the Windows build drew."""
    from strata_gui.app import open_first_run
    from strata_gui.ui.ui_report import describe_window, schedule_ui_report

    app_services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(app_services, bridge, qapp, Recorder().hooks())
    window = ui.window
    try:
        window.resize(1000, 700)
        window.show()
        qtbot.waitExposed(window)
        before = describe_window(window)
        assert before["title"] == "Strata" and before["visible"] is True
        assert before["pages"] == window.page_titles() and len(before["pages"]) == 9
        assert before["cover"] is None
        assert before["black_fraction"] < 0.2 and before["distinct_colours"] > 8

        open_first_run(ui, starters=[])
        target = tmp_path / "report dir ü" / "ui.json"
        target.parent.mkdir()
        schedule_ui_report(window, str(target), delay_ms=50, close=True)
        qtbot.waitUntil(target.exists, timeout=5000)
        assert window.isVisible()  # the screenshot a script takes comes first
        report = json.loads(target.read_text(encoding="utf-8"))
        assert report["title"] == "Strata" and report["size"] == [1000, 700]
        assert report["cover"] == "FirstRunGuide" and report["cover_visible"] is True
        # The guide itself is drawn: no black panel (what Wine showed before it became a cover).
        assert report["black_fraction"] < 0.2 and report["distinct_colours"] > 8
        grab = target.with_name("ui.json.png")
        assert grab.is_file() and grab.stat().st_size > 1000
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=6000)  # then it closes, as asked
    finally:
        window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(app_services.aclose())
        window.deleteLater()


def _wheel_over(widget, steps: int = 3) -> None:
    """The wheel turned over ``widget`` in its active window, the way a mouse sends it (see
    tests/support/wheel.py: a synthetic event sent to the widget misses the focus Qt gives first)."""
    from tests.support.wheel import wheel_over

    window = widget.window()
    window.activateWindow()
    QTest.qWaitForWindowActive(window)
    wheel_over(widget, -steps)


def test_scrolling_over_a_spin_box_scrolls_the_page_and_leaves_the_setting_alone(
        qtbot: QtBot, qapp: QApplication, composed) -> None:
    from PySide6.QtWidgets import QScrollArea

    _, _, window = composed(Recorder())
    window.resize(1180, 500)  # short enough that the settings page scrolls
    window.show()
    page = _page(window, SettingsPage)
    window.show_page(page)
    scroll = page.findChild(QScrollArea).verticalScrollBar()
    assert scroll.maximum() > 0
    scroll.setValue(0)
    before, theme = page.context_size.value(), page.theme.currentIndex()
    page.context_size.setValue(4096)
    before = page.context_size.value()
    _wheel_over(page.context_size)
    assert page.context_size.value() == before  # the wheel passed over the box: the setting is unchanged ...
    assert scroll.value() > 0  # ... and the page scrolled instead
    _wheel_over(page.theme)
    assert page.theme.currentIndex() == theme


def test_the_model_picker_says_when_the_library_is_empty(
        qtbot: QtBot, qapp: QApplication, composed, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    """Opening the picker reads the library; once read, an empty one says so (it said "Reading your
    library…" for ever: the menu was refilled from the read's own success signal, while the read
    still counted as running)."""
    from strata_gui.ui.pages.chat_page import ChatPage

    empty = tmp_path / "no-models"
    empty.mkdir()
    build_services().settings_service.update(model_dirs=[str(empty)])
    _, _, window = composed(Recorder())
    chat = _page(window, ChatPage)
    chat.model_menu.popup(chat.model_button.mapToGlobal(chat.model_button.rect().bottomLeft()))  # as a click does
    qtbot.waitUntil(chat.model_menu.isVisible)
    handle = chat.library_task
    assert handle is not None
    qasync_loop.run_until_complete(handle.wait())
    qtbot.waitUntil(lambda: [a.text() for a in chat.model_menu.actions() if not a.isSeparator()]
                    == ["No models in your library yet", "Browse for a GGUF file…"])
    chat.model_menu.hide()


def test_the_model_picker_lists_the_library_and_still_browses(
        qtbot: QtBot, qapp: QApplication, composed, qasync_loop: asyncio.AbstractEventLoop,
        tmp_path: Path, test_model: Path) -> None:
    import shutil

    from strata_gui.ui.pages.chat_page import ChatPage

    library = tmp_path / "models"
    library.mkdir()
    for name in ("alpha-Q4_K_M.gguf", "beta-Q8_0.gguf"):
        shutil.copy(test_model, library / name)
    build_services().settings_service.update(model_dirs=[str(library)])
    _, _, window = composed(Recorder())
    chat = _page(window, ChatPage)
    handle = chat.refresh_library()
    assert handle is not None
    qasync_loop.run_until_complete(handle.wait())
    chat._fill_model_menu()  # what opening the picker shows
    names = [a.text() for a in chat.model_menu.actions() if not a.isSeparator()]
    assert names == ["alpha-Q4_K_M.gguf", "beta-Q8_0.gguf", "Browse for a GGUF file…"]
    chat.model_menu.actions()[1].trigger()  # pick "beta"
    assert chat._service.model == library / "beta-Q8_0.gguf"
    assert build_services().settings.last_model == str(library / "beta-Q8_0.gguf")  # remembered
    chat._fill_model_menu()
    assert [a.isChecked() for a in chat.model_menu.actions()[:2]] == [False, True]  # the current one is ticked


@pytest.mark.engine
def test_the_dashboard_shows_an_engine_the_chat_did_not_load(
        qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, test_engines: object,
        test_model: Path) -> None:
    """Issue 48: "No engine running" was shown while one ran, when the model server (or a benchmark)
    had loaded it and the chat had not."""
    from strata_gui.ui.pages.dashboard_page import DashboardPage

    app_services = build_app_services(build_services())
    bridge = AsyncBridge()
    window = compose(app_services, bridge, qapp, Recorder().hooks()).window
    try:
        async def load_for_the_api() -> object:
            await app_services.prepare()
            spec = await app_services.use_engine_folder(test_engines.cpu_dir)  # type: ignore[attr-defined]
            return await app_services.pool.acquire(spec, test_model, app_services.chat.launch_settings(), user="api")

        lease = qasync_loop.run_until_complete(load_for_the_api())
        assert app_services.chat.supervisor is None  # the chat has no engine of its own
        dashboard = _page(window, DashboardPage)
        dashboard.tick()
        qtbot.waitUntil(lambda: dashboard.engine_label.text().startswith("Engine: CPU"), timeout=10_000)
        async def give_back() -> None:
            lease.release()  # type: ignore[attr-defined]

        qasync_loop.run_until_complete(give_back())
    finally:
        window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(app_services.aclose())
        window.deleteLater()
