"""Start-up stays light: the chat's services load without the hub, downloads, dashboard, images or
serve modules; those are built on first use or by the warm-up, and the package surfaces still
export every name they list."""

from __future__ import annotations

import ast
import importlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import strata_gui.core as core
from strata_gui.core.app_services import AppServices
from strata_gui.core.platform.logging_setup import (
    EarlyRecords,
    close_logging,
    configure_logging,
    keep_early_records,
)

LAZY_PACKAGES = sorted(
    p.parent.name for p in Path(core.__path__[0]).glob("*/__init__.py") if "lazy_exports(" in p.read_text()
)


def _type_checking_imports(init: Path) -> dict[str, list[str]]:
    """What the ``if TYPE_CHECKING:`` block of a package ``__init__`` imports, by submodule."""
    tree = ast.parse(init.read_text())
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                found.setdefault(imp.module.rsplit(".", 1)[1], []).extend(a.name for a in imp.names)
    return found


def _lazy_map(init: Path) -> dict[str, list[str]]:
    tree = ast.parse(init.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Name) and call.func.id == "lazy_exports":
                return dict(ast.literal_eval(call.args[1]))
    raise AssertionError(f"{init}: no lazy_exports(...) call")


def test_the_heavy_packages_export_lazily() -> None:
    assert {"models", "bench", "engines", "gpu", "images", "serve"} <= set(LAZY_PACKAGES)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_lazy_package_exports_every_name_it_lists(package: str) -> None:
    init = Path(core.__path__[0]) / package / "__init__.py"
    mapping = _lazy_map(init)
    # The names type checkers see are the names the package hands out, from the same modules.
    assert _type_checking_imports(init) == mapping
    module = importlib.import_module(f"strata_gui.core.{package}")
    assert sorted(module.__all__) == sorted(n for names in mapping.values() for n in names)
    for sub, names in mapping.items():
        source = importlib.import_module(f"strata_gui.core.{package}.{sub}")
        for name in names:
            assert getattr(module, name) is getattr(source, name)
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        _ = module.NoSuchName


def test_the_chat_starts_without_the_services_only_other_pages_use(tmp_path: Path) -> None:
    """In a fresh interpreter, as at start-up: build the core, check what was imported, then warm
    the rest up and close everything."""
    later_modules = ", ".join(repr(m) for m in AppServices.LATER_MODULES)
    code = f"""
import asyncio, sys
from strata_gui.core.config.services import build_services
from strata_gui.core.app_services import build_app_services
app = build_app_services(build_services())
assert app.chat.store is not None and app.resolver is not None
# Nothing the chat does not use: the hub, downloads, the process-tree killer's psutil, the
# engine installer's archive readers, the Windows GPU replay. (What the chat does use loads here:
# the app's two httpx clients are made with the core, and with them httpx's transport stack,
# httpcore, anyio and h11, and the CA bundle. uuid is not listed: httpx imports its command-line
# client, and click with it, wherever click, rich and pygments are installed, as in this venv.)
loaded = [m for m in ({later_modules}, 'strata_gui.core.models.hub', 'strata_gui.core.models.download_manager',
                      'psutil', 'statistics', 'tarfile', 'strata_gui.core.gpu.windows')
          if m in sys.modules]
print('LOADED=' + ','.join(loaded))
print('BUILT=' + ','.join(n for n in app.LATER if app.built(n)))

async def main():
    await app.warm_up()
    print('WARM=' + ','.join(n for n in app.LATER if app.built(n)))
    await app.aclose()

asyncio.run(main())
"""
    env = dict(os.environ, STRATA_HOME=str(tmp_path / "home"))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    lines = dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)
    assert lines["LOADED"] == ""
    assert lines["BUILT"] == ""
    assert lines["WARM"].split(",") == list(AppServices.LATER)


def test_what_is_logged_before_the_log_file_opens_is_written_to_it(tmp_path: Path) -> None:
    """The GUI opens its log file once the window is usable; nothing logged before is lost."""
    root = logging.getLogger()
    level = root.level
    try:
        keep_early_records()
        logging.getLogger("strata_gui.test").info("starting up")
        logging.getLogger("strata_gui.test").warning("the GPU replay file is unreadable")
        configure_logging(tmp_path / "strata.log")
        logging.getLogger("strata_gui.test").info("window ready")
    finally:
        close_logging()
        root.setLevel(level)
    lines = (tmp_path / "strata.log").read_text(encoding="utf-8").splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "starting up", "the GPU replay file is unreadable", "window ready"]
    assert not [h for h in root.handlers if isinstance(h, EarlyRecords)]


_FIRST_PAINT = """
import enum, sys
created = []
create = enum.EnumType._create_
def recording(cls, class_name, *args, **kwargs):
    created.append(class_name)
    return create(cls, class_name, *args, **kwargs)
enum.EnumType._create_ = recording  # PySide6 makes each Qt enum with the functional API
import strata_gui.app as app_module
from strata_gui.cli import main
paint = app_module.QApplication.processEvents
def first_paint(*args):
    app_module.QApplication.processEvents = paint
    paint(*args)
    print("ENUMS=" + ",".join(created), flush=True)
app_module.QApplication.processEvents = staticmethod(first_paint)
sys.exit(main(["--exit-when-shown"]))
"""
# Enums of PySide6's Qt namespace: any one of them makes it create all 94 (12-14 ms).
_QT_NAMESPACE = {"AlignmentFlag", "ColorScheme", "WidgetAttribute", "TextInteractionFlag", "WindowType"}
# Enums of classes the first frame does not need: QStyle (~6 ms, made when setStyle hands the style
# back), QKeySequence (~4 ms, the shortcuts), QFileDialog and QUrl.
_LATER_CLASSES = {"PrimitiveElement", "StandardKey", "FileMode", "ParsingMode"}


def test_a_later_start_paints_its_first_window_without_the_qt_namespace_and_late_classes(tmp_path: Path) -> None:
    """The first start asks Qt for the system's colour scheme (and pays for the namespace); it is
    remembered, so later starts paint their first frame without it and ask right after."""
    env = dict(os.environ, STRATA_HOME=str(tmp_path / "home"), QT_QPA_PLATFORM="offscreen")
    first, later = (subprocess.run([sys.executable, "-c", _FIRST_PAINT], capture_output=True, text=True,
                                   timeout=120, env=env) for _ in range(2))
    assert first.returncode == 0 and later.returncode == 0, first.stderr + later.stderr

    def before_paint(res: subprocess.CompletedProcess[str]) -> set[str]:
        return set(next(line for line in res.stdout.splitlines() if line.startswith("ENUMS=")).split("=", 1)[1]
                   .split(","))

    assert before_paint(first) >= _QT_NAMESPACE
    assert not (_QT_NAMESPACE | _LATER_CLASSES) & before_paint(later)
    assert (tmp_path / "home" / "config" / "appearance").read_text() == "light"  # offscreen is light
