"""Light / dark / system appearance: Fusion style, Qt's colour scheme, one small style sheet.

Asking Qt for the system's colour scheme (or naming any ``Qt.*`` enum) makes PySide6 create the 94
enums of its ``Qt`` namespace: 12-14 ms here, a tenth of the time to the first window. So the
first paint uses the darkness the system had on the last run (:func:`apply_first_theme`, kept in a
small file) and :func:`settle_theme` asks Qt right after it, correcting the palette in the rare
case the system switched in between. The first run asks at once.
"""

from __future__ import annotations

from pathlib import Path

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
    from PySide6.QtCore import Qt  # see the module's docstring

    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def _tell_qt(theme: str) -> None:
    """Qt's own colour scheme (native title bars and dialogs) for ``theme``."""
    from PySide6.QtCore import Qt  # see the module's docstring

    schemes = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}
    QGuiApplication.styleHints().setColorScheme(schemes.get(theme, Qt.ColorScheme.Unknown))


def _paint_with(app: QApplication, dark: bool, *, set_style: bool = True) -> None:
    if set_style:
        app.setStyle("Fusion")
    app.setPalette(_dark_palette() if dark else _light_palette())
    app.setStyleSheet(STYLE_SHEET)


def apply_theme(app: QApplication, theme: str) -> None:
    """Switch the whole app to ``theme`` ("system", "light" or "dark") at once."""
    _tell_qt(theme)
    _paint_with(app, effective_dark(theme))


def remembered_dark(file: Path) -> bool | None:
    """The system's darkness saved by :func:`settle_theme` on the last run (None: never saved)."""
    try:
        value = file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return {"dark": True, "light": False}.get(value)


def apply_first_theme(app: QApplication, theme: str, remembered: bool | None, *, set_style: bool = True) -> bool:
    """The theme for the first paint, without asking Qt when ``remembered`` can answer; returns its darkness.

    Args:
        theme: "system", "light" or "dark".
        remembered: The system's darkness on the last run (:func:`remembered_dark`), for "system".
        set_style: False when the app was made with ``-style Fusion`` already.
    """
    if theme == "system" and remembered is None:
        apply_theme(app, theme)  # the first run: ask now
        return effective_dark(theme)
    dark = theme == "dark" or (theme == "system" and bool(remembered))
    _paint_with(app, dark, set_style=set_style)
    return dark


def settle_theme(app: QApplication, theme: str, shown_dark: bool, file: Path) -> bool:
    """After the first paint: tell Qt the scheme, repaint if the system's darkness changed, remember it.

    Returns:
        Whether the app is dark now.
    """
    if theme != "system":  # (Qt starts on the system's scheme: telling it so would restyle the window)
        _tell_qt(theme)
    dark = effective_dark(theme)
    if dark != shown_dark:
        _paint_with(app, dark)
    elif theme != "system":  # Qt's scheme just changed under the palette: build it on top of that
        app.setPalette(_dark_palette() if dark else _light_palette())
    if theme == "system":
        try:
            if remembered_dark(file) != dark:
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text("dark" if dark else "light", encoding="ascii")
        except OSError:
            pass  # only the next start's first frame could be off; the settled theme is right
    return dark
