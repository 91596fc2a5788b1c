"""Where API keys live: never in the settings JSON, never in logs.

No OS keyring backend can be relied on here (the ``keyring`` package is not a dependency and a
headless Linux session has no Secret Service), so keys go to a file readable only by the user
(mode 0600, in the config folder), written atomically. On Windows each value is additionally
encrypted for the current user with DPAPI (``CryptProtectData``); that layer is not exercised by
the Linux test-suite.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.state_file import UnusableStateFile, read_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.logging_setup import register_secret

log = logging.getLogger(__name__)


class Protector(Protocol):
    """Turns a secret into bytes safe to write to disk, and back."""

    def protect(self, data: bytes) -> bytes: ...

    def unprotect(self, data: bytes) -> bytes: ...


class PlainProtector:
    """No extra encryption (the file permission is the protection)."""

    def protect(self, data: bytes) -> bytes:
        return data

    def unprotect(self, data: bytes) -> bytes:
        return data


class DpapiProtector:  # pragma: no cover - Windows only, untested on Linux
    """Windows DPAPI for the current user (``CryptProtectData`` / ``CryptUnprotectData``)."""

    def __init__(self) -> None:
        import ctypes
        from ctypes import wintypes

        class Blob(ctypes.Structure):
            _fields_ = [("cbData", wintypes.DWORD), ("pbData", ctypes.POINTER(ctypes.c_char))]

        self._ctypes = ctypes
        self._blob = Blob
        self._crypt32 = ctypes.WinDLL("crypt32")  # type: ignore[attr-defined,unused-ignore]
        self._kernel32 = ctypes.WinDLL("kernel32")  # type: ignore[attr-defined,unused-ignore]

    def _call(self, fn_name: str, data: bytes) -> bytes:
        ctypes = self._ctypes
        buf = ctypes.create_string_buffer(data, len(data))
        src = self._blob(len(data), ctypes.cast(buf, ctypes.POINTER(ctypes.c_char)))
        out = self._blob()
        fn = getattr(self._crypt32, fn_name)
        if not fn(ctypes.byref(src), None, None, None, None, 0, ctypes.byref(out)):
            raise StorageError(QT_TRANSLATE_NOOP("Core", "Windows could not protect the stored API key."),
                               details=f"{fn_name} failed")
        try:
            return bytes(ctypes.string_at(out.pbData, out.cbData))
        finally:
            self._kernel32.LocalFree(out.pbData)

    def protect(self, data: bytes) -> bytes:
        return self._call("CryptProtectData", data)

    def unprotect(self, data: bytes) -> bytes:
        return self._call("CryptUnprotectData", data)


def default_protector() -> Protector:
    return DpapiProtector() if sys.platform == "win32" else PlainProtector()


class FileSecretStore:
    """Named secrets in one user-only file.

    Args:
        path: The file (``secrets.json`` in the config folder).
        protector: Extra per-value encryption (DPAPI on Windows).
    """

    def __init__(self, path: Path, protector: Protector | None = None, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._protector = protector or PlainProtector()
        self._clock = clock
        # Set when the file was unreadable (moved aside) or a value could not be decoded: what to
        # tell the user. Reading never raises: a damaged key store must not break every page that
        # asks for a key (the Models page asks for the hub token on every search).
        self.notice: str | None = None

    def check(self) -> str | None:
        """Read the store once (moving a damaged file aside); the notice for the user, if any."""
        self._read()
        return self.notice

    def _read(self) -> dict[str, str]:
        try:
            data = read_state(self.path, dict)
        except OSError as exc:
            self._tell(T(QT_TRANSLATE_NOOP("Core", "The key store {path} cannot be read ({reason}), so no saved API "
                                                   "keys or hub token are used."), path=self.path,
                         reason=exc.strerror or exc))
            return {}
        except UnusableStateFile as exc:
            return self._damaged(exc.reason)
        if data is None:
            return {}
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            return self._damaged(QT_TRANSLATE_NOOP("Core", "not a JSON object of strings"))
        return data

    def _damaged(self, why: str) -> dict[str, str]:
        # Never the content in a message or the log: it holds keys. The file is kept (renamed,
        # still user-only) so nothing is lost; the next save starts a fresh one.
        target = self.path.with_name(f"{self.path.name}.corrupt-{int(self._clock())}")
        try:
            os.replace(self.path, target)
            moved = True
        except OSError:
            moved = False
        if moved:
            self._tell(T(QT_TRANSLATE_NOOP("Core", "The key store {store} was damaged ({why}), so the saved API keys "
                                                   "and hub token are not used. It was moved to {name}. Enter them "
                                                   "again."), store=self.path.name, why=why, name=target.name))
        else:
            self._tell(T(QT_TRANSLATE_NOOP("Core", "The key store {store} was damaged ({why}), so the saved API keys "
                                                   "and hub token are not used. Enter them again."),
                         store=self.path.name, why=why))
        return {}

    def _tell(self, notice: str) -> None:
        self.notice = notice
        log.warning("%s", notice)

    def _write(self, data: dict[str, str]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
            os.chmod(self.path, 0o600)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the key store {path}: {reason}"),
                                 path=self.path, reason=exc.strerror or exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the config folder is writable.")) from exc

    def get(self, name: str) -> str | None:
        raw = self._read().get(name)
        if raw is None:
            return None
        try:
            value = self._protector.unprotect(base64.b64decode(raw, validate=True)).decode("utf-8")
            register_secret(value)  # never in a log line, even when a server echoes it back
            return value
        except (ValueError, UnicodeDecodeError, StorageError):
            self._tell(f"The stored key '{name}' cannot be read, so it is not used. Enter it again.")
            return None

    def set(self, name: str, value: str) -> None:
        register_secret(value)
        data = self._read()
        data[name] = base64.b64encode(self._protector.protect(value.encode("utf-8"))).decode("ascii")
        self._write(data)

    def delete(self, name: str) -> None:
        data = self._read()
        if data.pop(name, None) is not None:
            self._write(data)
