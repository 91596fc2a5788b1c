"""The engine pool: the one owner of every running engine process.

Features never start engines; they borrow one. :meth:`EnginePool.acquire` gives a :class:`Lease` on
an engine of a kind running a model with some launch settings on one build: the engine already
running with exactly those is shared (chat, benchmark, the local API and images use the same
process), one that is starting is waited for (ten requests during a load start it once), and
otherwise it is started. Before a start the pool makes room:

- an engine of the same kind and model with other settings is replaced (one copy of a model in
  memory: a benchmark while chatting reloads the model with the benchmark's context, and the next
  chat message reloads it back), never while it is in use;
- engines are unloaded, least recently used first, until the new one fits beside what stays
  loaded (memory per device group: the GPU's, or the machine's RAM for engines on the processor);
- when what is in use leaves no room, the start waits for a release (and says so with a
  :class:`Waiting` event), or, when the caller may not wait, fails with :class:`ServerBusyError`.

An engine nobody holds is unloaded after its idle time-out. Every change is an event on
:attr:`EnginePool.events`. The shared "run this job along the plan, move to the next engine when
one fails" loop is :func:`strata_gui.core.pool.runner.run_along_plan`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from strata_gui.core.errors import ServerBusyError
from strata_gui.core.events import Listeners
from strata_gui.core.progress import Progress, ProgressCallback, format_bytes
from strata_gui.core.runtime.engine import Backend, EngineSpec
from strata_gui.core.runtime.kinds import EngineKind
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.supervisor import EngineProcess, ServerSupervisor, StateChanged
from strata_gui.core.texts import QT_TRANSLATE_NOOP, T

log = logging.getLogger(__name__)
# Idle time-outs from this long on mean "keep it loaded": the app's event loop (Qt's timers count
# milliseconds in 31 bits) cannot arm a timer past ~24.8 days, and one asked for "720h" made every
# later release of that engine fail.
LONGEST_IDLE_S = 24 * 86400.0

Launcher = Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]
"""Makes the (not started) server of an engine: the app's real processes, with the RPC workers'
``--rpc`` added where they are in use."""


class CrashAdvisor(Protocol):
    """Asked when a job failed on an engine: a sentence when it knows why and a reload of the same
    engine should help (the RPC pool: a worker dropped), else None."""

    async def __call__(self, outcome: Outcome | None, model: Path) -> str | None: ...


class MemoryPolicy(Protocol):
    """What the pool knows about memory (the fit estimate and the device it lands on)."""

    def estimate(self, engine: EngineSpec, model: Path, settings: ServerSettings) -> int:
        """Bytes the engine will hold once loaded (weights, cache and buffers; 0: unknown)."""
        ...

    def budget(self, group: str) -> int:
        """Bytes the engines of a device group may hold together (0: no limit)."""
        ...


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


class PooledEngine:
    """One engine the pool runs (shared by every lease on it)."""

    def __init__(self, serial: int, key: EngineKey, server: ServerSupervisor, estimate: int, now: float) -> None:
        self.serial = serial
        self.key = key
        self.server = server
        self.estimate = estimate
        self.holders: Counter[str] = Counter()  # who holds a lease, and how many
        self.last_used = now
        self.loaded_at: float | None = None
        self.keep_alive: float | None = None  # idle time-out asked by the last lease (None: the pool's)
        self.jobs_done = 0  # jobs that finished well on it (a first job's failure blames the engine)
        self.start_task: asyncio.Task[None] | None = None
        self.waiters = 0  # acquirers waiting for its start, until they take their lease
        self.closing = False  # being stopped: leases are no longer given
        self.idle_timer: asyncio.TimerHandle | None = None
        self.expires_at: float | None = None  # when the idle time-out unloads it (None: not scheduled)
        self.started_by = ""  # the user whose acquire started it ("chat", "benchmark", ...)

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
    def leases(self) -> int:
        return sum(self.holders.values())

    @property
    def busy(self) -> bool:
        return self.leases > 0

    @property
    def in_use(self) -> bool:
        """Leased, loading, or loaded for acquirers that have not taken their lease yet: never
        unloaded to make room (the engine just loaded for one waiter was unloaded for another before
        that waiter took it, and back, for ever)."""
        return self.busy or self.start_task is not None or self.waiters > 0

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


@dataclass(frozen=True)
class EngineStateChanged:
    """An engine's state changed, or its load progressed (``detail``)."""

    engine: PooledEngine
    state: ServerState
    detail: str


@dataclass(frozen=True)
class EngineUnloaded:
    """The pool stopped an engine: idle too long, to make room, replaced by other settings, asked."""

    engine: PooledEngine
    reason: str


@dataclass(frozen=True)
class Waiting:
    """A start waits for room: ``reason`` says for what (shown where the start was asked)."""

    kind: EngineKind
    model: Path
    user: str
    reason: str


@dataclass(frozen=True)
class FailedOver:
    """A job moved from one engine to the next of its plan, or reloads the same one (``next`` is
    ``failed``: a crash advisor explained the failure).

    Attributes:
        reason: What happened, one sentence ("The ROCm b1136 engine crashed while loading (...).").
        details: The failed engine's log tail.
        during_job: The job had been sent (it is sent again); False: the engine did not start.
    """

    user: str
    model: Path
    failed: EngineSpec
    next: EngineSpec
    reason: str
    details: str = ""
    during_job: bool = False

    @property
    def text(self) -> str:
        """The sentence a user reads: what happened, and where the work continues."""
        if self.next is self.failed or self.next.id == self.failed.id:
            return self.reason
        return T(QT_TRANSLATE_NOOP("Core", "{reason} Continuing on {engine}."), reason=self.reason,
                 engine=self.next.label)


PoolEvent = EngineStateChanged | EngineUnloaded | Waiting | FailedOver


class Lease:
    """A borrowed engine. Release it (``async with``, or :meth:`release`) when the job is done;
    :meth:`succeeded` tells the pool the engine served the job (a first job that fails blames the
    engine, later ones may be the request's fault)."""

    def __init__(self, pool: EnginePool, engine: PooledEngine, user: str) -> None:
        self._pool = pool
        self.engine = engine
        self.user = user
        self._released = False

    @property
    def server(self) -> ServerSupervisor:
        return self.engine.server

    @property
    def spec(self) -> EngineSpec:
        return self.engine.spec

    @property
    def base_url(self) -> str:
        return self.engine.base_url

    @property
    def api_key(self) -> str:
        return self.engine.server.api_key

    def auth_headers(self) -> dict[str, str]:
        return self.engine.server.auth_headers()

    @property
    def first_job(self) -> bool:
        """No job has finished well on this engine yet."""
        return self.engine.jobs_done == 0

    def succeeded(self) -> None:
        self.engine.jobs_done += 1

    def release(self) -> None:
        """Give the engine back (safe twice). It stays loaded until idle too long or needed."""
        if not self._released:
            self._released = True
            self._pool._release(self)

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.release()


class EnginePool:
    """Every running engine, started and stopped here only.

    Args:
        launcher: Makes an engine's server (:data:`Launcher`).
        memory: Estimates and budgets (None: memory is not counted).
        idle_timeout: Seconds an engine nobody holds stays loaded (None or 0: until needed or closed);
            read at each release, so a settings change applies to the next one.
        advisor: Explains job failures a reload of the same engine fixes (the RPC pool: a worker
            dropped); the fallback loop asks it before moving on.
        clock: Monotonic clock (seconds).
    """

    def __init__(self, launcher: Launcher, *, memory: MemoryPolicy | None = None,
                 idle_timeout: Callable[[], float | None] = lambda: None,
                 advisor: CrashAdvisor | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._launcher = launcher
        self.advisor = advisor
        self._services: dict[str, EngineProcess] = {}
        self._memory = memory
        self._idle_timeout = idle_timeout
        self._clock = clock
        self._engines: dict[EngineKey, PooledEngine] = {}
        self._changed: asyncio.Condition | None = None  # made on the loop it is first used on
        self._serial = itertools.count(1)
        self._closed = False
        self._turn: tuple[str, str] | None = None  # (user, why) holding the whole pool, see turn()
        self.events: Listeners[PoolEvent] = Listeners()

    # -- looking -----------------------------------------------------------------------------------
    def engines(self, *, kind: EngineKind | None = None) -> list[PooledEngine]:
        """The engines loaded or loading (of ``kind``), oldest first."""
        return [e for e in self._engines.values() if kind is None or e.kind == kind]

    def engine_for(self, model: Path, kind: EngineKind) -> PooledEngine | None:
        """The engine of ``kind`` that has ``model`` (loaded or loading), if any."""
        slot = (kind.name, str(model))
        return next((e for e in self._engines.values() if e.key.model_slot == slot and not e.closing), None)

    def memory_in_use(self, group: str) -> int:
        return sum(e.memory_bytes() for e in self._engines.values() if e.group == group and not e.closing)

    @property
    def _cond(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    # -- borrowing -----------------------------------------------------------------------------------
    async def acquire(self, engine: EngineSpec, model: Path, settings: ServerSettings, *, user: str,
                      keep_alive: float | None = None, wait: bool = True,
                      on_progress: ProgressCallback | None = None) -> Lease:
        """Borrow the engine ``engine`` running ``model`` with ``settings``, starting it if needed.

        Args:
            user: Who borrows it ("chat", "benchmark", "api", "images"): events and messages name it.
            keep_alive: Seconds it may stay loaded idle after this lease (None: the pool's time-out;
                0: unload as soon as it is released).
            wait: False: fail with :class:`ServerBusyError` instead of waiting for room.
            on_progress: Load progress, when this call starts the engine.

        Raises:
            ProcessEnded: The engine could not start (its outcome says why).
            ServerBusyError: ``wait`` is False and engines in use leave no room.
            ServerError: The pool is closed.
        """
        key = EngineKey.of(engine, model, settings)
        cond = self._cond
        while True:
            if self._closed:
                raise ServerBusyError(QT_TRANSLATE_NOOP("Core", "Strata is shutting its engines down."))
            evicted: list[tuple[PooledEngine, str]] = []
            async with cond:
                if self._turn is not None and self._turn[0] != user:
                    # Another user has the whole pool (an engine update on trial): wait and say so.
                    if not wait:
                        raise ServerBusyError(self._turn[1], hint=QT_TRANSLATE_NOOP("Core", "Try again in a minute."),
                                              retry_after=30.0)
                    self.events.emit(Waiting(engine.kind, model, user, self._turn[1]))
                    if on_progress is not None:
                        on_progress(Progress(0, None, self._turn[1]))
                    await cond.wait()
                    continue
                entry = self._engines.get(key)
                if entry is not None and not entry.closing and entry.server.state.is_terminal \
                        and entry.start_task is None:
                    self._forget(entry)  # it died; start it again
                    entry = None
                if entry is not None and entry.ready:
                    return self._lease(entry, user, keep_alive)
                if entry is None:
                    need = self._estimate(engine, model, settings)
                    blocked = self._make_room(key, engine, need, evicted)
                    if blocked is not None:
                        if not wait:
                            raise ServerBusyError(blocked, hint=QT_TRANSLATE_NOOP(
                                "Core", "Try again when the current request is done."), retry_after=5.0)
                        self.events.emit(Waiting(engine.kind, model, user, blocked))
                        await cond.wait()
                        continue
                    entry = PooledEngine(next(self._serial), key, self._launcher(engine, model, settings), need,
                                         self._clock())
                    entry.started_by = user
                    entry.server.states.subscribe(functools.partial(self._on_state, entry))
                    self._engines[key] = entry
                    entry.start_task = asyncio.get_running_loop().create_task(
                        self._start(entry, evicted, on_progress), name=f"strata-engine-start-{entry.serial}")
                    evicted = []  # the start task stops them first
                elif entry.closing:
                    await cond.wait()
                    continue
                task = entry.start_task
                entry.waiters += 1
            for old, reason in evicted:
                await self._stop(old, reason)
            if task is None:  # it was ready a moment ago but is gone now: try again, letting it change first
                entry.waiters -= 1
                await asyncio.sleep(0.01)
                continue
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                entry.waiters -= 1
                if entry.waiters <= 0 and not task.done():
                    task.cancel()  # nobody wants it any more: stop loading
                    with contextlib.suppress(BaseException):
                        await task
                raise
            except BaseException:
                entry.waiters -= 1
                raise
            # Loaded: still a waiter (so nobody unloads it to make room) until the lease is taken.
            async with cond:
                entry.waiters -= 1
                if (entry.ready and self._engines.get(key) is entry and not self._closed
                        and (self._turn is None or self._turn[0] == user)):
                    return self._lease(entry, user, keep_alive)
            if not entry.busy and entry.waiters == 0 and entry.ready and self._engines.get(key) is entry:
                self._schedule_idle(entry)  # it was kept for this waiter, who goes round again

    def lease_if_ready(self, engine: PooledEngine, user: str) -> Lease | None:
        """A lease on ``engine`` when it is loaded and ready now, else None: never starts, loads or
        waits (work done only while an engine happens to be up, such as reading a prompt ahead).
        None too while another user holds the pool's turn, or once the pool closes."""
        if (self._closed or not engine.ready or self._engines.get(engine.key) is not engine
                or (self._turn is not None and self._turn[0] != user)):
            return None
        return self._lease(engine, user, None)

    @contextlib.asynccontextmanager
    async def turn(self, user: str, reason: str) -> AsyncIterator[None]:
        """Hold the whole pool for ``user`` (an engine update's trial): first wait until no engine
        is in use by anyone else (a streaming reply finishes) or loading, then every other user's
        :meth:`acquire` waits (told ``reason`` by a :class:`Waiting` event and its progress) or,
        when it may not wait, fails with :class:`ServerBusyError`, until the block ends."""
        cond = self._cond
        async with cond:
            while self._turn is not None:
                await cond.wait()
            self._turn = (user, reason)
            try:
                # In use by another user, or loading for one (its lease would follow at once).
                while any(set(e.holders) - {user} or e.start_task is not None for e in self._engines.values()):
                    await cond.wait()
            except BaseException:
                self._turn = None
                cond.notify_all()
                raise
        try:
            yield
        finally:
            self._turn = None
            self._notify()

    def busy_users(self) -> set[str]:
        """Who holds an engine now ("chat", "api" ...)."""
        return {u for e in self._engines.values() for u in e.holders}

    def _lease(self, entry: PooledEngine, user: str, keep_alive: float | None) -> Lease:
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
            entry.idle_timer = None
        entry.expires_at = None
        entry.holders[user] += 1
        entry.last_used = self._clock()
        if keep_alive is not None:
            entry.keep_alive = keep_alive
        return Lease(self, entry, user)

    def _release(self, lease: Lease) -> None:
        entry = lease.engine
        entry.holders[lease.user] -= 1
        if entry.holders[lease.user] <= 0:
            del entry.holders[lease.user]
        entry.last_used = self._clock()
        if not entry.busy and not self._closed:
            if entry.server.state.is_terminal:
                self._forget(entry)
            else:
                self._schedule_idle(entry)
        self._notify()

    def _notify(self) -> None:
        """Wake waiting acquirers (on the loop, without holding anything)."""
        cond = self._changed
        if cond is None:
            return

        async def wake() -> None:
            async with cond:
                cond.notify_all()

        with contextlib.suppress(RuntimeError):  # no running loop: nobody can be waiting
            asyncio.get_running_loop().create_task(wake(), name="strata-pool-notify")

    # -- room ----------------------------------------------------------------------------------------
    def _estimate(self, engine: EngineSpec, model: Path, settings: ServerSettings) -> int:
        if self._memory is None:
            return 0
        try:
            return max(0, int(self._memory.estimate(engine, model, settings)))
        except Exception:  # an unreadable model is the start's to report, not the estimate's
            log.debug("no memory estimate for %s", model, exc_info=True)
            return 0

    def _make_room(self, key: EngineKey, engine: EngineSpec, need: int,
                   evicted: list[tuple[PooledEngine, str]]) -> str | None:
        """Choose the engines to unload for ``key`` (appended to ``evicted``, and marked closing);
        returns why the start must wait instead (None: it may start now)."""
        others = [e for e in self._engines.values() if not e.closing]
        same_slot = [e for e in others if e.key.model_slot == key.model_slot]
        for e in same_slot:
            if e.in_use:
                users = ", ".join(sorted(e.holders)) or QT_TRANSLATE_NOOP("Core", "a start")
                return T(QT_TRANSLATE_NOOP("Core", "{model} is loaded with other settings and in use by the {users}; "
                                                   "it reloads when that is done."), model=e.model.name, users=users)
        chosen: list[PooledEngine] = list(same_slot)
        group = memory_group(engine)
        budget = self._memory.budget(group) if self._memory is not None else 0
        if budget > 0 and need > 0:
            staying = [e for e in others if e.group == group and e not in chosen]
            used = sum(e.memory_bytes() for e in staying)
            idle = sorted((e for e in staying if not e.in_use), key=lambda e: e.last_used)
            while used + need > budget and idle:
                victim = idle.pop(0)
                chosen.append(victim)
                used -= victim.memory_bytes()
            if used + need > budget and any(e.in_use for e in staying):
                holders = sorted({u for e in staying for u in e.holders}
                                 or {QT_TRANSLATE_NOOP("Core", "another start")})
                return T(QT_TRANSLATE_NOOP("Core", "Waiting for memory: {engine} needs about {need} and the engines in "
                                                   "use by the {users} hold {used} of {budget}."),
                         engine=engine.label, need=format_bytes(need), users=", ".join(holders),
                         used=format_bytes(used), budget=format_bytes(budget))
        for e in chosen:
            e.closing = True
            reason = ("reloaded with other settings" if e in same_slot
                      else f"unloaded to make room for {key.model.rsplit('/', 1)[-1]}")
            evicted.append((e, reason))
        return None

    # -- start / stop --------------------------------------------------------------------------------
    async def _start(self, entry: PooledEngine, evicted: list[tuple[PooledEngine, str]],
                     on_progress: ProgressCallback | None) -> None:
        try:
            for old, reason in evicted:
                await self._stop(old, reason)
            await entry.server.start(on_progress)
            entry.loaded_at = self._clock()
        except BaseException:
            with contextlib.suppress(Exception):
                await entry.server.stop()
            async with self._cond:
                self._forget(entry)
                self._cond.notify_all()
            raise
        finally:
            entry.start_task = None
        async with self._cond:
            self._cond.notify_all()
        if not entry.busy and entry.waiters == 0:
            self._schedule_idle(entry)

    async def _stop(self, entry: PooledEngine, reason: str) -> None:
        entry.closing = True
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
            entry.idle_timer = None
        log.info("unloading %s: %s", entry.describe(), reason)
        try:
            await entry.server.stop()
        finally:
            async with self._cond:
                self._forget(entry)
                self._cond.notify_all()
            self.events.emit(EngineUnloaded(entry, reason))

    def _forget(self, entry: PooledEngine) -> None:
        if self._engines.get(entry.key) is entry:
            del self._engines[entry.key]
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
            entry.idle_timer = None

    def _schedule_idle(self, entry: PooledEngine) -> None:
        timeout = entry.keep_alive if entry.keep_alive is not None else self._idle_timeout()
        if timeout is None or (timeout <= 0 and entry.keep_alive is None) or timeout >= LONGEST_IDLE_S:
            return  # kept until something else unloads it
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
        loop = asyncio.get_running_loop()
        entry.idle_timer = loop.call_later(max(0.0, timeout), self._idle_expired, entry)
        entry.expires_at = self._clock() + max(0.0, timeout)

    def _idle_expired(self, entry: PooledEngine) -> None:
        entry.idle_timer = None
        entry.expires_at = None
        if entry.busy or entry.closing or self._engines.get(entry.key) is not entry:
            return
        idle = self._clock() - entry.last_used
        asyncio.get_running_loop().create_task(
            self._stop(entry, f"idle for {idle:.0f} s"), name=f"strata-engine-idle-{entry.serial}")

    def _on_state(self, entry: PooledEngine, change: StateChanged) -> None:
        state = change.state
        self.events.emit(EngineStateChanged(entry, state, change.detail))
        if state.is_terminal and not entry.closing and entry.start_task is None and not entry.busy:
            self._forget(entry)  # died while idle: nothing is loaded any more

    # -- processes that serve no model (the RPC server lending this machine) ---------------------------------
    async def start_service(self, name: str, process: EngineProcess, start: Callable[[], Awaitable[None]]) -> None:
        """Run ``process`` under ``name`` (one at a time per name: a running one is stopped first)
        by awaiting ``start``; it runs until :meth:`stop_service` or the pool closes."""
        await self.stop_service(name)
        if self._closed:
            raise ServerBusyError(QT_TRANSLATE_NOOP("Core", "Strata is shutting its engines down."))
        self._services[name] = process
        try:
            await start()
        except BaseException:
            self._services.pop(name, None)
            with contextlib.suppress(Exception):
                await process.stop()
            raise

    def service(self, name: str) -> EngineProcess | None:
        process = self._services.get(name)
        return process if process is not None and process.running else None

    async def stop_service(self, name: str) -> None:
        process = self._services.pop(name, None)
        if process is not None:
            await process.stop()

    # -- letting go ----------------------------------------------------------------------------------
    async def unload(self, engine: PooledEngine, reason: str = "unloaded", *, wait: bool = True) -> bool:
        """Stop ``engine`` once nobody holds it (at once when ``wait`` is False and it is idle).

        Returns:
            False when it is in use and ``wait`` is False (nothing was done).
        """
        cond = self._cond
        async with cond:
            while engine.busy or engine.start_task is not None:
                if not wait:
                    return False
                await cond.wait()
            if engine.closing or self._engines.get(engine.key) is not engine:
                return True
            engine.closing = True
        await self._stop(engine, reason)
        return True

    async def unload_model(self, model: Path, kind: EngineKind, reason: str = "unloaded") -> None:
        """Stop the engine of ``kind`` that has ``model`` (waits for its jobs to finish)."""
        engine = self.engine_for(model, kind)
        if engine is not None:
            await self.unload(engine, reason)

    async def discard(self, engine: PooledEngine, reason: str) -> None:
        """Stop ``engine`` now, even in use (it failed: its holders' jobs fail or move on)."""
        if engine.closing and self._engines.get(engine.key) is not engine:
            return
        await self._stop(engine, reason)

    async def aclose(self) -> None:
        """Stop every engine (the app is closing). Safe twice."""
        self._closed = True
        for name in list(self._services):
            await self.stop_service(name)
        for entry in list(self._engines.values()):
            if entry.start_task is not None:
                entry.start_task.cancel()
                with contextlib.suppress(BaseException):
                    await entry.start_task
            await self._stop(entry, "Strata is closing")

    def kill_now(self) -> None:
        """Blocking kill of every engine tree (exit paths where the loop no longer runs)."""
        self._closed = True
        for entry in list(self._engines.values()):
            entry.server.kill_now()
        for process in self._services.values():
            process.kill_now()
