"""Engine processes: one base for every process Strata owns that serves something (llama-server,
sd-server, rpc-server), and the HTTP engine server of every kind.

:class:`ManagedProcess` does the launch, the log tail, the tree stop and the outcome; this module
adds what an engine is: its state (the chat shows it), state listeners, and for HTTP engines the
command line and readiness of its kind (:mod:`strata_gui.core.runtime.kinds`), load-progress
details from its log and ``/props``. Only the engine pool starts these
(:mod:`strata_gui.core.pool`); features borrow a running engine from it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import Progress, ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.platform.files import NotRegularFileError, check_regular
from strata_gui.core.platform.warm import WarmEngine, WarmSlot
from strata_gui.core.platform.warm import remember as warm_remember
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.engine_http import EngineHttp
from strata_gui.core.runtime.launch import ServerSettings, ServerState, free_loopback_port
from strata_gui.core.runtime.outcome import (
    Outcome,
    OutcomeKind,
    Phase,
    ProcessEnded,
    describe_outcome,
    listening_port,
    load_detail,
)
from strata_gui.core.runtime.process import ManagedProcess, http_ready
from strata_gui.core.runtime.process_guard import WindowsJob

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class StateChanged:
    """An engine process's new state, or a progress detail of the same state ("Loading model… 40 %")."""

    state: ServerState
    detail: str


class EngineProcess:
    """What every engine process has: one run at a time of a :class:`ManagedProcess`, its state and
    outcome, listeners of its state, its log, and stop / kill.

    Subclasses build the process (:meth:`_make_process`) and say when it is ready.
    """

    def __init__(self, subject: str, *, job: WindowsJob | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._subject = subject
        self._job = job
        self._clock = clock
        self.states: Listeners[StateChanged] = Listeners()  # every state change and progress detail
        self._process: ManagedProcess | None = None
        self._run: object | None = None  # identifies the current run: a late exit of an earlier one is ignored
        self.state = ServerState.STOPPED
        self.detail = ""
        self.outcome: Outcome | None = None
        self.started_at: float | None = None

    # -- observation -------------------------------------------------------------------------------
    @property
    def subject(self) -> str:
        """How outcomes name this process ("ROCm b1136 engine", "RPC server")."""
        return self._subject

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def process(self) -> ManagedProcess | None:
        """The process of the last start (None before the first)."""
        return self._process

    @property
    def running(self) -> bool:
        """Launched and not ended (ready or not)."""
        return self._process is not None and self._process.running and self._process.outcome is None

    def log_tail(self) -> list[str]:
        return self._process.log_tail() if self._process is not None else []

    def _set_state(self, state: ServerState, detail: str = "") -> None:
        self.state = state
        self.detail = detail
        log.info("%s: %s %s", self.subject, state.value, detail)
        self.states.emit(StateChanged(state, detail))

    def _on_end(self, run: object, outcome: Outcome) -> None:
        if run is not self._run:
            return
        self.outcome = outcome
        if outcome.kind is OutcomeKind.STOPPED:
            new_state = ServerState.STOPPED
        else:
            new_state = ServerState.FAILED if outcome.phase.before_ready else ServerState.CRASHED
        self._set_state(new_state, describe_outcome(outcome))

    # -- stop ------------------------------------------------------------------------------------
    async def wait_exited(self) -> None:
        """Return once the process has exited (at once if it never ran)."""
        if self._process is not None:
            await self._process.wait_exited()

    async def stop(self, timeout: float = 5.0) -> None:
        """Terminate the whole process tree, wait up to ``timeout``, then kill what is left."""
        if self._process is not None:
            await self._process.stop(timeout)

    def kill_now(self) -> None:
        """Blocking kill of the whole tree (app exit paths without a running loop)."""
        if self._process is not None:
            self._process.kill_now()


class ServerSupervisor(EngineProcess):
    """One engine server of any kind with a model loaded: start, readiness, load progress, state,
    outcome, stop. The command line, readiness path and launch variables are the kind's
    (``engine.kind``); each start runs a new :class:`ManagedProcess`.

    Args:
        engine: Which build to run (its ``kind`` says how).
        model: The model file (first shard of a split model).
        settings: Launch settings. With ``settings.api_key`` empty, a kind that takes a key
            (:attr:`EngineKind.takes_key`) gets a random one of this supervisor's
            (:attr:`api_key`): only Strata holds it, and every request to the engine but its
            readiness path must carry :meth:`auth_headers`.
        http: Client used for readiness and ``/props`` (not for the jobs).
        environ: Base environment; ``engine.env`` is laid over it.
        ready_timeout: Seconds to wait for readiness.
        log_lines: Size of the kept log tail.
        log_file: Also write the output there (truncated at each start).
        job: Windows job object shared by all engines of the app.
        clock: Monotonic clock (seconds).
        warm: Where an engine launched early may wait: adopted by :meth:`start` when it is exactly
            the launch asked for.
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
        log_file: Path | None = None,
        job: WindowsJob | None = None,
        clock: Callable[[], float] = time.monotonic,
        warm: WarmSlot | None = None,
    ) -> None:
        super().__init__(engine.kind.subject_for(engine.label), job=job, clock=clock)
        self._warm = warm
        self.early = False  # its process was launched early and adopted (see strata_gui.core.platform.warm)
        self.engine = engine
        self.kind = engine.kind
        self.model = model
        self.settings = settings
        # Random unless the settings name one; kept apart from the settings, which stay what was asked for.
        self.api_key = settings.api_key or (secrets.token_urlsafe(32) if self.kind.takes_key else "")
        self._http = http
        self._environ = dict(os.environ if environ is None else environ)
        self._ready_timeout = ready_timeout
        self._log_lines = log_lines
        self._log_file = log_file
        self.lines: Listeners[str] = Listeners()  # every output line, on the loop's thread (image steps)
        self._on_progress: ProgressCallback | None = None
        self.port: int | None = None
        self.n_ctx: int | None = None
        self.props: dict[str, Any] = {}  # what the server said about itself once ready (/props or its capabilities)

    @property
    def base_url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        return self.kind.command(self.engine, self.model, self._launch_settings, self.port or 0)

    @property
    def _launch_settings(self) -> ServerSettings:
        """The settings with the engine's key (what the kind's command and variables are built from)."""
        return dataclasses.replace(self.settings, api_key=self.api_key)

    # -- start ---------------------------------------------------------------------------------
    async def start(self, on_progress: ProgressCallback | None = None) -> str:
        """Launch the server and wait until it answers its kind's readiness path with 200.

        Returns:
            The base URL.

        Raises:
            ProcessEnded: It could not be started, exited, or did not become ready in time;
                :attr:`outcome` says why (the message is :func:`describe_outcome` of it).
        """
        if self._process is not None and self._process.running:
            raise ServerError(QT_TRANSLATE_NOOP("Core", "This engine is already running."))
        self._on_progress = on_progress
        self.outcome = None
        self._set_state(ServerState.STARTING, "Starting engine…")
        if not self.model.is_file():
            # A FIFO or device "model" would make the engine wait on it forever: say what it is.
            reason = ""
            try:
                check_regular(self.model)
            except NotRegularFileError as exc:
                reason = exc.message
            except OSError:
                pass
            outcome = Outcome(OutcomeKind.BAD_MODEL, Phase.STARTING, subject=self.subject, path=str(self.model),
                              reason=reason)
            self._run = None
            self._on_end(None, outcome)
            raise ProcessEnded(outcome)
        warm = self._claim_warm()
        self.port = warm.port if warm is not None else self.settings.port or free_loopback_port(self.settings.host)
        run = self._run = object()
        proc = ManagedProcess(
            self.kind.command(self.engine, self.model, self._launch_settings, self.port),
            subject=self.subject,
            env=self._launch_env(),
            cwd=self.engine.server_path.parent,
            ready=http_ready(self.engine_http, self.kind.ready_path),
            ready_timeout=self._ready_timeout, log_lines=self._log_lines, log_file=self._log_file, job=self._job,
            clock=self._clock, ready_hint=lambda line: listening_port(line) is not None)
        proc.lines.subscribe(functools.partial(self._on_line, run))
        proc.ended.subscribe(functools.partial(self._on_end, run))
        self._process = proc
        proc.spawn(warm.proc if warm is not None else None)
        self.early = warm is not None
        self.started_at = proc.started_at
        self._set_state(ServerState.LOADING, "Loading model…")
        self._report(0.0, "Loading model…")
        await proc.wait_ready()
        await self._read_props()
        self._report(1.0, "Ready")
        self._set_state(ServerState.READY, f"{self.engine.label} engine ready")
        return self.base_url

    def remember_launch(self, record: Path, ram_bytes: int) -> None:
        """Save how this (ready) engine was launched, so the next Strata can launch it early."""
        proc = self._process
        if isinstance(proc, ManagedProcess) and self.state is ServerState.READY:
            warm_remember(record, model=self.model, command=proc.command, env=proc.environment,
                          base_env=self._environ, cwd=proc.folder, ram_bytes=ram_bytes)

    def _launch_env(self) -> dict[str, str]:
        return self.kind.scrub_env({**self._environ, **self.engine.env, **self.kind.environment(self._launch_settings)})

    def _claim_warm(self) -> WarmEngine | None:
        """The engine launched early for this model, when it is exactly the launch asked for now
        (see :mod:`strata_gui.core.platform.warm`); a different one is stopped."""
        warm = self._warm.claim(self.model) if self._warm is not None else None
        if warm is None or self.settings.port:
            if warm is not None:
                warm.stop()
            return None
        own_key = self.api_key
        if self.kind.takes_key and not self.settings.api_key:
            self.api_key = warm.key
        try:
            command = self.kind.command(self.engine, self.model, self._launch_settings, warm.port)
            same = warm.matches(self.model, command, self._launch_env(), self.engine.server_path.parent, self._environ)
        except BaseException:
            warm.stop()  # claimed: nobody else would stop it
            self.api_key = own_key
            raise
        if same:
            return warm
        log.info("the engine started early for %s was launched differently than asked now: stopped it",
                 self.model.name)
        warm.stop()
        self.api_key = own_key
        return None

    def _report(self, fraction: float, message: str) -> None:
        if self._on_progress is not None:
            self._on_progress(Progress(done=fraction, total=1.0, message=message))

    async def _read_props(self) -> None:
        """What the server says about itself: llama-server's ``/props`` (``n_ctx``), else the
        readiness answer (sd-server's capabilities)."""
        engine = self.engine_http()
        about = self.kind.about_paths
        for path in ("/props", self.kind.ready_path) if about is None else about:
            try:
                data = await engine.get_json(path, timeout=5.0)
            except ServerError:
                log.debug("no %s from engine", path, exc_info=True)
                continue
            if isinstance(data, dict):
                self.props = data
                settings = data.get("default_generation_settings")
                n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
                if isinstance(n_ctx, int):
                    self.n_ctx = n_ctx
                return

    def engine_http(self) -> EngineHttp:
        """The engine's HTTP API at its address now, with its key (every kind's requests go through it)."""
        return EngineHttp(self._http, self.base_url, self.api_key)

    def auth_headers(self) -> dict[str, str]:
        """What every request to the engine carries: its key as a bearer token (none for kinds
        without a key). Readiness polls ``/health``, which llama-server leaves open."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    # -- process events (on the loop's thread) -------------------------------------------------------
    def _on_line(self, run: object, line: str) -> None:
        if run is not self._run:
            return
        self.lines.emit(line)
        port = listening_port(line)
        if port is not None:
            self.port = port
        if self.state in (ServerState.STARTING, ServerState.LOADING):
            detail = load_detail(line)
            if detail:
                self._report(0.5 if "loaded" in line else 0.1, detail)
                self._set_state(ServerState.LOADING, detail)


SupervisorFactory = Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]
