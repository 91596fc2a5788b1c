"""Shared helpers for the translation tests: the catalogue, Qt's tools, and translator clean-up."""

from __future__ import annotations

import re
import shutil
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from strata_gui.ui.i18n import translations_dir

ROOT = Path(__file__).resolve().parents[2]
ZH_TS = translations_dir() / "strata_zh_CN.ts"
ZH_QM = translations_dir() / "strata_zh_CN.qm"


@dataclass(frozen=True)
class Message:
    context: str
    source: str
    translations: tuple[str, ...]  # one, or one per plural form
    state: str  # "" (finished), "unfinished", "vanished", "obsolete"


def read_ts(path: Path) -> list[Message]:
    """Every message of a Qt .ts catalogue."""
    out = []
    for ctx in ET.parse(path).getroot().iter("context"):
        name = ctx.findtext("name") or ""
        for m in ctx.iter("message"):
            tr = m.find("translation")
            assert tr is not None, f"{name}: {m.findtext('source')!r} has no <translation>"
            forms = tuple(f.text or "" for f in tr.iter("numerusform")) or (tr.text or "",)
            out.append(Message(name, m.findtext("source") or "", forms, tr.get("type", "")))
    return out


def qt_tool(name: str) -> str:
    """Path of a PySide6 tool (pyside6-lupdate, pyside6-lrelease) from this venv or PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is missing: it comes with PySide6 (pip install pyside6)"
    return found


def ui_sources() -> list[str]:
    """The files scripts/update-translations.sh scans, in its order."""
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "strata_gui" / "ui").rglob("*.py"))
    core = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "strata_gui" / "core").rglob("*.py")
                  if p.name != "texts.py" and "QT_TRANSLATE_NOOP(" in p.read_text(encoding="utf-8"))
    return [*files, "strata_gui/app.py", *core]


_PLACEHOLDER = re.compile(r"%L?\d+|%[sdn]|\{[^{}]*\}|<[^<>]+>")


def placeholders(text: str) -> list[str]:
    """Qt (%1, %n), printf (%s, %d), str.format ({0}, {name}) placeholders and HTML tags, sorted."""
    return sorted(_PLACEHOLDER.findall(text))


@pytest.fixture
def chinese(qapp: QApplication) -> Iterator[str]:
    """Chinese translators installed on the test application; English again afterwards."""
    from strata_gui.ui.i18n import install_language

    language = install_language(qapp, "zh_CN")
    yield language
    install_language(qapp, "en")
