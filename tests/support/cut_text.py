"""Finds text a person cannot read whole: labels, buttons, combo boxes and table headers whose text
needs more room than the widget has.

A widget written to shorten its text (:class:`~strata_gui.ui.widgets.ElidedLabel`, or any widget
whose tooltip holds the whole text) passes: the whole text is a hover away. Word-wrapped labels
pass unless one piece Qt cannot break (a word; one character of Chinese) is wider than the label.
Only what is visible is checked.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, QTextBoundaryFinder
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHeaderView,
    QLabel,
    QListView,
    QPushButton,
    QRadioButton,
    QStyle,
    QStyleOptionComboBox,
    QWidget,
)

SLACK = 2  # px of rounding between a font's advance and the painted text


def _plain(text: str, rich: bool) -> str:
    if not rich:
        return text
    doc = QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText()


def unbreakable_pieces(text: str) -> list[str]:
    """The runs of ``text`` a word-wrapped label cannot break, by the Unicode line-breaking rules Qt
    wraps with: words in English, single characters in Chinese (no spaces, a break between any two)."""
    finder = QTextBoundaryFinder(QTextBoundaryFinder.BoundaryType.Line, text)
    units = text.encode("utf-16-le")  # Qt counts positions in UTF-16 units
    pieces, start = [], 0
    end = finder.toNextBoundary()
    while end != -1:
        pieces.append(units[2 * start:2 * end].decode("utf-16-le").strip())
        start, end = end, finder.toNextBoundary()
    return [p for p in pieces if p]


def _whole_text_in_tooltip(widget: QWidget, text: str) -> bool:
    tip = _plain(widget.toolTip(), True).strip()
    return bool(tip) and text.replace("&", "").strip() in tip.replace("&", "")


def _label_problem(label: QLabel) -> str | None:
    text = label.text()
    if not text or (label.pixmap() is not None and not label.pixmap().isNull()):
        return None
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and "<" in text and bool(re.search(r"<[a-zA-Z/][^>]*>", text)))
    plain = _plain(text, rich)
    if label.buddy() is not None and not rich:  # "File &name:": the & marks the shortcut, it is not shown
        plain = plain.replace("&&", "\0").replace("&", "").replace("\0", "&")
    if getattr(label, "shown_text", None) is not None:  # ElidedLabel: shortens itself
        shown = label.shown_text()  # type: ignore[attr-defined]
        if shown != label.text() and not _whole_text_in_tooltip(label, label.text()):
            return f"shortened to {shown!r} with no tooltip holding the whole text"
        return None
    fm = QFontMetrics(label.font())
    room = label.contentsRect().width() - 2 * label.margin() - max(0, label.indent())
    if label.wordWrap():
        widest = max((fm.horizontalAdvance(w) for w in unbreakable_pieces(plain)), default=0)
        if widest > room + SLACK and not _whole_text_in_tooltip(label, plain):
            return f"a word needs {widest} px of {room}"
        return None
    need = max((fm.horizontalAdvance(line) for line in plain.splitlines()), default=0)
    if need > room + SLACK and not _whole_text_in_tooltip(label, plain):
        return f"needs {need} px, has {room}"
    return None


def _button_problem(button: QAbstractButton) -> str | None:
    text = button.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
    if not text:
        return None
    fm = QFontMetrics(button.font())
    need = fm.horizontalAdvance(text)
    if not button.icon().isNull():
        need += button.iconSize().width() + 4
    if isinstance(button, QPushButton):
        style = button.style()
        need += 2 * style.pixelMetric(QStyle.PixelMetric.PM_ButtonMargin, None, button) // 2 + 2 * style.pixelMetric(
            QStyle.PixelMetric.PM_DefaultFrameWidth, None, button)
    elif isinstance(button, QCheckBox | QRadioButton):
        need += button.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, button) + 4
    if need > button.width() + SLACK and not _whole_text_in_tooltip(button, text):
        return f"needs {need} px, has {button.width()}"
    return None


def _combo_problem(combo: QComboBox) -> str | None:
    text = combo.currentText()
    if not text or combo.isEditable():
        return None
    opt = QStyleOptionComboBox()
    combo.initStyleOption(opt)
    field = combo.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                         QStyle.SubControl.SC_ComboBoxEditField, combo)
    fm = QFontMetrics(combo.font())
    icon = combo.iconSize().width() + 4 if not combo.itemIcon(combo.currentIndex()).isNull() else 0
    need = fm.horizontalAdvance(text) + icon
    if need > field.width() + SLACK and not _whole_text_in_tooltip(combo, text):
        return f"shows {text!r}: needs {need} px, has {field.width()}"
    return None


def _header_problems(header: QHeaderView) -> list[str]:
    model = header.model()
    if model is None:
        return []
    problems = []
    horizontal = header.orientation() == Qt.Orientation.Horizontal
    if not horizontal:
        return []
    fm = QFontMetrics(header.font())
    for section in range(header.count()):
        if header.isSectionHidden(section) or header.sectionSize(section) <= 0:
            continue
        text = str(model.headerData(section, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole) or "")
        if not text:
            continue
        need = header.sectionSizeFromContents(section).width()  # what the style paints: text, margins, arrow
        if need > header.sectionSize(section) + SLACK and fm.horizontalAdvance(text) > 0:
            problems.append(f"column {text!r}: needs {need} px, has {header.sectionSize(section)}")
    return problems


def _name(widget: QWidget) -> str:
    parts: list[str] = []
    w: QWidget | None = widget
    while w is not None and len(parts) < 4:
        parts.append(w.objectName() or type(w).__name__)
        w = w.parentWidget()
    return "/".join(reversed(parts))


def cut_texts(root: QWidget) -> list[str]:
    """Every visible text under ``root`` that is cut, as "where: what"."""
    problems: list[str] = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not widget.isVisible() or widget.width() <= 0:
            continue
        problem: str | None = None
        if isinstance(widget, QLabel):
            problem = _label_problem(widget)
            text = widget.text()
        elif isinstance(widget, QAbstractButton):
            problem = _button_problem(widget)
            text = widget.text()
        elif isinstance(widget, QComboBox):
            problem = _combo_problem(widget)
            text = widget.currentText()
        elif isinstance(widget, QAbstractItemView):
            bar = widget.horizontalScrollBar()
            if isinstance(widget, QListView) and bar is not None and bar.isVisible():
                problems.append(f"{_name(widget)}: its items need a sideways scroll (elide them, with tooltips)")
            for header in (getattr(widget, "horizontalHeader", lambda: None)(),
                           getattr(widget, "header", lambda: None)()):
                if isinstance(header, QHeaderView) and header.isVisible():
                    problems.extend(f"{_name(widget)}: {p}" for p in _header_problems(header))
            continue
        if problem:
            problems.append(f"{_name(widget)} {text[:60]!r}: {problem}")
    return problems


def squeezed_views(root: QWidget, rows: int = 3) -> list[str]:
    """Visible lists, trees and tables under ``root`` with room for fewer than ``rows`` rows of text
    (at the smallest window the Engines page's tables were one row high)."""
    problems = []
    for view in root.findChildren(QAbstractItemView):
        if not view.isVisible() or isinstance(view, QHeaderView) or (isinstance(view, QListView) and view.parentWidget() is not None and isinstance(
                view.parentWidget().parentWidget(), QComboBox)):
            continue
        line = QFontMetrics(view.font()).height()
        header = getattr(view, "header", None) or getattr(view, "horizontalHeader", None)
        taken = header().height() if header is not None and header() is not None and header().isVisible() else 0
        room = view.viewport().height()
        if room < rows * line and view.height() - taken < rows * line:
            problems.append(f"{_name(view)}: room for {room // max(1, line)} row(s) of text, fewer than {rows}")
    return problems
