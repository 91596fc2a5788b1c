"""The one fallback loop: run a job along the resolver's plan, moving to the next engine when one
fails, and say so.

Chat replies, image jobs and the local API all run their work through :func:`run_along_plan`:

- an engine that cannot start (a missing library, out of memory, a crash while loading) is
  skipped for the next one of the plan, when the caller's ``may_fall_back`` agrees (not for a
  damaged model, which no other engine will load either);
- a job that fails with an engine error is sent again on the next engine when the engine died
  during it, or when it was the engine's first job (an engine that starts but cannot serve);
- before that, a crash advisor may explain the failure (an RPC worker that stopped answering):
  the same engine is then reloaded (without the worker) and the job sent again, once per run.

Each move is a :class:`~strata_gui.core.pool.pool.FailedOver` event, given to the caller (who
tells its user in its own words) and announced on the pool's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, Phase, ProcessEnded, describe_outcome
from strata_gui.core.runtime.supervisor import ServerSupervisor

from .events import FailedOver
from .pool import CrashAdvisor, EnginePool, Lease

_NO_ENGINE = QT_TRANSLATE_NOOP("Core", "No engine to run the model.")
_NO_ENGINE_HINT = QT_TRANSLATE_NOOP("Core", "Install an engine on the Engines page.")

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Ran(Generic[T]):
    """What a job returned, and the plan's engine that ran it (``index`` into the plan)."""

    value: T
    index: int
    engine: EngineSpec


def engine_fault(outcome: Outcome) -> bool:
    """The default ``may_fall_back``: another engine may do better (not a bad model, not a stop)."""
    return outcome.engine_fault


async def run_along_plan(
    pool: EnginePool,
    plan: Sequence[EngineSpec],
    model: Path,
    settings: Callable[[EngineSpec], ServerSettings],
    job: Callable[[Lease], Awaitable[T]],
    *,
    user: str,
    start: int = 0,
    may_fall_back: Callable[[Outcome], bool] = engine_fault,
    activity: str = "running",
    advisor: CrashAdvisor | None = None,
    on_failover: Callable[[FailedOver], None] | None = None,
    on_progress: ProgressCallback | None = None,
    keep_alive: float | None = None,
    exclusive: bool = False,
    died_grace: float = 2.0,
) -> Ran[T]:
    """Run ``job`` on the first engine of ``plan`` (from ``start``) that can do it.

    Args:
        pool: Where engines are borrowed.
        plan: Engines to try, best first (the resolver's order).
        model: The model every engine loads.
        settings: The launch settings for an engine of the plan.
        job: The work, given a lease on a ready engine; called again on the next engine after a
            failure (it must start afresh each time). Engine trouble must surface as
            :class:`ServerError`; any other exception ends the run as it is.
        user: Who runs it ("chat", "images", "api"): the pool's events name it, and it sets the
            request's priority.
        start: Index of the first engine to try (the chat stays on the engine it fell back to).
        may_fall_back: Whether an ending justifies the next engine (default: an engine fault).
        activity: What a ready engine was doing, for the sentence about a crash ("answering").
        advisor: Explains failures a reload fixes (default: the pool's, see :class:`CrashAdvisor`).
        on_failover: Told each move before the job is sent again.
        on_progress: Load progress of its engines, and why it waits when it does.
        keep_alive: The lease's idle time-out (see :meth:`EnginePool.acquire`).
        exclusive: Each lease holds its whole engine (see :meth:`EnginePool.acquire`).
        died_grace: Seconds to wait for the exit of an engine whose job failed (it is noticed a
            moment after the connection drops).

    Returns:
        The job's value, and which engine of the plan ran it.

    Raises:
        ServerError: No engine in the plan (from ``start``).
        ProcessEnded: The last engine tried could not start, or died during the job, and no other
            may take over (its outcome says why; the message names ``activity``).
        Exception: What the job raised otherwise (its engine stays loaded).
    """
    if not plan or start >= len(plan):
        raise ServerError(_NO_ENGINE, hint=_NO_ENGINE_HINT)
    run = _PlanRun(pool, plan, model, user, may_fall_back, activity,
                   advisor if advisor is not None else pool.advisor, on_failover, died_grace)
    index = start
    while True:
        spec = plan[index]
        try:
            lease = await pool.acquire(spec, model, settings(spec), user=user, keep_alive=keep_alive,
                                       exclusive=exclusive, on_progress=on_progress)
        except ProcessEnded as exc:
            if run.next_after_start_failure(index, exc):
                index += 1
                continue
            raise
        try:
            first = lease.first_job
            try:
                value = await job(lease)
            except ServerError as exc:
                step = await run.after_job_failure(index, lease, first, exc)
                if step is None:
                    raise
                index += step
                continue
            lease.succeeded()
            return Ran(value, index, spec)
        finally:
            lease.release()


class _PlanRun:
    """What :func:`run_along_plan` decides after a failure: move on, reload, or give up."""

    def __init__(self, pool: EnginePool, plan: Sequence[EngineSpec], model: Path, user: str,
                 may_fall_back: Callable[[Outcome], bool], activity: str, advisor: CrashAdvisor | None,
                 on_failover: Callable[[FailedOver], None] | None, died_grace: float) -> None:
        self.pool, self.plan, self.model, self.user = pool, plan, model, user
        self.may_fall_back, self.activity, self.advisor = may_fall_back, activity, advisor
        self.on_failover, self.died_grace = on_failover, died_grace
        self.advised = False

    def _next(self, index: int) -> EngineSpec | None:
        return self.plan[index + 1] if index + 1 < len(self.plan) else None

    def move(self, failed: EngineSpec, nxt: EngineSpec, reason: str, details: str, during_job: bool) -> None:
        event = FailedOver(self.user, self.model, failed, nxt, reason, details, during_job)
        log.warning("%s", event.text)
        if self.on_failover is not None:
            self.on_failover(event)
        self.pool.events.emit(event)

    def next_after_start_failure(self, index: int, exc: ProcessEnded) -> bool:
        """The engine at ``index`` did not start: True when the next one is tried (and said so)."""
        nxt = self._next(index)
        if nxt is None or not self.may_fall_back(exc.outcome):
            return False
        self.move(self.plan[index], nxt, describe_outcome(exc.outcome), exc.outcome.details(), False)
        return True

    async def after_job_failure(self, index: int, lease: Lease, first: bool, exc: ServerError) -> int | None:
        """The job failed on the engine at ``index``: 0 to send it again there (reloaded), 1 to
        move to the next engine, None to let the error through (a :class:`ProcessEnded` is raised
        instead when the engine died)."""
        spec, server = self.plan[index], lease.server
        died = await _died(server, self.died_grace)
        outcome = server.outcome if died else None
        if not self.advised and self.advisor is not None:
            text = await self.advisor(outcome, self.model)
            if text:
                self.advised = True
                await self.pool.discard(lease.engine, "reloaded after a failure")
                self.move(spec, spec, text, outcome.details() if outcome else "", True)
                return 0
        if died or first:
            await self.pool.discard(lease.engine, "failed")
            blamed = outcome or Outcome(OutcomeKind.CRASHED, Phase.RUNNING, subject=server.subject)
            nxt = self._next(index)
            if nxt is not None and self.may_fall_back(blamed):
                if outcome is not None:
                    reason = describe_outcome(outcome, activity=self.activity)
                else:
                    reason = f"{spec.label} engine failed on the first request: {exc.message.rstrip('.')}."
                self.move(spec, nxt, reason, outcome.details() if outcome else (exc.details or ""), True)
                return 1
        if outcome is not None:
            raise ProcessEnded(outcome, message=describe_outcome(outcome, activity=self.activity)) from exc
        return None


async def acquire_along_plan(
    pool: EnginePool,
    plan: Sequence[EngineSpec],
    model: Path,
    settings: Callable[[EngineSpec], ServerSettings],
    *,
    user: str,
    may_fall_back: Callable[[Outcome], bool] = engine_fault,
    on_failover: Callable[[FailedOver], None] | None = None,
    on_progress: ProgressCallback | None = None,
    keep_alive: float | None = None,
    wait: bool = True,
    wait_limit: float | None = None,
) -> Lease:
    """Borrow the first engine of ``plan`` that starts (the start half of :func:`run_along_plan`),
    for work the caller runs itself while it holds the lease (a request of the local API, whose
    reply streams to its client as it comes: it cannot be sent again on another engine).

    Raises:
        ServerError: No engine in the plan.
        ProcessEnded: The last engine tried could not start, and no other may take over.
        ServerBusyError: ``wait`` is False and the pool has no room now, or it waited past ``wait_limit``.
    """
    if not plan:
        raise ServerError(_NO_ENGINE, hint=_NO_ENGINE_HINT)
    for index, spec in enumerate(plan):
        nxt = plan[index + 1] if index + 1 < len(plan) else None
        try:
            return await pool.acquire(spec, model, settings(spec), user=user, keep_alive=keep_alive, wait=wait,
                                      wait_limit=wait_limit, on_progress=on_progress)
        except ProcessEnded as exc:
            if nxt is None or not may_fall_back(exc.outcome):
                raise
            event = FailedOver(user, model, spec, nxt, describe_outcome(exc.outcome), exc.outcome.details(), False)
            log.warning("%s", event.text)
            if on_failover is not None:
                on_failover(event)
            pool.events.emit(event)
    raise ServerError(_NO_ENGINE)  # not reached: the last engine returns or raises


async def _died(server: ServerSupervisor, grace: float) -> bool:
    """Whether the engine process is gone (waits briefly: the exit is noticed a moment later)."""
    if server.state not in (ServerState.CRASHED, ServerState.FAILED):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_exited(), grace)
    return server.state in (ServerState.CRASHED, ServerState.FAILED)
