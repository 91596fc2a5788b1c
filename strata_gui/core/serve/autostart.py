"""Start the model server when the user signs in: an XDG autostart entry on Linux, a ``Run`` value
under ``HKEY_CURRENT_USER`` on Windows. Both run ``strata serve`` without a window (the windowed
``Strata`` executable runs commands headless, so Windows opens no console either) and both are
removed without a trace when the user turns it off.

The entry's text and the command line are pure functions, tested on every platform; the Windows
registry calls are the thin part (checked for real under Wine by ``strata platform-check``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from strata_gui.core.base.errors import SettingsError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

log = logging.getLogger(__name__)

ENTRY_NAME = "strata-model-server"  # the .desktop file's name on Linux
RUN_VALUE = "Strata model server"  # the Run value's name on Windows
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
_NOT_ADDED = QT_TRANSLATE_NOOP("Core", "Could not add Strata to the programs started at sign-in: {reason}")


def serve_command(*, frozen: bool | None = None, executable: str | None = None) -> list[str]:
    """The command that serves the library headless: the app's own executable with ``serve``
    (frozen), else this Python running the package."""
    exe = executable or sys.executable
    is_frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    if not is_frozen:
        return [exe, "-m", "strata_gui", "serve"]
    # The windowed executable beside the console one: at sign-in Windows then opens no console
    # window, whichever of the two turned the switch on (strata-cli.exe platform-check, the app).
    windowed = Path(exe).with_name("Strata.exe")
    if Path(exe).name.lower() == "strata-cli.exe" and windowed.is_file():
        exe = str(windowed)
    return [exe, "serve"]


def _desktop_quote(arg: str) -> str:
    """One argument of a desktop entry's ``Exec`` key (the Desktop Entry Specification's quoting)."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


def desktop_entry(command: Sequence[str]) -> str:
    """The XDG autostart entry that runs ``command`` at sign-in."""
    exec_line = " ".join(_desktop_quote(a).replace("%", "%%") for a in command)
    return ("[Desktop Entry]\n"
            "Type=Application\n"
            "Name=Strata model server\n"
            "Comment=Serves your local models to other apps (OpenAI, Ollama and Anthropic APIs)\n"
            f"Exec={exec_line}\n"
            "Terminal=false\n"
            "NoDisplay=true\n"
            "X-GNOME-Autostart-enabled=true\n")


def windows_command_line(command: Sequence[str]) -> str:
    """The Run value: one command line, quoted the way Windows splits it."""
    return subprocess.list2cmdline(list(command))


class Autostart(Protocol):
    """Whether the model server starts at sign-in, and the means to change it."""

    def enabled(self) -> bool: ...

    def enable(self, command: Sequence[str]) -> None: ...

    def disable(self) -> None: ...

    def describe(self) -> str:
        """Where the entry lives (for the settings page's tooltip and bug reports)."""
        ...


class XdgAutostart:
    """``$XDG_CONFIG_HOME/autostart/strata-model-server.desktop`` (freedesktop.org autostart)."""

    def __init__(self, config_home: Path) -> None:
        self.path = config_home / "autostart" / f"{ENTRY_NAME}.desktop"

    def enabled(self) -> bool:
        return self.path.is_file()

    def enable(self, command: Sequence[str]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(desktop_entry(command), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise SettingsError(T(_NOT_ADDED, reason=exc.strerror or exc),
                                hint=T(QT_TRANSLATE_NOOP("Core", "Check that {folder} is writable."),
                                       folder=self.path.parent)) from exc
        log.info("model server starts at sign-in: %s", self.path)

    def disable(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            raise SettingsError(T(QT_TRANSLATE_NOOP("Core", "Could not remove {path}: {reason}"), path=self.path,
                                  reason=exc.strerror or exc)) from exc

    def describe(self) -> str:
        return str(self.path)


class WindowsRunKey:
    """The ``Run`` value under ``HKEY_CURRENT_USER`` (per user; no administrator rights)."""

    def enabled(self) -> bool:
        return _run_value_exists()

    def enable(self, command: Sequence[str]) -> None:
        try:
            _set_run_value(windows_command_line(command))
        except OSError as exc:
            raise SettingsError(T(_NOT_ADDED, reason=exc)) from exc

    def disable(self) -> None:
        try:
            _delete_run_value()
        except OSError as exc:
            raise SettingsError(T(QT_TRANSLATE_NOOP("Core", "Could not remove Strata from the programs started at "
                                                            "sign-in: {reason}"), reason=exc)) from exc

    def describe(self) -> str:
        return rf"HKEY_CURRENT_USER\{RUN_KEY}\{RUN_VALUE}"


if sys.platform == "win32":  # the thin Windows layer (checked for real under Wine by platform-check)
    import winreg

    def _run_value_exists() -> bool:
        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                winreg.QueryValueEx(key, RUN_VALUE)
        except OSError:
            return False
        return True

    def _set_run_value(line: str) -> None:
        with winreg.CreateKeyEx(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            winreg.SetValueEx(key, RUN_VALUE, 0, winreg.REG_SZ, line)

    def _delete_run_value() -> None:
        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
                winreg.DeleteValue(key, RUN_VALUE)
        except FileNotFoundError:
            return
else:
    def _run_value_exists() -> bool:
        return False

    def _set_run_value(line: str) -> None:
        raise OSError("the Windows registry exists only on Windows")

    def _delete_run_value() -> None:
        return None


def autostart_for(environ: Mapping[str, str], platform: str = sys.platform) -> Autostart:
    """The sign-in mechanism of this platform."""
    if platform == "win32":
        return WindowsRunKey()
    config_home = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    return XdgAutostart(Path(config_home))
