"""The main window: a sidebar of pages, a notice banner, and the one place errors are shown.

Pages can be added built (:meth:`MainWindow.add_page`) or as a factory (:meth:`MainWindow.add_lazy_page`):
the sidebar entry appears at once and the page is built the first time it is shown or asked for
(:meth:`MainWindow.page_at`), so start-up pays only for the page on screen.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QCoreApplication, QSize, Signal
from PySide6.QtGui import QCloseEvent, QIcon
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from strata_gui import APP_NAME
from strata_gui.core.base import StrataError
from strata_gui.ui.i18n import core_text, keep_translated
from strata_gui.ui.pages.base import Page
from strata_gui.ui.widgets import NoticeBanner, install_wheel_guard

if TYPE_CHECKING:  # asyncio, the bridge and the dialogs load after the first paint (see app.run_gui)
    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.dialogs import ErrorDialog


@dataclass
class _Entry:
    """One sidebar entry: its page once built, else the factory and the empty stand-in in the stack;
    ``title`` gives its sidebar text in the language installed now."""

    factory: Callable[[], Page] | None
    page: Page | None
    slot: QWidget
    title: Callable[[], str]


class MainWindow(QMainWindow):
    """Sidebar navigation over pages; shows bridge errors once, in one place.

    Args:
        bridge: The app's AsyncBridge; its ``error_occurred`` signal is shown here.
        log_file: Offered by error dialogs ("Open log").
        open_path: Opens a file or folder in the OS (injected so tests never spawn a viewer).
        state_file: Where window geometry is kept between runs.
    """

    page_changed = Signal(int)
    page_built = Signal(int)  # a lazily added page was just built (its sidebar index)
    closing = Signal()

    def __init__(
        self,
        bridge: AsyncBridge | None,
        *,
        log_file: Path,
        open_path: Callable[[Path], object],
        state_file: Path | None = None,
        icon: QIcon | None = None,
    ) -> None:
        super().__init__()
        self.bridge: AsyncBridge | None = None
        self._log_file = log_file
        self._open_path = open_path
        self._state_file = state_file
        self._entries: list[_Entry] = []
        self.errors_shown: list[StrataError] = []
        self._last_error: StrataError | None = None
        self._dialog: ErrorDialog | None = None
        self.setWindowTitle(APP_NAME)
        if icon is not None:
            self.setWindowIcon(icon)
        self.resize(1180, 760)
        self.setMinimumSize(QSize(820, 560))

        self.sidebar = QListWidget()
        self.sidebar.setObjectName("sidebar")
        self.sidebar.setFixedWidth(200)
        self.sidebar.setIconSize(QSize(18, 18))
        self.sidebar.currentRowChanged.connect(self._on_row_changed)
        brand = QLabel(APP_NAME)
        brand.setObjectName("brand")
        # A QFrame paints its style-sheet background without a Qt.WidgetAttribute: nothing before
        # the first paint names a Qt.* enum (see ui/theme.py for why).
        side = QFrame()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.setSpacing(0)
        side_layout.addWidget(brand)
        side_layout.addWidget(self.sidebar, 1)
        side.setFixedWidth(200)
        side.setObjectName("sidebarPanel")

        self.stack = QStackedWidget()
        # Shown for the moment between the window appearing and the pages being built.
        # Centred by its paragraph, not Qt.AlignmentFlag (see above); a label centres vertically.
        self._loading: QLabel | None = QLabel()
        self._loading.setObjectName("muted")
        self.stack.addWidget(self._loading)
        self.banner = NoticeBanner()
        self.banner.details_requested.connect(self._show_last_error_dialog)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(20, 14, 20, 14)
        right_layout.addWidget(self.banner)
        right_layout.addWidget(self.stack, 1)

        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(side)
        layout.addWidget(right, 1)
        # Index 0 is the app (sidebar + pages); a cover (the first-run guide) replaces all of it.
        self.content = QStackedWidget()
        self.content.addWidget(central)
        self.setCentralWidget(self.content)

        self.busy_label = QLabel()
        self._busy_count = 0
        self.statusBar().addPermanentWidget(self.busy_label)
        if bridge is not None:
            self.set_bridge(bridge)
        keep_translated(self, self._retranslate)

        self._restore_state()

    def add_shortcuts(self) -> None:
        """Quit and Ctrl+1…9 for the pages (the app adds them with the pages, after the first paint:
        QKeySequence's enums take ~4 ms to load)."""
        from PySide6.QtGui import QKeySequence, QShortcut

        QShortcut(QKeySequence(QKeySequence.StandardKey.Quit), self, self.close)
        for n in range(1, 10):
            QShortcut(QKeySequence(f"Ctrl+{n}"), self, lambda n=n: self.show_page_index(n - 1))

    def set_bridge(self, bridge: AsyncBridge) -> None:
        """Show this bridge's errors and busy count (the app attaches it after the first paint)."""
        self.bridge = bridge
        bridge.error_occurred.connect(self.show_error)
        bridge.busy_changed.connect(self._on_busy)

    # -- pages -------------------------------------------------------------------------------
    def add_page(self, page: Page, icon: QIcon | None = None) -> None:
        """Append a page. ``icon`` overrides the page's ``page_icon`` (a QStyle standard pixmap name)."""
        title = page.page_title or type(page).__name__
        if icon is None or icon.isNull():
            from PySide6.QtWidgets import QStyle  # its enums take ~5 ms to load: not before the first paint

            pixmap = getattr(QStyle.StandardPixmap, page.page_icon, QStyle.StandardPixmap.SP_FileIcon)
            icon = self.style().standardIcon(pixmap)
        install_wheel_guard()  # scrolling a page never turns its controls
        source = type(page).page_title  # the English title; the page's class is its context
        self._append(_Entry(None, page, page, lambda: QCoreApplication.translate(type(page).__name__, source)
                            if source else title), icon)

    def add_lazy_page(self, title: str | Callable[[], str], icon: QIcon, factory: Callable[[], Page]) -> int:
        """Append a sidebar entry whose page ``factory`` builds on first visit; returns its index.

        ``title`` is the sidebar text, or what gives it in the language installed now (so the
        entry follows a language switch).
        """
        install_wheel_guard()  # covers the page when it is built
        return self._append(_Entry(factory, None, QWidget(), title if callable(title) else lambda: title), icon)

    def _append(self, entry: _Entry, icon: QIcon) -> int:
        index = len(self._entries)
        item = QListWidgetItem(icon, "")
        self._set_title(item, index, entry.title())
        if self._loading is not None:
            self.stack.removeWidget(self._loading)
            self._loading.deleteLater()
            self._loading = None
        self.stack.addWidget(entry.slot)
        self._entries.append(entry)
        self.sidebar.addItem(item)
        if index == 0:
            self.sidebar.setCurrentRow(0)
        return index

    @staticmethod
    def _set_title(item: QListWidgetItem, index: int, title: str) -> None:
        item.setText(title)
        item.setToolTip(f"{title} (Ctrl+{index + 1})" if index < 9 else title)

    def _retranslate(self) -> None:
        """The window's own texts in the language installed now (the pages keep their own)."""
        if self._loading is not None:
            self._loading.setText(f'<p align="center">{html.escape(self.tr("Starting Strata…"))}</p>')
        for index, entry in enumerate(self._entries):
            title = entry.title()
            self._set_title(self.sidebar.item(index), index, title)
            if entry.page is not None:
                entry.page.page_title = title
        self._on_busy(self._busy_count)

    def page_at(self, index: int) -> Page:
        """The page at sidebar ``index``, built now if it was added lazily and not built yet."""
        entry = self._entries[index]
        if entry.page is None:
            assert entry.factory is not None
            page = entry.factory()
            entry.page, entry.factory = page, None
            slot, entry.slot = entry.slot, page
            self.stack.insertWidget(self.stack.indexOf(slot), page)
            if self.stack.currentWidget() is slot:
                self.stack.setCurrentWidget(page)
            self.stack.removeWidget(slot)
            slot.deleteLater()
            if page.page_title:
                self.sidebar.item(index).setText(page.page_title)
            self.page_built.emit(index)
        return entry.page

    def is_built(self, index: int) -> bool:
        return self._entries[index].page is not None

    @property
    def pages(self) -> list[Page]:
        """Every page, in sidebar order (building the ones not built yet)."""
        return [self.page_at(i) for i in range(len(self._entries))]

    def built_pages(self) -> list[Page]:
        """The pages built so far, in sidebar order."""
        return [e.page for e in self._entries if e.page is not None]

    def page_titles(self) -> list[str]:
        return [self.sidebar.item(i).text() for i in range(self.sidebar.count())]

    def show_page_index(self, index: int) -> None:
        if 0 <= index < len(self._entries):
            self.sidebar.setCurrentRow(index)

    def show_page(self, page: Page) -> None:
        self.show_page_index(next(i for i, e in enumerate(self._entries) if e.page is page))

    def _on_row_changed(self, row: int) -> None:
        if row < 0:
            return
        page = self.page_at(row)
        self.stack.setCurrentWidget(page)
        page.on_shown()
        self.page_changed.emit(row)

    # -- covers ------------------------------------------------------------------------------------
    def cover(self, widget: QWidget) -> None:
        """Show ``widget`` in place of the sidebar and pages until it hides (a dialog's ``done``).

        A separate window over the app let the page under it show through at its edges (and drew
        black under Wine); a cover owns the whole content area instead.
        """
        widget.setParent(self.content)
        from PySide6.QtCore import Qt  # not at import: see __init__

        widget.setWindowFlags(Qt.WindowType.Widget)
        if self.content.indexOf(widget) < 0:
            self.content.addWidget(widget)
        self.content.setCurrentWidget(widget)
        widget.show()

    def uncover(self, widget: QWidget) -> None:
        """Back to the pages (``widget`` stays alive until its owner deletes it)."""
        if self.content.indexOf(widget) > 0:
            self.content.removeWidget(widget)
        self.content.setCurrentIndex(0)

    @property
    def covered_by(self) -> QWidget | None:
        """The widget covering the pages, or None."""
        return None if self.content.currentIndex() == 0 else self.content.currentWidget()

    # -- notices and errors --------------------------------------------------------------------
    def show_notice(self, text: str, level: str = "info") -> None:
        self.banner.show_message(text, level)

    def show_error(self, error: StrataError) -> None:
        """The single place errors from background work are shown (banner + details dialog)."""
        self.errors_shown.append(error)
        self._last_error = error
        # The core's sentences in the user's language where the catalogue has them (ui/i18n.core_text).
        message, hint = core_text(error.message), core_text(error.hint or "")
        text = message if not hint else f"{message} — {hint}"
        self.banner.show_message(text, "error", has_details=True)

    def _show_last_error_dialog(self) -> None:
        if self._last_error is None:
            return
        from PySide6.QtCore import Qt  # not at import: see __init__

        from strata_gui.ui.dialogs import ErrorDialog

        self._dialog = ErrorDialog(self._last_error, log_file=self._log_file, open_path=self._open_path,
                                   parent=self)
        self._dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._dialog.open()

    def _on_busy(self, count: int) -> None:
        self._busy_count = count
        self.busy_label.setText(self.tr("%n task(s) running", "", count) if count else "")

    # -- window state ---------------------------------------------------------------------------
    def _restore_state(self) -> None:
        if self._state_file is None or not self._state_file.exists():
            return
        try:
            self.restoreGeometry(QByteArray(self._state_file.read_bytes()))
        except OSError:
            pass

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._state_file is not None:
            try:
                self._state_file.parent.mkdir(parents=True, exist_ok=True)
                self._state_file.write_bytes(bytes(self.saveGeometry().data()))
            except OSError:
                pass
        self.closing.emit()
        super().closeEvent(event)
