"""Find in a conversation (Ctrl+F): a bar over the chat's messages with next/previous, the number
of matches, every match highlighted and the current one shown.

It searches the text the reader sees: each message's Markdown blocks (QTextBrowser documents),
its unfolded thinking and tool results (plain text views) and its code blocks (labels). Matches
are listed top to bottom as laid out in the conversation; a document's matches are painted with
extra selections (nothing in the text changes), a code block's current match is selected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QTextEdit,
    QToolButton,
    QWidget,
)

from strata_gui.ui.i18n import LiveTexts

REFIND_MS = 150  # typing in the find box searches again once it pauses this long
MATCH_COLOUR = QColor("#fde68a")  # every match (amber-200)
CURRENT_COLOUR = QColor("#f59e0b")  # the current one (amber-500)

TextView = QTextEdit | QPlainTextEdit


@dataclass(frozen=True)
class Match:
    """One place the text was found: a text view (or code label) and the span in its plain text."""

    target: QWidget
    start: int
    length: int


def _is_code_label(widget: QWidget) -> bool:
    return isinstance(widget, QLabel) and widget.textFormat() == Qt.TextFormat.PlainText \
        and bool(widget.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse)


class FindBar(QWidget):
    """The find bar of a conversation.

    Args:
        scroll_area: The conversation's scroll area; its widget holds the message widgets.
        prepare: Called before each search (the page builds the messages it has not built yet).

    Signals:
        closed(): The bar was closed (Esc or ×): the page gives the focus back to the message box.
    """

    closed = Signal()

    def __init__(self, scroll_area: QScrollArea, parent: QWidget | None = None, *,
                 prepare: Callable[[], object] | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)  # follow a language switch
        self._scroll_area = scroll_area
        self._prepare = prepare
        self.matches: list[Match] = []
        self.current = -1
        self._painted: list[TextView] = []  # views whose extra selections show matches now
        self._selected_label: QLabel | None = None
        self.field = QLineEdit()
        self.texts.set(self.field.setPlaceholderText, lambda: self.tr("Find in this conversation"))
        self.field.setClearButtonEnabled(True)
        self.field.installEventFilter(self)  # Enter: next match, Shift+Enter: previous, Esc: close
        self.count_label = QLabel()
        self.count_label.setObjectName("muted")
        self.previous_button = self._button("▲", self.tr("Previous match (Shift+Enter)"), self.find_previous)
        self.next_button = self._button("▼", self.tr("Next match (Enter)"), self.find_next)
        self.close_button = self._button("✕", self.tr("Close (Esc)"), self.close_bar)
        self._refind = QTimer(self)
        self._refind.setSingleShot(True)
        self._refind.setInterval(REFIND_MS)
        self._refind.timeout.connect(self.search)
        self.field.textChanged.connect(lambda _t: self._refind.start())
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 4)
        row.addWidget(self.field, 1)
        row.addWidget(self.count_label)
        row.addWidget(self.previous_button)
        row.addWidget(self.next_button)
        row.addWidget(self.close_button)
        self.hide()

    def _button(self, text: str, tip: str, slot: object) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.clicked.connect(slot)
        return button

    # -- showing -------------------------------------------------------------------------------
    def open_bar(self) -> None:
        """Show the bar with its text selected (Ctrl+F again searches the conversation as it is now)."""
        self.show()
        self.field.setFocus()
        self.field.selectAll()
        self.search()

    def close_bar(self) -> None:
        """Hide the bar and its highlights."""
        self._refind.stop()
        self._clear_marks()
        self.matches, self.current = [], -1
        self.hide()
        self.closed.emit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # The line edit takes Esc for itself (the page's Esc shortcut never sees it there).
        if watched is self.field and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self._step(-1 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1)
                return True
            if event.key() == Qt.Key.Key_Escape:
                self.close_bar()
                return True
        return super().eventFilter(watched, event)

    # -- searching -----------------------------------------------------------------------------
    def search(self) -> int:
        """Find the field's text in the conversation's messages (case-insensitive); returns the count.

        The first match at or after the one shown before stays current, so the view does not jump
        back to the top while the reader types or a reply grows.
        """
        self._refind.stop()
        if self._prepare is not None:
            self._prepare()
        previous = self.matches[self.current] if 0 <= self.current < len(self.matches) else None
        self._clear_marks()
        needle = self.field.text()
        self.matches = self._find_all(needle) if needle else []
        self.current = -1
        if self.matches:
            self.current = 0
            if previous is not None:
                was = (self._top(previous.target), previous.start)
                self.current = next((i for i, m in enumerate(self.matches) if (self._top(m.target), m.start) >= was), 0)
        self._show()
        return len(self.matches)

    def find_next(self) -> None:
        self._step(1)

    def find_previous(self) -> None:
        self._step(-1)

    def _step(self, step: int) -> None:
        if self.field.text() and not self.matches:
            self.search()
        if not self.matches:
            return
        self.current = (self.current + step) % len(self.matches)
        self._show()

    def _targets(self) -> list[QWidget]:
        """The conversation's visible text views and code labels, top to bottom."""
        box = self._scroll_area.widget()
        if box is None:
            return []
        found: list[QWidget] = [w for w in box.findChildren(QTextEdit) + box.findChildren(QPlainTextEdit)
                                if w.isVisibleTo(box)]
        found += [w for w in box.findChildren(QLabel) if _is_code_label(w) and w.isVisibleTo(box)]
        return sorted(found, key=lambda w: (self._top(w), w.mapTo(box, w.rect().topLeft()).x()))

    def _top(self, widget: QWidget) -> int:
        box = self._scroll_area.widget()
        return widget.mapTo(box, widget.rect().topLeft()).y() if box is not None else 0

    def _find_all(self, needle: str) -> list[Match]:
        matches: list[Match] = []
        folded = needle.casefold()
        for target in self._targets():
            if isinstance(target, (QTextEdit, QPlainTextEdit)):
                document = target.document()
                cursor = document.find(needle, 0)
                while not cursor.isNull():
                    matches.append(Match(target, cursor.selectionStart(), cursor.selectionEnd() - cursor.selectionStart()))
                    cursor = document.find(needle, cursor)
            elif isinstance(target, QLabel):
                text, at = target.text().casefold(), 0
                while (at := text.find(folded, at)) >= 0:
                    matches.append(Match(target, at, len(needle)))
                    at += max(1, len(needle))
        return matches

    # -- highlighting --------------------------------------------------------------------------
    def _clear_marks(self) -> None:
        for view in self._painted:
            view.setExtraSelections([])
        self._painted = []
        if self._selected_label is not None:
            self._selected_label.setSelection(0, 0)
            self._selected_label = None

    def _show(self) -> None:
        """Paint every match, mark the current one, scroll to it and say "3 of 12"."""
        self._clear_marks()
        by_view: dict[TextView, list[QTextEdit.ExtraSelection]] = {}
        for index, match in enumerate(self.matches):
            target = match.target
            if isinstance(target, (QTextEdit, QPlainTextEdit)):
                selection = QTextEdit.ExtraSelection()
                cursor = QTextCursor(target.document())
                cursor.setPosition(match.start)
                cursor.setPosition(match.start + match.length, QTextCursor.MoveMode.KeepAnchor)
                selection.cursor = cursor
                fmt = QTextCharFormat()
                fmt.setBackground(CURRENT_COLOUR if index == self.current else MATCH_COLOUR)
                fmt.setForeground(QColor("black"))
                selection.format = fmt
                by_view.setdefault(target, []).append(selection)
        for view, selections in by_view.items():
            view.setExtraSelections(selections)
            self._painted.append(view)
        self._show_count()
        if 0 <= self.current < len(self.matches):
            self._reveal(self.matches[self.current])

    def _show_count(self) -> None:
        if not self.field.text():
            self.count_label.setText("")
        elif not self.matches:
            self.count_label.setText(self.tr("No matches"))
        else:
            self.count_label.setText(self.tr("{0} of {1}").format(self.current + 1, len(self.matches)))
        palette = self.field.palette()
        missing = bool(self.field.text()) and not self.matches
        palette.setColor(QPalette.ColorRole.Base, QColor("#fee2e2") if missing else self.palette().color(
            QPalette.ColorRole.Base))
        self.field.setPalette(palette)
        for button in (self.previous_button, self.next_button):
            button.setEnabled(len(self.matches) > 1)

    def _reveal(self, match: Match) -> None:
        """Scroll the conversation so the current match is in view."""
        target, box = match.target, self._scroll_area.widget()
        if box is None:
            return
        if isinstance(target, (QTextEdit, QPlainTextEdit)):
            cursor = QTextCursor(target.document())
            cursor.setPosition(match.start)
            rect = target.cursorRect(cursor)
            if isinstance(target, QPlainTextEdit) and target.verticalScrollBar().maximum() > 0:
                target.setTextCursor(cursor)  # a long thinking scrolls inside itself to the match
                target.ensureCursorVisible()
                rect = target.cursorRect(cursor)
            point = target.viewport().mapTo(box, rect.center())
        else:
            assert isinstance(target, QLabel)
            target.setSelection(match.start, match.length)
            self._selected_label = target
            point = target.mapTo(box, target.rect().center())
        self._scroll_area.ensureVisible(point.x(), point.y(), 40, 80)
