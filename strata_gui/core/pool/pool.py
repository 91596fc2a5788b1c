"""The engine pool: the one owner of every running engine process, and its one scheduler.

Features never start engines; they ask for a :class:`Lease` and wait for it. A request goes into
the pool's queue; **one scheduler task** takes every decision, one pass at a time, going through
the queue in order (priority first — the user's chat and pages, then the local API's clients, then
the benchmark and update trials — then arrival):

- an engine already running the model with exactly those settings lends one of its **slots**
  (llama-server's parallel slots, batched together: the chat, API clients and read-ahead
  decode side by side); when every slot is taken the request waits its turn on that engine;
- an engine that is loading is waited for (ten requests during a load start it once);
- otherwise the scheduler makes room and starts it: an idle engine of the same model with other
  settings is replaced (one copy of a model in memory), idle engines are unloaded least recently
  used first until the new one fits beside what stays (memory per device group: the GPU's, or the
  machine's RAM for engines on the processor); engines in use, or wanted by a request in the queue,
  are never unloaded for room, so a request that needs them waits instead;
- an exclusive request (the benchmark, an update trial) gets an engine nobody else uses, and
  holds all its slots until it is done; :meth:`EnginePool.turn` holds the whole pool.

Callers only submit and await: a caller never decides, so two waiters cannot undo each other's
load. Every request that waits is told why and its place (a :class:`Waiting` event and its
``on_progress``); a request that may not wait, or that waited past its limit, fails with
:class:`ServerBusyError`. An engine nobody holds is unloaded after its idle time-out. Every change
is an event on :attr:`EnginePool.events`, and :meth:`EnginePool.activity` says what each engine
serves and what waits. The "run this job along the plan, move to the next engine when one fails"
loop is :func:`strata_gui.core.pool.runner.run_along_plan`.
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
from pathlib import Path
from types import TracebackType
from typing import Protocol

from strata_gui.core.base.errors import ServerBusyError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import Progress, ProgressCallback, format_bytes
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EngineKind
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.supervisor import EngineProcess, ServerSupervisor, StateChanged

from .engine import LONGEST_IDLE_S, EngineKey, PooledEngine, Priority, Request, memory_group, priority_of
from .events import (
    EngineStateChanged,
    EngineUnloaded,
    ModelActivity,
    PoolActivity,
    PoolEvent,
    Waiting,
    WaitingRequest,
)

log = logging.getLogger(__name__)

Launcher = Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]
"""Makes the (not started) server of an engine: the app's real processes, with the RPC workers'
``--rpc`` added where they are in use."""

_CLOSING = QT_TRANSLATE_NOOP("Core", "Strata is shutting its engines down.")


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


class Lease:
    """A slot of an engine (or the whole engine, ``exclusive``). Release it (``async with``, or
    :meth:`release`) when the job is done; :meth:`succeeded` tells the pool the engine served the
    job (a first job that fails blames the engine, later ones may be the request's fault)."""

    def __init__(self, engine: PooledEngine, user: str, give_back: Callable[[Lease], None], *,
                 exclusive: bool = False) -> None:
        self.engine = engine
        self.user = user
        self.exclusive = exclusive
        self._give_back = give_back
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
        """Give the slot back (safe twice). The engine stays loaded until idle too long or needed."""
        if not self._released:
            self._released = True
            self._give_back(self)

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.release()


class _Pass:
    """What one scheduling pass has learnt so far, going through the queue in order.

    Precedence is the pass's order (priority, then arrival) for slots and room, but an engine a
    request that *arrived earlier* wants is never unloaded for a later one (else a just-loaded
    engine is swapped out before the request it was loaded for gets it), and a request that waits
    for engines to be let go drains them for requests that arrived after it (else a stream of those
    keeps them for ever).
    """

    def __init__(self, queue: list[Request], turn: Request | None, fresh: set[EngineKey]) -> None:
        self.queue = queue
        self.turn = turn
        self.fresh = fresh  # loaded engines that have not given their first lease yet
        self.blocked_keys: set[EngineKey] = set()  # an earlier request waits for a slot of these
        self.blocked_groups: dict[str, str] = {}  # an earlier request waits for room in these
        self.draining: dict[EngineKey, tuple[int, str]] = {}  # (the drainer's arrival, why)
        self.queued: Counter[EngineKey] = Counter()

    def protected(self, req: Request) -> set[EngineKey]:
        """Engines ``req`` may not unload for room: those wanted by requests that arrived before
        it, and an engine just loaded that a request still waits for (its first lease comes first,
        else the load was for nothing); not those of requests waiting for another user's turn of
        the whole pool, which may need that memory meanwhile."""
        return {r.key for r in self.queue
                if r.key is not None and r.target is None and not r.settled
                and (r.seq < req.seq or r.key in self.fresh)
                and (self.turn is None or self.turn.user == r.user)}

    def drained(self, req: Request, key: EngineKey) -> str | None:
        """Why ``req`` may not take a slot of ``key`` now (an earlier request needs it let go; an
        engine just loaded gives its first lease all the same)."""
        drainer = self.draining.get(key)
        return drainer[1] if drainer is not None and req.seq > drainer[0] and key not in self.fresh else None


class EnginePool:
    """Every running engine, started and stopped here only; every lease given by one scheduler.

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
        self._queue: list[Request] = []
        self._serial = itertools.count(1)
        self._seq = itertools.count(1)
        self._closed = False
        self._turn: Request | None = None  # the granted request holding the whole pool, see turn()
        self._dirty = False  # something changed since the scheduler's last pass
        self._wake: asyncio.Future[None] | None = None  # what the idle scheduler task awaits
        self._scheduler: asyncio.Task[None] | None = None
        self._last_activity: PoolActivity | None = None
        self.starts = 0  # engines started since the pool was made (tests and the stress bench count them)
        self.events: Listeners[PoolEvent] = Listeners()

    # -- looking -----------------------------------------------------------------------------------
    def engines(self, *, kind: EngineKind | None = None) -> list[PooledEngine]:
        """The engines loaded, loading or being stopped (of ``kind``), oldest first."""
        return [e for e in self._engines.values() if kind is None or e.kind == kind]

    def engine_for(self, model: Path, kind: EngineKind) -> PooledEngine | None:
        """The engine of ``kind`` that has ``model`` (loaded or loading), if any."""
        slot = (kind.name, str(model))
        return next((e for e in self._engines.values() if e.key.model_slot == slot and not e.closing), None)

    def memory_in_use(self, group: str) -> int:
        return sum(e.memory_bytes() for e in self._engines.values() if e.group == group and not e.closing)

    def busy_users(self) -> set[str]:
        """Who holds an engine now ("chat", "api" ...)."""
        return {u for e in self._engines.values() for u in e.holders}

    def activity(self) -> PoolActivity:
        """What each engine serves now and which requests wait (what :class:`PoolActivity` events say)."""
        engines = tuple(ModelActivity(e, e.leases, e.slots, tuple(sorted(e.holders)))
                        for e in self._engines.values() if not e.closing)
        waiting = tuple(WaitingRequest(r.user, r.spec.kind if r.spec is not None else None, r.model,
                                       r.said or "", r.since, r.ahead)
                        for r in sorted(self._queue, key=_order) if not r.settled and r.target is None)
        return PoolActivity(engines, waiting)

    # -- borrowing -----------------------------------------------------------------------------------
    async def acquire(self, engine: EngineSpec, model: Path, settings: ServerSettings, *, user: str,
                      priority: Priority | None = None, exclusive: bool = False,
                      keep_alive: float | None = None, wait: bool = True, wait_limit: float | None = None,
                      on_progress: ProgressCallback | None = None) -> Lease:
        """Borrow a slot of the engine ``engine`` running ``model`` with ``settings`` (the scheduler
        starts it when needed), waiting for one's turn.

        Args:
            user: Who borrows it ("chat", "benchmark", "api", "images"): events and messages name it.
            priority: Where it queues (default: the user's, :data:`~strata_gui.core.pool.engine.USER_PRIORITY`).
            exclusive: The whole engine, no other lease beside it (a benchmark's quiet engine).
            keep_alive: Seconds it may stay loaded idle after this lease (None: the pool's time-out;
                0: unload as soon as it is released).
            wait: False: fail with :class:`ServerBusyError` instead of waiting for a slot or room
                (a load is still waited for).
            wait_limit: Seconds it may wait before failing with :class:`ServerBusyError` (None: no limit).
            on_progress: Load progress of its engine, and why it waits while it does.

        Raises:
            ProcessEnded: The engine could not start (its outcome says why).
            ServerBusyError: It may not wait, or waited past ``wait_limit``, or the pool is closed.
        """
        req = self._request(user, priority, key=EngineKey.of(engine, model, settings), spec=engine, model=model,
                            settings=settings, exclusive=exclusive, keep_alive=keep_alive, wait=wait,
                            on_progress=on_progress)
        got = await self._submit(req, wait_limit)
        assert isinstance(got, Lease)
        return got

    async def lease_now(self, engine: PooledEngine, user: str) -> Lease | None:
        """A slot of ``engine`` if the scheduler can give one at once (it is loaded, a slot is free
        and nobody waits for one), else None: never starts, loads or waits (work done only while an
        engine happens to be up, such as reading a prompt ahead)."""
        if self._closed:
            return None
        req = self._request(user, None, key=engine.key, spec=engine.spec, model=engine.model,
                            settings=engine.settings, wait=False, target=engine)
        got = await self._submit(req, None)
        return got if isinstance(got, Lease) else None

    @contextlib.asynccontextmanager
    async def turn(self, user: str, reason: str, *, on_progress: ProgressCallback | None = None
                   ) -> AsyncIterator[None]:
        """Hold the whole pool for ``user`` (an engine update's trial): granted once no engine is in
        use or loading for anyone else (a streaming reply finishes); meanwhile and until the block
        ends, every other user's request waits (told ``reason``) or, when it may not wait, fails."""
        req = self._request(user, Priority.BACKGROUND, turn_reason=reason, on_progress=on_progress)
        await self._submit(req, None)
        try:
            yield
        finally:
            if self._turn is req:
                self._turn = None
            self._kick()

    def _request(self, user: str, priority: Priority | None, **fields: object) -> Request:
        loop = asyncio.get_running_loop()
        return Request(seq=next(self._seq), user=user, priority=priority_of(user) if priority is None else priority,
                       future=loop.create_future(), since=self._clock(), **fields)  # type: ignore[arg-type]

    async def _submit(self, req: Request, limit: float | None) -> object:
        """Queue ``req`` and wait until the scheduler settles it (a lease, a turn, None or an error)."""
        if self._closed:
            raise ServerBusyError(_CLOSING)
        self._queue.append(req)
        self._kick()
        try:
            if limit is None:
                return await req.future
            return await asyncio.wait_for(asyncio.shield(req.future), limit)
        except TimeoutError:
            if req.future.done() and not req.future.cancelled() and req.future.exception() is None:
                return req.future.result()  # settled at the same moment
            req.future.cancel()
            self._kick()
            raise ServerBusyError(T(QT_TRANSLATE_NOOP("Core", "Waited {seconds:.0f} s: {reason}"), seconds=limit,
                                    reason=req.said or QT_TRANSLATE_NOOP("Core", "the engine is still loading.")),
                                  retry_after=5.0, hint=QT_TRANSLATE_NOOP("Core", "Try again in a moment.")) from None
        except asyncio.CancelledError:
            self._withdraw(req)
            raise

    def _withdraw(self, req: Request) -> None:
        """The caller gave up: what the scheduler gave it meanwhile goes back."""
        fut = req.future
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            got = fut.result()
            if isinstance(got, Lease):
                got.release()
            elif got is True and self._turn is req:
                self._turn = None
        fut.cancel()
        self._kick()

    # -- the scheduler -------------------------------------------------------------------------------
    def _kick(self) -> None:
        """Something changed: the scheduler takes a pass (soon, on the loop; never inside the caller).

        The scheduler task runs while requests wait and ends when the queue is empty; the next
        change starts it again (so a pool nobody closes leaves no task behind)."""
        self._dirty = True
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop runs (an exit path): nothing can be waiting
            return
        task = self._scheduler
        if task is None or task.done() or task.get_loop() is not loop:
            self._scheduler = loop.create_task(self._schedule(loop), name="strata-pool-scheduler")

    async def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            if not self._dirty:
                self._wake = loop.create_future()
                await self._wake
            self._dirty = False
            try:
                self._decide()
            except Exception:  # a bug here must not stop every later decision
                log.exception("the engine pool's scheduler failed a pass")
            if not self._queue and not self._dirty:
                return

    def _decide(self) -> None:
        """One pass: settle what can be settled, in queue order, and start or stop what that needs."""
        if self._closed:
            for req in self._queue:
                if not req.settled:
                    req.future.set_exception(ServerBusyError(_CLOSING))
            self._queue.clear()
            return
        self._queue = [r for r in self._queue if not r.settled]
        self._reap({r.key for r in self._queue if r.key is not None})
        state = _Pass(list(self._queue), self._turn,
                      {e.key for e in self._engines.values() if e.granted == 0 and e.ready})
        for req in sorted(self._queue, key=_order):
            try:
                self._consider(req, state)
            except Exception as exc:  # launcher or estimate trouble: this request's, not the pass's
                if not req.settled:
                    req.future.set_exception(exc)
        self._queue = [r for r in self._queue if not r.settled]
        self._announce_activity()

    def _reap(self, wanted: set[EngineKey]) -> None:
        """Stop what should stop: failed engines at once, idle ones asked to unload or past their
        time-out, loads nobody waits for any more."""
        for e in list(self._engines.values()):
            if e.closing:
                continue
            if e.doomed is not None:
                self._begin_stop(e, e.doomed)
            elif e.loading:
                if not e.busy and e.key not in wanted and e.start_task is not None:
                    e.start_task.cancel()  # nobody wants it any more: stop loading
            elif e.busy:
                continue
            elif e.unload_reason is not None:
                self._begin_stop(e, e.unload_reason)
            elif e.expired and e.key not in wanted:
                self._begin_stop(e, f"idle for {self._clock() - e.last_used:.0f} s")

    def _consider(self, req: Request, state: _Pass) -> None:
        if req.key is None:
            self._consider_turn(req)
            return
        turn = self._turn
        if turn is not None and turn.user != req.user:
            self._wait(req, turn.turn_reason, retry_after=30.0,
                       hint=QT_TRANSLATE_NOOP("Core", "Try again in a minute."))
            return
        if req.target is not None:
            self._consider_now(req, state)
            return
        engine = self._engines.get(req.key)
        if engine is None:
            self._consider_start(req, state)
        elif engine.closing or engine.unload_reason is not None or engine.doomed is not None:
            self._wait(req, T(QT_TRANSLATE_NOOP("Core", "{model} is being unloaded; it loads again once it has "
                                                        "stopped."), model=engine.model.name))
        elif engine.loading:
            req.said, req.ahead = None, 0  # its load's progress tells the rest
        else:
            self._consider_slot(req, engine, state)

    def _consider_slot(self, req: Request, engine: PooledEngine, state: _Pass) -> None:
        key = engine.key
        drained = state.drained(req, key)
        if drained is not None:
            self._wait(req, drained)
            return
        free = engine.leases == 0 if req.exclusive else engine.free_slots > 0
        if free and key not in state.blocked_keys and engine.ready:
            self._grant(req, engine)
            return
        ahead = engine.leases + state.queued[key]
        state.blocked_keys.add(key)
        state.queued[key] += 1
        if engine.exclusive:
            users = ", ".join(sorted(engine.holders))
            reason = T(QT_TRANSLATE_NOOP("Core", "Waiting for the {users} to finish with {model}"),
                       users=users, model=engine.model.name)
        elif ahead == 1:
            reason = T(QT_TRANSLATE_NOOP("Core", "Waiting: 1 request ahead for {model}"), model=engine.model.name)
        else:
            reason = T(QT_TRANSLATE_NOOP("Core", "Waiting: {n} requests ahead for {model}"), n=ahead,
                       model=engine.model.name)
        self._wait(req, reason, ahead=ahead, hint=QT_TRANSLATE_NOOP(
            "Core", "Try again when the current request is done."))

    def _consider_now(self, req: Request, state: _Pass) -> None:
        engine = req.target
        assert engine is not None
        usable = (self._engines.get(engine.key) is engine and engine.ready and engine.unload_reason is None
                  and engine.doomed is None and engine.free_slots > 0 and engine.key not in state.blocked_keys)
        if usable:
            self._grant(req, engine)
        else:
            req.future.set_result(None)

    def _consider_turn(self, req: Request) -> None:
        if self._turn is not None:
            self._wait(req, T(QT_TRANSLATE_NOOP("Core", "Waiting for the {user} to finish"), user=self._turn.user))
            return
        others = sorted({u for e in self._engines.values() for u in e.holders if u != req.user}
                        | {e.started_by for e in self._engines.values() if e.loading and e.started_by != req.user})
        if others:
            self._wait(req, T(QT_TRANSLATE_NOOP("Core", "Waiting for the {users} to finish"), users=", ".join(others)))
            return
        self._turn = req
        req.future.set_result(True)

    def _consider_start(self, req: Request, state: _Pass) -> None:
        """No engine for the request's key: replace, make room and start, or say why it waits."""
        assert req.key is not None and req.spec is not None and req.model is not None and req.settings is not None
        same = [e for e in self._engines.values() if e.key.model_slot == req.key.model_slot]
        protected = state.protected(req)
        in_use = [e for e in same if e.busy or e.loading or e.key in protected or e.closing]
        if in_use:
            users = ", ".join(sorted({u for e in in_use for u in e.holders})) or QT_TRANSLATE_NOOP("Core", "a start")
            reason = T(QT_TRANSLATE_NOOP("Core", "{model} is loaded with other settings and in use by the {users}; "
                                                 "it reloads when that is done."), model=req.model.name, users=users)
            self._drain(in_use, req, state)
            self._wait(req, reason)
            return
        group = memory_group(req.spec)
        if group in state.blocked_groups:
            self._wait(req, state.blocked_groups[group])
            return
        victims, settle, blocked = self._room_for(req, same, protected)
        if blocked is not None:
            state.blocked_groups[group] = blocked
            self._drain([e for e in self._engines.values() if e.group == group and not e.closing], req, state)
            self._wait(req, blocked)
            return
        for e in victims:
            self._begin_stop(e, "reloaded with other settings" if e in same
                             else f"unloaded to make room for {req.model.name}")
        if victims or settle:
            # Started once what goes has gone (one copy of a model; memory really free).
            state.blocked_groups[group] = T(QT_TRANSLATE_NOOP("Core", "Making room for {model}"), model=req.model.name)
            self._wait(req, state.blocked_groups[group])
            return
        self._start_for(req)

    @staticmethod
    def _drain(engines: list[PooledEngine], req: Request, state: _Pass) -> None:
        """``req`` waits for ``engines`` to be let go: requests after it give them no new work,
        so it is not starved by a stream of later ones."""
        assert req.model is not None
        reason = T(QT_TRANSLATE_NOOP("Core", "Waiting: a request for {model} goes first"), model=req.model.name)
        for e in engines:
            state.draining.setdefault(e.key, (req.seq, reason))

    def _room_for(self, req: Request, same: list[PooledEngine], protected: set[EngineKey]
                  ) -> tuple[list[PooledEngine], bool, str | None]:
        """What the request's engine needs first: the engines to unload (the same model's idle
        engine, then the least recently used idle ones until it fits), whether engines already
        being stopped must be gone before it fits, or why it must wait for room (engines in use or
        wanted by earlier requests hold it)."""
        assert req.spec is not None and req.model is not None and req.settings is not None
        victims = list(same)
        group = memory_group(req.spec)
        budget = self._memory.budget(group) if self._memory is not None else 0
        need = self._estimate(req)
        if budget <= 0 or need <= 0:
            return victims, False, None
        staying = [e for e in self._engines.values() if e.group == group and e not in victims]
        used = sum(e.memory_bytes() for e in staying)  # engines being stopped still hold theirs
        going = sum(e.memory_bytes() for e in staying if e.closing)
        idle = sorted((e for e in staying if not (e.busy or e.loading or e.closing or e.key in protected)),
                      key=lambda e: e.last_used)
        while used - going + need > budget and idle:
            victim = idle.pop(0)
            victims.append(victim)
            used -= victim.memory_bytes()
        holding = [e for e in staying if e not in victims and not e.closing]
        if used - going + need <= budget or not holding:
            # (With nothing else to wait for it starts even over the budget: the load says if it fits.)
            return victims, going > 0 and used + need > budget, None
        users = sorted({u for e in holding for u in e.holders}
                       | ({QT_TRANSLATE_NOOP("Core", "another start")} if any(e.loading for e in holding) else set())
                       | ({QT_TRANSLATE_NOOP("Core", "a request that waits")}
                          if any(e.key in protected and not e.busy for e in holding) else set()))
        return [], False, T(QT_TRANSLATE_NOOP("Core", "Waiting for memory: {engine} needs about {need} and the "
                                                      "engines in use by the {users} hold {used} of {budget}."),
                            engine=req.spec.label, need=format_bytes(need), users=", ".join(users) or "—",
                            used=format_bytes(used - going), budget=format_bytes(budget))

    def _estimate(self, req: Request) -> int:
        if self._memory is None or req.spec is None or req.model is None or req.settings is None:
            return 0
        if req.need is None:
            try:
                req.need = max(0, int(self._memory.estimate(req.spec, req.model, req.settings)))
            except Exception:  # an unreadable model is the start's to report, not the estimate's
                log.debug("no memory estimate for %s", req.model, exc_info=True)
                req.need = 0
        return req.need

    def _wait(self, req: Request, reason: str, *, ahead: int = 0, retry_after: float = 5.0,
              hint: str | None = None) -> None:
        """``req`` waits for ``reason``: told so when that changed; failed when it may not wait."""
        if not req.wait:
            if req.target is not None:
                req.future.set_result(None)
            else:
                req.future.set_exception(ServerBusyError(reason, retry_after=retry_after, hint=hint or QT_TRANSLATE_NOOP(
                    "Core", "Try again when the current request is done.")))
            return
        if reason == req.said and ahead == req.ahead:
            return
        log.debug("request %s of the %s waits: %s", req.seq, req.user, reason)
        req.said, req.ahead = reason, ahead
        if req.spec is not None and req.model is not None:
            self.events.emit(Waiting(req.spec.kind, req.model, req.user, reason, ahead))
        if req.on_progress is not None:
            _tell(req.on_progress, Progress(0, None, reason))

    def _grant(self, req: Request, engine: PooledEngine) -> None:
        log.debug("request %s of the %s gets a slot of %s", req.seq, req.user, engine.describe())
        if engine.idle_timer is not None:
            engine.idle_timer.cancel()
            engine.idle_timer = None
        engine.expires_at = None
        engine.expired = False
        engine.holders[req.user] += 1
        engine.granted += 1
        engine.exclusive = engine.exclusive or req.exclusive
        engine.last_used = self._clock()
        if req.keep_alive is not None:
            engine.keep_alive = req.keep_alive
        req.future.set_result(Lease(engine, req.user, self._release, exclusive=req.exclusive))

    def _release(self, lease: Lease) -> None:
        entry = lease.engine
        entry.holders[lease.user] -= 1
        if entry.holders[lease.user] <= 0:
            del entry.holders[lease.user]
        if lease.exclusive:
            entry.exclusive = False
        entry.last_used = self._clock()
        if not entry.busy and not self._closed and self._engines.get(entry.key) is entry and not entry.closing:
            self._schedule_idle(entry)
        self._kick()

    def _announce_activity(self) -> None:
        now = self.activity()
        if now != self._last_activity:
            self._last_activity = now
            self.events.emit(now)

    # -- starting and stopping -------------------------------------------------------------------------
    def _start_for(self, req: Request) -> None:
        assert req.key is not None and req.spec is not None and req.model is not None and req.settings is not None
        log.debug("request %s of the %s starts %s on %s", req.seq, req.user, req.model.name, req.spec.label)
        loop = asyncio.get_running_loop()
        entry = PooledEngine(next(self._serial), req.key, self._launcher(req.spec, req.model, req.settings),
                             self._estimate(req), self._clock())
        entry.started_by = req.user
        entry.stopped = loop.create_future()
        entry.server.states.subscribe(functools.partial(self._on_state, entry))
        self._engines[req.key] = entry
        self.starts += 1
        entry.start_task = loop.create_task(self._start(entry), name=f"strata-engine-start-{entry.serial}")

    def _load_progress(self, entry: PooledEngine) -> ProgressCallback:
        """The load's progress, told to every request waiting for it."""

        def tell(progress: Progress) -> None:
            for r in self._queue:
                if r.key == entry.key and r.on_progress is not None and not r.settled:
                    _tell(r.on_progress, progress)

        return tell

    async def _start(self, entry: PooledEngine) -> None:
        try:
            await entry.server.start(self._load_progress(entry))
            entry.loaded_at = self._clock()
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await entry.server.stop()
            self._forget(entry)
            if not isinstance(exc, asyncio.CancelledError):
                for req in self._queue:  # what waited for this load learns why it failed
                    if req.key == entry.key and not req.settled:
                        req.future.set_exception(exc)
            return
        finally:
            entry.start_task = None
            self._kick()
        if not entry.busy:
            self._schedule_idle(entry)

    def _begin_stop(self, entry: PooledEngine, reason: str) -> None:
        entry.closing = True
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
            entry.idle_timer = None
        entry.stop_task = asyncio.get_running_loop().create_task(self._stop(entry, reason),
                                                                 name=f"strata-engine-stop-{entry.serial}")

    async def _stop(self, entry: PooledEngine, reason: str) -> None:
        log.info("unloading %s: %s", entry.describe(), reason)
        try:
            await entry.server.stop()
        finally:
            self._forget(entry)
            self.events.emit(EngineUnloaded(entry, reason))
            self._kick()

    def _forget(self, entry: PooledEngine) -> None:
        entry.closing = True
        if self._engines.get(entry.key) is entry:
            del self._engines[entry.key]
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
            entry.idle_timer = None
        entry.expires_at = None
        if entry.stopped is not None and not entry.stopped.done():
            entry.stopped.set_result(None)

    def _schedule_idle(self, entry: PooledEngine) -> None:
        timeout = entry.keep_alive if entry.keep_alive is not None else self._idle_timeout()
        if timeout is None or (timeout <= 0 and entry.keep_alive is None) or timeout >= LONGEST_IDLE_S:
            return  # kept until something else unloads it
        if entry.idle_timer is not None:
            entry.idle_timer.cancel()
        entry.idle_timer = asyncio.get_running_loop().call_later(max(0.0, timeout), self._idle_expired, entry)
        entry.expires_at = self._clock() + max(0.0, timeout)

    def _idle_expired(self, entry: PooledEngine) -> None:
        entry.idle_timer = None
        entry.expires_at = None
        entry.expired = True
        self._kick()

    def _on_state(self, entry: PooledEngine, change: StateChanged) -> None:
        state = change.state
        self.events.emit(EngineStateChanged(entry, state, change.detail))
        if state.is_terminal and not entry.closing and entry.start_task is None:
            self._forget(entry)  # it died: nothing is loaded any more (its holders' jobs fail)
            self._kick()

    # -- processes that serve no model (the RPC server lending this machine) ---------------------------------
    async def start_service(self, name: str, process: EngineProcess, start: Callable[[], Awaitable[None]]) -> None:
        """Run ``process`` under ``name`` (one at a time per name: a running one is stopped first)
        by awaiting ``start``; it runs until :meth:`stop_service` or the pool closes."""
        await self.stop_service(name)
        if self._closed:
            raise ServerBusyError(_CLOSING)
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
        """Stop ``engine`` once nobody holds it (no new lease is given on it meanwhile; requests
        for it wait and load it again afterwards).

        Returns:
            False when it is in use and ``wait`` is False (nothing was done).
        """
        if self._engines.get(engine.key) is not engine:
            await self._stopped(engine)
            return True
        if not wait and (engine.busy or engine.loading):
            return False
        if engine.unload_reason is None:
            engine.unload_reason = reason
        self._kick()
        await self._stopped(engine)
        return True

    async def unload_model(self, model: Path, kind: EngineKind, reason: str = "unloaded") -> None:
        """Stop the engine of ``kind`` that has ``model`` (waits for its jobs to finish)."""
        engine = self.engine_for(model, kind)
        if engine is not None:
            await self.unload(engine, reason)

    async def discard(self, engine: PooledEngine, reason: str) -> None:
        """Stop ``engine`` now, even in use (it failed: its holders' jobs fail or move on)."""
        if self._engines.get(engine.key) is not engine:
            await self._stopped(engine)
            return
        if engine.doomed is None:
            engine.doomed = reason
        self._kick()
        await self._stopped(engine)

    @staticmethod
    async def _stopped(engine: PooledEngine) -> None:
        if engine.stopped is not None:
            await asyncio.shield(engine.stopped)

    async def aclose(self) -> None:
        """Stop every engine (the app is closing). Safe twice."""
        self._closed = True
        self._decide()  # every waiting request learns the pool closed
        for name in list(self._services):
            await self.stop_service(name)
        for entry in list(self._engines.values()):
            if entry.start_task is not None:
                entry.start_task.cancel()
                with contextlib.suppress(BaseException):
                    await entry.start_task
            if entry.stop_task is not None:
                with contextlib.suppress(BaseException):
                    await entry.stop_task
            elif self._engines.get(entry.key) is entry:
                entry.closing = True
                await self._stop(entry, "Strata is closing")
        task, self._scheduler = self._scheduler, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def kill_now(self) -> None:
        """Blocking kill of every engine tree (exit paths where the loop no longer runs)."""
        self._closed = True
        for entry in list(self._engines.values()):
            entry.server.kill_now()
        for process in self._services.values():
            process.kill_now()


def _order(req: Request) -> tuple[int, int]:
    return int(req.priority), req.seq


def _tell(on_progress: ProgressCallback, progress: Progress) -> None:
    """A caller's progress callback: its bug must not stop a load or a scheduling pass."""
    try:
        on_progress(progress)
    except Exception:
        log.exception("a progress callback failed on %s", progress)

