"""Starts, watches and stops one llama-server: a thin user of :class:`ManagedProcess`.

The managed process does the launch, the log tail, the tree stop and the outcome; this module
adds llama-server's command line, ``/health`` readiness (503 while loading, 200 when ready),
load-progress details from its log, and the engine states the chat shows.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from strata_gui.core.errors import ServerError
from strata_gui.core.events import emit
from strata_gui.core.progress import Progress, ProgressCallback
from strata_gui.core.runtime.engine import EngineSpec
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

    ``port`` 0 picks a free loopback port; ``gpu_layers`` is "all", "auto" or a number;
    ``mmproj`` is the vision projector GGUF to load with the model (empty: text only).
    ``cache_type_k``/``cache_type_v`` are KV-cache types ("f16", "q8_0", "q4_0"); ``batch_size`` and
    ``ubatch_size`` 0 keep the engine's defaults; ``mmap`` False loads the model without mapping it.
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
    mmproj: str = ""
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    batch_size: int = 0
    ubatch_size: int = 0
    mmap: bool = True
    draft_model: str = ""  # a GGUF for speculative decoding ("" = none)
    draft_max: int = 0  # most tokens drafted per step (0 = the engine's default)
    draft_min: int = 0

    @classmethod
    def from_settings(cls, s: Settings) -> ServerSettings:
        return cls(ctx_size=s.context_size, gpu_layers=s.gpu_layers, flash_attention=s.flash_attention,
                   threads=s.threads, parallel=max(1, s.parallel_slots))


# llama-server's own experimental agent tools (common/arg.cpp of the pinned source): built-in file and
# shell tools, stdio MCP servers and a CORS proxy, all run with the engine's privileges and no
# approval. Strata's tools go through its own MCP host, which asks first; an engine never gets these.
# Flags that take a value, then switches. Builds read "--a_b" as "--a-b".
AGENT_TOOL_VALUE_FLAGS = frozenset({"--tools", "--tools-runtime", "--mcp-servers-config", "--mcp-servers-json"})
AGENT_TOOL_SWITCHES = frozenset({"-ag", "--agent", "--ui-mcp-proxy", "--webui-mcp-proxy"})
# The same options as environment variables (llama.cpp reads every option from LLAMA_ARG_*).
AGENT_TOOL_ENV = ("LLAMA_ARG_TOOLS", "LLAMA_ARG_TOOLS_RUNTIME", "LLAMA_ARG_MCP_SERVERS_CONFIG",
                  "LLAMA_ARG_MCP_SERVERS_JSON", "LLAMA_ARG_AGENT", "LLAMA_ARG_UI_MCP_PROXY")


def without_agent_tools(args: Sequence[str]) -> list[str]:
    """``args`` without llama-server's agent-tool flags (and their values)."""
    out: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        flag = arg.replace("_", "-") if arg.startswith("--") else arg
        if flag in AGENT_TOOL_VALUE_FLAGS:
            skip_value = True
        elif flag not in AGENT_TOOL_SWITCHES:
            out.append(arg)
            continue
        log.warning("dropped the engine option %s: Strata runs tools itself, after asking", arg)
    return out


def without_agent_tools_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that would turn llama-server's agent tools on."""
    return {k: v for k, v in env.items() if k.upper() not in AGENT_TOOL_ENV}


def build_command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
    """The llama-server command line. Flags that equal the engine's default are left out, so
    builds that spell them differently still start. llama-server's own agent tools are never
    turned on (:func:`without_agent_tools`)."""
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
    if settings.mmproj:
        cmd += ["--mmproj", settings.mmproj]
    if settings.cache_type_k != "f16":
        cmd += ["-ctk", settings.cache_type_k]
    if settings.cache_type_v != "f16":
        cmd += ["-ctv", settings.cache_type_v]
    if settings.batch_size > 0:
        cmd += ["-b", str(settings.batch_size)]
    if settings.ubatch_size > 0:
        cmd += ["-ub", str(settings.ubatch_size)]
    if settings.draft_model:
        cmd += ["--model-draft", settings.draft_model]  # every build since speculative decoding spells it so
    cmd += without_agent_tools(settings.extra_args)
    return cmd


def launch_env(settings: ServerSettings) -> dict[str, str]:
    """Variables for options whose flag differs between builds.

    Memory-mapping is off with ``--no-mmap`` on older builds and ``--load-mode none`` on newer
    ones, and each rejects the other's flag; llama.cpp reads every option from ``LLAMA_ARG_*``
    too and ignores variables it does not know, so both spellings go in the environment.

    The draft limits moved from ``--draft-max/--draft-min`` (now a start error) to
    ``--spec-draft-n-max/-min``, and newer builds need ``--spec-type draft-simple`` to use a plain
    draft GGUF at all; the new names go in the environment, which older builds ignore (they then
    draft with their default limits).
    """
    env: dict[str, str] = {}
    if not settings.mmap:
        env.update({"LLAMA_ARG_MMAP": "0", "LLAMA_ARG_LOAD_MODE": "none"})
    if settings.draft_model:
        env["LLAMA_ARG_SPEC_TYPE"] = "draft-simple"
        if settings.draft_max > 0:
            env["LLAMA_ARG_SPEC_DRAFT_N_MAX"] = str(settings.draft_max)
        if settings.draft_min > 0:
            env["LLAMA_ARG_SPEC_DRAFT_N_MIN"] = str(settings.draft_min)
    return env


def free_loopback_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the engine binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


StateListener = Callable[[ServerState, str], None]


class ServerSupervisor:
    """One managed llama-server: start, readiness, load progress, state, outcome, stop.

    Each start runs a new :class:`ManagedProcess`; this class adds what is llama-server's own:
    the command line, ``/health`` readiness, load-progress details from the log, ``/props``.

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
        self._log_lines = log_lines
        self._job = job
        self._clock = clock
        self._listeners: list[StateListener] = []
        self._process: ManagedProcess | None = None
        self._run: object | None = None  # identifies the current run (see start)
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
    def subject(self) -> str:
        """How outcomes name this engine ("ROCm engine")."""
        return f"{self.engine.label} engine"

    @property
    def base_url(self) -> str:
        return f"http://{self.settings.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def process(self) -> ManagedProcess | None:
        """The process of the last start (None before the first)."""
        return self._process

    @property
    def command(self) -> list[str]:
        return build_command(self.engine, self.model, self.settings, self.port or 0)

    def log_tail(self) -> list[str]:
        return self._process.log_tail() if self._process is not None else []

    def _set_state(self, state: ServerState, detail: str = "") -> None:
        self.state = state
        self.detail = detail
        log.info("engine %s: %s %s", self.engine.id, state.value, detail)
        emit(self._listeners, state, detail)

    # -- start ---------------------------------------------------------------------------------
    async def start(self, on_progress: ProgressCallback | None = None) -> str:
        """Launch the server and wait until it answers ``/health`` 200.

        Returns:
            The base URL.

        Raises:
            ServerError: It could not be started, exited, or did not become ready in time;
                :attr:`outcome` says why (the message is :func:`describe_outcome` of it).
        """
        if self._process is not None and self._process.running:
            raise ServerError("This engine is already running.")
        self._on_progress = on_progress
        self.outcome = None
        self._set_state(ServerState.STARTING, "Starting engine…")
        if not self.model.is_file():
            outcome = Outcome(OutcomeKind.BAD_MODEL, Phase.STARTING, subject=self.subject, path=str(self.model))
            self._run = None
            self._on_end(None, outcome)
            raise ProcessEnded(outcome)
        self.port = self.settings.port or free_loopback_port(self.settings.host)
        # Events of an earlier run (its exit posted late) must not change this run's state.
        run = self._run = object()
        proc = ManagedProcess(
            build_command(self.engine, self.model, self.settings, self.port),
            subject=self.subject, cwd=self.engine.server_path.parent,
            env=without_agent_tools_env({**self._environ, **self.engine.env, **launch_env(self.settings)}),
            ready=http_ready(self._http, lambda: self.base_url + "/health"), ready_timeout=self._ready_timeout,
            log_lines=self._log_lines, job=self._job, on_line=functools.partial(self._on_line, run),
            on_end=functools.partial(self._on_end, run),
            clock=self._clock)
        self._process = proc
        proc.spawn()
        self.started_at = proc.started_at
        self._set_state(ServerState.LOADING, "Loading model…")
        self._report(0.0, "Loading model…")
        await proc.wait_ready()
        await self._read_props()
        self._report(1.0, "Ready")
        self._set_state(ServerState.READY, f"{self.engine.label} engine ready")
        return self.base_url

    def _report(self, fraction: float, message: str) -> None:
        if self._on_progress is not None:
            self._on_progress(Progress(done=fraction, total=1.0, message=message))

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

    # -- process events (on the loop's thread) -------------------------------------------------------
    def _on_line(self, run: object, line: str) -> None:
        if run is not self._run:
            return
        port = listening_port(line)
        if port is not None:
            self.port = port
        if self.state in (ServerState.STARTING, ServerState.LOADING):
            detail = load_detail(line)
            if detail:
                self._report(0.5 if "loaded" in line else 0.1, detail)
                self._set_state(ServerState.LOADING, detail)

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


SupervisorFactory = Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]
