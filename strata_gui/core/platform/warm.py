"""Warm start: the chat engine of the model used last, launched before the rest of Strata loads.

Loading Strata's core (~200 ms of imports on a 2-core machine) and the engine loading its model
take about as long as each other, and one does not need the other: the engine can load while
Python imports. So when a chat ends with a ready engine, the exact launch is remembered
(:func:`remember`: command line, working folder, the variables it added, and the size and time of
the engine binary and the model). The next `strata` (the app, with that model chosen last) or
`strata chat --model` that model starts that command at once (:func:`prelaunch`), with a fresh
port and key, before importing the core.

Nothing is trusted blindly. The pool builds its own command line as always, and adopts the
early process only when the two are identical (same build, model, options, variables); otherwise
the early process is stopped and the pool starts its own. An early engine nobody claims within
:data:`UNCLAIMED_S` is stopped too. A changed binary or model file, a record from another version,
or too little free memory for an engine on the processor means no early start at all.

This module uses the standard library only: it runs before the core is imported.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from strata_gui.core.base.state_file import load_cache

log = logging.getLogger(__name__)

RECORD_NAME = "warm-start.json"
VERSION = 1
KEY_VARIABLE = "LLAMA_API_KEY"  # the per-run key goes in the environment, never on the command line
UNCLAIMED_S = 60.0  # an early engine nobody asked for by then is stopped
PORT_FLAG = "--port"


def _fingerprint(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def remember(record: Path, *, model: Path, command: Sequence[str], env: Mapping[str, str],
             base_env: Mapping[str, str], cwd: Path | None, ram_bytes: int) -> None:
    """Save how the chat's engine for ``model`` was launched (called once it is ready).

    Args:
        record: The record file (in Strata's data folder).
        model: The model it loaded.
        command: Its command line (the port is replaced at the next launch).
        env: Its whole environment; only what differs from ``base_env`` is kept (the key never).
        base_env: The environment Strata was started with.
        cwd: Its working folder.
        ram_bytes: System memory it needs (engines on the processor; 0 for GPU engines).
    """
    cmd = list(command)
    if PORT_FLAG not in cmd or cmd.index(PORT_FLAG) + 1 >= len(cmd):
        return
    added = {k: v for k, v in env.items() if base_env.get(k) != v and k != KEY_VARIABLE}
    removed = sorted(k for k in base_env if k not in env and k != KEY_VARIABLE)
    files = {p: _fingerprint(p) for p in (cmd[0], str(model))}
    if None in files.values():
        return
    data = {"version": VERSION, "model": str(model), "command": cmd, "set": added, "unset": removed,
            "cwd": str(cwd) if cwd is not None else None, "files": files, "ram_bytes": int(ram_bytes),
            "saved_at": time.time()}
    tmp = record.with_name(record.name + ".tmp")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, record)
    except OSError:
        log.debug("cannot save the warm-start record %s", record, exc_info=True)


def forget(record: Path) -> None:
    """Drop the record (its engine failed to load: never launch it early again)."""
    with contextlib.suppress(OSError):
        record.unlink()


def _read(record: Path) -> dict[str, Any] | None:
    data = load_cache(record, dict)
    if data is None or data.get("version") != VERSION:
        return None
    cmd, files, env_set, unset = data.get("command"), data.get("files"), data.get("set"), data.get("unset")
    if not (isinstance(cmd, list) and cmd and all(isinstance(a, str) for a in cmd) and isinstance(files, dict)
            and isinstance(env_set, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env_set.items())
            and isinstance(unset, list) and all(isinstance(k, str) for k in unset)
            and isinstance(data.get("model"), str) and isinstance(data.get("ram_bytes", 0), int)
            and (data.get("cwd") is None or isinstance(data.get("cwd"), str))):
        return None
    if PORT_FLAG not in cmd or cmd.index(PORT_FLAG) + 1 >= len(cmd):
        return None
    return data


def _token() -> str:
    """``secrets.token_urlsafe(32)`` without importing ``secrets`` (~6 ms: random, hashlib) this early."""
    return base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode("ascii")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _available_ram() -> int | None:
    if sys.platform.startswith("linux"):  # what psutil reads, without importing it (~5 ms) this early
        try:
            with open("/proc/meminfo", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        return None


def _guarded(command: list[str]) -> tuple[list[str], Any]:
    """The same parent-death arming as every engine Strata starts (see core/platform/child_guard.py)."""
    from strata_gui.core.platform.child_guard import guarded_launch

    return guarded_launch(command, os.getpid())


class WarmEngine:
    """An engine launched early: its process, port and key, and exactly how it was launched."""

    def __init__(self, proc: subprocess.Popen[str], model: str, command: list[str], env: dict[str, str],
                 cwd: str | None, port: int, key: str, base: Mapping[str, str] | None = None) -> None:
        self.proc = proc
        self.base = dict(os.environ if base is None else base)  # Strata's own environment at the launch
        self.model = model
        self.command = command
        self.env = env
        self.cwd = cwd
        self.port = port
        self.key = key
        self.started = time.monotonic()
        self._timer: threading.Timer | None = None

    def matches(self, model: Path, command: Sequence[str], env: Mapping[str, str], cwd: Path | None,
                base: Mapping[str, str] | None = None) -> bool:
        """Whether the pool's own launch would be exactly this one.

        Variables Strata's own process changed since the early launch (``base``: its environment
        now; PySide6 sets ``PYSIDE6_OPTION_PYTHON_ENUM`` as it loads) are not the user's and say
        nothing about the engine: they are left out of the comparison.
        """
        now = dict(os.environ if base is None else base)
        drift = {k for k in self.base.keys() | now.keys() if self.base.get(k) != now.get(k)}
        ours = {k: v for k, v in self.env.items() if k not in drift}
        theirs = {k: v for k, v in env.items() if k not in drift}
        return (self.model == str(model) and list(command) == self.command and ours == theirs
                and (str(cwd) if cwd is not None else None) == self.cwd)

    def stop(self) -> None:
        """Stop it (not claimed, or not the launch the pool wanted)."""
        if self._timer is not None:
            self._timer.cancel()
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(5)
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()


class WarmSlot:
    """Holds at most one early engine until the pool claims it (:meth:`claim`) or it is stopped."""

    def __init__(self, engine: WarmEngine | None = None, *, unclaimed_s: float = UNCLAIMED_S) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        if engine is not None and unclaimed_s > 0:
            timer = threading.Timer(unclaimed_s, self._expire)
            timer.daemon = True
            engine._timer = timer
            timer.start()

    @property
    def model(self) -> str | None:
        """The model the waiting early engine loads (None: there is none)."""
        engine = self._engine
        return engine.model if engine is not None else None

    def _expire(self) -> None:
        engine = self._take()
        if engine is not None:
            log.info("early engine for %s not asked for within %.0f s: stopped", engine.model, UNCLAIMED_S)
            engine.stop()

    def _take(self) -> WarmEngine | None:
        with self._lock:
            engine, self._engine = self._engine, None
        return engine

    def claim(self, model: Path) -> WarmEngine | None:
        """The early engine when it loads ``model`` (then no longer held here), else None."""
        with self._lock:
            engine = self._engine
            if engine is None or engine.model != str(model):
                return None
            self._engine = None
        if engine._timer is not None:
            engine._timer.cancel()
        if engine.proc.poll() is not None:
            log.info("early engine for %s had exited (code %s): starting it the usual way",
                     engine.model, engine.proc.returncode)
            engine.stop()
            return None
        return engine

    def close(self) -> None:
        """Stop an engine nobody claimed (Strata is closing)."""
        engine = self._take()
        if engine is not None:
            engine.stop()


def prelaunch(record: Path, model: str | os.PathLike[str] | None, *,
              environ: Mapping[str, str] | None = None) -> WarmSlot:
    """Launch the remembered engine when it loads ``model`` and nothing it depends on changed.

    Returns a slot holding it, or an empty slot (no record, another model, a changed file, too
    little free memory, or the launch failed). Never raises.
    """
    if not model:
        return WarmSlot()
    try:
        data = _read(record)
        wanted = str(Path(model).expanduser().absolute())
        if data is None or data["model"] != wanted:
            return WarmSlot()
        if any(_fingerprint(p) != f for p, f in data["files"].items()):
            return WarmSlot()
        need = int(data.get("ram_bytes", 0))
        if need > 0:
            free = _available_ram()
            if free is None or free < need:
                return WarmSlot()
        base = dict(os.environ if environ is None else environ)
        env = {k: v for k, v in base.items() if k not in set(data["unset"])}
        env.update(data["set"])
        key = _token()
        env[KEY_VARIABLE] = key
        port = _free_port()
        command = list(data["command"])
        command[command.index(PORT_FLAG) + 1] = str(port)
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
        argv, preexec = _guarded(command)
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, encoding="utf-8", errors="replace", bufsize=1, preexec_fn=preexec,  # noqa: PLW1509
            cwd=data["cwd"], **kwargs)
    except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError):
        log.debug("no early engine start", exc_info=True)
        return WarmSlot()
    return WarmSlot(WarmEngine(proc, wanted, command, env, data["cwd"], port, key, base))
