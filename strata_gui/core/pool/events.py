"""What the engine pool announces on :attr:`EnginePool.events`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EngineKind
from strata_gui.core.runtime.launch import ServerState

from .engine import PooledEngine


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
    """A request waits: ``reason`` says for what (shown where the request was made), ``ahead``
    how many requests go before it on the same engine (0 when it waits for something else)."""

    kind: EngineKind
    model: Path
    user: str
    reason: str
    ahead: int = 0


@dataclass(frozen=True)
class WaitingRequest:
    """One request the scheduler has not served yet (:meth:`EnginePool.activity`)."""

    user: str
    kind: EngineKind | None  # None: a request for the whole pool (an engine-update trial)
    model: Path | None
    reason: str  # "" while its engine loads
    since: float  # the pool clock when it arrived
    ahead: int


@dataclass(frozen=True)
class ModelActivity:
    """An engine's slots in use and the requests it serves (:meth:`EnginePool.activity`)."""

    engine: PooledEngine
    active: int
    slots: int
    users: tuple[str, ...]


@dataclass(frozen=True)
class PoolActivity:
    """Every engine's use and every waiting request, announced whenever one of them changes."""

    engines: tuple[ModelActivity, ...]
    waiting: tuple[WaitingRequest, ...]

    def waiting_for(self, model: Path) -> int:
        return sum(1 for w in self.waiting if w.model == model)

    @property
    def active(self) -> int:
        return sum(e.active for e in self.engines)


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


PoolEvent = EngineStateChanged | EngineUnloaded | Waiting | FailedOver | PoolActivity
