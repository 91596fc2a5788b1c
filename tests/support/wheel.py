"""Turns the mouse wheel over a widget the way a mouse does, and reads every value a wheel can change.

The wheel goes through the window system's path (``QTest.wheelEvent`` on the widget's window), not
``sendEvent`` to the widget: on that path Qt gives focus to a control that takes focus from the wheel
before any event filter sees the event, the trap a synthetic event sent to the widget never meets.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractSlider, QAbstractSpinBox, QComboBox, QScrollArea, QScrollBar, QWidget

NOTCH = 120  # one click of a mouse wheel, in eighths of a degree


def wheel_over(widget: QWidget, notches: int = -3) -> None:
    """Turn the wheel ``notches`` clicks (negative: towards the user, scrolling down) with the pointer
    at ``widget``'s centre; the pointer stays where it is while the page under it moves."""
    scroll_into_view(widget)
    window = widget.window()
    handle = window.windowHandle()
    assert handle is not None and widget.isVisible(), f"{widget!r} is not on screen"
    at = widget.mapTo(window, widget.rect().center())
    step = NOTCH if notches > 0 else -NOTCH
    for _ in range(abs(notches)):
        QTest.wheelEvent(handle, at, QPoint(0, step))  # delivered at once (the window system's path)


def scroll_into_view(widget: QWidget) -> None:
    """Scroll every scroll area around ``widget`` so it is on screen (where a person's pointer can be)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            parent.ensureWidgetVisible(widget)
        parent = parent.parentWidget()


def wheel_controls(root: QWidget) -> list[QWidget]:
    """The spin boxes, combo boxes and sliders under ``root`` a person sees (scroll bars are not settings)."""
    return [w for w in root.findChildren(QWidget)
            if isinstance(w, QAbstractSpinBox | QComboBox | QAbstractSlider) and not isinstance(w, QScrollBar)
            and w.isVisibleTo(root) and w.isEnabled()]


def value_of(widget: QWidget) -> object:
    """What the wheel would change: a spin box's text, a combo box's choice, a slider's position."""
    if isinstance(widget, QAbstractSpinBox):
        return widget.text()
    if isinstance(widget, QComboBox):
        return widget.currentIndex(), widget.currentText()
    assert isinstance(widget, QAbstractSlider)
    return widget.value()
