"""The engine and plan a chat's replies run on: the model, the engines to try, where to answer.

The chat never owns an engine: each reply borrows the chat model's engine from the
:class:`~strata_gui.core.pool.EnginePool` along the plan (the pool's one fallback loop moves to the
next engine when one fails) and gives it back; the engine stays loaded, shared with the local API
and the benchmark, until the pool unloads it. Every call into the pool's fallback loop and every
unload of the chat lives here (:meth:`ChatEngine.run`, :meth:`ChatEngine.stop`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import httpx

from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.config.settings import Settings
from strata_gui.core.pool import (
    EnginePool,
    EngineStateChanged,
    EngineUnloaded,
    FailedOver,
    Lease,
    PooledEngine,
    PoolEvent,
    run_along_plan,
)
from strata_gui.core.runtime.client import ChatClient
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import TEXT
from strata_gui.core.runtime.launch import ServerState
from strata_gui.core.runtime.outcome import Outcome, ProcessEnded

from .events import (
    ChatEvent,
    EngineStatus,
    EngineSwitchOffer,
    Notice,
    PlanChanged,
    PlanSource,
)
from .model import ChatModel, no_model

if TYPE_CHECKING:
    from strata_gui.core.runtime.supervisor import ServerSupervisor

R = TypeVar("R")


class ChatEngine:
    """The chat model's plan of engines, and the engine replies run on.

    Args:
        pool: Where engines are borrowed.
        http: Shared HTTP client for the chat API.
        chat_model: The model (or remote endpoint) that answers, and how it loads.
        emit: Tells the chat's listeners (engine status, plan changes, fallback notices, offers).
        plans: The engine resolver: the plan for the chat's model, re-asked whenever it announces a
            change and when the model changes; it also says when another engine is clearly faster
            at a conversation's depth (an :class:`EngineSwitchOffer`, once per engine pair and model).
            Without it the plan is whatever :meth:`set_plan` was given.

    Attributes:
        plan: The engines to try, best first.
        last_outcome: How the last engine that ended under a reply ended.
    """

    USER = "chat"

    def __init__(self, pool: EnginePool, http: httpx.AsyncClient, chat_model: ChatModel,
                 emit: Callable[[ChatEvent], None], *, plans: PlanSource | None = None) -> None:
        self.pool = pool
        self.chat_model = chat_model
        self.plan: list[EngineSpec] = []
        self.last_outcome: Outcome | None = None
        self._http = http
        self._emit = emit
        self._plans = plans
        self._offered: set[tuple[str, str, str]] = set()  # (model, running engine, offered engine)
        self._engine_index = 0
        self._engine: PooledEngine | None = None  # the engine the last reply (or load) ran on
        self._unsubscribe = [pool.events.subscribe(self._on_pool_event)]
        if plans is not None:
            self._unsubscribe.append(plans.events.subscribe(lambda _event: self.replan()))
            if self.model is not None:
                self.plan = plans.plan_for(self.model)

    @property
    def model(self) -> Path | None:
        """The GGUF the chat answers with (None: none chosen yet)."""
        return self.chat_model.path

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: changes go through ``settings_service``)."""
        return self.chat_model.settings

    def close(self) -> None:
        """Let go of the pool's and the resolver's events."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    # -- the model and its plan -------------------------------------------------------------------
    def set_plan(self, plan: list[EngineSpec]) -> None:
        """Engines to try, best first. Takes effect at the next reply (the pool then swaps the
        model onto the new first engine)."""
        if list(plan) == self.plan:
            return
        self.plan = list(plan)
        self._engine_index = 0
        # Whoever announces "the engine that will run" must hear that it changed.
        self._emit(PlanChanged(tuple(self.plan)))

    def replan(self) -> None:
        """Ask the resolver again for the current model (the one place the chat's plan is decided)."""
        if self._plans is not None:
            self.set_plan(self._plans.plan_for(self.model))

    def set_model(self, model: Path, *, remember: bool = True) -> None:
        """The GGUF to chat with; the next reply loads it.

        Args:
            model: The GGUF file (the first shard of a split set).
            remember: Save it as the model to open next time (``Settings.last_model``). A one-off
                command-line prompt passes False so it does not change what the app opens.
        """
        changed = model != self.model
        self.chat_model.path = model
        if changed:
            self._engine = None
            self.replan()
        if remember:
            self.chat_model.remember()

    # -- the engine (the pool's) ------------------------------------------------------------------
    @property
    def running_engine(self) -> PooledEngine | None:
        """The pool's engine for the chat's model, when one is loaded or loading."""
        if self.model is None:
            return None
        engine = self._engine
        if engine is not None and engine.model == self.model and not engine.closing \
                and not engine.state.is_terminal:
            return engine
        return self.pool.engine_for(self.model, TEXT)

    @property
    def supervisor(self) -> ServerSupervisor | None:
        """The running engine's server (its pid, address and log), if any."""
        engine = self.running_engine
        return engine.server if engine is not None else None

    @property
    def engine(self) -> EngineSpec | None:
        """The running engine's spec (None: none is loaded or loading)."""
        engine = self.running_engine
        return engine.spec if engine is not None else None

    @property
    def engine_state(self) -> ServerState:
        """The running engine's state; after a crash, the crash (until the next start)."""
        engine = self.running_engine
        if engine is not None:
            return engine.state
        last = self._engine
        if last is not None and last.model == self.model and last.state in (ServerState.CRASHED, ServerState.FAILED):
            return last.state
        return ServerState.STOPPED

    @property
    def ready(self) -> bool:
        """The chat model's engine is loaded and can take a request now."""
        engine = self.running_engine
        return engine is not None and engine.ready

    @property
    def context_size(self) -> int:
        """The context the running engine has, else the one the model's next load will have."""
        server = self.supervisor
        if server is not None and server.n_ctx:
            return server.n_ctx
        return self.chat_model.context_size

    @property
    def preferred_engine(self) -> EngineSpec | None:
        """The plan's first engine."""
        return self.plan[0] if self.plan else None

    @property
    def on_fallback_engine(self) -> bool:
        """True when running on a later engine than the preferred one."""
        return self._engine_index > 0

    def _on_pool_event(self, event: PoolEvent) -> None:
        if isinstance(event, EngineStateChanged):
            engine = event.engine
            if engine.kind == TEXT and engine.model == self.model:
                self._emit(EngineStatus(event.state, engine.spec, event.detail))
        elif isinstance(event, EngineUnloaded):
            engine = event.engine
            if engine.kind == TEXT and engine.model == self.model and engine.state is ServerState.STOPPED \
                    and self.pool.engine_for(engine.model, TEXT) is None:
                self._emit(EngineStatus(ServerState.STOPPED, engine.spec, f"Unloaded: {event.reason}"))

    # -- running on it ----------------------------------------------------------------------------
    def _may_fall_back(self, outcome: Outcome) -> bool:
        return self.settings.auto_fallback and outcome.engine_fault

    def _failed_over(self, event: FailedOver) -> None:
        # Before the next engine starts: listeners of its READY see which engine of the plan it is.
        self._engine_index = next((i for i, s in enumerate(self.plan) if s.id == event.next.id), self._engine_index)
        self._emit(Notice(event.text, event.details))

    async def run(self, job: Callable[[EngineSpec, ChatClient], Awaitable[R]],
                  on_progress: ProgressCallback | None = None, activity: str = "running") -> R:
        """Run ``job(engine, client)`` on the chat model's engine along the plan (the pool's fallback
        loop: a failed start or an engine fault in ``job`` moves to the next engine and runs it again).

        Raises:
            ChatError: No model is chosen, no engine can run it, or its file cannot be read.
            ProcessEnded: The engine ended and no other may take over (:attr:`last_outcome`).
        """
        if self.model is None:
            raise no_model()
        if not self.plan:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "No engine to run the model."),
                            hint=QT_TRANSLATE_NOOP("Core", "Install an engine on the Engines page."))
        model = self.model
        launch = self.chat_model.checked_launch_settings()
        start = min(self._engine_index, len(self.plan) - 1)

        async def tracked(lease: Lease) -> R:
            self._engine = lease.engine
            return await job(lease.spec, ChatClient(self._http, lease.base_url, lease.api_key or None))

        try:
            ran = await run_along_plan(self.pool, self.plan, model, lambda _spec: launch, tracked, user=self.USER,
                                       start=start, may_fall_back=self._may_fall_back, activity=activity,
                                       on_failover=self._failed_over, on_progress=on_progress)
        except ProcessEnded as exc:
            self.last_outcome = exc.outcome
            raise
        self._engine_index = ran.index
        return ran.value

    async def load(self, on_progress: ProgressCallback | None = None) -> ChatClient:
        """Load the chat's model now (falling back along the plan); returns a client of its engine.

        The engine stays loaded in the pool after this returns (the next reply finds it ready).
        """

        async def client(_spec: EngineSpec, chat: ChatClient) -> ChatClient:
            return chat

        return await self.run(client, on_progress)

    async def stop(self) -> None:
        """Unload the chat model's engine (once the jobs running on it are done)."""
        engine = self.running_engine
        self._engine = None
        if engine is not None:
            await self.pool.unload(engine, "unloaded from the chat")

    async def retry_preferred(self, on_progress: ProgressCallback | None = None) -> ChatClient:
        """Unload the current engine and load the model from the first engine of the plan again."""
        await self.stop()
        self._engine_index = 0
        return await self.load(on_progress)

    # -- the depth switch ---------------------------------------------------------------------------
    def offer_depth_switch(self, depth: int, running: EngineSpec) -> None:
        """A reply ran on ``running`` in a conversation ``depth`` tokens deep: offer the engine the
        resolver finds clearly faster there (once per model and engine pair)."""
        if self._plans is None or self.model is None:
            return
        advice = self._plans.depth_switch(self.model, depth, running.id)
        if advice is None:
            return
        key = (str(self.model), running.id, advice.engine.id)
        if key in self._offered:  # asked once; a refusal is not repeated at every reply
            return
        self._offered.add(key)
        self._emit(EngineSwitchOffer(advice.message(), advice.engine, depth))

    async def accept_depth_switch(self, depth: int, on_progress: ProgressCallback | None = None) -> bool:
        """Re-plan for a conversation ``depth`` tokens deep and load the model on the new plan's
        first engine (the pool swaps the model over); False when there is no resolver to ask."""
        if self._plans is None:
            return False
        self.set_plan(self._plans.plan_for(self.model, depth))
        await self.load(on_progress)
        return True
