"""Composition root of the GUI: builds every service once and injects them into the windows.

``run_gui`` is what `strata` (no arguments) and the windowed `Strata` executable call.
``compose`` builds the main window from already-built services; tests call it too, so they
exercise exactly the wiring users get.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from strata_gui import APP_NAME, ORG_NAME, __version__
from strata_gui.core.base import StrataError, describe
from strata_gui.core.config import Services, build_services, resources_dir
from strata_gui.core.platform import close_logging, configure_logging, keep_early_records
from strata_gui.ui.i18n import core_text, install_language, keep_translated
from strata_gui.ui.main_window import MainWindow
from strata_gui.ui.theme import apply_first_theme, apply_theme, remembered_dark, settle_theme

if TYPE_CHECKING:  # the heavy modules load after the window is on screen (see run_gui)
    import asyncio

    from PySide6.QtWidgets import QFileDialog, QWidget

    from strata_gui.core.app_services import AppServices
    from strata_gui.core.base import ProgressCallback
    from strata_gui.core.models import StarterModel
    from strata_gui.core.platform import ActivationServer, InstanceLock, WarmSlot
    from strata_gui.core.rpc import RpcDevice
    from strata_gui.core.serve import HandedOver, ServeService
    from strata_gui.core.speech import AudioClip, Transcript
    from strata_gui.ui.bridge import AsyncBridge, TaskHandle
    from strata_gui.ui.chat.voice import Transcriber
    from strata_gui.ui.dialogs import ErrorDialog
    from strata_gui.ui.first_run import FirstRunGuide
    from strata_gui.ui.pages.about_page import AboutPage
    from strata_gui.ui.pages.base import Page
    from strata_gui.ui.pages.chat_page import ChatPage
    from strata_gui.ui.pages.dashboard_page import DashboardPage
    from strata_gui.ui.pages.engines_page import EnginesPage
    from strata_gui.ui.pages.gpu_page import GpuPage
    from strata_gui.ui.pages.images_page import ImagesPage
    from strata_gui.ui.pages.models_page import ModelsPage
    from strata_gui.ui.pages.network_page import NetworkPage
    from strata_gui.ui.pages.settings_page import SettingsPage

log = logging.getLogger(__name__)


def open_in_os(path: Path) -> bool:
    """Open a file or folder with the OS's default application."""
    from PySide6.QtCore import QUrl  # (Qt classes whose enums the first window does not need load late)
    from PySide6.QtGui import QDesktopServices

    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


def _file_dialog() -> type[QFileDialog]:
    from PySide6.QtWidgets import QFileDialog  # its enums load when a dialog opens, not at start-up

    return QFileDialog


def page_icon(page: object) -> QIcon:
    """The sidebar icon for a page: ``resources/icons/<name>.svg`` by the page's class name."""
    return icon_named(type(page).__name__.removesuffix("Page").lower())


def icon_named(name: str) -> QIcon:
    """``resources/icons/<name>.svg`` as an icon (empty if there is no such file)."""
    f = resources_dir() / "icons" / f"{name}.svg"
    return QIcon(str(f)) if f.exists() else QIcon()


def app_icon() -> QIcon:
    """The app icon (PNG: decoding it needs no image plugin, which keeps start-up fast)."""
    icon = QIcon()
    f = resources_dir() / "strata.png"
    if f.exists():
        icon.addFile(str(f))
    return icon


@dataclass
class UiHooks:
    """OS-facing actions the UI performs; tests replace them with recorders."""

    open_path: Callable[[Path], object] = open_in_os
    choose_folder: Callable[[], str | None] = field(
        default=lambda: _file_dialog().getExistingDirectory(
            None, QCoreApplication.translate("UiHooks", "Choose a folder")) or None
    )
    choose_model: Callable[[], str | None] = field(
        default=lambda: _file_dialog().getOpenFileName(
            None, QCoreApplication.translate("UiHooks", "Choose a model"), "",
            QCoreApplication.translate("UiHooks", "GGUF models (*.gguf)"))[0] or None
    )
    choose_image_model: Callable[[], str | None] = field(
        default=lambda: _file_dialog().getOpenFileName(
            None, QCoreApplication.translate("UiHooks", "Choose an image model"), "",
            QCoreApplication.translate("UiHooks", "Image models (*.gguf *.safetensors *.ckpt)"))[0] or None
    )
    save_path: Callable[[str], str | None] = field(
        default=lambda name: _file_dialog().getSaveFileName(
            None, QCoreApplication.translate("UiHooks", "Export"), name)[0] or None
    )


class CrashReporter(QObject):
    """Turns unhandled exceptions (any thread, asyncio callbacks) into one dialog on the GUI thread.

    The app keeps running: Qt slots and asyncio callbacks that raise do not end the event loop.
    """

    crashed = Signal(object)  # StrataError

    def __init__(self, log_file: Path, open_path: Callable[[Path], object], parent: QObject | None = None):
        from PySide6.QtCore import Qt  # not at import: nothing before the first paint names a Qt.* enum

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
            QApplication.closeAllWindows()  # closes as the user would (the session then winds down)
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
        from PySide6.QtCore import Qt

        from strata_gui.ui.dialogs import ErrorDialog

        dialog = ErrorDialog(err, log_file=self._log_file, open_path=self._open_path)
        dialog.setWindowTitle(f"{APP_NAME} — {dialog.windowTitle()}")  # keeps the translated title
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda *_: self.dialogs.remove(dialog) if dialog in self.dialogs else None)
        self.dialogs.append(dialog)
        dialog.show()


class Pages:
    """The composed window's pages, by role; each is built on its first visit or first use here.

    ``compose`` registers one factory per sidebar entry (:meth:`register`); a page added later
    (say an Images page) registers the same way. Reading ``pages.models`` builds the Models page if
    nobody opened it yet, so tests and cross-page wiring can use any page; :meth:`built` asks
    without building (wiring that only matters once a page exists).
    """

    def __init__(self, window: MainWindow) -> None:
        self._window = window
        self._index: dict[str, int] = {}

    def register(self, role: str, title: str | Callable[[], str], icon: QIcon, factory: Callable[[], Page]) -> None:
        """Add a sidebar entry for ``role`` whose page ``factory`` builds (and wires) on first use
        (``title``: its sidebar text, or what gives it in the language installed now)."""
        self._index[role] = self._window.add_lazy_page(title, icon, factory)

    def get(self, role: str) -> Page:
        """The page for ``role``, built now if needed."""
        return self._window.page_at(self._index[role])

    def built(self, role: str) -> Page | None:
        """The page for ``role`` if it was built already, else None (nothing is built)."""
        index = self._index.get(role)
        return self._window.page_at(index) if index is not None and self._window.is_built(index) else None

    @property
    def roles(self) -> list[str]:
        return list(self._index)

    @property
    def chat(self) -> ChatPage:
        return cast("ChatPage", self.get("chat"))

    @property
    def models(self) -> ModelsPage:
        return cast("ModelsPage", self.get("models"))

    @property
    def engines(self) -> EnginesPage:
        return cast("EnginesPage", self.get("engines"))

    @property
    def gpu(self) -> GpuPage:
        return cast("GpuPage", self.get("gpu"))

    @property
    def dashboard(self) -> DashboardPage:
        return cast("DashboardPage", self.get("dashboard"))

    @property
    def network(self) -> NetworkPage:
        return cast("NetworkPage", self.get("network"))

    @property
    def settings(self) -> SettingsPage:
        return cast("SettingsPage", self.get("settings"))

    @property
    def about(self) -> AboutPage:
        return cast("AboutPage", self.get("about"))

    @property
    def images(self) -> ImagesPage:
        return cast("ImagesPage", self.get("images"))


@dataclass
class AppUi:
    """The composed GUI: the window, its pages and what they were built from (no attributes are
    patched onto the window; whoever needs a page asks this object)."""

    window: MainWindow
    pages: Pages
    services: AppServices
    bridge: AsyncBridge
    hooks: UiHooks
    first_run: FirstRunGuide | None = None


def create_window(base: Services, bridge: AsyncBridge | None, hooks: UiHooks) -> MainWindow:
    """The main window without pages (shown at once; pages follow in :func:`populate`)."""
    return MainWindow(
        bridge,
        log_file=base.paths.log_file,
        open_path=hooks.open_path,
        state_file=base.paths.config_dir / "window-geometry.bin",
        icon=app_icon(),
    )


def compose(
    services: AppServices,
    bridge: AsyncBridge,
    app: QApplication,
    hooks: UiHooks | None = None,
) -> AppUi:
    """Build the main window and every page from the services (the app's whole wiring)."""
    hooks = hooks or UiHooks()
    window = create_window(services.base, bridge, hooks)
    return populate(window, services, bridge, app, hooks)


def populate(window: MainWindow, services: AppServices, bridge: AsyncBridge, app: QApplication,
             hooks: UiHooks) -> AppUi:
    """Register every page with ``window`` (the chat page is built now, the rest on first visit)
    and connect the pages to each other as they get built."""
    window.add_shortcuts()
    pages = Pages(window)
    ui = AppUi(window, pages, services, bridge, hooks)
    # Titles in each page's own translation context, so the sidebar reads as the page will.
    pages.register("chat", lambda: QCoreApplication.translate("ChatPage", "Chat"), icon_named("chat"),
                   functools.partial(_build_chat, ui))
    pages.register("images", lambda: QCoreApplication.translate("ImagesPage", "Images"), icon_named("images"),
                   functools.partial(_build_images, ui))
    pages.register("models", lambda: QCoreApplication.translate("ModelsPage", "Models"), icon_named("models"),
                   functools.partial(_build_models, ui))
    pages.register("engines", lambda: QCoreApplication.translate("EnginesPage", "Engines"), icon_named("engines"),
                   functools.partial(_build_engines, ui))
    pages.register("gpu", lambda: QCoreApplication.translate("GpuPage", "GPU"), icon_named("gpu"),
                   functools.partial(_build_gpu, ui))
    pages.register("dashboard", lambda: QCoreApplication.translate("DashboardPage", "Dashboard"), icon_named("dashboard"),
                   functools.partial(_build_dashboard, ui))
    pages.register("network", lambda: QCoreApplication.translate("NetworkPage", "Network"), icon_named("network"),
                   functools.partial(_build_network, ui))
    pages.register("settings", lambda: QCoreApplication.translate("SettingsPage", "Settings"), icon_named("settings"),
                   functools.partial(_build_settings, ui, app))
    pages.register("about", lambda: QCoreApplication.translate("AboutPage", "About"), icon_named("about"),
                   functools.partial(_build_about, ui))
    pages.get("chat")  # the first page on screen (registering the first entry selected it)
    _follow_the_core(ui)
    base = services.base
    if base.settings_notice:
        window.show_notice(core_text(base.settings_notice), "warning")
    if services.storage_notices:  # the database was damaged (moved aside) or is in use
        window.show_notice(" ".join(core_text(n) for n in services.storage_notices), "warning")
    return ui


def _follow_the_core(ui: AppUi) -> None:
    """What the window shows wherever the user is: the engine status once shown, a rolled-back engine."""
    from strata_gui.core.chat import PlanChanged
    from strata_gui.ui.bridge import follow

    window = ui.window
    closed: list[bool] = []  # the services close with the window; a later switch must not ask them
    window.closing.connect(lambda: closed.append(True))

    def restate() -> None:
        if not closed and window.statusBar().currentMessage():
            show_engine_status(ui)  # once start-up has shown it, it follows every change

    follow(window, ui.services.chat.events, lambda event: restate() if isinstance(event, PlanChanged) else None)
    keep_translated(window.statusBar(), restate)  # and a language switch

    def rolled_back(entry: Any) -> None:
        # A promoted engine that broke a model was put back by the core: the notice wherever the user is.
        from strata_gui.core.engines import AUTO_ROLLED_BACK

        if entry.action == AUTO_ROLLED_BACK:
            window.show_notice(core_text(entry.message), "warning")

    follow(window, ui.services.engines.ledger.events, rolled_back)


# -- the pages, each built on its first visit ---------------------------------------------------------
def _build_chat(ui: AppUi) -> Page:
    from strata_gui.core.chat import PRESETS_FILE, PresetStore
    from strata_gui.core.runtime import EMBEDDING, TEXT
    from strata_gui.ui.pages.chat_page import ChatPage

    services = ui.services
    return ChatPage(services.chat, ui.bridge, remote=services.remote, use_engine_folder=services.use_engine_folder,
                    resolve=services.resolver.resolve, load_options=services.load_options,
                    gpu_picks=services.resolver.gpu_picks,
                    choose_devices=lambda keys: services.settings.update(devices=keys),
                    tools=lambda: (services.tool_servers, services.tools),
                    library=lambda: services.models.usable_models(TEXT),
                    presets=PresetStore(services.base.paths.config_dir / PRESETS_FILE),
                    open_model=lambda path: services.models.open_file(path, keep=True),
                    transcribe=speech_transcriber(services),
                    documents=services.documents,
                    embedding_models=lambda: services.models.usable_models(EMBEDDING))


def speech_transcriber(services: AppServices) -> Transcriber:
    """The chat's speech to text: Settings' whisper model (else the library's first), in the
    language chosen in Settings, else the app's own language."""
    from PySide6.QtCore import QLocale

    from strata_gui.core.speech import spoken_language

    async def transcribe(source: Path | AudioClip, on_progress: ProgressCallback) -> Transcript:
        model = await services.speech_model()
        language = spoken_language(services.settings.current.speech_language, QLocale().name())
        return await services.speech.transcribe(model, source, language=language, on_progress=on_progress)

    return transcribe


def _build_models(ui: AppUi) -> Page:
    from strata_gui.ui.pages.models_page import ModelsPage

    pages, window = ui.pages, ui.window

    def chat_with(path: Path) -> None:
        pages.chat.set_model(path)  # the chat service remembers it as the last model
        window.show_page(pages.chat)

    def draw_with(path: Path) -> None:
        pages.images.set_model(path)
        window.show_page(pages.images)

    page = ModelsPage(ui.services.models, ui.bridge,
                      open_url=lambda url: ui.hooks.open_path(Path(url.toLocalFile())))
    page.use_model.connect(chat_with)
    page.make_images.connect(draw_with)
    return page


def _build_engines(ui: AppUi) -> Page:
    from strata_gui.ui.bridge import follow
    from strata_gui.ui.pages.engines_page import EnginesPage

    services = ui.services
    page = EnginesPage(services.engines, ui.bridge, updater=services.updater)
    if services.gpu.last_report is not None:  # detected before this page was opened
        page.set_gpus(services.resolver.gpu_targets())
    # Plans follow the GPUs and the engines on their own (the resolver listens); the page too.
    follow(page, services.gpu.events, lambda _e: page.set_gpus(services.resolver.gpu_targets()))
    follow(page, services.engines.events, lambda _e: page.refresh_installed())
    return page


def _build_gpu(ui: AppUi) -> Page:
    from strata_gui.ui.bridge import follow
    from strata_gui.ui.pages.gpu_page import GpuPage

    services = ui.services

    def remote_devices() -> list[RpcDevice]:
        active = services.rpc.active_workers()
        return [d for addr, st in services.rpc.last_status.items() if addr in active for d in st.devices]

    page = GpuPage(services.gpu, ui.bridge, remote_devices=remote_devices, telemetry=services.telemetry,
                   gpu_picks=services.resolver.gpu_picks, run_on=services.resolver.run_on,
                   choose_devices=lambda keys: services.settings.update(devices=keys),
                   driver_check=services.engines.driver_verdict,
                   ignore_driver_check=lambda on: services.settings.update(ignore_driver_check=on),
                   rocm_findings=services.resolver.rocm_findings)

    follow(page, services.engines.events, lambda _e: page.show_probe_findings())
    ui.window.closing.connect(page.stop_sampling)
    return page


def _build_dashboard(ui: AppUi) -> Page:
    from strata_gui.core.runtime import IMAGE, TEXT, ServerState
    from strata_gui.ui.image_dashboard import ImageDashboard
    from strata_gui.ui.pages.dashboard_page import DashboardPage

    services, hooks = ui.services, ui.hooks

    def shown() -> Any:  # the engine's ServerSupervisor, or None
        # The chat's engine, else any text engine the pool holds (loaded for the model server, a
        # benchmark, or a chat of another model): "No engine running" was shown while one ran.
        sup = services.chat.supervisor
        if sup is not None and not sup.state.is_terminal:
            return sup
        live = [e.server for e in services.pool.engines(kind=TEXT) if not e.closing and not e.state.is_terminal]
        return live[0] if live else None

    def engine_url() -> str | None:
        sup = shown()
        return sup.base_url if sup is not None and sup.state is ServerState.READY else None

    def engine_headers() -> dict[str, str]:
        sup = shown()
        return sup.auth_headers() if sup is not None else {}

    def engine_pid() -> int | None:
        sup = shown()
        return sup.pid if sup is not None else None

    def model_choices() -> list[Path]:
        models = ui.pages.built("models")  # its library is scanned when it is shown
        paths = cast("ModelsPage", models).library_paths() if models is not None else []
        if services.chat.model is not None and services.chat.model not in paths:
            paths.insert(0, services.chat.model)
        return paths

    image_stats = ImageDashboard(services.dashboard, ui.bridge,
                                 models=lambda: services.models.usable_models(IMAGE),
                                 choose_model=hooks.choose_image_model)
    page = DashboardPage(
        services.dashboard, ui.bridge, telemetry=services.telemetry, engine_pid=engine_pid, engine_url=engine_url,
        engine_headers=engine_headers, models=model_choices, choose_model=hooks.choose_model, save_path=hooks.save_path, images_tab=image_stats,
        pool=services.pool,
    )
    ui.window.closing.connect(page.stop)
    return page


def _build_images(ui: AppUi) -> Page:
    from strata_gui.core.runtime import IMAGE
    from strata_gui.ui.pages.images_page import ImagesPage

    services, pages, hooks, base = ui.services, ui.pages, ui.hooks, ui.services.base
    page = ImagesPage(services.images, ui.bridge, models=lambda: services.models.usable_models(IMAGE),
                      choose_model=hooks.choose_image_model, open_path=hooks.open_path,
                      last_model=lambda: base.settings.last_image_model,
                      remember_model=lambda path: _save_quietly(base, last_image_model=str(path)),
                      read_model=services.models.open_file)

    def made(_result: object) -> None:
        dashboard = pages.built("dashboard")
        if dashboard is not None and cast("DashboardPage", dashboard).images_tab is not None:
            cast("DashboardPage", dashboard).images_tab.refresh()  # type: ignore[union-attr]

    page.image_made.connect(made)

    def set_up_engines() -> None:
        engines = pages.engines
        ui.window.show_page(engines)
        engines.show_kind("image")

    page.engines_requested.connect(set_up_engines)
    return page


def _build_network(ui: AppUi) -> Page:
    from strata_gui.ui.pages.network_page import NetworkPage

    return NetworkPage(ui.services.remote, ui.services.serve, ui.bridge, rpc=ui.services.rpc, pool=ui.services.pool)


def _build_settings(ui: AppUi, app: QApplication) -> Page:
    from strata_gui.ui.pages.settings_page import SettingsPage

    serve = ui.services.serve
    page = SettingsPage(
        ui.services.base,
        apply_theme=lambda theme: apply_theme(app, theme),
        apply_language=lambda language: install_language(app, language),
        open_path=ui.hooks.open_path,
        choose_folder=ui.hooks.choose_folder,
        start_at_login=(lambda: serve.starts_at_login, serve.set_start_at_login),
    )
    page.run_guide_requested.connect(lambda: open_first_run(ui))
    return page


def _build_about(ui: AppUi) -> Page:
    from strata_gui.ui.pages.about_page import AboutPage

    return AboutPage(ui.services.base.paths, open_path=ui.hooks.open_path, icon=app_icon(),
                     extra_report=lambda: _gpu_and_engine_report(ui.services))


def open_first_run(ui: AppUi, starters: list[StarterModel] | None = None) -> FirstRunGuide:
    """Show the first-run guide in place of the window's pages; finishing or skipping it is remembered.

    ``starters`` replaces the shipped starter list (tests point it at a loopback hub).
    """
    from strata_gui.core.config import kernels_dir
    from strata_gui.core.models import STARTERS_FILE, load_starters
    from strata_gui.ui.first_run import FirstRunGuide

    window, services, bridge, hooks, pages = ui.window, ui.services, ui.bridge, ui.hooks, ui.pages
    base = services.base
    previous = ui.first_run
    if previous is not None and window.covered_by is previous:
        return previous
    if starters is None:
        try:
            starters = load_starters(kernels_dir() / STARTERS_FILE)
        except StrataError as exc:
            bridge.error_occurred.emit(exc)
            starters = []
    guide = FirstRunGuide(services.gpu, services.engines, services.models, bridge, starters=starters,
                          resolver=services.resolver, offline=base.settings.offline,
                          choose_folder=hooks.choose_folder, choose_model=hooks.choose_model, parent=window)

    def chat_with(path: Path) -> None:
        pages.chat.set_model(path)
        window.show_page(pages.chat)

    def remember(_result: int) -> None:
        window.uncover(guide)
        _save_quietly(base, first_run_done=True)

    guide.chat_requested.connect(chat_with)
    guide.finished.connect(remember)
    window.closing.connect(guide.close)
    if previous is not None:
        window.uncover(previous)
        previous.deleteLater()
    ui.first_run = guide
    window.cover(guide)
    if not guide.started:  # a guide covering a window not on screen yet still gets going
        guide.start()
    return guide


def collect_garbage_again(app: QApplication | None = None) -> None:
    """Turn the cyclic garbage collector back on once the window is usable (``strata`` turns it off
    for start-up), on the GUI thread only (:mod:`strata_gui.ui.gc_pump`). What start-up built lives
    as long as the app: frozen, later collections, during a streaming reply say, no longer walk it."""
    gc.freeze()
    if app is None:
        gc.enable()
        return
    from strata_gui.ui.gc_pump import GcPump

    GcPump(app)


def _save_quietly(base: Services, **changes: Any) -> None:
    """Save settings the user did not edit by hand; a failure is logged, not shown."""
    try:
        base.settings_service.update(**changes)
    except StrataError:
        log.warning("could not save settings", exc_info=True)


def _gpu_and_engine_report(services: AppServices) -> str:
    lines = []
    report = services.gpu.last_report
    lines.append(f"GPU: {report.label() if report else 'not detected yet (open the GPU page)'}")
    lines.append(services.resolver.resolve(services.chat.model).report())
    return "\n".join(lines)


def show_engine_status(ui: AppUi) -> None:
    """The status bar's "GPU · engine" line: the resolver's choice for the chat's model, as the chat
    header announces it (kept current whenever the chat's plan changes, e.g. after the guide installs)."""
    services = ui.services
    report = services.gpu.last_report
    chosen = services.resolver.resolve(services.chat.model).chosen
    engine = (QCoreApplication.translate("startup", "engine: %1").replace("%1", core_text(chosen.label))
              if chosen else QCoreApplication.translate("startup", "no engine installed yet"))
    ui.window.statusBar().showMessage(f"{core_text(report.label())} · {engine}" if report is not None else engine)


async def startup(ui: AppUi, after: TaskHandle | None = None) -> None:
    """Background start-up: build the services left for later, detect GPUs, probe every installed
    engine again (drivers may have changed since the last run), then show which engine the chat
    will use. With ``after`` (the last model loading), once that is done, and once no reply waits
    for its first token: on 2 cores the checks (probe processes, building services) held a first
    message back ~150 ms."""
    services = ui.services
    if after is not None:
        await after.wait()
    # A message sent at once gets its first token first: the checks (probe processes, imports of
    # every page's services) otherwise ran between the engine's start and that token.
    await services.chat.first_tokens_in()
    # The services only other pages use were left for after the first paint: build them now, so a
    # first visit or the first reply (it records to the dashboard) finds them ready.
    await services.warm_up()
    await services.detect_gpus()
    engines = ui.pages.built("engines")  # a page built later reads the targets itself
    if engines is not None:
        cast("EnginesPage", engines).set_gpus(services.resolver.gpu_targets())
    await services.prepare(reprobe=True)
    gpu = ui.pages.built("gpu")
    if gpu is not None:  # the probes just ran: the GPU cards say what they found
        cast("GpuPage", gpu).show_probe_findings()
    show_engine_status(ui)


async def run_self_test(window: MainWindow, bridge: AsyncBridge, *, dwell: float = 0.3) -> list[str]:
    """Visit every page, let each load, and fail on any error shown. Returns problems found."""
    import asyncio

    from strata_gui.core.base import InternalError

    problems: list[str] = []
    errors_before = len(window.errors_shown)
    for index in range(len(window.page_titles())):
        window.show_page_index(index)  # builds the page on this first visit, as a user's click does
        page = window.page_at(index)
        await asyncio.sleep(dwell)
        title = window.page_titles()[index]
        if window.stack.currentWidget() is not page or not page.isVisible():
            problems.append(f"page {title!r} is not shown")
        print(f"self-test: visited {title}", flush=True)
    for handle in bridge.running:
        await asyncio.wait_for(handle.wait(), timeout=30)
    for e in window.errors_shown[errors_before:]:
        # A bug is a failure; an explained condition (no network here, say) is only reported.
        if isinstance(e, InternalError):
            problems.append(f"error shown: {e.message}\n{e.details or ''}")
        else:
            print(f"self-test: note: {e.message}", flush=True)
    return problems


def close_on_signals(app: QApplication) -> Callable[[], None]:
    """SIGTERM, SIGINT and SIGHUP (a session logout, Ctrl+C in the terminal, a closed terminal) close
    every window as the user would: the reply in progress is saved, engines stop, the lock is
    released. Returns what puts the previous handlers back. POSIX only (Windows ends a session with
    window messages, which Qt turns into the same close).

    Python runs a signal handler only between bytecodes, and Qt's event loop is C++: the signal's
    byte on a wakeup socket wakes a QSocketNotifier, whose slot does the closing.
    """
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        return lambda: None
    import signal
    import socket

    from PySide6.QtCore import QSocketNotifier

    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    received: list[int] = []
    wanted = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous_fd = signal.set_wakeup_fd(writer.fileno())
    previous = {sig: signal.signal(sig, lambda signum, _frame: received.append(signum)) for sig in wanted}
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, app)

    def woken() -> None:
        try:
            reader.recv(64)
        except OSError:
            pass
        if received:
            log.info("%s received: closing as if the window were closed", signal.Signals(received[-1]).name)
            received.clear()
            app.closeAllWindows()

    notifier.activated.connect(woken)

    def restore() -> None:
        notifier.setEnabled(False)
        signal.set_wakeup_fd(previous_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        reader.close()
        writer.close()

    return restore


def show_message_box(message: str, hint: str) -> None:
    """A warning box with a core sentence and its hint, in the user's language, before any window
    exists (a second launch that could not reach the running app)."""
    from PySide6.QtWidgets import QMessageBox

    app = QApplication.instance() or QApplication([sys.argv[0]])
    assert isinstance(app, QApplication)
    install_language(app, build_services().settings.language)
    QMessageBox.warning(None, APP_NAME, f"{core_text(message)}\n\n{core_text(hint)}")


def bring_to_front(window: QWidget) -> None:
    """Show ``window`` in front of the others, restored if it was minimized (a second launch)."""
    from PySide6.QtCore import Qt

    state = window.windowState()
    if state & Qt.WindowState.WindowMinimized:
        window.setWindowState(state & ~Qt.WindowState.WindowMinimized)
    window.show()
    window.raise_()
    window.activateWindow()


async def answer_second_launches(window: QWidget, address_file: Path) -> ActivationServer | None:
    """Listen for a second launch of Strata, which asks this app to show its window (see
    :mod:`strata_gui.core.platform.instance`). None when no loopback port can be had: the second launch
    then says the app did not answer."""
    from strata_gui.core.platform import SHOW, ActivationServer

    def act(action: str) -> None:
        if action == SHOW:
            bring_to_front(window)

    server = ActivationServer(address_file, act)
    try:
        await server.start()
    except OSError:
        log.warning("cannot listen for a second launch; it will not find this window", exc_info=True)
        return None
    return server


def run_gui(argv: list[str], *, self_test: bool = False, exit_when_shown: bool = False,
            warm: WarmSlot | None = None, instance: InstanceLock | None = None) -> int:
    """Start the GUI; returns the process exit code.

    The window is painted first; the event loop, services and pages are set up right after, so
    users see Strata at once even on a slow disk. With ``warm`` (the last model's engine launched
    before Qt was imported) and the "load the last model" setting, the chat's engine is claimed
    as soon as the core is built. With ``instance`` (this user's one-app lock, taken by the CLI), a
    second launch of Strata shows this window instead of starting a second app.
    """
    services = build_services(warm=warm)
    app, window, hooks = _show_first_window(argv, services, exit_when_shown)
    # The log file once the chat page is up (its handler module costs ~9 ms); what is logged before
    # is kept in memory and written there first.
    keep_early_records()
    log_opened: list[bool] = []

    def open_log() -> None:
        if not log_opened:
            log_opened.append(True)
            configure_logging(services.paths.log_file)

    log.info("Strata %s starting (self-test=%s)", __version__, self_test)

    import asyncio

    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.event_loop import new_event_loop

    loop = new_event_loop(app)
    # The loop ends when the session's coroutine does (after its closing work), not when Qt sees
    # the last window close.
    app.setQuitOnLastWindowClosed(False)
    bridge = AsyncBridge()
    window.set_bridge(bridge)
    crash = CrashReporter(services.paths.log_file, hooks.open_path)
    crash.install(loop)
    closed = asyncio.Event()
    app.lastWindowClosed.connect(closed.set)
    restore_signals = close_on_signals(app)
    session = _GuiSession(services, app, window, hooks, bridge, open_log, closed, self_test=self_test,
                          exit_when_shown=exit_when_shown, instance=instance)
    exit_code = 0
    try:
        with loop:
            # One run of the loop for the whole session, closing included: every callback runs
            # with the loop running (see ui/event_loop.py).
            exit_code = loop.run_until_complete(_run_and_wind_down(session))
    except Exception:
        traceback.print_exc()
        exit_code = 1
    finally:
        for s in session.built:
            s.kill_engines_now()  # never leave an engine behind, whatever happened
        crash.uninstall()
        restore_signals()
        gc.enable()  # if start-up failed before the window was usable
        open_log()
        log.info("Strata exiting with %s", exit_code)
        close_logging()
    return exit_code


def _show_first_window(argv: list[str], services: Services,
                       exit_when_shown: bool) -> tuple[QApplication, MainWindow, UiHooks]:
    """The application and its window without pages, painted once, in the user's theme and language."""
    QApplication.setApplicationName(APP_NAME)
    QApplication.setOrganizationName(ORG_NAME)
    QApplication.setApplicationVersion(__version__)
    QApplication.setDesktopFileName("strata")  # lets Wayland match the window to strata.desktop
    existing = QApplication.instance()
    # The style as an argument: QApplication.setStyle hands back the QStyle, and wrapping it makes
    # PySide6 create QStyle's enums (~6 ms) before the first paint.
    app = existing or QApplication([sys.argv[0], "-style", "Fusion", *argv])
    assert isinstance(app, QApplication)
    app.setWindowIcon(app_icon())
    appearance = services.paths.config_dir / "appearance"
    theme = services.settings.theme
    shown_dark = apply_first_theme(app, theme, remembered_dark(appearance), set_style=existing is not None)
    install_language(app, services.settings.language)  # before any widget is built
    hooks = UiHooks()
    window = create_window(services, None, hooks)
    window.show()
    app.processEvents()  # the first paint
    if exit_when_shown:
        print(f"shown-at {time.time():.6f}", flush=True)
    settle_theme(app, theme, shown_dark, appearance)
    return app, window, hooks


@dataclass
class _GuiSession:
    """One run of the GUI: what :func:`run_gui` set up, and what must be let go when it ends."""

    services: Services
    app: QApplication
    window: MainWindow
    hooks: UiHooks
    bridge: AsyncBridge
    open_log: Callable[[], None]
    closed: asyncio.Event  # the last window was closed
    self_test: bool = False
    exit_when_shown: bool = False
    instance: InstanceLock | None = None
    built: list[AppServices] = field(default_factory=list)
    activation: list[ActivationServer] = field(default_factory=list)
    serving_for_background: list[tuple[HandedOver, ServeService]] = field(default_factory=list)


async def _run_session(s: _GuiSession) -> int:
    """Build the core and the pages, start what runs in the background, and wait for the window to close."""
    import asyncio

    from strata_gui.core.app_services import build_app_services

    app_services = build_app_services(s.services)
    s.built.append(app_services)
    ui = populate(s.window, app_services, s.bridge, s.app, s.hooks)
    settings = app_services.base.settings
    preload: TaskHandle | None = None
    if settings.warm_start and settings.first_run_done and settings.last_model and not (
            s.self_test or s.exit_when_shown):
        # The model chosen last loads now (its engine may be loaded already, launched before Qt
        # was imported): the first message finds it ready. A failure is told at that message.
        # (After populate: a task started before it would be stepped inside its processEvents.)
        preload = s.bridge.run(app_services.chat.ensure_engine, name="Loading the last model", show_errors=False)
    if s.exit_when_shown:
        s.app.processEvents()
        # Usable: every sidebar entry is there and the chat page is built and painted.
        print(f"ready-at {time.time():.6f}", flush=True)
    collect_garbage_again(s.app)
    if s.exit_when_shown:
        s.open_log()
        for index in range(len(s.window.page_titles())):  # what visiting every page would build
            s.window.page_at(index)
        s.app.processEvents()
        print(f"built-at {time.time():.6f}", flush=True)
        s.window.close()
        return 0
    asyncio.get_running_loop().call_soon(s.open_log)  # after the chat page's first paint
    _start_background_work(s, ui, app_services, preload)
    if s.self_test:
        problems = await run_self_test(s.window, s.bridge)
        for p in problems:
            print(f"self-test FAILED: {p}", file=sys.stderr, flush=True)
        if not problems:
            print(f"self-test passed: {len(s.window.page_titles())} pages", flush=True)
        s.window.close()
        return 1 if problems else 0
    await s.closed.wait()
    return 0


def _start_background_work(s: _GuiSession, ui: AppUi, app_services: AppServices, preload: TaskHandle | None) -> None:
    """Answer second launches, take the background server's place, run the start-up checks, and
    open the first-run guide and the UI report where they apply."""
    if s.instance is not None:
        s.bridge.run(lambda _p: _listen_for_second_launches(s), name="Answering a second launch",
                     show_errors=False)
        if s.services.paths.serve_address_file.exists():
            s.bridge.run(lambda _p: _take_the_background_servers_place(s, app_services, preload),
                         name="Taking over the background model server", show_errors=False)
    s.bridge.run(lambda _p: startup(ui, after=preload), name="Start-up checks", show_errors=False)
    if not s.self_test and not app_services.base.settings.first_run_done:
        open_first_run(ui)
    if not s.self_test:
        from strata_gui.ui.ui_report import ENV_UI_REPORT, ENV_UI_REPORT_CLOSE, schedule_ui_report

        schedule_ui_report(s.window, os.environ.get(ENV_UI_REPORT),
                           close=os.environ.get(ENV_UI_REPORT_CLOSE) == "1")


async def _listen_for_second_launches(s: _GuiSession) -> None:
    server = await answer_second_launches(s.window, s.services.paths.instance_address_file)
    if server is not None:
        s.activation.append(server)


async def _take_the_background_servers_place(s: _GuiSession, app_services: AppServices,
                                             after: TaskHandle | None) -> None:
    """One engine pool per machine: serve in place of a headless `strata serve` (see
    core/serve/handover.py), once the last model has loaded."""
    from strata_gui.core.serve import take_over

    if after is not None:
        await after.wait()
    handed = await take_over(s.services.paths, app_services.serve)
    if handed is not None:
        s.serving_for_background.append((handed, app_services.serve))


async def _run_and_wind_down(s: _GuiSession) -> int:
    try:
        return await _run_session(s)
    finally:
        await _wind_down(s)


async def _wind_down(s: _GuiSession) -> None:
    """After the window closed: stop answering launches, end the tasks, close the core, and give
    the background model server its place back if this app still served in it."""
    for server in s.activation:  # a launch from now on starts a new app
        await server.aclose()
    await s.bridge.shutdown()
    # The background model server comes back if this app still served in its place.
    give_back = [handed for handed, serve in s.serving_for_background if serve.running]
    for built in s.built:
        await built.aclose()
    for handed in give_back:  # the port is free and the engines are stopped now
        handed.start_again()
