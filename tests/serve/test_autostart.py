"""Start the model server at sign-in: the XDG entry for real on this machine, the Windows command
line and desktop quoting as pure functions (the registry itself runs under Wine in platform-check),
and the Settings page's switch."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from strata_gui.core.config.services import build_services
from strata_gui.core.serve.autostart import (
    XdgAutostart,
    autostart_for,
    desktop_entry,
    serve_command,
    windows_command_line,
)
from strata_gui.ui.pages.settings_page import SettingsPage


def test_the_command_serves_headless_with_this_app(tmp_path: Path) -> None:
    assert serve_command(frozen=True, executable=r"C:\Program Files\Strata\Strata.exe") == [
        r"C:\Program Files\Strata\Strata.exe", "serve"]
    assert serve_command(frozen=False, executable="/venv/bin/python") == ["/venv/bin/python", "-m", "strata_gui",
                                                                          "serve"]
    # The console executable hands over to the windowed one beside it: no console at sign-in.
    bundle = tmp_path / "Strata Zoë"
    bundle.mkdir()
    (bundle / "Strata.exe").write_bytes(b"MZ")
    assert serve_command(frozen=True, executable=str(bundle / "strata-cli.exe")) == [str(bundle / "Strata.exe"), "serve"]
    # Windows splits a command line the way list2cmdline quotes it: spaces and quotes survive.
    assert windows_command_line([r"C:\Users\Zoë Chen\Strata\Strata.exe", "serve"]) == \
        r'"C:\Users\Zoë Chen\Strata\Strata.exe" serve'


def test_a_desktop_entry_quotes_what_needs_quoting() -> None:
    text = desktop_entry(["/home/zoë chen/Strata/strata", "serve", "--port", "8765", "100%"])
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    assert exec_line == 'Exec="/home/zoë chen/Strata/strata" serve --port 8765 100%%'
    # The spec's quoting is a subset of the shell's: a shell reads the same arguments back.
    assert shlex.split(exec_line[5:].replace("%%", "%")) == ["/home/zoë chen/Strata/strata", "serve", "--port",
                                                              "8765", "100%"]
    assert "Type=Application" in text and "NoDisplay=true" in text and "Terminal=false" in text


def test_the_xdg_entry_is_written_and_removed_without_a_trace(tmp_path: Path) -> None:
    entry = autostart_for({"XDG_CONFIG_HOME": str(tmp_path / "config")}, platform="linux")
    assert isinstance(entry, XdgAutostart) and not entry.enabled()
    entry.enable(["/opt/strata/strata", "serve"])
    assert entry.enabled() and entry.path == tmp_path / "config" / "autostart" / "strata-model-server.desktop"
    assert "Exec=/opt/strata/strata serve" in entry.path.read_text(encoding="utf-8")
    entry.disable()
    assert not entry.enabled() and list((tmp_path / "config" / "autostart").iterdir()) == []
    entry.disable()  # twice is fine


def test_settings_switch_adds_and_removes_the_entry(qtbot) -> None:  # type: ignore[no-untyped-def]
    services = build_services()
    entry = autostart_for(os.environ)  # XDG_CONFIG_HOME points into this test's folder (conftest)
    assert isinstance(entry, XdgAutostart) and str(entry.path).startswith(os.environ["XDG_CONFIG_HOME"])
    page = SettingsPage(services, apply_theme=lambda _t: None, open_path=lambda _p: None,
                        choose_folder=lambda: None,
                        start_at_login=(entry.enabled, lambda on: entry.enable([sys.executable, "-m", "strata_gui",
                                                                                "serve"]) if on else entry.disable()))
    qtbot.addWidget(page)
    page.load()
    assert not page.serve_at_login.isChecked()
    page.serve_at_login.setChecked(True)
    assert entry.enabled() and "starts when you sign in" in page.status.text()
    page.serve_at_login.setChecked(False)
    assert not entry.enabled() and "no longer starts" in page.status.text()
