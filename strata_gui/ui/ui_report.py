"""What the window shows, written to a file for scripts that drive the app from outside.

``STRATA_UI_REPORT=<path>`` makes the app write, a moment after start-up, a JSON description of
its main window (title, visibility, size, pages, the cover such as the first-run guide, and
what the painted window looks like: its grab's size and distinct colours) to ``<path>`` and its
own grab to ``<path>.png``. scripts/windows-under-wine.sh uses it to check that the Windows
build drew its main window under Wine; a screenshot alone cannot say which window it shows.
With ``STRATA_UI_REPORT_CLOSE=1`` the window then closes itself, as a user closing it would
(Wine's taskkill finds no process by name, and Xvfb has no window manager to ask).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from strata_gui.ui.main_window import MainWindow

log = logging.getLogger(__name__)

ENV_UI_REPORT = "STRATA_UI_REPORT"
ENV_UI_REPORT_CLOSE = "STRATA_UI_REPORT_CLOSE"


def describe_window(window: MainWindow) -> dict[str, object]:
    """The main window as a person would describe it, plus colour facts about its pixels."""
    cover = window.covered_by
    grab = window.grab().toImage()
    colours: set[int] = set()
    # A coarse grid is enough to tell a drawn window from a blank or black one.
    for y in range(0, grab.height(), 8):
        for x in range(0, grab.width(), 8):
            colours.add(grab.pixel(x, y) & 0xFFFFFF)
    black = sum(1 for y in range(0, grab.height(), 8) for x in range(0, grab.width(), 8)
                if grab.pixel(x, y) & 0xFFFFFF == 0)
    samples = max(1, len(range(0, grab.height(), 8)) * len(range(0, grab.width(), 8)))
    return {
        "title": window.windowTitle(),
        "visible": window.isVisible(),
        "size": [window.width(), window.height()],
        "pages": window.page_titles(),
        "cover": type(cover).__name__ if cover is not None else None,
        "cover_visible": bool(cover is not None and cover.isVisible()),
        "cover_size": [cover.width(), cover.height()] if cover is not None else None,
        "distinct_colours": len(colours),
        "black_fraction": round(black / samples, 3),
    }


def _write(window: MainWindow, path: Path, close: bool) -> None:
    try:
        report = describe_window(window)
        window.grab().save(str(path.with_name(path.name + ".png")))
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=2), encoding="utf-8")
        tmp.replace(path)  # a reader polling for the file never sees half of it
    except OSError:
        log.warning("could not write the UI report to %s", path, exc_info=True)
    if close:
        # After the screenshot a script takes once the report exists.
        QTimer.singleShot(3000, window, window.close)


def schedule_ui_report(window: QWidget, target: str | None, delay_ms: int = 3000, *, close: bool = False) -> None:
    """Write the report ``delay_ms`` after now (the first-run guide has drawn by then).

    ``close``: close the window 3 s after the report is written.
    """
    if not target or not isinstance(window, MainWindow):
        return
    path = Path(target)
    QTimer.singleShot(delay_ms, window, lambda: _write(window, path, close))
