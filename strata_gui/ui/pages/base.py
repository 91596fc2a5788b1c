"""What every page of the main window is: a widget with a title, an icon and a hook for when it is shown."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


class Page(QWidget):
    """Base of the main window's pages.

    Attributes:
        page_title: The sidebar text (subclasses translate it in ``__init__``).
        page_icon: A ``QStyle.StandardPixmap`` name used when no SVG icon is given.
    """

    page_title: str = ""
    page_icon: str = "SP_FileIcon"

    def on_shown(self) -> None:
        """Called each time the page becomes the visible one (refresh what may be stale)."""
