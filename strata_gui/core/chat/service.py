"""The chat session: one managed engine, conversations, streaming replies, and engine fallback.

The UI (or the CLI) calls the ``async`` methods and listens to :class:`ChatEvent` objects, which
are delivered on the event loop's thread. When the engine fails to start, dies, or the first
request on it fails with an engine error, the next engine of the plan is started, the
interrupted request is sent again, and a :class:`Notice` tells the user what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from strata_gui.core.errors import ChatError, ServerError, SettingsError
from strata_gui.core.events import emit
from strata_gui.core.models.library import find_projector
from strata_gui.core.progress import ProgressCallback
from strata_gui.core.runtime.client import ChatClient, ChatReply, DeltaCallback, ReplyStats, SamplingParams
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, Phase, describe_outcome
from strata_gui.core.runtime.supervisor import (
    ServerSettings,
    ServerState,
    ServerSupervisor,
    SupervisorFactory,
)
from strata_gui.core.settings import Settings, SettingsService

from .images import ChatImage
from .store import COMPLETE, FAILED, INTERRUPTED, STOPPED, STREAMING, Conversation, ConversationStore, Message

log = logging.getLogger(__name__)

DEFAULT_TITLE = "New chat"
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


class DepthAdvisor(Protocol):
    """Who knows which engine is fastest at a depth (the engine resolver)."""

    def depth_switch(self, model: Path, depth: int, current: str) -> DepthSwitchAdvice | None: ...

    def plan_for(self, model: Path | None, depth: int | None = None) -> list[EngineSpec]: ...


class ChatService:
    """Conversations plus the engine they run on.

    Args:
        store: Conversation persistence.
        supervisor_factory: Makes a :class:`ServerSupervisor` for (engine, model, settings).
        http: Shared HTTP client for the chat API.
        settings_service: User settings (read at each engine start: auto_fallback, context ...);
            :meth:`set_model` records the last model through it.
        clock: Monotonic clock (save throttling, delta batching, statistics of a stopped reply).
        save_interval: Seconds between saves of a reply that is streaming.
        delta_interval: Shortest time between two :class:`MessageDelta` events of a streaming
            reply (the text in between is batched): about one display frame.
        plan_provider: Gives the engine plan for a model (a benchmarked engine first); consulted
            when the model changes. Without it the plan is whatever :meth:`set_plan` was given.
        crash_handler: Asked when a reply failed with an engine error (e.g. an RPC worker dropped);
            when it returns a notice, the engine is reloaded and the request sent again (once per reply).
        launch_settings: How to launch a model (its saved load options); without it, Settings'.
        depth_advisor: Asked after each reply whether another engine is clearly faster at the
            conversation's depth (then an :class:`EngineSwitchOffer` is emitted, once per engine
            pair and model), and for the plan at that depth when the offer is accepted.
    """

    def __init__(
        self,
        store: ConversationStore,
        supervisor_factory: SupervisorFactory,
        http: httpx.AsyncClient,
        settings_service: SettingsService,
        *,
        clock: Callable[[], float] = time.monotonic,
        save_interval: float = 1.0,
        delta_interval: float = DELTA_INTERVAL,
        plan_provider: Callable[[Path | None], list[EngineSpec]] | None = None,
        crash_handler: Callable[[Outcome | None, Path | None], Awaitable[str | None]] | None = None,
        launch_settings: Callable[[Path], ServerSettings] | None = None,
        depth_advisor: DepthAdvisor | None = None,
    ) -> None:
        self.store = store
        self._depth_advisor = depth_advisor
        self._offered: set[tuple[str, str, str]] = set()  # (model, running engine, offered engine)
        self._launch_settings = launch_settings
        self.crash_handler = crash_handler
        self._plan_provider = plan_provider
        self._factory = supervisor_factory
        self._http = http
        self.settings_service = settings_service
        self._clock = clock
        self._save_interval = save_interval
        self._delta_interval = delta_interval
        self._listeners: list[Listener] = []
        self._unannounced: list[Message] = []  # saved messages whose MessageAdded waits for the request
        self.plan: list[EngineSpec] = []
        last = settings_service.current.last_model
        self.model: Path | None = Path(last) if last else None
        self._engine_index = 0
        self._supervisor: ServerSupervisor | None = None
        self._client: ChatClient | None = None
        self._served_ok = False
        self._start_lock = asyncio.Lock()
        self._stale = False  # model or plan changed since the engine started
        self.last_outcome: Outcome | None = None
        self.remote: RemoteEngine | None = None  # when set, replies go there instead
        self._projector_key: tuple[Path, int] | None = None
        self._projector: Path | None = None

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: changes go through ``settings_service``)."""
        return self.settings_service.current

    # -- configuration --------------------------------------------------------------------------
    def subscribe(self, fn: Listener) -> None:
        self._listeners.append(fn)

    def unsubscribe(self, fn: Listener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(fn)

    def _emit(self, event: ChatEvent) -> None:
        if self._unannounced:
            self._announce()  # listeners hear of a message before anything else about it
        emit(self._listeners, event)

    def _announce(self) -> None:
        """Emit the MessageAdded events held back until the reply's request left."""
        pending, self._unannounced = self._unannounced, []
        for message in pending:
            emit(self._listeners, MessageAdded(message))

    def set_plan(self, plan: list[EngineSpec]) -> None:
        """Engines to try, best first. Takes effect at the next engine start."""
        self.plan = list(plan)
        self._engine_index = 0
        self._stale = True
        # Whoever announces "the engine that will run" must hear that it changed.
        self._emit(PlanChanged(tuple(self.plan)))

    def set_remote(self, remote: RemoteEngine | None) -> None:
        """Answer through ``remote`` (None: the managed local engine again)."""
        self.remote = remote

    def set_model(self, model: Path, *, remember: bool = True) -> None:
        """The GGUF to chat with. A running engine is restarted with it at the next request.

        Args:
            model: The GGUF file (the first shard of a split set).
            remember: Save it as the model to open next time (``Settings.last_model``). A one-off
                command-line prompt passes False so it does not change what the app opens.
        """
        changed = model != self.model
        self.model = model
        if changed:
            self._stale = True
            if self._plan_provider is not None:
                self.set_plan(self._plan_provider(model))
        if remember:
            try:
                self.settings_service.update(last_model=str(model))
            except SettingsError:
                # Remembering is a convenience: a read-only config folder must not stop the chat.
                log.warning("could not remember the chosen model", exc_info=True)

    @property
    def engine(self) -> EngineSpec | None:
        return self._supervisor.engine if self._supervisor else None

    @property
    def engine_state(self) -> ServerState:
        return self._supervisor.state if self._supervisor else ServerState.STOPPED

    @property
    def supervisor(self) -> ServerSupervisor | None:
        return self._supervisor

    @property
    def preferred_engine(self) -> EngineSpec | None:
        return self.plan[0] if self.plan else None

    @property
    def on_fallback_engine(self) -> bool:
        """True when running on a later engine than the preferred one."""
        return self._engine_index > 0

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
        if self._supervisor and self._supervisor.n_ctx:
            return self._supervisor.n_ctx
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
        """The model's load options changed: the next request reloads the engine with them."""
        self._stale = True

    # -- engine ----------------------------------------------------------------------------------
    def _serving(self) -> bool:
        """Whether the running engine serves the current model and settings as they are."""
        sup = self._supervisor
        # A projector put next to the model since the start (downloaded later) needs a reload.
        projector = self.projector
        same_projector = sup is not None and sup.settings.mmproj == (str(projector) if projector else "")
        return (sup is not None and sup.state is ServerState.READY and self._client is not None and not self._stale
                and same_projector)

    async def ensure_engine(self, on_progress: ProgressCallback | None = None) -> ChatClient:
        """Start the engine if it is not running (falling back along the plan); return its client."""
        async with self._start_lock:
            sup = self._supervisor
            if self._serving() and self._client is not None:
                return self._client
            self._stale = False
            if sup is not None:
                await sup.stop()
            if self.model is None:
                raise ChatError("No model chosen.", hint="Pick a GGUF model in the header first.")
            if not self.plan:
                raise ChatError("No engine to run the model.", hint="Install an engine on the Engines page.")
            index = min(self._engine_index, len(self.plan) - 1)
            while True:
                spec = self.plan[index]
                try:
                    launch = self.launch_settings()
                except OSError as exc:
                    raise ChatError(f"Cannot read the model file: {exc.strerror or exc}.",
                                    hint="Choose the model again in the header.") from exc
                sup = self._factory(spec, self.model, launch)
                sup.add_listener(functools.partial(self._on_state, sup))
                self._supervisor, self._client = sup, None
                self._engine_index = index  # before start: listeners of READY see which engine it is
                try:
                    base = await sup.start(on_progress)
                except ServerError:
                    outcome = sup.outcome
                    self.last_outcome = outcome
                    await sup.stop()
                    if outcome is not None and self._may_fall_back(outcome, index):
                        index += 1
                        self._notify_fallback(outcome, self.plan[index])
                        continue
                    raise
                self._engine_index = index
                self._served_ok = False
                self._client = ChatClient(self._http, base, sup.settings.api_key or None)
                return self._client

    def _may_fall_back(self, outcome: Outcome, index: int) -> bool:
        return self.settings.auto_fallback and outcome.engine_fault and index + 1 < len(self.plan)

    def _notify_fallback(self, outcome: Outcome, nxt: EngineSpec) -> None:
        text = f"{describe_outcome(outcome)} Continuing on {nxt.label}."
        log.warning("%s", text)
        self._emit(Notice(text, outcome.details()))

    def _on_state(self, sup: ServerSupervisor, state: ServerState, detail: str) -> None:
        if sup is self._supervisor:
            self._emit(EngineStatus(state, sup.engine, detail))

    async def retry_preferred_engine(self, on_progress: ProgressCallback | None = None) -> None:
        """Stop the current engine and start again from the first one of the plan."""
        await self.stop_engine()
        self._engine_index = 0
        await self.ensure_engine(on_progress)

    async def restart(self, on_progress: ProgressCallback | None = None) -> None:
        """Apply a new model or settings: stop and start (same engine of the plan)."""
        await self.stop_engine()
        await self.ensure_engine(on_progress)

    async def stop_engine(self) -> None:
        if self._supervisor is not None:
            await self._supervisor.stop()
        self._client = None

    def kill_engine_now(self) -> None:
        """Blocking kill of the engine tree, for exit paths where the loop no longer runs."""
        if self._supervisor is not None:
            self._supervisor.kill_now()
        self._client = None

    async def aclose(self) -> None:
        await self.stop_engine()
        self.store.close()

    # -- conversations --------------------------------------------------------------------------
    def new_conversation(self, title: str = DEFAULT_TITLE) -> Conversation:
        return self.store.create_conversation(title, model=str(self.model or ""))

    def history(self, conversation: Conversation, upto: int | None = None) -> list[dict[str, Any]]:
        """Messages sent to the engine: system prompt, then every kept turn before ``upto``.

        A message with images becomes OpenAI content parts (its text, then each image as a
        ``data:`` URL) when the engine accepts images; otherwise only its text is sent, so a
        conversation with pictures can go on with a text-only model.
        """
        out: list[dict[str, Any]] = []
        with_images = self.accepts_images
        if conversation.system_prompt.strip():
            out.append({"role": "system", "content": conversation.system_prompt})
        for m in self.store.messages(conversation.id):
            if upto is not None and m.id >= upto:
                break
            if m.status == FAILED or (m.role == "assistant" and not m.content):
                continue
            if m.images and with_images:
                parts: list[dict[str, object]] = [{"type": "text", "text": m.content}] if m.content else []
                parts += [im.content_part() for im in m.images]
                out.append({"role": m.role, "content": parts})
            else:
                out.append({"role": m.role, "content": m.content})
        return out

    def _conversation(self, conversation_id: int) -> Conversation:
        conv = self.store.conversation(conversation_id)
        if conv is None:
            raise ChatError("This conversation no longer exists.")
        return conv

    async def send(self, conversation_id: int, text: str, on_progress: ProgressCallback | None = None, *,
                   images: Sequence[ChatImage] = ()) -> Message:
        """Save the user's message (with its images), then stream the reply into a new assistant message.

        Raises:
            ChatError: Images were given but the model has no vision projector (nothing is saved).
        """
        if images:
            self.check_images_accepted()
        conv = self._conversation(conversation_id)
        if conv.title == DEFAULT_TITLE and self.store.count_messages(conv.id) == 0:
            title = " ".join(text.split())[:48] or (images[0].name if images else "") or DEFAULT_TITLE
            self.store.rename(conv.id, title)
        user = self.store.add_message(conv.id, "user", text, images=images)
        return await self._reply(conv.id, on_progress, user)

    async def regenerate(self, conversation_id: int, on_progress: ProgressCallback | None = None) -> Message:
        """Drop the replies after the last user message and answer it again."""
        msgs = self.store.messages(conversation_id)
        last_user = next((m for m in reversed(msgs) if m.role == "user"), None)
        if last_user is None:
            raise ChatError("There is no message to answer yet.")
        later = [m for m in msgs if m.id > last_user.id]
        if later:
            self.store.delete_messages_from(conversation_id, later[0].id)
        return await self._reply(conversation_id, on_progress)

    async def edit_and_resend(self, message_id: int, text: str,
                              on_progress: ProgressCallback | None = None) -> Message:
        """Replace a user message's text, drop everything after it, and answer again."""
        msg = self.store.message(message_id)
        if msg is None or msg.role != "user":
            raise ChatError("Only your own messages can be edited.")
        self.store.update_message(message_id, content=text)
        self.store.delete_messages_from(msg.conversation_id, message_id + 1)
        return await self._reply(msg.conversation_id, on_progress)

    # -- one reply, with fallback ---------------------------------------------------------------
    async def _reply(self, conversation_id: int, on_progress: ProgressCallback | None,
                     user: Message | None = None) -> Message:
        """Stream a new reply; ``user`` (just saved) and the reply are announced with it."""
        try:
            conv = self._conversation(conversation_id)
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
        recovered = False
        while True:
            if self._start_lock.locked() or not self._serving():
                self._announce()  # the engine starts first: the user sees their message meanwhile
            try:
                client = await self.ensure_engine(on_progress)
            except asyncio.CancelledError:
                self._finish(reply.id, "", STOPPED, ReplyStats(finish_reason="stopped"))
                raise
            except Exception:
                self._finish(reply.id, "", FAILED, ReplyStats(finish_reason="engine failed"))
                raise
            sup = self._supervisor
            assert sup is not None
            spec = sup.engine
            buffer = _ReplyBuffer(reply.id, self, self._clock())
            pieces = buffer.pieces
            on_delta = buffer.add

            try:
                try:
                    result = await client.stream_chat(history, conv.sampling, on_delta, on_sent=self._announce)
                    await buffer.complete()
                finally:
                    buffer.flush()  # listeners get all the text before the final update
            except asyncio.CancelledError:
                stopped = buffer.counted_stats()
                stopped.finish_reason, stopped.engine, stopped.backend = "stopped", spec.label, spec.backend
                self._finish(reply.id, "".join(pieces), STOPPED, stopped)
                raise
            except ServerError as exc:
                partial = "".join(pieces)
                died = await self._engine_died(sup)
                first = not self._served_ok
                self._finish(reply.id, partial, INTERRUPTED,
                             ReplyStats(finish_reason="interrupted", engine=spec.label, backend=spec.backend))
                outcome = sup.outcome if died else None
                # A dropped RPC worker can make the engine abort or send garbage: ask either way.
                if not recovered and self.crash_handler is not None:
                    text = await self.crash_handler(outcome, self.model)
                    if text:
                        recovered = True
                        await sup.stop()
                        self._client = None
                        self._emit(Notice(text, outcome.details() if outcome else ""))
                        self.store.update_message(reply.id, content="", status=STREAMING)
                        updated = self.store.message(reply.id)
                        assert updated is not None
                        self._emit(MessageUpdated(updated))
                        continue
                if died or first:
                    await sup.stop()
                    self._client = None
                    blamed = outcome or Outcome(OutcomeKind.CRASHED, Phase.RUNNING, subject=sup.subject)
                    if self._may_fall_back(blamed, self._engine_index):
                        self._engine_index += 1
                        nxt = self.plan[self._engine_index]
                        if outcome is not None:
                            # It ended while a reply was streaming: say so, not "while running".
                            base = describe_outcome(outcome, activity="answering")
                        else:
                            base = f"{spec.label} engine failed on the first request: {exc.message.rstrip('.')}."
                        self._emit(Notice(f"{base} Continuing on {nxt.label}.",
                                          outcome.details() if outcome else (exc.details or "")))
                        self.store.update_message(reply.id, content="", status=STREAMING)
                        updated = self.store.message(reply.id)
                        assert updated is not None
                        self._emit(MessageUpdated(updated))
                        continue
                if outcome is not None:
                    self.last_outcome = outcome
                    raise ServerError(f"{describe_outcome(outcome, activity='answering')} The partial reply was kept.",
                                      hint="Send again to restart the engine.", details=outcome.details()) from exc
                raise
            except Exception:
                self._finish(reply.id, "".join(pieces), FAILED,
                             ReplyStats(finish_reason="error", engine=spec.label, backend=spec.backend))
                raise
            self._served_ok = True
            stats = result.stats
            stats.engine, stats.backend = spec.label, spec.backend
            done = self._finish(reply.id, result.text, COMPLETE, stats, ran_on=f"local:{spec.label}")
            self._offer_depth_switch(conv.id, spec)
            return done

    def _offer_depth_switch(self, conversation_id: int, running: EngineSpec) -> None:
        if self._depth_advisor is None or self.model is None:
            return
        depth = self.context_used(conversation_id)
        advice = self._depth_advisor.depth_switch(self.model, depth, running.id)
        if advice is None:
            return
        key = (str(self.model), running.id, advice.engine.id)
        if key in self._offered:  # asked once; a refusal is not repeated at every reply
            return
        self._offered.add(key)
        self._emit(EngineSwitchOffer(advice.message(), advice.engine, depth))

    async def accept_depth_switch(self, depth: int, on_progress: ProgressCallback | None = None) -> None:
        """Re-plan for a conversation ``depth`` tokens deep and reload the model on the new plan's
        first engine (the cost the offer named)."""
        if self._depth_advisor is None:
            return
        self.set_plan(self._depth_advisor.plan_for(self.model, depth))
        await self.restart(on_progress)

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

    async def _engine_died(self, sup: ServerSupervisor, grace: float = 2.0) -> bool:
        """Whether the engine process is gone (waits briefly: the exit is noticed a moment later)."""
        if sup.state in (ServerState.CRASHED, ServerState.FAILED):
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(sup.wait_exited(), grace)
        return sup.state in (ServerState.CRASHED, ServerState.FAILED)

    def _finish(self, message_id: int, content: str, status: str, stats: ReplyStats,
                ran_on: str | None = None) -> Message:
        self.store.update_message(message_id, content=content, status=status, stats=stats, ran_on=ran_on)
        msg = self.store.message(message_id)
        assert msg is not None
        self._emit(MessageUpdated(msg))
        return msg

    def context_used(self, conversation_id: int) -> int:
        """Tokens the conversation filled at its last measured reply (0 when unknown).

        A stopped reply only counts its own pieces (the engine's prompt count never arrived), so it
        is passed over for the last reply the engine measured in full.
        """
        for m in reversed(self.store.messages(conversation_id, limit=20)):
            if m.role == "assistant" and m.stats.prompt_n is not None and m.stats.context_used:
                return int(m.stats.context_used)
        return 0


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


def default_supervisor_factory(http: httpx.AsyncClient, environ: dict[str, str] | None = None,
                               **kwargs: Any) -> SupervisorFactory:
    """The factory the app uses: real processes, shared HTTP client and environment."""

    def make(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        return ServerSupervisor(engine, model, settings, http=http, environ=environ, **kwargs)

    return make
