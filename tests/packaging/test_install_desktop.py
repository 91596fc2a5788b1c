"""scripts/install-desktop.sh: the per-user menu entry on Linux, from a checkout or the bundle."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT

SCRIPT = ROOT / "scripts" / "install-desktop.sh"


def _run(script: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=60, check=False)


def _fake_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def _read_entry(path: Path) -> dict[str, str]:
    parser = configparser.RawConfigParser(delimiters=("=",), comment_prefixes=("#",), strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(path, encoding="utf-8")
    assert parser.sections() == ["Desktop Entry"]
    return dict(parser["Desktop Entry"])


def _unescape_string(value: str) -> str:
    """Desktop Entry 'string' escapes: \\s \\n \\t \\r \\\\."""
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append({"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(value[i + 1], value[i + 1]))
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _exec_argv(value: str) -> list[str]:
    """Split an Exec value into arguments by the Desktop Entry quoting rules."""
    text, args, i = _unescape_string(value), [], 0
    while i < len(text):
        if text[i] == " ":
            i += 1
            continue
        arg = []
        if text[i] == '"':
            i += 1
            while text[i] != '"':
                if text[i] == "\\":
                    assert text[i + 1] in '"`$\\', f"bad escape in {value!r}"
                    i += 1
                else:
                    assert text[i] not in "`$", f"unescaped {text[i]!r} in {value!r}"
                arg.append(text[i])
                i += 1
            i += 1
        else:
            while i < len(text) and text[i] != " ":
                assert text[i] not in '"`$\\', f"reserved character outside quotes in {value!r}"
                arg.append(text[i])
                i += 1
        args.append("".join(arg).replace("%%", "%"))
    return args


def test_entry_starts_the_given_executable_even_with_awkward_path(tmp_path: Path) -> None:
    exe = _fake_executable(tmp_path / 'My Apps $HOME "100%" `x`' / "Strata")
    prefix = tmp_path / "share"
    result = _run(SCRIPT, "--prefix", str(prefix), "--exec", str(exe))
    assert result.returncode == 0, result.stderr

    entry = _read_entry(prefix / "applications" / "strata.desktop")
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Strata"
    assert entry["Icon"] == "strata"
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";")
    assert entry["StartupWMClass"] == "Strata"
    assert "Comment[zh_CN]" in entry
    assert _exec_argv(entry["Exec"]) == [str(exe)]
    assert _unescape_string(entry["TryExec"]) == str(exe)

    icons = prefix / "icons" / "hicolor"
    assert (icons / "scalable" / "apps" / "strata.svg").read_bytes() == (ROOT / "resources" / "strata.svg").read_bytes()
    assert (icons / "256x256" / "apps" / "strata.png").read_bytes() == (ROOT / "resources" / "strata.png").read_bytes()


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                    reason="desktop-file-validate not installed (Debian: desktop-file-utils)")
def test_entry_passes_desktop_file_validate(tmp_path: Path) -> None:
    exe = _fake_executable(tmp_path / "dir with space" / "Strata")
    prefix = tmp_path / "share"
    assert _run(SCRIPT, "--prefix", str(prefix), "--exec", str(exe)).returncode == 0
    check = subprocess.run(["desktop-file-validate", str(prefix / "applications" / "strata.desktop")],
                           capture_output=True, text=True, timeout=30, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "error" not in check.stdout


def test_inside_the_unpacked_bundle_it_points_at_the_bundled_app(tmp_path: Path) -> None:
    bundle = tmp_path / "opt" / "Strata"
    resources = bundle / "_internal" / "resources"
    shutil.copytree(ROOT / "resources", resources)
    shutil.copy2(SCRIPT, bundle / "install-desktop.sh")
    exe = _fake_executable(bundle / "Strata")
    data_home = tmp_path / "xdg"

    result = _run(bundle / "install-desktop.sh", env={"XDG_DATA_HOME": str(data_home)})
    assert result.returncode == 0, result.stderr
    entry = _read_entry(data_home / "applications" / "strata.desktop")
    assert _exec_argv(entry["Exec"]) == [str(exe)]


def test_uninstall_removes_entry_and_icons_only(tmp_path: Path) -> None:
    exe = _fake_executable(tmp_path / "Strata")
    prefix = tmp_path / "share"
    other = prefix / "applications" / "other.desktop"
    assert _run(SCRIPT, "--prefix", str(prefix), "--exec", str(exe)).returncode == 0
    other.write_text("[Desktop Entry]\n")

    result = _run(SCRIPT, "--prefix", str(prefix), "--uninstall")
    assert result.returncode == 0, result.stderr
    assert not (prefix / "applications" / "strata.desktop").exists()
    assert not list((prefix / "icons").rglob("strata.*"))
    assert other.exists()


def test_missing_executable_is_refused_with_a_hint(tmp_path: Path) -> None:
    result = _run(SCRIPT, "--prefix", str(tmp_path / "share"), "--exec", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert "no Strata executable" in result.stderr
    assert "--exec" in result.stderr
    assert not (tmp_path / "share" / "applications" / "strata.desktop").exists()
