"""Small reusable widgets: progress with Cancel, page headers, notice banners."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollBar,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from strata_gui.core.base import Progress
from strata_gui.ui.i18n import core_text

if TYPE_CHECKING:
    from PySide6.QtCore import QEvent

    from strata_gui.ui.bridge import TaskHandle


class ProgressPanel(QWidget):
    """A progress bar, a status line and a Cancel button bound to one :class:`TaskHandle`.

    Hidden while idle. Indeterminate (busy) when the task reports no total.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._handle: TaskHandle | None = None
        self.title = QLabel()
        self.title.setObjectName("progressTitle")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.status = QLabel()
        self.status.setObjectName("muted")
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        self.hide()

    @property
    def handle(self) -> TaskHandle | None:
        return self._handle

    def attach(self, handle: TaskHandle, title: str) -> None:
        """Follow ``handle`` until it finishes, then hide."""
        self._handle = handle
        self.title.setText(title)
        self.status.setText(self.tr("Starting…"))
        self.bar.setRange(0, 0)
        self.cancel_button.setEnabled(True)
        handle.progress.connect(self._on_progress)
        handle.finished.connect(self._on_finished)
        self.show()

    def cancel(self) -> None:
        if self._handle is not None:
            self.cancel_button.setEnabled(False)
            self.status.setText(self.tr("Cancelling…"))
            self._handle.cancel()

    def _on_progress(self, p: Progress) -> None:
        fraction = p.fraction
        if fraction is None:
            self.bar.setRange(0, 0)
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(fraction * 1000))
        # what is happening, in the user's language (an engine update's steps are core texts)
        self.status.setText(dataclasses.replace(p, message=core_text(p.message)).describe())

    def _on_finished(self) -> None:
        self._handle = None
        self.hide()


class PageHeader(QWidget):
    """Large title with a muted subtitle, used at the top of every page."""

    def __init__(self, title: str, subtitle: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(title)
        self.title.setObjectName("pageTitle")
        self.subtitle = QLabel(subtitle)
        self.subtitle.setObjectName("muted")
        self.subtitle.setWordWrap(True)
        self.subtitle.setVisible(bool(subtitle))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 8)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.subtitle)

    def set_texts(self, title: str, subtitle: str = "") -> None:
        """Show another title and subtitle (the language changed)."""
        self.title.setText(title)
        self.subtitle.setText(subtitle)
        self.subtitle.setVisible(bool(subtitle))


class NoticeBanner(QFrame):
    """A dismissible message strip (info / warning / error) at the top of the window."""

    dismissed = Signal()
    details_requested = Signal()
    action_requested = Signal()  # the optional action button (shown when show_message names one)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.text = QLabel()
        self.text.setWordWrap(True)
        self._selectable = False  # made selectable with its first message (see show_message)
        self.text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.details_button = QPushButton(self.tr("Details…"))
        self.details_button.clicked.connect(self.details_requested)
        self.action_button = QPushButton()
        self.action_button.clicked.connect(self.action_requested)
        self.action_button.hide()
        self.close_button = QPushButton(self.tr("Dismiss"))
        self.close_button.clicked.connect(self._dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.details_button)
        layout.addWidget(self.action_button)
        layout.addWidget(self.close_button)
        self.hide()

    def show_message(self, text: str, level: str = "info", *, has_details: bool = False, action: str = "") -> None:
        """Show ``text``; ``action`` names a button that emits :attr:`action_requested` (none when empty)."""
        if not self._selectable:
            # Not in __init__: the main window builds a banner before its first paint, and naming a
            # Qt.* enum then costs 12 ms (see ui/theme.py).
            from PySide6.QtCore import Qt

            self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._selectable = True
        self.setProperty("level", level)
        self.style().unpolish(self)
        self.style().polish(self)
        self.text.setText(text)
        self.details_button.setVisible(has_details)
        self.action_button.setText(action)
        self.action_button.setVisible(bool(action))
        self.show()

    def _dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()


class ElidedLabel(QLabel):
    """A one-line label that shortens its text with "…" instead of pushing the layout wider."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._own_tip = False
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text
        self._elide()

    def text(self) -> str:
        """The whole text (what is painted may be shortened)."""
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def resizeEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        from PySide6.QtCore import Qt  # not at import: see NoticeBanner.show_message

        width = max(0, self.width())
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideMiddle, width) if width else self._full
        super().setText(shown)
        if not self._own_tip:  # shortened: the whole text is a hover away
            super().setToolTip(self._full if shown != self._full else "")

    def setToolTip(self, tip: str) -> None:
        """A tooltip of its own replaces the whole-text one shown when the text is shortened."""
        self._own_tip = bool(tip)
        super().setToolTip(tip)


class WheelGuard(QObject):
    """Keeps the mouse wheel from changing a spin box, combo box or slider the user is only scrolling past.

    A wheel turned over such a control while it does not have keyboard focus scrolls the page around
    it instead (the event is ignored, so Qt hands it to the parent). Click or Tab into the control
    and the wheel changes it as usual. Installed once on the application (:func:`install_wheel_guard`),
    so a control built later (a panel opened lazily, a dialog) is covered the moment it is polished.
    """

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Qt and QEvent not at import: naming them before the first paint makes PySide6 create
        # every enum of their namespaces (see NoticeBanner.show_message)
        from PySide6.QtCore import QEvent

        kind = event.type()
        if kind == QEvent.Type.Polish:
            if isinstance(watched, _WHEEL_VALUE_WIDGETS):
                _no_wheel_focus(watched)
            return False
        if kind != QEvent.Type.Wheel or not isinstance(watched, _WHEEL_VALUE_WIDGETS):
            return False
        if watched.hasFocus() or isinstance(watched, QScrollBar):  # a scroll bar is what the wheel is for
            return False
        area = _scroll_area_around(watched)
        if area is None:
            event.ignore()  # Qt offers an ignored wheel event to the parent
        else:
            # handed on explicitly: Qt passes an ignored wheel event up only when it came from the
            # window system, and the page should scroll the same way whoever sent it
            QCoreApplication.sendEvent(area.viewport(), event)
        return True


_WHEEL_VALUE_WIDGETS = (QAbstractSpinBox, QComboBox, QAbstractSlider)


def _no_wheel_focus(widget: QWidget) -> None:
    """A control that would take focus from the wheel must not: Qt gives that focus before any
    event filter sees the wheel event, and a focused control takes the wheel (the page stops
    scrolling and the value turns). A scroll bar keeps its policy: the wheel is what it is for."""
    from PySide6.QtCore import Qt

    if not isinstance(widget, QScrollBar) and widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)


def _scroll_area_around(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea) and not isinstance(parent, _WHEEL_VALUE_WIDGETS):
            return parent
        parent = parent.parentWidget()
    return None


def install_wheel_guard() -> WheelGuard:
    """Install the one :class:`WheelGuard` on the application (again: the one already there); returns it.

    On the application, not per widget, because controls are built after the pages too (the chat's
    Settings and Load options panels, dialogs, rows added later) and a per-widget guard missed them.
    The filter's cost is one type comparison per event (about 3 µs in Python), run after the first
    paint. Controls that already exist are made to stop taking focus from the wheel here; later ones
    when they are polished (before they are first shown).
    """
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    assert app is not None, "the guard is installed on a running application"
    found = getattr(app, "_strata_wheel_guard", None)
    if isinstance(found, WheelGuard):
        return found
    guard = WheelGuard(app)
    app._strata_wheel_guard = guard  # type: ignore[attr-defined]
    for widget in QApplication.allWidgets():
        if isinstance(widget, _WHEEL_VALUE_WIDGETS):
            _no_wheel_focus(widget)
    app.installEventFilter(guard)
    return guard
