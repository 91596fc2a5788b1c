"""Light / dark / system appearance: Fusion style, Qt's colour scheme, one small style sheet."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

STYLE_SHEET = """
QWidget#sidebarPanel { background: palette(alternate-base); }
QListWidget#sidebar {
    border: none;
    padding: 8px 6px;
    font-size: 14px;
    background: palette(alternate-base);
}
QListWidget#sidebar::item { padding: 8px 10px; border-radius: 6px; margin: 1px 0; }
QListWidget#sidebar::item:selected { background: palette(highlight); color: palette(highlighted-text); }
QLabel#pageTitle { font-size: 22px; font-weight: 600; }
QLabel#sectionTitle { font-size: 15px; font-weight: 600; margin-top: 8px; }
QLabel#muted { color: palette(placeholder-text); }
QLabel#brand { font-size: 18px; font-weight: 700; padding: 14px 12px 6px 12px; }
QFrame#card { border: 1px solid palette(mid); border-radius: 8px; background: palette(base); }
QFrame#notice { border-radius: 6px; background: #dbeafe; color: #1e3a8a; }
QFrame#notice[level="warning"] { background: #fef3c7; color: #78350f; }
QFrame#notice[level="error"] { background: #fee2e2; color: #7f1d1d; }
QFrame#notice QLabel { color: inherit; }
QProgressBar { border: none; border-radius: 4px; background: palette(mid); }
QProgressBar::chunk { border-radius: 4px; background: palette(highlight); }
"""

_SCHEMES = {
    "light": Qt.ColorScheme.Light,
    "dark": Qt.ColorScheme.Dark,
    "system": Qt.ColorScheme.Unknown,
}


def _dark_palette() -> QPalette:
    p = QPalette()
    base, window, text = QColor("#1e1f22"), QColor("#2b2d31"), QColor("#e6e6e6")
    p.setColor(QPalette.ColorRole.Window, window)
    p.setColor(QPalette.ColorRole.WindowText, text)
    p.setColor(QPalette.ColorRole.Base, base)
    p.setColor(QPalette.ColorRole.AlternateBase, QColor("#232428"))
    p.setColor(QPalette.ColorRole.Text, text)
    p.setColor(QPalette.ColorRole.Button, window)
    p.setColor(QPalette.ColorRole.ButtonText, text)
    p.setColor(QPalette.ColorRole.Highlight, QColor("#e8590c"))
    p.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.ToolTipBase, base)
    p.setColor(QPalette.ColorRole.ToolTipText, text)
    p.setColor(QPalette.ColorRole.PlaceholderText, QColor("#9ca3af"))
    p.setColor(QPalette.ColorRole.Mid, QColor("#3f4147"))
    p.setColor(QPalette.ColorRole.Link, QColor("#fb923c"))
    return p


def _light_palette() -> QPalette:
    p = QPalette()
    p.setColor(QPalette.ColorRole.Window, QColor("#f6f6f7"))
    p.setColor(QPalette.ColorRole.WindowText, QColor("#111827"))
    p.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.AlternateBase, QColor("#eceef1"))
    p.setColor(QPalette.ColorRole.Text, QColor("#111827"))
    p.setColor(QPalette.ColorRole.Button, QColor("#f3f4f6"))
    p.setColor(QPalette.ColorRole.ButtonText, QColor("#111827"))
    p.setColor(QPalette.ColorRole.Highlight, QColor("#e8590c"))
    p.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.PlaceholderText, QColor("#6b7280"))
    p.setColor(QPalette.ColorRole.Mid, QColor("#d1d5db"))
    p.setColor(QPalette.ColorRole.Link, QColor("#c2410c"))
    return p


def effective_dark(theme: str) -> bool:
    """Whether ``theme`` ends up dark on this system."""
    if theme == "dark":
        return True
    if theme == "light":
        return False
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, theme: str) -> None:
    """Switch the whole app to ``theme`` ("system", "light" or "dark") at once."""
    app.setStyle("Fusion")
    hints = QGuiApplication.styleHints()
    hints.setColorScheme(_SCHEMES.get(theme, Qt.ColorScheme.Unknown))
    app.setPalette(_dark_palette() if effective_dark(theme) else _light_palette())
    app.setStyleSheet(STYLE_SHEET)
