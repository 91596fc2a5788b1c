"""One Strata app per user: a second launch brings the running window to the front.

Started twice (the icon clicked again, the app opened from the installer while it runs), Strata
would build a second window with its own engine pool, load the last model a second time (twice the
GPU memory, or a load that no longer fits), and two writers would share the settings file and
the conversation database. Instead:

* The app holds an exclusive lock on ``<data>/app.lock`` for as long as it runs. The operating
  system drops the lock when the process ends, crash included, so a stale lock cannot exist.
* Once its event loop runs, the app listens on a loopback port and writes the port and a random
  token to ``<data>/app-instance.json`` (readable by this user only).
* A second launch that cannot take the lock reads that file and asks the running app to show its
  window (one line of JSON: the token and ``"show"``), then exits. It does this before it loads
  anything: no engine is launched twice. While the first app is still starting (no file yet) it
  asks again for a few seconds; if the first app ends meanwhile, the second takes the lock and
  starts as usual.

Standard library only: the CLI calls :func:`claim_or_ask` before Qt, asyncio or the core load.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from strata_gui.core.base.state_file import load_cache
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

SHOW = "show"
# What a headless `strata serve` is asked by the app that takes its place (core/serve/handover.py).
HAND_OVER = "hand-over"
# A request is one short line; anything longer is refused unread.
MAX_REQUEST = 4096
# How long the running app waits for a request's line, and a second launch for the answer.
REQUEST_TIMEOUT_S = 2.0
# How long a second launch keeps asking an app that holds the lock but does not answer yet.
STARTING_GRACE_S = 10.0


def unanswered_text(pid: int | None) -> tuple[Text, Text]:
    """What a second launch says when the running app never answered: the message and its hint."""
    message = T(QT_TRANSLATE_NOOP("Core", "Strata is already running (process {pid}) but did not answer."),
                pid=pid if pid is not None else "?")
    hint = T(QT_TRANSLATE_NOOP("Core", "Wait for its window, or close it (end it in Task Manager, or `kill` it), "
                                       "then start Strata again."))
    return message, hint


class InstanceLock:
    """The exclusive lock the running app holds (``flock`` on POSIX, ``msvcrt.locking`` on Windows)."""

    def __init__(self, path: Path, handle: IO[bytes]) -> None:
        self.path = path
        self._handle: IO[bytes] | None = handle

    @classmethod
    def try_acquire(cls, path: Path) -> InstanceLock | None:
        """The lock, or None while another process holds it.

        Raises:
            OSError: the lock file cannot be created (the caller goes on without the guard).
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+b")  # noqa: SIM115 (held for the process's life)  # not inherited by children
        try:
            if sys.platform == "win32":
                import msvcrt

                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        return cls(path, handle)

    @property
    def held(self) -> bool:
        return self._handle is not None

    def release(self) -> None:
        """Let the next launch take over (also done by the OS when the process ends)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        with contextlib.suppress(OSError):
            if sys.platform == "win32":
                import msvcrt

                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


@dataclass(frozen=True)
class InstanceAddress:
    """Where the running app listens for a second launch."""

    pid: int
    port: int
    token: str

    def write(self, path: Path) -> None:
        """Write atomically, readable by this user only (the token is what a request must show)."""
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"pid": self.pid, "port": self.port, "token": self.token}, f)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> InstanceAddress | None:
        """The address in ``path``; None when it is missing or not one (being written, damaged)."""
        data = load_cache(path, dict)
        if data is None:
            return None
        try:
            address = cls(pid=int(data["pid"]), port=int(data["port"]), token=str(data["token"]))
        except (ValueError, KeyError, TypeError):
            return None
        return address if 0 < address.port < 65536 and address.token else None


def ask(address: InstanceAddress, action: str = SHOW, timeout: float = REQUEST_TIMEOUT_S) -> bool:
    """Ask the app at ``address`` to do ``action``; True when it answered that it did."""
    return bool((request(address, action, timeout) or {}).get("ok"))


def request(address: InstanceAddress, action: str, timeout: float = REQUEST_TIMEOUT_S) -> dict[str, Any] | None:
    """Ask the process at ``address`` to do ``action``; its whole answer (``ok`` and what it adds),
    or None when it could not be reached or gave no answer."""
    if sys.platform == "win32":
        # Windows lets only the foreground process (this one, just launched) hand the foreground to
        # another; without this the running window would only flash in the taskbar.
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.windll.user32.AllowSetForegroundWindow(address.pid)  # type: ignore[attr-defined]
    line = json.dumps({"token": address.token, "action": action}).encode() + b"\n"
    try:
        with socket.create_connection(("127.0.0.1", address.port), timeout=timeout) as conn:
            conn.sendall(line)
            answer = b""
            while not answer.endswith(b"\n") and len(answer) < MAX_REQUEST:
                chunk = conn.recv(MAX_REQUEST)
                if not chunk:
                    break
                answer += chunk
        found = json.loads(answer)
        return found if isinstance(found, dict) else None
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Claim:
    """What :func:`claim_or_ask` found: this process holds the lock, or another app was asked."""

    lock: InstanceLock | None = None
    shown_by: int | None = None  # the running app's process id, when it showed its window
    unanswered: bool = False  # another app holds the lock and never answered
    holder: int | None = None  # the running app's process id as its address file says, if any


def claim_or_ask(lock_file: Path, address_file: Path, *, grace_s: float = STARTING_GRACE_S,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Claim:
    """Take the app's lock, or have the app that holds it show its window.

    Returns a :class:`Claim`: ``lock`` set when this process is the app (keep it for the process's
    life); ``shown_by`` when the running app showed its window (exit now); ``unanswered`` when
    the running app held the lock for ``grace_s`` without answering (hung, or a very slow start).
    A lock file that cannot be created (read-only folder) gives an empty claim: start unguarded.
    """
    deadline = clock() + grace_s
    while True:
        try:
            lock = InstanceLock.try_acquire(lock_file)
        except OSError:
            log.warning("cannot create %s; a second launch will start a second app", lock_file, exc_info=True)
            return Claim()
        if lock is not None:
            return Claim(lock=lock)
        address = InstanceAddress.read(address_file)
        if address is not None and ask(address, SHOW):
            return Claim(shown_by=address.pid)
        if clock() >= deadline:
            return Claim(unanswered=True, holder=address.pid if address is not None else None)
        sleep(0.1)


Answer = dict[str, Any]
"""What an action adds to the answer (``{"ok": False, "why": ...}`` to refuse it)."""


class ActivationServer:
    """The running process's side: answers requests on a loopback port (asyncio).

    ``on_action`` is called on the event loop with each allowed action that came with the right
    token; what it returns is added to the answer (None: just ``{"ok": true}``).
    """

    def __init__(self, address_file: Path, on_action: Callable[[str], Answer | None],
                 actions: tuple[str, ...] = (SHOW,)) -> None:
        self.address_file = address_file
        self._on_action = on_action
        self.actions = actions
        self._server: asyncio.Server | None = None
        self.address: InstanceAddress | None = None

    async def start(self) -> InstanceAddress:
        """Listen on 127.0.0.1 (a free port) and write the address file.

        Raises:
            OSError: no loopback socket, or the file cannot be written.
        """
        import asyncio

        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, limit=MAX_REQUEST)
        port = int(self._server.sockets[0].getsockname()[1])
        self.address = InstanceAddress(pid=os.getpid(), port=port, token=secrets.token_urlsafe(24))
        self.address.write(self.address_file)
        log.info("answering %s on port %d", "/".join(self.actions), port)
        return self.address

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        answer: Answer = {"ok": False}
        try:
            line = await asyncio.wait_for(reader.readline(), REQUEST_TIMEOUT_S)
            asked = json.loads(line)
            token, action = str(asked.get("token", "")), str(asked.get("action", ""))
            if self.address is not None and hmac.compare_digest(token, self.address.token) and action in self.actions:
                log.info("asked on the instance port to %s", action)
                answer = {"ok": True, **(self._on_action(action) or {})}
            else:
                log.warning("refused a request on the instance port (wrong token or action)")
        except (TimeoutError, ValueError, AttributeError, asyncio.LimitOverrunError, OSError):
            log.warning("refused an unreadable request on the instance port")
        except Exception:  # the window's handler failed: the second launch is told no, the app goes on
            log.exception("showing the window for a second launch failed")
        try:
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
            writer.close()
            await writer.wait_closed()
        except (OSError, RuntimeError):
            pass

    async def aclose(self) -> None:
        """Stop listening and remove the address file (only if it is still this app's)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()
        if self.address is not None and InstanceAddress.read(self.address_file) == self.address:
            with contextlib.suppress(OSError):
                self.address_file.unlink()
