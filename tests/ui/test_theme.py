"""The first frame's theme comes from the last run's answer; right after it, Qt's answer wins."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from strata_gui.ui.theme import apply_first_theme, apply_theme, remembered_dark, settle_theme

DARK_WINDOW, LIGHT_WINDOW = "#2b2d31", "#f6f6f7"


def _window(app: QApplication) -> str:
    return app.palette().color(QPalette.ColorRole.Window).name()


def test_a_stale_memory_of_a_dark_system_is_corrected_right_after_the_first_frame(
        qapp: QApplication, tmp_path: Path) -> None:
    file = tmp_path / "appearance"
    file.write_text("dark")  # the system was dark last time; the offscreen platform is light now
    try:
        assert remembered_dark(file) is True
        assert apply_first_theme(qapp, "system", remembered_dark(file)) is True
        assert _window(qapp) == DARK_WINDOW  # the first frame: what the system was
        assert settle_theme(qapp, "system", True, file) is False
        assert _window(qapp) == LIGHT_WINDOW  # then what it is
        assert file.read_text() == "light" and remembered_dark(file) is False
    finally:
        apply_theme(qapp, "system")


def test_an_explicit_theme_paints_at_once_and_tells_qt_after(qapp: QApplication, tmp_path: Path) -> None:
    file = tmp_path / "appearance"  # never written for an explicit theme: nothing to remember
    try:
        assert apply_first_theme(qapp, "dark", None) is True and _window(qapp) == DARK_WINDOW
        assert settle_theme(qapp, "dark", True, file) is True
        assert _window(qapp) == DARK_WINDOW and not file.exists()
    finally:
        apply_theme(qapp, "system")


def test_an_unreadable_memory_counts_as_none(tmp_path: Path) -> None:
    (tmp_path / "appearance").write_bytes(b"\xff\xfe")
    assert remembered_dark(tmp_path / "appearance") is None
    assert remembered_dark(tmp_path / "missing") is None
