"""Locates data shipped with the app: ``kernels/`` (engine catalog, GPU tables) and ``resources/``.

In a source checkout (editable install) they sit next to the ``strata_gui`` package; in a
PyInstaller bundle they are under ``sys._MEIPASS``. ``STRATA_RESOURCE_ROOT`` overrides both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def resource_root() -> Path:
    """Folder that holds ``kernels/`` and ``resources/``."""
    override = os.environ.get("STRATA_RESOURCE_ROOT")
    if override:
        return Path(override)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle)
    return Path(__file__).resolve().parents[3]  # strata_gui/core/config/resources.py → the checkout


def kernels_dir() -> Path:
    """Engine catalog, tuning-table index and GPU id tables."""
    return resource_root() / "kernels"


def resources_dir() -> Path:
    """Icons, style sheets, translations."""
    return resource_root() / "resources"
