"""About / System page: what `strata system` prints, Open log folder, Copy report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QIcon
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from strata_gui import __version__
from strata_gui.core.config import AppPaths
from strata_gui.core.diagnostics import SystemInfo, collect_system_info
from strata_gui.ui.i18n import LiveTexts
from strata_gui.ui.pages.base import Page


class AboutPage(Page):
    """Versions, OS, CPU, RAM and folders, with buttons to open the logs and copy a report.

    Args:
        paths: The user folders (shown, and the log folder opened).
        open_path: Opens a folder in the file manager.
        extra_report: Returns more report sections (GPU, engines) once those services exist.
    """

    page_title = "About"
    page_icon = "SP_MessageBoxInformation"

    def __init__(
        self,
        paths: AppPaths,
        *,
        open_path: Callable[[Path], object],
        icon: QIcon | None = None,
        extra_report: Callable[[], str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self.paths = paths
        self._open_path = open_path
        self._extra_report = extra_report
        self.page_title = self.tr("About")
        self._info: SystemInfo | None = None  # collected when first needed (keeps start-up fast)

        logo = QLabel()
        if icon is not None:
            logo.setPixmap(icon.pixmap(64, 64))
        blurb = QLabel()
        self.texts.set(blurb.setText, lambda: self.tr(
            "Strata runs local language models on AMD Radeon GPUs and Ryzen AI APUs with ROCm, "
            "Vulkan or CPU engines — no HIP SDK or toolchain needed."))
        blurb.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(logo, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(blurb, 1)

        self.report_view = QPlainTextEdit()
        self.report_view.setReadOnly(True)
        self.report_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.copy_button = QPushButton()
        self.texts.set(self.copy_button.setText, lambda: self.tr("Copy report"))
        self.copy_button.clicked.connect(self.copy_report)
        self.open_logs_button = QPushButton()
        self.texts.set(self.open_logs_button.setText, lambda: self.tr("Open log folder"))
        self.open_logs_button.clicked.connect(self.open_log_folder)
        self.copied_label = QLabel()
        self.copied_label.setObjectName("muted")
        buttons = QHBoxLayout()
        buttons.addWidget(self.copied_label, 1)
        buttons.addWidget(self.open_logs_button)
        buttons.addWidget(self.copy_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.texts.header(lambda: self.tr("About Strata"), lambda: self.tr("Version %s") % __version__))
        layout.addLayout(top)
        layout.addWidget(self.report_view, 1)
        layout.addLayout(buttons)

    @property
    def info(self) -> SystemInfo:
        if self._info is None:
            self._info = collect_system_info(self.paths)
        return self._info

    def report(self) -> str:
        text = self.info.report()
        if self._extra_report is not None:
            extra = self._extra_report()
            if extra:
                text += "\n\n" + extra
        return text

    def refresh(self) -> None:
        self.report_view.setPlainText(self.report())

    def on_shown(self) -> None:
        self.refresh()

    def copy_report(self) -> None:
        QGuiApplication.clipboard().setText(self.report())
        self.copied_label.setText(self.tr("Report copied to the clipboard."))

    def open_log_folder(self) -> None:
        self.paths.log_dir.mkdir(parents=True, exist_ok=True)
        self._open_path(self.paths.log_dir)
