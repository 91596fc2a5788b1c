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
import os
import sys
from pathlib import Path
from typing import Protocol

from strata_gui.core.errors import StorageError


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
            raise StorageError("Windows could not protect the stored API key.",
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

    def __init__(self, path: Path, protector: Protector | None = None) -> None:
        self.path = path
        self._protector = protector or PlainProtector()

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StorageError(f"The key store {self.path} cannot be read.",
                               hint="Delete the file and enter the API keys again.",
                               details=type(exc).__name__) from exc
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

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
            raise StorageError(f"Could not save the key store {self.path}: {exc.strerror or exc}",
                               hint="Check that the config folder is writable.") from exc

    def get(self, name: str) -> str | None:
        raw = self._read().get(name)
        if raw is None:
            return None
        try:
            return self._protector.unprotect(base64.b64decode(raw)).decode("utf-8")
        except (ValueError, UnicodeDecodeError) as exc:
            raise StorageError("A stored API key cannot be read.",
                               hint="Enter the API key again.") from exc

    def set(self, name: str, value: str) -> None:
        data = self._read()
        data[name] = base64.b64encode(self._protector.protect(value.encode("utf-8"))).decode("ascii")
        self._write(data)

    def delete(self, name: str) -> None:
        data = self._read()
        if data.pop(name, None) is not None:
            self._write(data)
