"""installer/strata.nsi compiled by the real makensis around a small stand-in bundle."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from strata_gui import __version__

from .conftest import ROOT

MAKENSIS = shutil.which("makensis")
pytestmark = pytest.mark.skipif(MAKENSIS is None, reason="makensis not installed (Debian: nsis)")

UNINSTALL_KEY = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\Strata"


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    """The Windows bundle layout build.spec produces, with tiny files."""
    bundle = tmp_path / "Strata"
    (bundle / "_internal" / "resources").mkdir(parents=True)
    (bundle / "Strata.exe").write_bytes(b"MZ gui")
    (bundle / "strata-cli.exe").write_bytes(b"MZ cli")
    (bundle / "_internal" / "resources" / "strata.svg").write_text("<svg/>")
    (bundle / "install-desktop.sh").write_text("#!/bin/sh\n")  # Linux-only helper
    return bundle


def _build(payload: Path, outfile: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-installer.sh")],
        env={**os.environ, "PAYLOAD": str(payload), "OUTFILE": str(outfile), **env},
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_build_script_compiles_an_installer_and_prints_its_size(payload: Path, tmp_path: Path) -> None:
    outfile = tmp_path / "out" / f"strata-{__version__}-setup.exe"
    result = _build(payload, outfile)
    assert result.returncode == 0, result.stdout + result.stderr
    assert outfile.read_bytes()[:2] == b"MZ"  # a Windows executable
    assert re.search(rf"== installer: .*strata-{re.escape(__version__)}-setup\.exe\s+\d+ MB", result.stdout)


def test_build_script_without_a_bundle_explains_what_to_run(tmp_path: Path) -> None:
    result = _build(tmp_path / "nothing", tmp_path / "x.exe")
    assert result.returncode != 0
    assert "no bundle" in result.stderr
    assert "build-bundle.sh" in result.stderr


def _compile_verbose(payload: Path, outfile: Path, *defines: str) -> subprocess.CompletedProcess[str]:
    assert MAKENSIS is not None
    return subprocess.run(
        [MAKENSIS, "-V4", "-WX", "-DCOMPRESSOR=zlib", *defines, f"-DPAYLOAD={payload}",
         f"-DOUTFILE={outfile}", str(ROOT / "installer" / "strata.nsi")],
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_compiled_script_installs_per_user_and_registers_the_uninstaller(
    payload: Path, tmp_path: Path
) -> None:
    result = _compile_verbose(payload, tmp_path / "s.exe", "-DVERSION=1.2.3", "-DVERSION_QUAD=1.2.3.0")
    log = result.stdout
    assert result.returncode == 0, log + result.stderr

    # RequestExecutionLevel user: the manifest asks for no elevation (no UAC prompt).
    manifest = re.search(rb'requestedExecutionLevel level="(\w+)"', (tmp_path / "s.exe").read_bytes())
    assert manifest is not None and manifest.group(1) == b"asInvoker"
    assert re.search(r'InstallDir: "\$LOCALAPPDATA\\Programs\\Strata"', log)
    # Payload: the whole bundle except the Linux desktop helper.
    files = re.findall(r'^File: "([^"]+)"', log, re.MULTILINE)
    assert {"Strata.exe", "strata-cli.exe", "strata.svg"} <= set(files)
    assert "install-desktop.sh" not in files

    values = dict(re.findall(rf"^WriteReg(?:Str|DWORD): {re.escape(UNINSTALL_KEY)}\\(\w+)=(.*)$",
                             log, re.MULTILINE))
    assert values["DisplayName"] == "Strata"
    assert values["DisplayVersion"] == "1.2.3"
    assert values["Publisher"] == "Strata"
    assert values["DisplayIcon"] == r"$INSTDIR\Strata.exe,0"
    assert values["UninstallString"] == r'"$INSTDIR\uninstall.exe"'
    assert values["QuietUninstallString"] == r'"$INSTDIR\uninstall.exe" /S'
    assert values["EstimatedSize"] == "$0"
    assert "InstallLocation" in values
    # In-place upgrade: the previous version's uninstaller runs silently, in its own folder.
    assert re.search(r'ExecWait: ""\$PreviousInstallDir\\uninstall\.exe" /S _\?=\$PreviousInstallDir"', log)
    # Shortcuts: Start menu always, desktop in its own (optional) section.
    assert re.search(r'CreateShortcut: "\$SMPROGRAMS\\Strata\.lnk"', log)
    assert re.search(r'Section: "\$\(SecDesktop\)"', log)
    # Uninstaller: user data only in an unticked section.
    assert re.search(r'Section: "un\.\$\(UnSecData\)"', log)
    assert re.search(r"Install: .* 2 language tables", log)
    assert re.search(r"Uninstall: .* 2 language tables", log)


def test_language_files_define_every_string_in_both_languages() -> None:
    script = (ROOT / "installer" / "strata.nsi").read_text(encoding="utf-8")
    used = set(re.findall(r"\$\((\w+)\)", script)) - {"^NameDA"}
    per_language = {}
    for name in ("english", "simpchinese"):
        text = (ROOT / "installer" / "lang" / f"{name}.nsh").read_text(encoding="utf-8-sig")
        per_language[name] = dict(re.findall(r'^LangString (\w+) \$\{LANG_\w+\} "(.*)"$', text, re.MULTILINE))
    assert set(per_language["english"]) == set(per_language["simpchinese"]) == used
    for key, english in per_language["english"].items():
        assert per_language["simpchinese"][key] != english, f"{key} is not translated"


def test_missing_defines_stop_the_compile(payload: Path, tmp_path: Path) -> None:
    result = _compile_verbose(payload, tmp_path / "s.exe")  # no VERSION
    assert result.returncode != 0
    assert "define VERSION, VERSION_QUAD, PAYLOAD and OUTFILE" in result.stdout + result.stderr
