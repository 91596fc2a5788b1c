"""The async bridge: progress reaches widgets, Cancel really stops work, errors show once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pytestqt.qtbot import QtBot

from strata_gui.core.base.errors import NetworkError
from strata_gui.core.base.progress import Progress, ProgressCallback, RateMeter
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.main_window import MainWindow
from strata_gui.ui.widgets import ProgressPanel


def _window(qtbot: QtBot, bridge: AsyncBridge, tmp_path: Path) -> MainWindow:
    opened: list[Path] = []
    w = MainWindow(bridge, log_file=tmp_path / "strata.log", open_path=opened.append)
    qtbot.addWidget(w)
    return w


def test_progress_reaches_the_panel_and_result_arrives(qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop) -> None:
    bridge = AsyncBridge()
    panel = ProgressPanel()
    qtbot.addWidget(panel)
    gate = asyncio.Event()

    async def work(on_progress: ProgressCallback) -> str:
        meter = RateMeter(1000, on_progress, message="Downloading", min_interval=0)
        meter.update(250)
        await gate.wait()
        meter.update(750)
        return "done"

    handle = bridge.run(work, name="download")
    panel.attach(handle, "Engine download")
    qasync_loop.run_until_complete(asyncio.sleep(0.05))
    assert panel.isVisibleTo(panel.parentWidget() or panel) or not panel.isHidden()
    assert panel.bar.value() == 250
    assert "Downloading" in panel.status.text() and "of 1000 B" in panel.status.text()
    with qtbot.waitSignal(handle.succeeded) as sig:
        gate.set()
        qasync_loop.run_until_complete(handle.wait())
    assert sig.args == ["done"]
    assert panel.isHidden()


def test_cancel_stops_the_coroutine_and_runs_its_finally(
    qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    bridge = AsyncBridge()
    window = _window(qtbot, bridge, tmp_path)
    panel = ProgressPanel()
    qtbot.addWidget(panel)
    steps: list[str] = []

    async def work(on_progress: ProgressCallback) -> None:
        try:
            for i in range(1000):
                on_progress(Progress(i, 1000, "working"))
                await asyncio.sleep(0.01)
                steps.append("step")
        finally:
            steps.append("cleanup")

    handle = bridge.run(work, name="long work")
    panel.attach(handle, "Long work")
    qasync_loop.run_until_complete(asyncio.sleep(0.1))
    with qtbot.waitSignal(handle.cancelled):
        panel.cancel_button.click()  # what the user does
        qasync_loop.run_until_complete(handle.wait())
    assert steps[-1] == "cleanup"
    done_before = len(steps)
    qasync_loop.run_until_complete(asyncio.sleep(0.1))
    assert len(steps) == done_before  # nothing ran after cancel
    assert handle.was_cancelled and not handle.is_running
    assert window.errors_shown == []  # a cancel is not an error


def test_error_is_shown_once_with_its_hint(qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    bridge = AsyncBridge()
    window = _window(qtbot, bridge, tmp_path)
    window.show()

    async def work(on_progress: ProgressCallback) -> None:
        raise NetworkError("Could not reach github.com", hint="Check your proxy or use offline mode.")

    handle = bridge.run(work, name="listing")
    failures: list[object] = []
    handle.failed.connect(failures.append)
    qasync_loop.run_until_complete(handle.wait())
    qasync_loop.run_until_complete(asyncio.sleep(0.05))
    assert len(failures) == 1
    assert [e.message for e in window.errors_shown] == ["Could not reach github.com"]
    assert window.banner.isVisible()
    assert "Check your proxy" in window.banner.text.text()


def test_unexpected_exception_becomes_a_reportable_error(
    qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    bridge = AsyncBridge()
    window = _window(qtbot, bridge, tmp_path)

    async def work(on_progress: ProgressCallback) -> None:
        raise ZeroDivisionError("boom")

    handle = bridge.run(work, name="bug")
    qasync_loop.run_until_complete(handle.wait())
    assert len(window.errors_shown) == 1
    err = window.errors_shown[0]
    assert "ZeroDivisionError" in err.message
    assert err.details and "Traceback" in err.details


def test_caller_can_handle_errors_itself(qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, tmp_path: Path) -> None:
    bridge = AsyncBridge()
    window = _window(qtbot, bridge, tmp_path)

    async def work(on_progress: ProgressCallback) -> None:
        raise NetworkError("offline")

    handle = bridge.run(work, name="quiet", show_errors=False)
    qasync_loop.run_until_complete(handle.wait())
    assert handle.error is not None and window.errors_shown == []
