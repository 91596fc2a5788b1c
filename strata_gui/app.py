"""Composition root of the GUI: builds every service once and injects them into the windows.

``run_gui`` is what `strata` (no arguments) and the windowed `Strata` executable call.
``compose`` builds the main window from already-built services; tests call it too, so they
exercise exactly the wiring users get.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QIcon
from PySide6.QtWidgets import QApplication, QFileDialog, QWidget

from strata_gui import APP_NAME, ORG_NAME, __version__
from strata_gui.core.errors import StrataError, describe
from strata_gui.core.logging_setup import close_logging, configure_logging
from strata_gui.core.resources import resources_dir
from strata_gui.core.services import Services, build_services
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.dialogs import ErrorDialog
from strata_gui.ui.main_window import MainWindow
from strata_gui.ui.pages.about_page import AboutPage
from strata_gui.ui.pages.settings_page import SettingsPage
from strata_gui.ui.theme import apply_theme

log = logging.getLogger(__name__)


def open_in_os(path: Path) -> bool:
    """Open a file or folder with the OS's default application."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


def app_icon() -> QIcon:
    icon = QIcon()
    for name in ("strata.svg", "strata.png"):
        f = resources_dir() / name
        if f.exists():
            icon.addFile(str(f))
    return icon


@dataclass
class UiHooks:
    """OS-facing actions the UI performs; tests replace them with recorders."""

    open_path: Callable[[Path], object] = open_in_os
    choose_folder: Callable[[], str | None] = field(
        default=lambda: QFileDialog.getExistingDirectory(None, "Choose a folder") or None
    )


class CrashReporter(QObject):
    """Turns unhandled exceptions (any thread, asyncio callbacks) into one dialog on the GUI thread.

    The app keeps running: Qt slots and asyncio callbacks that raise do not end the event loop.
    """

    crashed = Signal(object)  # StrataError

    def __init__(self, log_file: Path, open_path: Callable[[Path], object], parent: QObject | None = None):
        super().__init__(parent)
        self._log_file = log_file
        self._open_path = open_path
        self.dialogs: list[ErrorDialog] = []
        self.crashed.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self._old_hook = sys.excepthook
        self._old_thread_hook = threading.excepthook

    def install(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        sys.excepthook = self._excepthook
        threading.excepthook = self._thread_hook
        if loop is not None:
            loop.set_exception_handler(self._loop_handler)

    def uninstall(self) -> None:
        sys.excepthook = self._old_hook
        threading.excepthook = self._old_thread_hook

    def report(self, exc: BaseException) -> None:
        err = describe(exc)
        if not isinstance(exc, StrataError):
            log.error("unhandled exception", exc_info=exc)
        self.crashed.emit(err)

    def _excepthook(self, etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(etype, KeyboardInterrupt):
            QApplication.quit()
            return
        value.__traceback__ = tb
        self.report(value)

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None:
            self.report(args.exc_value)

    def _loop_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException):
            self.report(exc)
        else:
            log.error("asyncio: %s", context.get("message"))

    def _show(self, err: StrataError) -> None:
        dialog = ErrorDialog(err, log_file=self._log_file, open_path=self._open_path)
        dialog.setWindowTitle(f"{APP_NAME} — {err.title}")
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda *_: self.dialogs.remove(dialog) if dialog in self.dialogs else None)
        self.dialogs.append(dialog)
        dialog.show()


def compose(
    services: Services,
    bridge: AsyncBridge,
    app: QApplication,
    hooks: UiHooks | None = None,
) -> MainWindow:
    """Build the main window and every page from the services (the app's whole wiring)."""
    hooks = hooks or UiHooks()
    icon = app_icon()
    window = MainWindow(
        bridge,
        log_file=services.paths.log_file,
        open_path=hooks.open_path,
        state_file=services.paths.config_dir / "window-geometry.bin",
        icon=icon,
    )
    pages: list[QWidget] = [
        SettingsPage(
            services,
            apply_theme=lambda theme: apply_theme(app, theme),
            open_path=hooks.open_path,
            choose_folder=hooks.choose_folder,
        ),
        AboutPage(services.paths, open_path=hooks.open_path, icon=icon),
    ]
    for page in pages:
        window.add_page(page)
    if services.settings_notice:
        window.show_notice(services.settings_notice, "warning")
    return window


async def run_self_test(window: MainWindow, bridge: AsyncBridge, *, dwell: float = 0.3) -> list[str]:
    """Visit every page, let each load, and fail on any error shown. Returns problems found."""
    problems: list[str] = []
    errors_before = len(window.errors_shown)
    for index, page in enumerate(window.pages):
        window.show_page_index(index)
        await asyncio.sleep(dwell)
        title = window.page_titles()[index]
        if window.stack.currentWidget() is not page or not page.isVisible():
            problems.append(f"page {title!r} is not shown")
        print(f"self-test: visited {title}", flush=True)
    for handle in bridge.running:
        await asyncio.wait_for(handle.wait(), timeout=30)
    problems += [f"error shown: {e.message}" for e in window.errors_shown[errors_before:]]
    return problems


def run_gui(argv: list[str], *, self_test: bool = False, exit_when_shown: bool = False) -> int:
    """Start the GUI; returns the process exit code."""
    import qasync

    services = build_services()
    configure_logging(services.paths.log_file)
    log.info("Strata %s starting (self-test=%s)", __version__, self_test)
    QApplication.setApplicationName(APP_NAME)
    QApplication.setOrganizationName(ORG_NAME)
    QApplication.setApplicationVersion(__version__)
    QApplication.setDesktopFileName("strata")  # lets Wayland match the window to strata.desktop
    app = QApplication.instance() or QApplication([sys.argv[0], *argv])
    assert isinstance(app, QApplication)
    app.setWindowIcon(app_icon())
    apply_theme(app, services.settings.theme)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    bridge = AsyncBridge()
    hooks = UiHooks()
    crash = CrashReporter(services.paths.log_file, hooks.open_path)
    crash.install(loop)
    window = compose(services, bridge, app, hooks)
    window.show()
    exit_code = 0
    closed = asyncio.Event()
    app.lastWindowClosed.connect(closed.set)

    async def main() -> int:
        if exit_when_shown:
            await asyncio.sleep(0)  # the first paint has been scheduled and processed
            app.processEvents()
            print(f"shown-at {time.time():.6f}", flush=True)
            window.close()
            return 0
        if self_test:
            problems = await run_self_test(window, bridge)
            for p in problems:
                print(f"self-test FAILED: {p}", file=sys.stderr, flush=True)
            if not problems:
                print(f"self-test passed: {len(window.pages)} pages", flush=True)
            window.close()
            return 1 if problems else 0
        await closed.wait()
        return 0

    try:
        with loop:
            exit_code = loop.run_until_complete(main())
            loop.run_until_complete(bridge.shutdown())
            loop.run_until_complete(services.aclose())
    except Exception:
        traceback.print_exc()
        exit_code = 1
    finally:
        crash.uninstall()
        log.info("Strata exiting with %s", exit_code)
        close_logging()
    return exit_code
