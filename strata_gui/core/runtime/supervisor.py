"""Starts, watches and stops one llama-server process.

The process is a plain :class:`subprocess.Popen` with one reader thread feeding a bounded log
tail (qasync's loop cannot run asyncio subprocesses on Windows). Everything else happens on the
event loop: the reader posts lines and the exit to it with ``call_soon_threadsafe``, readiness is
polled over HTTP (``/health`` answers 503 while loading, 200 when ready), and stopping polls the
process instead of blocking, so no executor threads are needed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from strata_gui.core.errors import ServerError
from strata_gui.core.progress import Progress, ProgressCallback
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, classify_exit, listening_port, load_detail
from strata_gui.core.runtime.process_guard import WindowsJob, linux_preexec
from strata_gui.core.settings import Settings

log = logging.getLogger(__name__)


class ServerState(enum.Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    CRASHED = "crashed"  # exited on its own after it was ready
    FAILED = "failed"  # exited, or never became ready, before it was ready

    @property
    def is_terminal(self) -> bool:
        return self in (ServerState.STOPPED, ServerState.CRASHED, ServerState.FAILED)


@dataclass(frozen=True)
class ServerSettings:
    """How to launch the server (from :class:`Settings`, overridable per launch).

    ``port`` 0 picks a free loopback port; ``gpu_layers`` is "all", "auto" or a number.
    """

    ctx_size: int = 4096
    gpu_layers: str = "all"
    flash_attention: str = "auto"
    threads: int = 0
    parallel: int = 1
    jinja: bool = True
    metrics: bool = True
    api_key: str = ""
    host: str = "127.0.0.1"
    port: int = 0
    extra_args: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, s: Settings) -> ServerSettings:
        return cls(ctx_size=s.context_size, gpu_layers=s.gpu_layers, flash_attention=s.flash_attention,
                   threads=s.threads, parallel=max(1, s.parallel_slots))


def build_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """The llama-server command line. Flags that equal the engine's default are left out, so
    builds that spell them differently still start."""
    cmd = [str(engine.server_path), "-m", str(model), "--host", settings.host, "--port", str(port),
           "-c", str(max(0, settings.ctx_size))]
    if engine.backend != "cpu":
        if settings.gpu_layers == "all":
            cmd += ["-ngl", "999"]
        elif settings.gpu_layers.isdigit():
            cmd += ["-ngl", settings.gpu_layers]
    if settings.flash_attention in ("on", "off"):
        cmd += ["-fa", settings.flash_attention]
    if settings.threads > 0:
        cmd += ["-t", str(settings.threads)]
    if settings.parallel > 0:
        cmd += ["-np", str(settings.parallel)]
    if settings.jinja:
        cmd.append("--jinja")
    if settings.metrics:
        cmd.append("--metrics")
    if settings.api_key:
        cmd += ["--api-key", settings.api_key]
    cmd += list(settings.extra_args)
    return cmd


def free_loopback_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the engine binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


_HINTS = {
    OutcomeKind.BAD_MODEL: "Check the model file, or download it again.",
    OutcomeKind.OUT_OF_MEMORY: "Try a smaller context size, fewer GPU layers or a smaller quantization.",
    OutcomeKind.MISSING_LIBRARY: "Reinstall this engine, or choose another one.",
    OutcomeKind.PORT_TAKEN: "Close the program using that port, or let Strata pick a free port.",
    OutcomeKind.NOT_FOUND: "Reinstall this engine, or choose another one.",
    OutcomeKind.TIMEOUT: "The model may be too large for this machine; try a smaller one or another engine.",
    OutcomeKind.CRASHED: "Try another engine (Vulkan or CPU); the log has details.",
}

StateListener = Callable[[ServerState, str], None]


class ServerSupervisor:
    """One managed llama-server: start, readiness, log tail, outcome, stop.

    Args:
        engine: Which build to run.
        model: The GGUF file (first shard of a split model).
        settings: Launch settings.
        http: Client used for ``/health`` and ``/props`` (not for chat).
        environ: Base environment; ``engine.env`` is laid over it.
        ready_timeout: Seconds to wait for ``/health`` 200.
        log_lines: Size of the kept log tail.
        job: Windows job object shared by all engines of the app.
        clock: Monotonic clock (seconds).
    """

    def __init__(
        self,
        engine: EngineSpec,
        model: Path,
        settings: ServerSettings,
        *,
        http: httpx.AsyncClient,
        environ: Mapping[str, str] | None = None,
        ready_timeout: float = 300.0,
        log_lines: int = 400,
        job: WindowsJob | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.model = model
        self.settings = settings
        self._http = http
        self._environ = dict(os.environ if environ is None else environ)
        self._ready_timeout = ready_timeout
        self._tail: collections.deque[str] = collections.deque(maxlen=log_lines)
        self._tail_lock = threading.Lock()
        self._job = job
        self._clock = clock
        self._listeners: list[StateListener] = []
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._exited: asyncio.Event | None = None
        self._stopping = False
        self._on_progress: ProgressCallback | None = None
        self.state = ServerState.STOPPED
        self.detail = ""
        self.outcome: Outcome | None = None
        self.port: int | None = None
        self.n_ctx: int | None = None
        self.started_at: float | None = None

    # -- observation -------------------------------------------------------------------------
    def add_listener(self, fn: StateListener) -> None:
        """Call ``fn(state, detail)`` on every state change and load-progress detail."""
        self._listeners.append(fn)

    @property
    def base_url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def command(self) -> list[str]:
        return build_command(self.engine, self.model, self.settings, self.port or 0)

    def log_tail(self) -> list[str]:
        with self._tail_lock:
            return list(self._tail)

    def _set_state(self, state: ServerState, detail: str = "") -> None:
        self.state = state
        self.detail = detail
        log.info("engine %s: %s %s", self.engine.id, state.value, detail)
        for fn in list(self._listeners):
            fn(state, detail)

    # -- start ---------------------------------------------------------------------------------
    async def start(self, on_progress: ProgressCallback | None = None) -> str:
        """Launch the server and wait until it answers ``/health`` 200.

        Returns:
            The base URL.

        Raises:
            ServerError: It could not be started, exited, or did not become ready in time;
                :attr:`outcome` says why.
        """
        if self._proc is not None and self._proc.poll() is None:
            raise ServerError("This engine is already running.")
        loop = asyncio.get_running_loop()
        self._on_progress = on_progress
        self._stopping = False
        self.outcome = None
        self._exited = asyncio.Event()
        with self._tail_lock:
            self._tail.clear()
        self._set_state(ServerState.STARTING, "Starting engine…")
        if not self.model.is_file():
            self._fail(Outcome(OutcomeKind.BAD_MODEL, f"The model file {self.model} does not exist."))
        if not self.engine.server_path.is_file():
            self._fail(Outcome(OutcomeKind.NOT_FOUND,
                               f"{self.engine.label} engine is not installed ({self.engine.server_path} is missing)."))
        self.port = self.settings.port or free_loopback_port(self.settings.host)
        cmd = build_command(self.engine, self.model, self.settings, self.port)
        env = {**self._environ, **self.engine.env}
        log.info("starting engine: %s", subprocess.list2cmdline(cmd))
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
        try:
            # Popen on the loop's thread, never an executor's: the parent-death signal is tied
            # to the thread that forks.
            proc = subprocess.Popen(  # noqa: ASYNC220 (fork is quick; see above)
                cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, encoding="utf-8", errors="replace", bufsize=1,
                preexec_fn=linux_preexec(os.getpid()),  # noqa: PLW1509 (prctl only)
                cwd=str(self.engine.server_path.parent), **kwargs,
            )
        except OSError as exc:
            self._fail(Outcome(OutcomeKind.NOT_FOUND,
                               f"{self.engine.label} engine could not be started: {exc.strerror or exc}."))
        self._proc = proc
        self.started_at = self._clock()
        if self._job is not None:
            self._job.assign(proc)
        self._reader = threading.Thread(target=self._read_log, args=(proc, loop),
                                        name=f"engine-log-{proc.pid}", daemon=True)
        self._reader.start()
        self._set_state(ServerState.LOADING, "Loading model…")
        self._report(0.0, "Loading model…")
        try:
            await self._wait_ready()
        except asyncio.CancelledError:
            await self.stop()
            raise
        await self._read_props()
        self._report(1.0, "Ready")
        self._set_state(ServerState.READY, f"{self.engine.label} engine ready")
        return self.base_url

    def _fail(self, outcome: Outcome) -> Any:
        self.outcome = outcome
        self._set_state(ServerState.FAILED, outcome.message)
        raise ServerError(outcome.message, hint=_HINTS.get(outcome.kind), details=outcome.details() or None)

    def _report(self, fraction: float, message: str) -> None:
        if self._on_progress is not None:
            self._on_progress(Progress(done=fraction, total=1.0, message=message))

    async def _wait_ready(self) -> None:
        assert self._exited is not None
        deadline = self._clock() + self._ready_timeout
        url = self.base_url + "/health"
        while True:
            if self._exited.is_set():
                self._raise_outcome()
            try:
                resp = await self._http.get(url, timeout=2.0)
                if resp.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self._exited.is_set():
                self._raise_outcome()
            if self._clock() > deadline:
                await self.stop()
                self._fail(Outcome(
                    OutcomeKind.TIMEOUT,
                    f"{self.engine.label} engine did not become ready within {self._ready_timeout:.0f} s.",
                    None, True, tuple(self.log_tail())))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), 0.1)

    def _raise_outcome(self) -> None:
        outcome = self.outcome or Outcome(OutcomeKind.CRASHED, "The engine stopped.")
        raise ServerError(outcome.message, hint=_HINTS.get(outcome.kind), details=outcome.details() or None)

    async def _read_props(self) -> None:
        try:
            resp = await self._http.get(self.base_url + "/props", timeout=5.0, headers=self.auth_headers())
            data = resp.json()
            n_ctx = data.get("default_generation_settings", {}).get("n_ctx")
            if isinstance(n_ctx, int):
                self.n_ctx = n_ctx
        except (httpx.HTTPError, ValueError, AttributeError):
            log.debug("no /props from engine", exc_info=True)

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}

    # -- log reader (its own thread) --------------------------------------------------------------
    def _read_log(self, proc: subprocess.Popen[str], loop: asyncio.AbstractEventLoop) -> None:
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                line = raw.rstrip("\r\n")
                with self._tail_lock:
                    self._tail.append(line)
                self._post(loop, self._on_line, proc, line)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdout.close()
        code = proc.wait()
        self._post(loop, self._on_exit, proc, code)

    @staticmethod
    def _post(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # loop already closed (app shutting down)
            pass

    def _on_line(self, proc: subprocess.Popen[str], line: str) -> None:
        if proc is not self._proc:
            return
        port = listening_port(line)
        if port is not None:
            self.port = port
        if self.state in (ServerState.STARTING, ServerState.LOADING):
            detail = load_detail(line)
            if detail:
                self.detail = detail
                self._report(0.5 if "loaded" in line else 0.1, detail)
                self._set_state(ServerState.LOADING, detail)

    def _on_exit(self, proc: subprocess.Popen[str], code: int) -> None:
        if proc is not self._proc:
            return
        was_ready = self.state == ServerState.READY
        if self._stopping:
            self.outcome = Outcome(OutcomeKind.STOPPED, f"{self.engine.label} engine stopped.", code,
                                   False, tuple(self.log_tail()))
            new_state = ServerState.STOPPED
        else:
            if self.outcome is None or self.outcome.kind is not OutcomeKind.TIMEOUT:
                self.outcome = classify_exit(code, self.log_tail(), during_load=not was_ready,
                                             engine_label=self.engine.label)
            new_state = ServerState.CRASHED if was_ready else ServerState.FAILED
        if self._exited is not None:
            self._exited.set()
        self._set_state(new_state, self.outcome.message)

    # -- stop ------------------------------------------------------------------------------------
    async def wait_exited(self) -> None:
        """Return once the process has exited (at once if it never ran)."""
        if self._exited is not None and self._proc is not None:
            await self._exited.wait()

    async def stop(self, timeout: float = 5.0) -> None:
        """Terminate the whole process tree, wait up to ``timeout``, then kill what is left."""
        proc = self._proc
        if proc is None:
            return
        self._stopping = self._stopping or proc.poll() is None
        procs = _tree(proc.pid)
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        deadline = time.monotonic() + timeout
        # Polling, not an executor wait: the process is not ours to await and threads must not linger.
        while any(_alive(p) for p in procs) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for p in procs:
            if _alive(p):
                log.warning("engine process %s did not stop in %.0f s; killing it", p.pid, timeout)
                with contextlib.suppress(psutil.Error):
                    p.kill()
        while proc.poll() is None:
            await asyncio.sleep(0.02)
        reader = self._reader
        while reader is not None and reader.is_alive():
            await asyncio.sleep(0.02)
        if self._exited is not None:
            # The reader posted the exit; let the loop deliver it before returning.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), 1.0)

    def kill_now(self) -> None:
        """Blocking kill of the whole tree (app exit paths without a running loop)."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        self._stopping = True
        procs = _tree(proc.pid)
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        if self._reader is not None:
            self._reader.join(5)


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _alive(p: psutil.Process) -> bool:
    try:
        return bool(p.is_running() and p.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


SupervisorFactory = Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]
