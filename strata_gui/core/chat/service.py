"""The chat session: conversations, streaming replies, and where they run.

The UI (or the CLI) calls the ``async`` methods and listens to :class:`ChatEvent` objects, which
are delivered on the event loop's thread. Replies run on an engine borrowed from the engine pool
through its one fallback loop: when the engine fails to start, dies, or the first request on it
fails with an engine error, the next engine of the plan is started, the interrupted request is
sent again, and a :class:`Notice` tells the user what happened.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from strata_gui.core.errors import ChatError, ServerError, SettingsError
from strata_gui.core.events import Listeners
from strata_gui.core.models.library import find_projector
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
from strata_gui.core.progress import ProgressCallback
from strata_gui.core.runtime.client import ChatClient, ChatReply, DeltaCallback, ReplyStats, SamplingParams
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import TEXT
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.outcome import Outcome, ProcessEnded
from strata_gui.core.settings import Settings, SettingsService

from .conversations import DEFAULT_TITLE, Conversations
from .images import ChatImage
from .store import COMPLETE, FAILED, INTERRUPTED, STOPPED, STREAMING, Conversation, ConversationStore, Message

if TYPE_CHECKING:
    from strata_gui.core.runtime.supervisor import ServerSupervisor

log = logging.getLogger(__name__)

T = TypeVar("T")
DELTA_INTERVAL = 0.016  # s: one frame at 60 Hz; streamed text reaches listeners at most this often
YIELD_S = 0.001  # s: a turn of the loop that lets it serve timers and input: under qasync a 0 s sleep
# runs before Qt's other timers (it chains with the work before and after it, one long busy stretch)
ANNOUNCE_WAIT = 0.03  # s: new messages are announced at the latest this long after a send (a slow
# connection to a remote engine must not keep the user's message off the screen)


@dataclass(frozen=True)
class EngineStatus:
    """The engine's state changed (or a load-progress detail arrived)."""

    state: ServerState
    engine: EngineSpec | None
    detail: str


@dataclass(frozen=True)
class Notice:
    """Something the user should read once (fallback happened). ``details`` is the log tail."""

    text: str
    details: str = ""


@dataclass(frozen=True)
class EngineSwitchOffer:
    """The conversation went deep enough that another engine is clearly faster (by the benchmark):
    the user may switch, which reloads the model. :meth:`ChatService.accept_depth_switch` does it."""

    text: str
    engine: EngineSpec
    depth: int


@dataclass(frozen=True)
class PlanChanged:
    """The engines the next reply will try changed (after detection, an install, a probe, a pin)."""

    plan: tuple[EngineSpec, ...]


@dataclass(frozen=True)
class MessageAdded:
    """A message was saved. A reply's messages (the user's and the new reply) are announced once
    its request has left for the engine, or sooner when something is to wait for (an engine start,
    a slow connection: :data:`ANNOUNCE_WAIT` at most): the listeners' work (building widgets) then
    overlaps the engine's prompt processing instead of delaying the request. Always before any
    other event about them."""

    message: Message


@dataclass(frozen=True)
class MessageDelta:
    """Text a streaming reply received since the previous delta (one or more tokens; at most
    about one delta per ``delta_interval``). ``complete``: the engine finished the reply, this is
    its last text (maybe empty); the reply's saved state follows on a later loop turn, so a
    listener shows this text at once (the reply's end is painted before the saving work)."""

    message_id: int
    text: str
    complete: bool = False


@dataclass(frozen=True)
class MessageUpdated:
    message: Message


ChatEvent = EngineStatus | Notice | EngineSwitchOffer | PlanChanged | MessageAdded | MessageDelta | MessageUpdated
Listener = Callable[[ChatEvent], None]


class RemoteEngine(Protocol):
    """An engine Strata does not manage (a remote OpenAI-compatible endpoint)."""

    @property
    def label(self) -> str: ...

    async def stream_chat(self, messages: Sequence[Mapping[str, Any]], sampling: SamplingParams | None = None,
                          on_delta: DeltaCallback | None = None, *,
                          on_sent: Callable[[], None] | None = None) -> ChatReply: ...


class DepthSwitchAdvice(Protocol):
    """Another engine is clearly faster at the conversation's depth."""

    @property
    def engine(self) -> EngineSpec: ...

    def message(self) -> str: ...


class PlanSource(Protocol):
    """Who decides the chat's engines (the engine resolver): the plan for a model (at a depth),
    whether another engine is clearly faster at a depth, and an event whenever its answers may
    have changed (an install, a probe, a pin, a benchmark, new GPUs)."""

    @property
    def events(self) -> Listeners[Any]: ...

    def plan_for(self, model: Path | None, depth: int | None = None) -> list[EngineSpec]: ...

    def depth_switch(self, model: Path, depth: int, current: str) -> DepthSwitchAdvice | None: ...


class ChatService:
    """Conversations plus running their replies on an engine borrowed from the pool.

    The chat never owns an engine: each reply borrows the chat model's engine from the
    :class:`~strata_gui.core.pool.EnginePool` along the plan (the pool's one fallback loop moves to
    the next engine when one fails) and gives it back; the engine stays loaded, shared with the
    local API and the benchmark, until the pool unloads it.

    Args:
        store: Conversation persistence.
        pool: Where engines are borrowed.
        http: Shared HTTP client for the chat API.
        settings_service: User settings (read at each reply: auto_fallback ...); :meth:`set_model`
            records the last model through it.
        plans: The engine resolver: the plan for the chat's model, re-asked whenever it announces a
            change and when the model changes; it also says when another engine is clearly faster
            at a conversation's depth (an :class:`EngineSwitchOffer`, once per engine pair and model).
            Without it the plan is whatever :meth:`set_plan` was given.
        clock: Monotonic clock (save throttling, delta batching, statistics of a stopped reply).
        save_interval: Seconds between saves of a reply that is streaming.
        delta_interval: Shortest time between two :class:`MessageDelta` events of a streaming
            reply (the text in between is batched): about one display frame.
        launch_settings: How to launch a model (its saved load options); without it, Settings'.
    """

    USER = "chat"

    def __init__(
        self,
        store: ConversationStore,
        pool: EnginePool,
        http: httpx.AsyncClient,
        settings_service: SettingsService,
        *,
        plans: PlanSource | None = None,
        clock: Callable[[], float] = time.monotonic,
        save_interval: float = 1.0,
        delta_interval: float = DELTA_INTERVAL,
        launch_settings: Callable[[Path], ServerSettings] | None = None,
    ) -> None:
        self.store = store
        self.conversations = Conversations(store)
        self.pool = pool
        self._plans = plans
        self._offered: set[tuple[str, str, str]] = set()  # (model, running engine, offered engine)
        self._launch_settings = launch_settings
        self._http = http
        self.settings_service = settings_service
        self._clock = clock
        self._save_interval = save_interval
        self._delta_interval = delta_interval
        self.events: Listeners[ChatEvent] = Listeners()
        self._unannounced: list[Message] = []  # saved messages whose MessageAdded waits for the request
        self.plan: list[EngineSpec] = []
        last = settings_service.current.last_model
        self.model: Path | None = Path(last) if last else None
        self._engine_index = 0
        self._engine: PooledEngine | None = None  # the engine the last reply (or load) ran on
        self.last_outcome: Outcome | None = None
        self.remote: RemoteEngine | None = None  # when set, replies go there instead
        self._projector_key: tuple[Path, int] | None = None
        self._projector: Path | None = None
        self._unsubscribe = [pool.events.subscribe(self._on_pool_event)]
        if plans is not None:
            self._unsubscribe.append(plans.events.subscribe(lambda _event: self.replan()))
            if self.model is not None:
                self.plan = plans.plan_for(self.model)

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: changes go through ``settings_service``)."""
        return self.settings_service.current

    # -- configuration --------------------------------------------------------------------------
    def subscribe(self, fn: Listener) -> Callable[[], None]:
        """Receive every :data:`ChatEvent` on the loop's thread; returns the unsubscribe."""
        return self.events.subscribe(fn)

    def unsubscribe(self, fn: Listener) -> None:
        self.events.unsubscribe(fn)

    def _emit(self, event: ChatEvent) -> None:
        if self._unannounced:
            self._announce()  # listeners hear of a message before anything else about it
        self.events.emit(event)

    def _announce(self) -> None:
        """Emit the MessageAdded events held back until the reply's request left."""
        pending, self._unannounced = self._unannounced, []
        for message in pending:
            self.events.emit(MessageAdded(message))

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

    def set_remote(self, remote: RemoteEngine | None) -> None:
        """Answer through ``remote`` (None: the managed local engine again)."""
        self.remote = remote

    def set_model(self, model: Path, *, remember: bool = True) -> None:
        """The GGUF to chat with; the next reply loads it.

        Args:
            model: The GGUF file (the first shard of a split set).
            remember: Save it as the model to open next time (``Settings.last_model``). A one-off
                command-line prompt passes False so it does not change what the app opens.
        """
        changed = model != self.model
        self.model = model
        if changed:
            self._engine = None
            self.replan()
        if remember:
            try:
                self.settings_service.update(last_model=str(model))
            except SettingsError:
                # Remembering is a convenience: a read-only config folder must not stop the chat.
                log.warning("could not remember the chosen model", exc_info=True)

    # -- the engine (the pool's) --------------------------------------------------------------------
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
    def preferred_engine(self) -> EngineSpec | None:
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

    @property
    def projector(self) -> Path | None:
        """The chosen model's vision projector (``mmproj`` next to it), loaded with the model.

        The folder is listed again only when it changed (its modification time): a projector
        downloaded later is still found, and a message does not pay for listing a big folder.
        """
        if self.model is None:
            return None
        try:
            key = (self.model, self.model.parent.stat().st_mtime_ns)
        except OSError:
            return None
        if key != self._projector_key:
            self._projector_key, self._projector = key, find_projector(self.model)
        return self._projector

    @property
    def accepts_images(self) -> bool:
        """Whether a message may carry images: the local model has a projector, or replies go to
        a remote endpoint (which answers for itself whether its model sees images)."""
        return self.remote is not None or self.projector is not None

    def check_images_accepted(self) -> None:
        """Raise unless images can be sent (so a caller can refuse before loading anything).

        Raises:
            ChatError: The local model has no vision projector.
        """
        if not self.accepts_images:
            name = self.model.name if self.model is not None else "This model"
            raise ChatError(f"{name} cannot see images: no vision projector (mmproj) was found next to it.",
                            hint="Download a vision model from the Models page (its projector comes with it), "
                                 "or put its mmproj-*.gguf file in the model's folder.")

    @property
    def context_size(self) -> int:
        server = self.supervisor
        if server is not None and server.n_ctx:
            return server.n_ctx
        if self._launch_settings is not None and self.model is not None:
            try:
                return self._launch_settings(self.model).ctx_size
            except OSError:  # the model file went away: the meter falls back to Settings
                pass
        return self.settings.context_size

    def launch_settings(self) -> ServerSettings:
        """What the next engine start uses for the current model: its load options (else Settings'),
        plus ``--mmproj`` when the model has a projector.

        Raises:
            OSError: the model file cannot be read (its load options are keyed by its identity).
        """
        if self._launch_settings is not None and self.model is not None:
            settings = self._launch_settings(self.model)
        else:
            settings = ServerSettings.from_settings(self.settings)
        projector = self.projector
        return dataclasses.replace(settings, mmproj=str(projector)) if projector is not None else settings

    def options_changed(self) -> None:
        """The model's load options changed: the next reply reloads the model with them (the pool
        keys engines by their settings, so nothing needs doing here; kept for callers)."""

    def _checked_launch_settings(self) -> ServerSettings:
        try:
            return self.launch_settings()
        except OSError as exc:
            raise ChatError(f"Cannot read the model file: {exc.strerror or exc}.",
                            hint="Choose the model again in the header.") from exc

    def _may_fall_back(self, outcome: Outcome) -> bool:
        return self.settings.auto_fallback and outcome.engine_fault

    def _failed_over(self, event: FailedOver) -> None:
        # Before the next engine starts: listeners of its READY see which engine of the plan it is.
        self._engine_index = next((i for i, s in enumerate(self.plan) if s.id == event.next.id), self._engine_index)
        self._emit(Notice(event.text, event.details))

    async def _run(self, job: Callable[[Lease], Awaitable[T]], on_progress: ProgressCallback | None,
                   activity: str = "running") -> T:
        """Run ``job`` on the chat model's engine along the plan (the pool's fallback loop)."""
        if self.model is None:
            raise ChatError("No model chosen.", hint="Pick a GGUF model in the header first.")
        if not self.plan:
            raise ChatError("No engine to run the model.", hint="Install an engine on the Engines page.")
        model = self.model
        launch = self._checked_launch_settings()
        start = min(self._engine_index, len(self.plan) - 1)

        async def tracked(lease: Lease) -> T:
            self._engine = lease.engine
            return await job(lease)

        try:
            ran = await run_along_plan(self.pool, self.plan, model, lambda _spec: launch, tracked, user=self.USER,
                                       start=start, may_fall_back=self._may_fall_back, activity=activity,
                                       on_failover=self._failed_over, on_progress=on_progress)
        except ProcessEnded as exc:
            self.last_outcome = exc.outcome
            raise
        self._engine_index = ran.index
        return ran.value

    async def ensure_engine(self, on_progress: ProgressCallback | None = None) -> ChatClient:
        """Load the chat's model now (falling back along the plan); returns a client of its engine.

        The engine stays loaded in the pool after this returns (the next reply finds it ready).
        """

        async def client(lease: Lease) -> ChatClient:
            return ChatClient(self._http, lease.base_url, lease.api_key or None)

        return await self._run(client, on_progress)

    async def retry_preferred_engine(self, on_progress: ProgressCallback | None = None) -> None:
        """Unload the current engine and start again from the first one of the plan."""
        await self.stop_engine()
        self._engine_index = 0
        await self.ensure_engine(on_progress)

    async def restart(self, on_progress: ProgressCallback | None = None) -> None:
        """Reload the model (same engine of the plan)."""
        await self.stop_engine()
        await self.ensure_engine(on_progress)

    async def stop_engine(self) -> None:
        """Unload the chat model's engine (once the jobs running on it are done)."""
        engine = self.running_engine
        self._engine = None
        if engine is not None:
            await self.pool.unload(engine, "unloaded from the chat")

    async def aclose(self) -> None:
        """Let go of the pool's events and close the store (the pool stops the engines)."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        self.store.close()

    # -- conversations --------------------------------------------------------------------------
    def new_conversation(self, title: str = DEFAULT_TITLE) -> Conversation:
        return self.conversations.new(title, model=str(self.model or ""))

    def history(self, conversation: Conversation, upto: int | None = None) -> list[dict[str, Any]]:
        """Messages sent to the engine (see :meth:`Conversations.history`); images go along when
        the engine accepts them."""
        return self.conversations.history(conversation, upto, with_images=self.accepts_images)

    def context_used(self, conversation_id: int) -> int:
        return self.conversations.context_used(conversation_id)

    async def send(self, conversation_id: int, text: str, on_progress: ProgressCallback | None = None, *,
                   images: Sequence[ChatImage] = ()) -> Message:
        """Save the user's message (with its images), then stream the reply into a new assistant message.

        Raises:
            ChatError: Images were given but the model has no vision projector (nothing is saved).
        """
        if images:
            self.check_images_accepted()
        user = self.conversations.add_user_message(conversation_id, text, images)
        return await self._reply(conversation_id, on_progress, user)

    async def regenerate(self, conversation_id: int, on_progress: ProgressCallback | None = None) -> Message:
        """Drop the replies after the last user message and answer it again."""
        self.conversations.drop_replies_to_last_question(conversation_id)
        return await self._reply(conversation_id, on_progress)

    async def edit_and_resend(self, message_id: int, text: str,
                              on_progress: ProgressCallback | None = None) -> Message:
        """Replace a user message's text, drop everything after it, and answer again."""
        conversation_id = self.conversations.edit(message_id, text)
        return await self._reply(conversation_id, on_progress)

    # -- one reply --------------------------------------------------------------------------------
    async def _reply(self, conversation_id: int, on_progress: ProgressCallback | None,
                     user: Message | None = None) -> Message:
        """Stream a new reply; ``user`` (just saved) and the reply are announced with it."""
        try:
            conv = self.conversations.get(conversation_id)
            settings = {"system_prompt": conv.system_prompt, "sampling": conv.sampling.to_json(),
                        "model": str(self.model or "")}
            remote = self.remote
            if remote is not None:
                settings["model"] = remote.label
            reply = self.store.add_message(conv.id, "assistant", "", status=STREAMING, settings=settings)
        except BaseException:
            if user is not None:
                self._emit(MessageAdded(user))
            raise
        # Held back until the request is sent: building a reply's widgets takes milliseconds
        # that the engine can spend on the prompt meanwhile (time to first token).
        self._unannounced += [m for m in (user, reply) if m is not None]
        deadline = asyncio.get_running_loop().call_later(ANNOUNCE_WAIT, self._announce)
        try:
            return await self._stream_reply(conv, reply, on_progress)
        finally:
            deadline.cancel()
            self._announce()

    async def _stream_reply(self, conv: Conversation, reply: Message, on_progress: ProgressCallback | None) -> Message:
        history = self.history(conv, upto=reply.id)
        remote = self.remote
        if remote is not None:
            return await self._reply_remote(remote, conv, reply.id, history)
        if self.model is not None and not self._loaded_for_reply():
            self._announce()  # the engine starts first: the user sees their message meanwhile
        attempts = 0
        job_failed = False  # the last attempt's request failed (its partial reply is kept)
        spec: EngineSpec | None = None

        async def answer(lease: Lease) -> Message:
            nonlocal attempts, job_failed, spec
            attempts += 1
            spec = lease.spec
            if attempts > 1:  # the last engine failed: start the reply afresh on this one
                self.store.update_message(reply.id, content="", status=STREAMING)
                again = self.store.message(reply.id)
                assert again is not None
                self._emit(MessageUpdated(again))
            job_failed = False
            client = ChatClient(self._http, lease.base_url, lease.api_key or None)
            buffer = _ReplyBuffer(reply.id, self, self._clock())
            try:
                try:
                    result = await client.stream_chat(history, conv.sampling, buffer.add, on_sent=self._announce)
                    await buffer.complete()
                finally:
                    buffer.flush()  # listeners get all the text before the final update
            except asyncio.CancelledError:
                stopped = buffer.counted_stats()
                stopped.finish_reason, stopped.engine, stopped.backend = "stopped", spec.label, spec.backend
                self._finish(reply.id, "".join(buffer.pieces), STOPPED, stopped)
                raise
            except ServerError:
                job_failed = True
                self._finish(reply.id, "".join(buffer.pieces), INTERRUPTED,
                             ReplyStats(finish_reason="interrupted", engine=spec.label, backend=spec.backend))
                raise
            except Exception:
                self._finish(reply.id, "".join(buffer.pieces), FAILED,
                             ReplyStats(finish_reason="error", engine=spec.label, backend=spec.backend))
                raise
            stats = result.stats
            stats.engine, stats.backend = spec.label, spec.backend
            return self._finish(reply.id, result.text, COMPLETE, stats, ran_on=f"local:{spec.label}")

        def unanswered() -> bool:
            """No attempt settled the reply (an engine never started for it)."""
            current = self.store.message(reply.id)
            return current is not None and current.status == STREAMING

        try:
            done = await self._run(answer, on_progress, activity="answering")
        except asyncio.CancelledError:
            if unanswered():  # stopped while the engine was loading
                self._finish(reply.id, "", STOPPED, ReplyStats(finish_reason="stopped"))
            raise
        except ProcessEnded as exc:
            if job_failed:  # it died while answering and no other engine may take over
                raise ServerError(f"{exc.message.rstrip('.')}. The partial reply was kept.",
                                  hint="Send again to restart the engine.", details=exc.details) from exc
            if unanswered():
                self._finish(reply.id, "", FAILED, ReplyStats(finish_reason="engine failed"))
            raise
        except Exception:
            if unanswered():
                self._finish(reply.id, "", FAILED, ReplyStats(finish_reason="engine failed"))
            raise
        if spec is not None:
            self._offer_depth_switch(conv.id, spec)
        return done

    def _loaded_for_reply(self) -> bool:
        engine = self.running_engine
        return engine is not None and engine.ready

    def _offer_depth_switch(self, conversation_id: int, running: EngineSpec) -> None:
        if self._plans is None or self.model is None:
            return
        depth = self.context_used(conversation_id)
        advice = self._plans.depth_switch(self.model, depth, running.id)
        if advice is None:
            return
        key = (str(self.model), running.id, advice.engine.id)
        if key in self._offered:  # asked once; a refusal is not repeated at every reply
            return
        self._offered.add(key)
        self._emit(EngineSwitchOffer(advice.message(), advice.engine, depth))

    async def accept_depth_switch(self, depth: int, on_progress: ProgressCallback | None = None) -> None:
        """Re-plan for a conversation ``depth`` tokens deep and load the model on the new plan's
        first engine (the cost the offer named: the pool swaps the model over)."""
        if self._plans is None:
            return
        self.set_plan(self._plans.plan_for(self.model, depth))
        await self.ensure_engine(on_progress)

    async def _reply_remote(self, remote: RemoteEngine, conv: Conversation, reply_id: int,
                            history: list[dict[str, Any]]) -> Message:
        where = f"remote:{remote.label}"
        buffer = _ReplyBuffer(reply_id, self, self._clock())
        stopped = ReplyStats(engine=remote.label, backend="remote")
        try:
            try:
                result = await remote.stream_chat(history, conv.sampling, buffer.add, on_sent=self._announce)
                await buffer.complete()
            finally:
                buffer.flush()
        except asyncio.CancelledError:
            stopped = buffer.counted_stats()
            stopped.engine, stopped.backend, stopped.finish_reason = remote.label, "remote", "stopped"
            self._finish(reply_id, "".join(buffer.pieces), STOPPED, stopped, ran_on=where)
            raise
        except Exception:
            stopped.finish_reason = "error"
            self._finish(reply_id, "".join(buffer.pieces), FAILED, stopped, ran_on=where)
            raise
        return self._finish(reply_id, result.text, COMPLETE, result.stats, ran_on=where)

    def _finish(self, message_id: int, content: str, status: str, stats: ReplyStats,
                ran_on: str | None = None) -> Message:
        self.store.update_message(message_id, content=content, status=status, stats=stats, ran_on=ran_on)
        msg = self.store.message(message_id)
        assert msg is not None
        self._emit(MessageUpdated(msg))
        return msg


class _ReplyBuffer:
    """Collects a streaming reply, forwards its text in batches, saves it about once per interval.

    Pieces arrive once per token (hundreds per second); listeners (the chat page's repaint, the
    CLI's print) need the text at most once per frame. The first piece goes out at once (time to
    first token is what the user waits for); later ones are sent together when ``delta_interval``
    has passed since the last event, by a timer when none arrives to carry them.
    """

    def __init__(self, message_id: int, service: ChatService, now: float) -> None:
        self.message_id = message_id
        self.pieces: list[str] = []
        self._service = service
        self._interval = service._delta_interval
        self._last_save = now
        self._started = now
        self._first: float | None = None
        self._last: float | None = None
        self._sent = 0  # pieces already emitted
        self._last_emit = -math.inf
        self._timer: asyncio.TimerHandle | None = None

    def add(self, text: str) -> None:
        self.pieces.append(text)
        svc = self._service
        now = svc._clock()
        if self._first is None:
            self._first = now
        self._last = now
        if self._timer is None:
            wait = self._last_emit + self._interval - now
            if wait <= 0:
                self._emit(now)
            else:
                self._timer = asyncio.get_running_loop().call_later(wait, self.flush)
        if now - self._last_save >= svc._save_interval:
            self._last_save = now
            svc.store.update_message(self.message_id, content="".join(self.pieces))

    def flush(self) -> None:
        """Emit the text not sent yet (the timer's callback, and before the reply is finished)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sent < len(self.pieces):
            self._emit(self._service._clock())

    async def complete(self) -> None:
        """The engine finished: send the last text as complete, then give the loop a turn, so the
        reply's end is painted before it is saved and its statistics are shown (that work, in the
        same busy stretch, delayed the last paint and made the end the stream's longest stall)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._emit(self._service._clock(), complete=True)
        await asyncio.sleep(YIELD_S)

    def _emit(self, now: float, *, complete: bool = False) -> None:
        pieces = self.pieces
        text = pieces[-1] if self._sent == len(pieces) - 1 else "".join(pieces[self._sent:])
        self._sent = len(pieces)
        self._last_emit = now
        self._service._emit(MessageDelta(self.message_id, text, complete))

    def counted_stats(self) -> ReplyStats:
        """Statistics of a reply cut short (Stop): the engine's final timings never arrive, so the
        pieces are counted (llama-server streams one token per piece) and timed here."""
        n = len(self.pieces)
        stats = ReplyStats(predicted_n=n)
        if self._first is not None:
            stats.ttft_s = self._first - self._started
        if self._first is not None and self._last is not None and n > 1 and self._last > self._first:
            stats.decode_tps = (n - 1) / (self._last - self._first)
        return stats
