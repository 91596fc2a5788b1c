"""build.spec: what goes into the bundle and what is kept out, checked on real files."""

from __future__ import annotations

import ast
import re
import struct
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import PySide6
import pytest

from strata_gui import __version__
from strata_gui.core.config import resources

from .conftest import ROOT

PYSIDE_DIR = Path(next(iter(PySide6.__path__)))


def test_bundle_data_lands_where_resource_root_looks(spec: SimpleNamespace) -> None:
    entries = spec.data_entries(ROOT)
    bundled = {str(Path(dest) / Path(src).name) for src, dest in entries}
    # Frozen, resource_root() is the bundle folder: kernels_dir() and resources_dir() are the
    # relative folders below, so every shipped file keeps its path relative to the checkout.
    for src, _dest in entries:
        assert str(Path(src).relative_to(ROOT)) in bundled
    kernels = resources.kernels_dir().relative_to(resources.resource_root())
    res = resources.resources_dir().relative_to(resources.resource_root())
    assert str(kernels / "catalog.json") in bundled
    for name in ("strata.svg", "strata.png", "strata.ico", "linux/strata.desktop.in"):
        assert str(res / name) in bundled
    shipped_kernels = {p.relative_to(ROOT) for p in (ROOT / "kernels").rglob("*") if p.is_file()}
    assert {Path(s) for s in bundled if s.startswith("kernels")} >= {
        p for p in shipped_kernels if "__pycache__" not in p.parts
    }


def test_data_skips_sources_and_caches_and_requires_both_folders(
    spec: SimpleNamespace, tmp_path: Path
) -> None:
    (tmp_path / "kernels" / "__pycache__").mkdir(parents=True)
    (tmp_path / "kernels" / "catalog.json").write_text("{}")
    (tmp_path / "kernels" / "__pycache__" / "x.pyc").write_bytes(b"")
    (tmp_path / "resources" / "translations").mkdir(parents=True)
    (tmp_path / "resources" / "translations" / "strata_zh_CN.ts").write_text("<TS/>")
    (tmp_path / "resources" / "translations" / "strata_zh_CN.qm").write_bytes(b"qm")
    got = {(Path(src).name, dest) for src, dest in spec.data_entries(tmp_path)}
    assert got == {("catalog.json", "kernels"), ("strata_zh_CN.qm", str(Path("resources/translations")))}

    (tmp_path / "kernels" / "catalog.json").unlink()
    (tmp_path / "kernels" / "__pycache__" / "x.pyc").unlink()
    (tmp_path / "kernels" / "__pycache__").rmdir()
    (tmp_path / "kernels").rmdir()
    with pytest.raises(SystemExit, match="kernels is missing"):
        spec.data_entries(tmp_path)


def test_unused_qt_modules_are_excluded_and_used_ones_are_not(spec: SimpleNamespace) -> None:
    excluded = set(spec.EXCLUDES)
    for heavy in (
        "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets", "PySide6.Qt3DCore",
        "PySide6.QtMultimediaWidgets", "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtPdf",
        "PySide6.QtDesigner", "PySide6.QtBluetooth", "PySide6.QtVirtualKeyboard",
    ):
        assert heavy in excluded
    # Every Qt module the app imports anywhere must stay in the bundle.
    used = set()
    for source in (ROOT / "strata_gui").rglob("*.py"):
        used |= set(re.findall(r"\bPySide6\.(Qt\w+)", source.read_text(encoding="utf-8")))
    used |= {"QtCharts", "QtSvg", "QtWidgets", "QtGui", "QtCore"}
    assert not {f"PySide6.{m}" for m in used} & excluded


def test_test_only_libraries_stay_out_of_the_bundle(spec: SimpleNamespace) -> None:
    """gguf writes the tests' model files, huggingface_hub (with hf_xet) checks the hub cache
    Strata writes; the app reads GGUF headers and the cache with its own code, so none of them is
    imported anywhere in strata_gui, and the bundle leaves them out. (numpy is no longer one of
    them: the documents' vector search ships it, and the bundle must too.)"""
    assert {"gguf", "huggingface_hub", "hf_xet"} <= set(spec.EXCLUDES)
    assert "numpy" not in spec.EXCLUDES and "pypdfium2" not in spec.EXCLUDES
    imports = re.compile(r"^\s*(?:import|from)\s+(gguf|huggingface_hub|hf_xet)\b", re.MULTILINE)
    users = [str(source.relative_to(ROOT)) for source in (ROOT / "strata_gui").rglob("*.py")
             if imports.search(source.read_text(encoding="utf-8"))]
    assert users == []


def _plugin_dest(path: Path) -> str:
    return str(Path("PySide6") / path.relative_to(PYSIDE_DIR))


def _plugin_file(kind: str, name: str) -> str:
    """Plugin file name as the installed PySide6 wheel spells it on this OS."""
    if sys.platform == "win32":
        return f"{kind}/{name}.dll"
    return f"{kind}/lib{name}.so"


def test_qt_plugin_selection_on_the_installed_pyside6(spec: SimpleNamespace) -> None:
    root = PYSIDE_DIR / "Qt" / "plugins" if (PYSIDE_DIR / "Qt" / "plugins").is_dir() else PYSIDE_DIR / "plugins"
    plugins = [p for p in root.rglob("*") if p.is_file()]
    assert plugins, "PySide6 without plugins?"
    kept = {p.relative_to(root).as_posix() for p in plugins if spec.keep_entry(_plugin_dest(p))}
    # multimedia: the chat's microphone and audio decoding (Qt's FFmpeg backend)
    wanted = ["platforms/qoffscreen", "imageformats/qsvg", "imageformats/qico", "iconengines/qsvgicon",
              "multimedia/ffmpegmediaplugin"]
    unwanted = ["imageformats/qpdf", "platforminputcontexts/qtvirtualkeyboardplugin"]
    if sys.platform == "win32":
        wanted += ["platforms/qwindows", "styles/qmodernwindowsstyle"]
        unwanted += ["platforms/qdirect2d"]
    else:
        wanted += ["platforms/qxcb", "platforms/qwayland", "xcbglintegrations/qxcb-glx-integration",
                   "platforminputcontexts/ibusplatforminputcontextplugin"]
        unwanted += ["platforms/qeglfs", "platforms/qvnc", "platforms/qlinuxfb", "platformthemes/qgtk3"]
    for name in wanted:
        assert _plugin_file(*name.split("/")) in kept
    for name in unwanted:
        assert _plugin_file(*name.split("/")) not in kept
    kept_kinds = {k.split("/")[0] for k in kept}
    assert not kept_kinds & {"sqldrivers", "qmltooling", "sensors", "geoservices",
                             "egldeviceintegrations", "generic", "webview", "texttospeech"}


def test_windows_plugin_and_library_names(spec: SimpleNamespace) -> None:
    assert spec.keep_entry(r"PySide6\plugins\platforms\qwindows.dll")
    assert spec.keep_entry(r"PySide6\plugins\styles\qmodernwindowsstyle.dll")
    assert spec.keep_entry(r"PySide6\plugins\imageformats\qsvg.dll")
    assert not spec.keep_entry(r"PySide6\plugins\platforms\qdirect2d.dll")
    assert not spec.keep_entry(r"PySide6\plugins\sqldrivers\qsqlite.dll")
    assert not spec.keep_entry(r"PySide6\opengl32sw.dll")
    assert not spec.keep_entry(r"PySide6\Qt6Quick.dll")
    for needed in (r"PySide6\Qt6Charts.dll", r"PySide6\Qt6Svg.dll", r"PySide6\Qt6Network.dll",
                   r"PySide6\Qt6OpenGLWidgets.dll", r"PySide6\Qt6Core.dll"):
        assert spec.keep_entry(needed)


def test_qt_libraries_and_translations(spec: SimpleNamespace) -> None:
    lib = "PySide6/Qt/lib/"
    for name in ("libQt6Charts.so.6", "libQt6Svg.so.6", "libQt6Widgets.so.6", "libicudata.so.73",
                 "libQt6XcbQpa.so.6", "libQt6Network.so.6"):
        assert spec.keep_entry(lib + name)
    for name in ("libQt6Qml.so.6", "libQt6Quick.so.6", "libQt6Pdf.so.6",
                 "libQt6VirtualKeyboard.so.6", "libQt6EglFSDeviceIntegration.so.6",
                 "libQt6WebEngineCore.so.6"):
        assert not spec.keep_entry(lib + name)
    tr = "PySide6/Qt/translations/"
    assert spec.keep_entry(tr + "qtbase_zh_CN.qm")
    assert spec.keep_entry(tr + "qt_en.qm")
    assert not spec.keep_entry(tr + "qtbase_de.qm")
    assert not spec.keep_entry(tr + "qt_help_zh_CN.qm")
    # Not Qt files: left alone.
    assert spec.keep_entry("resources/translations/strata_zh_CN.qm")
    assert spec.keep_entry("kernels/catalog.json")


@pytest.mark.skipif(sys.platform != "linux", reason="reads ELF dependencies with ldd")
def test_libraries_only_dropped_plugins_needed_are_pruned(spec: SimpleNamespace) -> None:
    from PyInstaller.depend.bindepend import get_imports

    plugins = PYSIDE_DIR / "Qt" / "plugins"
    gtk_theme = plugins / "platformthemes" / "libqgtk3.so"  # dropped; drags in cairo/pango
    xcb = plugins / "platforms" / "libqxcb.so"  # kept; needs X11 and Qt
    kept = [(_plugin_dest(xcb), str(xcb), "BINARY")]
    seen: set[str] = set()
    for plugin in (xcb, gtk_theme):
        for name, path in get_imports(str(plugin)):
            if path and name not in seen:
                seen.add(name)
                kept.append((name, path, "BINARY"))
    dropped = [(_plugin_dest(gtk_theme), str(gtk_theme), "BINARY")]
    resolved = {e[0] for e in kept}
    assert {"libcairo.so.2", "libX11.so.6", "libQt6Gui.so.6"} <= resolved

    def linked(src: str) -> list[str]:
        return [name for name, _ in get_imports(src)]

    after = {e[0] for e in spec.prune_orphans(kept, dropped, linked)}
    assert "libcairo.so.2" not in after
    assert {"libX11.so.6", "libQt6Gui.so.6", "libQt6XcbQpa.so.6", _plugin_dest(xcb)} <= after


def test_version_resources(spec: SimpleNamespace) -> None:
    assert spec.read_version(ROOT / "strata_gui" / "__init__.py") == __version__
    assert spec.numeric_version("1.2.3rc1") == (1, 2, 3, 0)
    assert spec.numeric_version("0.4") == (0, 4, 0, 0)
    assert spec.numeric_version("2.0.1+local.7") == (2, 0, 1, 0)
    info = _eval_version_resource(spec.windows_version_text("1.2.3rc1"))
    assert (info.ffi.fileVersionMS, info.ffi.fileVersionLS) == ((1 << 16) | 2, 3 << 16)
    assert (info.ffi.productVersionMS, info.ffi.productVersionLS) == ((1 << 16) | 2, 3 << 16)
    strings = {s.name: s.val for s in info.kids[0].kids[0].kids}
    assert strings["ProductVersion"] == strings["FileVersion"] == "1.2.3rc1"
    assert strings["OriginalFilename"] == "Strata.exe"
    assert strings["ProductName"] == "Strata"
    assert len(info.toRaw()) > 200  # the binary resource PyInstaller writes into the .exe


def _eval_version_resource(text: str) -> Any:
    """Evaluate the text the way PyInstaller does on Windows, with its own classes.

    Its module imports Windows-only packages at the top, so only its class definitions are
    loaded here.
    """
    import PyInstaller.utils

    source = Path(PyInstaller.utils.__file__).parent / "win32" / "versioninfo.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    tree.body = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))]
    namespace: dict[str, Any] = {"struct": struct}
    exec(compile(tree, str(source), "exec"), namespace)
    return eval(text, namespace)


def test_launchers_start_the_declared_entry_points(spec: SimpleNamespace, tmp_path: Path) -> None:
    paths = spec.write_launchers(tmp_path)
    out = subprocess.run([sys.executable, paths["strata_cli_launcher"], "--version"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"Strata {__version__}"
    assert "from strata_gui.cli import gui_main" in Path(paths["strata_gui_launcher"]).read_text()
