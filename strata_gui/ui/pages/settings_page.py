"""Settings page: appearance, network endpoints, folders, hardware overrides, engine defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import StrataError
from strata_gui.core.config import RANGES, Services, Settings, SettingsChange
from strata_gui.core.models import environment_endpoint
from strata_gui.core.speech import WHISPER_LANGUAGES
from strata_gui.ui.bridge import follow
from strata_gui.ui.i18n import LiveTexts, core_text, error_text
from strata_gui.ui.pages.base import Page

# Changes to these are read once at start-up (network clients, folders, translations).
RESTART_KEYS = frozenset({"hub_endpoint", "github_api_url", "github_download_url", "offline", "engines_dir",
                          "hf_cache_dir"})
# The fields this page edits; everything else (last model, pinned engine ...) has its own owner.
PAGE_KEYS = ("theme", "language", "hub_endpoint", "github_api_url", "github_download_url", "offline", "model_dirs",
             "gfx_override", "memory_budget_mb", "fallback_gpu_memory_mb", "context_size", "gpu_layers",
             "flash_attention", "threads", "parallel_slots", "auto_fallback", "warm_start", "read_ahead",
             "engine_idle_minutes", "api_wait_seconds",
             "engine_memory_mb", "update_tolerance_pct", "update_channel")


class SettingsPage(Page):
    """Edits :class:`Settings`; Save writes them through the settings service.

    The theme follows the settings service (any change of ``theme``, from this page or elsewhere,
    is applied at once); the restart notices name what the save actually changed.

    Args:
        services: Holds the settings service and the user folders.
        apply_theme: Switches the app's theme (called when the ``theme`` setting changes).
        apply_language: Switches the app's language live (called when the ``language`` setting
            changes); None leaves the switch to the next start.
        open_path: Opens a folder in the file manager.
        choose_folder: Asks the user for a folder; returns None when cancelled.
    """

    page_title = "Settings"
    page_icon = "SP_FileDialogDetailedView"
    saved = Signal(object)  # Settings
    run_guide_requested = Signal()  # "Run the first-run guide again"

    def __init__(
        self,
        services: Services,
        *,
        apply_theme: Callable[[str], None],
        apply_language: Callable[[str], object] | None = None,
        open_path: Callable[[Path], object],
        choose_folder: Callable[[], str | None],
        start_at_login: tuple[Callable[[], bool], Callable[[bool], None]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.services = services
        self._start_at_login = start_at_login
        self._apply_theme = apply_theme
        self._apply_language = apply_language
        self._open_path = open_path
        self._choose_folder = choose_folder
        self.page_title = self.tr("Settings")
        # Stops listening when the page goes away (the service outlives every window).
        follow(self, services.settings_service.events, self._settings_changed)

        appearance = self._build_appearance_section()
        network = self._build_network_section()
        folders = self._build_folders_section()
        hardware = self._build_hardware_section()
        runtime = self._build_runtime_section()
        buttons = self._build_buttons()

        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 12, 0)
        for title, form in ((lambda: self.tr("Appearance"), appearance), (lambda: self.tr("Network"), network),
                            (lambda: self.tr("Folders"), folders), (lambda: self.tr("Hardware"), hardware),
                            (lambda: self.tr("Engine defaults"), runtime)):
            box = QGroupBox()
            self.texts.set(box.setTitle, title)
            box.setLayout(form)
            body_layout.addWidget(box)
        body_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.texts.header(lambda: self.tr("Settings"),
                                           lambda: self.tr("Saved to %s") % services.paths.settings_file))
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)
        self.load()

    # -- sections (each builds its widgets and returns its form) --------------------------------------
    def _build_appearance_section(self) -> QFormLayout:
        """Theme, language and the first-run guide."""
        self.theme = QComboBox()
        for value, label in (("system", lambda: self.tr("Follow system")), ("light", lambda: self.tr("Light")),
                             ("dark", lambda: self.tr("Dark"))):
            self.texts.item(self.theme, label, value)
        self.language = QComboBox()
        # Each language is named in itself, so users can find theirs whatever is shown now.
        for value, label in (("system", lambda: self.tr("Follow system")), ("en", lambda: "English"),
                             ("zh_CN", lambda: "简体中文")):
            self.texts.item(self.language, label, value)

        appearance = QFormLayout()
        appearance.addRow(self.texts.label(lambda: self.tr("Theme")), self.theme)
        appearance.addRow(self.texts.label(lambda: self.tr("Language")), self.language)
        # What the chat's microphone hears: the app's language, detected, or one of whisper's.
        self.spoken_language = QComboBox()
        self.texts.item(self.spoken_language, lambda: self.tr("The app's language"), "")
        self.texts.item(self.spoken_language, lambda: self.tr("Detect it"), "auto")
        for code in sorted(WHISPER_LANGUAGES):
            self.spoken_language.addItem(code, code)
        self.texts.set(self.spoken_language.setToolTip, lambda: self.tr(
            "The language you speak to the microphone (speech to text)"))
        appearance.addRow(self.texts.label(lambda: self.tr("Spoken language")), self.spoken_language)
        self.run_guide_button = QPushButton()
        self.texts.set(self.run_guide_button.setText, lambda: self.tr("Run the first-run guide again"))
        self.run_guide_button.clicked.connect(self.run_guide_requested)
        guide_row = QHBoxLayout()
        guide_row.addWidget(self.run_guide_button)
        guide_row.addStretch(1)
        appearance.addRow(self.texts.label(lambda: self.tr("Getting started")), guide_row)
        return appearance

    def _build_network_section(self) -> QFormLayout:
        """Mirrors of the hub and GitHub, offline mode, and the model server at sign-in."""
        self.hub_endpoint = QLineEdit()
        # Empty means "not set": show what is used then (HF_ENDPOINT or the hub itself).
        self.hub_endpoint.setPlaceholderText(environment_endpoint(self.services.environ)[0])
        self.github_api = QLineEdit()
        self.github_api.setPlaceholderText("https://api.github.com")
        self.github_download = QLineEdit()
        self.texts.set(self.github_download.setPlaceholderText, lambda: self.tr("(as given by the release)"))
        self.offline = QCheckBox()
        self.texts.set(self.offline.setText, lambda: self.tr("Offline mode: never contact the hub or GitHub"))
        # Applied at once (it is an entry of the system's, not a setting saved with the others).
        self.serve_at_login = QCheckBox()
        self.texts.set(self.serve_at_login.setText, lambda: self.tr("Start the model server when I sign in (no window)"))
        self.texts.set(self.serve_at_login.setToolTip, lambda: self.tr(
            "Serves every model of your library to other apps (OpenAI, Ollama and Anthropic APIs) from "
            "sign-in on, loading each one when it is asked for. Turning it off removes the entry."))
        self.serve_at_login.setVisible(self._start_at_login is not None)
        self.serve_at_login.toggled.connect(self._toggle_start_at_login)
        self.api_wait = QSpinBox()
        self.api_wait.setRange(*RANGES["api_wait_seconds"])
        self.texts.set(self.api_wait.setSuffix, lambda: self.tr(" s"))
        self.texts.set(self.api_wait.setToolTip, lambda: self.tr(
            "How long a request from another app may wait for its model (every parallel request in use, the "
            "model loading, or memory being freed). Past this it is answered \"busy\" (HTTP 503 with "
            "Retry-After), so the app can try again later."))

        network = QFormLayout()
        network.addRow(self.texts.label(lambda: self.tr("Hugging Face endpoint")), self.hub_endpoint)
        network.addRow(self.texts.label(lambda: self.tr("GitHub API")), self.github_api)
        network.addRow(self.texts.label(lambda: self.tr("GitHub downloads")), self.github_download)
        network.addRow("", self.serve_at_login)
        network.addRow(self.texts.label(lambda: self.tr("Wait limit for API requests")), self.api_wait)
        network.addRow("", self.offline)
        hint = QLabel()
        self.texts.set(hint.setText, lambda: self.tr("Use a mirror when the hub or GitHub cannot be reached from your network."))
        hint.setObjectName("muted")
        hint.setWordWrap(True)
        network.addRow("", hint)
        return network

    def _build_folders_section(self) -> QFormLayout:
        """Strata's own folders (each with Open) and the model folders."""
        self.model_dirs = QListWidget()
        self.model_dirs.setMaximumHeight(90)
        self.add_dir_button = QPushButton()
        self.texts.set(self.add_dir_button.setText, lambda: self.tr("Add folder…"))
        self.add_dir_button.clicked.connect(self._add_model_dir)
        self.remove_dir_button = QPushButton()
        self.texts.set(self.remove_dir_button.setText, lambda: self.tr("Remove"))
        self.remove_dir_button.clicked.connect(self._remove_model_dir)

        folders = QFormLayout()
        self.folder_labels: dict[str, QLabel] = {}
        for key, label in (("config", lambda: self.tr("Settings")), ("data", lambda: self.tr("Data (engines, chats)")),
                           ("cache", lambda: self.tr("Cache")), ("logs", lambda: self.tr("Logs"))):
            path_label = QLabel()
            path_label.setObjectName("muted")
            path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            open_button = QPushButton()
            self.texts.set(open_button.setText, lambda: self.tr("Open"))
            open_button.setObjectName(f"open-{key}")
            open_button.clicked.connect(lambda _=False, k=key: self._open_folder(k))
            row = QHBoxLayout()
            row.addWidget(path_label, 1)
            row.addWidget(open_button)
            folders.addRow(self.texts.label(label), row)
            self.folder_labels[key] = path_label
        dir_buttons = QHBoxLayout()
        dir_buttons.addWidget(self.add_dir_button)
        dir_buttons.addWidget(self.remove_dir_button)
        dir_buttons.addStretch(1)
        dirs_box = QVBoxLayout()
        dirs_box.addWidget(self.model_dirs)
        dirs_box.addLayout(dir_buttons)
        folders.addRow(self.texts.label(lambda: self.tr("Model folders")), dirs_box)
        return folders

    def _build_hardware_section(self) -> QFormLayout:
        """The GPU target override and the memory limits."""
        self.gfx_override = QLineEdit()
        self.texts.set(self.gfx_override.setPlaceholderText, lambda: self.tr("detected automatically, e.g. gfx1100"))
        self.memory_budget = QSpinBox()
        self.memory_budget.setRange(0, 1024 * 1024)
        self.memory_budget.setSuffix(" MiB")
        self.texts.set(self.memory_budget.setSpecialValueText, lambda: self.tr("no limit"))
        self.fallback_memory = QSpinBox()
        self.fallback_memory.setRange(0, 1024 * 1024)
        self.fallback_memory.setSuffix(" MiB")
        self.texts.set(self.fallback_memory.setSpecialValueText, lambda: self.tr("use detected memory"))

        hardware = QFormLayout()
        hardware.addRow(self.texts.label(lambda: self.tr("GPU target override")), self.gfx_override)
        hardware.addRow(self.texts.label(lambda: self.tr("Memory budget for models")), self.memory_budget)
        hardware.addRow(self.texts.label(lambda: self.tr("GPU memory if not detected")), self.fallback_memory)
        return hardware

    def _build_runtime_section(self) -> QFormLayout:
        """The engine defaults: context, layers, threads, loading and unloading, updates."""
        self.context_size = QSpinBox()
        self.context_size.setRange(0, 1_048_576)
        self.context_size.setSingleStep(1024)
        self.texts.set(self.context_size.setSpecialValueText, lambda: self.tr("model default"))
        self.gpu_layers = QComboBox()
        self.gpu_layers.setEditable(True)
        self.gpu_layers.addItems(["all", "auto", "0"])
        self.flash_attention = QComboBox()
        for value, label in (("auto", lambda: self.tr("auto")), ("on", lambda: self.tr("on")),
                             ("off", lambda: self.tr("off"))):
            self.texts.item(self.flash_attention, label, value)
        self.threads = QSpinBox()
        self.threads.setRange(0, 256)
        self.texts.set(self.threads.setSpecialValueText, lambda: self.tr("engine default"))
        self.parallel = QSpinBox()
        # The setting's own range: a saved value is never clamped into another one on save.
        self.parallel.setRange(*RANGES["parallel_slots"])
        self.texts.set(self.parallel.setSpecialValueText, lambda: self.tr("Automatic"))
        self.texts.set(self.parallel.setToolTip, lambda: self.tr(
            "How many requests each loaded model answers at the same time: the chat, other apps and reading "
            "ahead share it. Each request gets the whole context size, so every one of them needs memory. "
            "Automatic: as many as fit in memory, at most 4."))
        self.auto_fallback = QCheckBox()
        self.texts.set(self.auto_fallback.setText, lambda: self.tr("If an engine fails, continue on the next one (Vulkan, then CPU)"))
        self.warm_start = QCheckBox()
        self.texts.set(self.warm_start.setText, lambda: self.tr("Load the last model when Strata starts"))
        self.texts.set(self.warm_start.setToolTip, lambda: self.tr("Its engine starts while the window opens, so the first message does "
                                           "not wait for the model to load. It is unloaded when idle, as any model."))
        self.read_ahead = QCheckBox()
        self.texts.set(self.read_ahead.setText, lambda: self.tr("Read the open conversation ahead while you type"))
        self.texts.set(self.read_ahead.setToolTip, lambda: self.tr("While the model is loaded and idle, its engine reads the conversation "
                                           "you have open (system prompt, tools, history), so the reply to your "
                                           "next message starts sooner. It uses the GPU or processor meanwhile."))
        self.engine_idle = QSpinBox()
        self.engine_idle.setRange(0, 24 * 60)
        self.texts.set(self.engine_idle.setSuffix, lambda: self.tr(" min"))
        self.texts.set(self.engine_idle.setSpecialValueText, lambda: self.tr("keep loaded"))
        self.texts.set(self.engine_idle.setToolTip, lambda: self.tr("An engine nobody used for this long is unloaded to free its memory; "
                                            "the next message loads the model again."))
        self.engine_memory = QSpinBox()
        self.engine_memory.setRange(0, 1024 * 1024)
        self.engine_memory.setSingleStep(1024)
        self.engine_memory.setSuffix(" MiB")
        self.texts.set(self.engine_memory.setSpecialValueText, lambda: self.tr("GPU memory (or RAM)"))
        self.texts.set(self.engine_memory.setToolTip, lambda: self.tr("What all loaded models may hold together. When a model does not fit "
                                              "beside the others, the least recently used one is unloaded first."))
        self.update_tolerance = QSpinBox()
        self.update_tolerance.setRange(0, 100)
        self.update_tolerance.setSuffix(" %")
        self.texts.set(self.update_tolerance.setToolTip, lambda: self.tr("A new engine build is used only when its trial on this machine is not "
                                                 "slower than the current build by more than this (prefill or decode)."))
        self.update_channel = QComboBox()
        self.texts.item(self.update_channel, lambda: self.tr("Stable (the catalog's tested versions)"), "stable")
        self.texts.item(self.update_channel, lambda: self.tr("Latest release"), "latest")

        runtime = QFormLayout()
        runtime.addRow(self.texts.label(lambda: self.tr("Context size")), self.context_size)
        runtime.addRow(self.texts.label(lambda: self.tr("GPU layers")), self.gpu_layers)
        runtime.addRow(self.texts.label(lambda: self.tr("Flash attention")), self.flash_attention)
        runtime.addRow(self.texts.label(lambda: self.tr("CPU threads")), self.threads)
        runtime.addRow(self.texts.label(lambda: self.tr("Parallel requests per model")), self.parallel)
        runtime.addRow("", self.auto_fallback)
        runtime.addRow("", self.warm_start)
        runtime.addRow("", self.read_ahead)
        runtime.addRow(self.texts.label(lambda: self.tr("Unload idle models after")), self.engine_idle)
        runtime.addRow(self.texts.label(lambda: self.tr("Memory for loaded models")), self.engine_memory)
        runtime.addRow(self.texts.label(lambda: self.tr("Engine updates")), self.update_channel)
        runtime.addRow(self.texts.label(lambda: self.tr("Slower update allowed by")), self.update_tolerance)
        return runtime

    def _build_buttons(self) -> QHBoxLayout:
        """The status line and Restore defaults / Revert / Save (Ctrl+S saves)."""
        self.status = QLabel()
        self.status.setObjectName("muted")
        self.status.setWordWrap(True)
        self.save_button = QPushButton()
        self.texts.set(self.save_button.setText, lambda: self.tr("Save"))
        self.save_button.setDefault(True)
        self.save_button.clicked.connect(self.save)
        self.revert_button = QPushButton()
        self.texts.set(self.revert_button.setText, lambda: self.tr("Revert"))
        self.revert_button.clicked.connect(self.load)
        self.defaults_button = QPushButton()
        self.texts.set(self.defaults_button.setText, lambda: self.tr("Restore defaults"))
        self.defaults_button.clicked.connect(self.restore_defaults)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Save), self, self.save)

        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.defaults_button)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.save_button)
        return buttons

    # -- model <-> widgets ----------------------------------------------------------------------
    def load(self) -> None:
        """Show the current settings (also "Revert")."""
        self._show(self.services.settings)
        self.status.setText("")

    def restore_defaults(self) -> None:
        self._show(Settings())
        self.status.setText(self.tr("Defaults shown; press Save to keep them."))

    def _show(self, s: Settings) -> None:
        self.theme.setCurrentIndex(max(0, self.theme.findData(s.theme)))
        self.language.setCurrentIndex(max(0, self.language.findData(s.language)))
        self.spoken_language.setCurrentIndex(max(0, self.spoken_language.findData(s.speech_language)))
        self.hub_endpoint.setText(s.hub_endpoint)
        self.github_api.setText(s.github_api_url)
        self.github_download.setText(s.github_download_url)
        self.offline.setChecked(s.offline)
        self.model_dirs.clear()
        self.model_dirs.addItems(s.model_dirs)
        self.gfx_override.setText(s.gfx_override)
        self.memory_budget.setValue(s.memory_budget_mb)
        self.fallback_memory.setValue(s.fallback_gpu_memory_mb)
        self.context_size.setValue(s.context_size)
        self.gpu_layers.setCurrentText(s.gpu_layers)
        self.flash_attention.setCurrentIndex(max(0, self.flash_attention.findData(s.flash_attention)))
        self.threads.setValue(s.threads)
        self.parallel.setValue(s.parallel_slots)
        self.auto_fallback.setChecked(s.auto_fallback)
        self.warm_start.setChecked(s.warm_start)
        self.read_ahead.setChecked(s.read_ahead)
        self.engine_idle.setValue(s.engine_idle_minutes)
        self.api_wait.setValue(s.api_wait_seconds)
        self._show_start_at_login()
        self.engine_memory.setValue(s.engine_memory_mb)
        self.update_tolerance.setValue(s.update_tolerance_pct)
        self.update_channel.setCurrentIndex(max(0, self.update_channel.findData(s.update_channel)))
        for key, path in self.services.paths.as_dict().items():
            self.folder_labels[key].setText(path)

    def edited(self) -> Settings:
        """The settings as currently shown in the widgets."""
        return dataclasses.replace(
            self.services.settings,
            theme=str(self.theme.currentData()),
            language=str(self.language.currentData()),
            speech_language=str(self.spoken_language.currentData() or ""),
            hub_endpoint=self.hub_endpoint.text().strip().rstrip("/"),
            github_api_url=self.github_api.text().strip().rstrip("/"),
            github_download_url=self.github_download.text().strip().rstrip("/"),
            offline=self.offline.isChecked(),
            model_dirs=[self.model_dirs.item(i).text() for i in range(self.model_dirs.count())],
            gfx_override=self.gfx_override.text().strip().lower(),
            memory_budget_mb=self.memory_budget.value(),
            fallback_gpu_memory_mb=self.fallback_memory.value(),
            context_size=self.context_size.value(),
            gpu_layers=self.gpu_layers.currentText().strip().lower(),
            flash_attention=str(self.flash_attention.currentData()),
            threads=self.threads.value(),
            parallel_slots=self.parallel.value(),
            auto_fallback=self.auto_fallback.isChecked(),
            warm_start=self.warm_start.isChecked(),
            read_ahead=self.read_ahead.isChecked(),
            engine_idle_minutes=self.engine_idle.value(),
            api_wait_seconds=self.api_wait.value(),
            engine_memory_mb=self.engine_memory.value(),
            update_tolerance_pct=self.update_tolerance.value(),
            update_channel=str(self.update_channel.currentData()),
        )

    def save(self) -> bool:
        """Validate, write, apply. Shows problems inline and keeps the edits on failure."""
        new = self.edited()
        problems = new.validate()
        if problems:
            self.status.setText(self.tr("Not saved: ") + " ".join(core_text(p) for p in problems))
            return False
        try:
            changed = self.services.settings_service.update(**{k: getattr(new, k) for k in PAGE_KEYS})
        except StrataError as exc:
            self.status.setText(error_text(exc))
            return False
        if changed & RESTART_KEYS:
            self.status.setText(self.tr("Saved. Network and folder changes apply after restarting Strata."))
        elif "language" in changed and self._apply_language is None:
            self.status.setText(self.tr("Saved. The new language applies after restarting Strata."))
        else:
            self.status.setText(self.tr("Saved."))
        self.saved.emit(new)
        return True

    def _toggle_start_at_login(self, on: bool) -> None:
        if self._start_at_login is None:
            return
        try:
            self._start_at_login[1](on)
        except StrataError as exc:
            self.status.setText(error_text(exc))
        else:
            self.status.setText(self.tr("The model server starts when you sign in.") if on
                                else self.tr("The model server no longer starts when you sign in."))
        self._show_start_at_login()

    def _show_start_at_login(self) -> None:
        if self._start_at_login is not None:
            self.serve_at_login.blockSignals(True)
            self.serve_at_login.setChecked(self._start_at_login[0]())
            self.serve_at_login.blockSignals(False)

    def _settings_changed(self, change: SettingsChange) -> None:
        if "theme" in change.keys:
            self._apply_theme(change.settings.theme)
        if "language" in change.keys and self._apply_language is not None:
            self._apply_language(change.settings.language)  # every open page reads in it at once

    def _open_folder(self, key: str) -> None:
        path = Path(self.services.paths.as_dict()[key])
        path.mkdir(parents=True, exist_ok=True)
        self._open_path(path)

    def _add_model_dir(self) -> None:
        folder = self._choose_folder()
        existing = {self.model_dirs.item(i).text() for i in range(self.model_dirs.count())}
        if folder and folder not in existing:
            self.model_dirs.addItem(folder)

    def _remove_model_dir(self) -> None:
        for item in self.model_dirs.selectedItems():
            self.model_dirs.takeItem(self.model_dirs.row(item))
