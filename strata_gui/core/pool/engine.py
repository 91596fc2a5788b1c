"""What the engine pool keeps about each engine it runs, and about each request for one.

Plain state: the decisions about it are the scheduler's (:mod:`strata_gui.core.pool.pool`).
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.runtime.engine import Backend, EngineSpec
from strata_gui.core.runtime.kinds import EngineKind
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.supervisor import ServerSupervisor

LONGEST_IDLE_S = 24 * 86400.0
"""Idle time-outs from this long on mean "keep it loaded": the app's event loop (Qt's timers count
milliseconds in 31 bits) cannot arm a timer past ~24.8 days, and one asked for "720h" made every
later release of that engine fail."""


class Priority(enum.IntEnum):
    """Who goes first when requests wait: lower is served first, arrival order within one."""

    FOREGROUND = 0
    """What the user is doing in the app now: the chat, the Images page."""
    API = 1
    """Clients of the local API."""
    BACKGROUND = 2
    """Work that wants a quiet engine and can wait: the benchmark, engine-update trials."""


# "documents": passages of a document the user attached (or a question to them) being embedded.
USER_PRIORITY = {"chat": Priority.FOREGROUND, "images": Priority.FOREGROUND, "documents": Priority.FOREGROUND,
                 "api": Priority.API,
                 "benchmark": Priority.BACKGROUND, "engine update": Priority.BACKGROUND}
"""The priority of each pool user (others: :attr:`Priority.API`)."""


def priority_of(user: str) -> Priority:
    return USER_PRIORITY.get(user, Priority.API)


def memory_group(engine: EngineSpec) -> str:
    """Which memory an engine loads into: "ram" for engines on the processor, else "gpu"."""
    return "ram" if engine.backend is Backend.CPU else "gpu"


@dataclass(frozen=True)
class EngineKey:
    """What makes two engines the same: kind, build (and its launch variables), model, settings."""

    kind: str
    engine: str
    env: tuple[tuple[str, str], ...]
    devices: tuple[str, ...]
    model: str
    settings: ServerSettings

    @classmethod
    def of(cls, engine: EngineSpec, model: Path, settings: ServerSettings) -> EngineKey:
        return cls(engine.kind.name, engine.id, tuple(sorted(engine.env.items())), engine.devices, str(model),
                   settings)

    @property
    def model_slot(self) -> tuple[str, str]:
        """(kind, model): at most one engine per slot is loaded."""
        return self.kind, self.model


def slots_of(kind: EngineKind, settings: ServerSettings) -> int:
    """How many leases an engine serves at once: its parallel slots where the kind has them
    (llama-server's ``-np``), else one job at a time."""
    return max(1, settings.parallel) if kind.parallel_slots else 1


class PooledEngine:
    """One engine the pool runs, shared by the leases on its slots."""

    def __init__(self, serial: int, key: EngineKey, server: ServerSupervisor, estimate: int, now: float) -> None:
        self.serial = serial
        self.key = key
        self.server = server
        self.estimate = estimate
        self.slots = slots_of(server.kind, server.settings)
        self.holders: Counter[str] = Counter()  # who holds a lease, and how many
        self.exclusive = False  # one lease holds the whole engine (a benchmark)
        self.last_used = now
        self.loaded_at: float | None = None
        self.keep_alive: float | None = None  # idle time-out asked by the last lease (None: the pool's)
        self.jobs_done = 0  # jobs that finished well on it (a first job's failure blames the engine)
        self.granted = 0  # leases it has given (0: loaded for a request that has not had it yet)
        self.start_task: asyncio.Task[None] | None = None
        self.stop_task: asyncio.Task[None] | None = None
        self.closing = False  # being stopped: no lease is given any more
        self.idle_timer: asyncio.TimerHandle | None = None
        self.expires_at: float | None = None  # when the idle time-out unloads it (None: not scheduled)
        self.expired = False  # its idle time-out passed: the scheduler unloads it if still idle
        self.unload_reason: str | None = None  # asked to unload once idle (no new lease meanwhile)
        self.doomed: str | None = None  # failed: stopped at once, leases or not
        self.stopped: asyncio.Future[None] | None = None  # resolved once its process is gone
        self.started_by = ""  # the user whose request started it ("chat", "benchmark", ...)

    # -- what it is ------------------------------------------------------------------------------
    @property
    def spec(self) -> EngineSpec:
        return self.server.engine

    @property
    def kind(self) -> EngineKind:
        return self.server.kind

    @property
    def model(self) -> Path:
        return self.server.model

    @property
    def settings(self) -> ServerSettings:
        return self.server.settings

    @property
    def state(self) -> ServerState:
        return self.server.state

    @property
    def pid(self) -> int | None:
        return self.server.pid

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def ready(self) -> bool:
        return self.server.state is ServerState.READY and not self.closing

    @property
    def loading(self) -> bool:
        return self.start_task is not None

    @property
    def leases(self) -> int:
        return sum(self.holders.values())

    @property
    def busy(self) -> bool:
        return self.leases > 0

    @property
    def free_slots(self) -> int:
        return 0 if self.exclusive else max(0, self.slots - self.leases)

    @property
    def group(self) -> str:
        return memory_group(self.spec)

    def memory_bytes(self) -> int:
        """What it holds: the fit estimate, or what the process really uses when that is more
        (only engines on the processor: a GPU engine's memory is on the GPU, not in its process)."""
        if self.group != "ram" or self.pid is None:
            return self.estimate
        try:
            import psutil

            rss = int(psutil.Process(self.pid).memory_info().rss)
        except Exception:  # psutil.NoSuchProcess and kin: it just ended
            return self.estimate
        return max(self.estimate, rss)

    def expires_in(self, now: float) -> float | None:
        """Seconds until the idle time-out unloads it (None: it is in use, or never unloaded for idleness)."""
        return None if self.expires_at is None else max(0.0, self.expires_at - now)

    def describe(self) -> str:
        """"strata-test-llama-F16.gguf on CPU b7612" for messages."""
        return f"{self.model.name} on {self.spec.label}"


@dataclass(eq=False)
class Request:
    """One caller's wish, queued until the scheduler settles it (a lease, a turn, or an error).

    ``key`` None is a request for the whole pool (:meth:`EnginePool.turn`); ``target`` set is a
    request for a lease on that very engine, now or never (:meth:`EnginePool.lease_now`).
    """

    seq: int
    user: str
    priority: Priority
    future: asyncio.Future[object]
    since: float
    key: EngineKey | None = None
    spec: EngineSpec | None = None
    model: Path | None = None
    settings: ServerSettings | None = None
    exclusive: bool = False
    keep_alive: float | None = None
    wait: bool = True
    target: PooledEngine | None = None
    turn_reason: str = ""
    on_progress: ProgressCallback | None = None
    said: str | None = field(default=None)  # the waiting reason last told (None: not waiting, or loading)
    ahead: int = 0
    need: int | None = None  # the memory estimate of its engine, once asked

    @property
    def settled(self) -> bool:
        return self.future.done()
