"""The chat session: conversations, streaming replies, and where they run.

The UI (or the CLI) calls the ``async`` methods and listens to :class:`ChatEvent` objects, which
are delivered on the event loop's thread. Replies run on an engine borrowed from the engine pool
through its one fallback loop: when the engine fails to start, dies, or the first request on it
fails with an engine error, the next engine of the plan is started, the interrupted request is
sent again, and a :class:`Notice` tells the user what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from strata_gui.core import texts
from strata_gui.core.errors import (
    ChatError,
    ChatFormatError,
    ServerError,
    SettingsError,
    StorageError,
    StrataError,
    ToolError,
)
from strata_gui.core.events import Listeners
from strata_gui.core.models.library import find_projector
from strata_gui.core.models.load_options import EFFORTS, LoadOptions
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
from strata_gui.core.runtime.client import (
    DEFAULT_MAX_TOKENS,
    ChatClient,
    ChatReply,
    ReplyStats,
    RequestOptions,
    split_lone_close,
)
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import TEXT
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.outcome import Outcome, ProcessEnded
from strata_gui.core.settings import Settings, SettingsService
from strata_gui.core.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.tools.approvals import ApprovalRequest, Decision

from .conversations import DEFAULT_TITLE, Conversations
from .events import (
    ChatApprover,
    ChatEvent,
    ChatTools,
    DepthSwitchAdvice,
    EngineStatus,
    EngineSwitchOffer,
    Listener,
    MessageAdded,
    MessageDelta,
    MessageUpdated,
    Notice,
    PlanChanged,
    PlanSource,
    RemoteEngine,
    ReplyClient,
    ReplyProgress,
    TemplateInfo,
    ToolApproval,
    ToolHost,
)
from .images import ChatImage
from .replies import DELTA_INTERVAL, _ReplyBuffer, _Where
from .store import (
    COMPLETE,
    FAILED,
    FORMAT_FAILED,
    INTERRUPTED,
    OUTPUT_OFF,
    STOPPED,
    STREAMING,
    TOOL_ALLOWED,
    TOOL_DENIED,
    TOOL_ERROR,
    TOOL_PENDING,
    TOOL_RUNNING,
    Conversation,
    ConversationStore,
    Message,
    ToolCallRecord,
)

if TYPE_CHECKING:
    from strata_gui.core.runtime.supervisor import ServerSupervisor
    from strata_gui.core.tools.host import ToolCatalog

# The chat's events and protocols live in .events; they are named here too, where callers found them.
__all__ = [
    "ChatApprover",
    "ChatEvent",
    "ChatService",
    "ChatTools",
    "DepthSwitchAdvice",
    "EngineStatus",
    "EngineSwitchOffer",
    "Listener",
    "MessageAdded",
    "MessageDelta",
    "MessageUpdated",
    "Notice",
    "PlanChanged",
    "PlanSource",
    "RemoteEngine",
    "ReplyClient",
    "ReplyProgress",
    "TemplateInfo",
    "ToolApproval",
    "ToolHost",
    "for_template",
]

log = logging.getLogger(__name__)

R = TypeVar("R")
# The mark of the reply a task is answering: [True] until its first token arrived (a tool round's
# reply shares its question's mark). Set by _reply, read where the pieces arrive.
_FIRST_TOKEN_PENDING: ContextVar[list[bool] | None] = ContextVar("strata_first_token_pending", default=None)
# (engine that answered, model, decode tok/s, context depth) → the ceiling and share to keep.
DecodeLimitSource = Callable[[EngineSpec | None, Path, float, int], Awaitable[dict[str, Any] | None]]
WATCH_INTERVAL = 1.0  # s between looks at the engine's progress while nothing streams
SILENCE_NOTICE_S = 15.0  # s of the engine generating with nothing arriving before the reply says so
MAX_TOOL_ROUNDS = 8  # tool-call rounds per reply; the last one asks the model to answer in words
# s after a reply's first token before work that waits for it runs (the app's start-up checks):
# time for the token to be painted first.
FIRST_TOKEN_SETTLE_S = 0.03
ANNOUNCE_WAIT = 0.03  # s: new messages are announced at the latest this long after a send (a slow
# connection to a remote engine must not keep the user's message off the screen)


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
        model_options: A model's saved options (its reply limit, thinking, chat-format parsing);
            without it, the defaults.
        save_model_options: Saves a model's options ("Retry without format parsing" turns the
            parsing off for the model); without it, that lasts for this session.
        template: What the model's chat template supports (tools, past reasoning); None when unknown.
        tools: The tools replies may call (built on first use: listing them starts the servers);
            None or returning None: no tools.
        watch_interval: Seconds between looks at the engine's progress while nothing streams.
        silence_notice_s: After this long with the engine generating and nothing arriving, the
            reply says so (:class:`ReplyProgress`).
        max_tool_rounds: Tool calls answered in one reply before the model must answer in words.
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
        model_options: Callable[[Path], LoadOptions] | None = None,
        save_model_options: Callable[[Path, LoadOptions], None] | None = None,
        template: Callable[[Path], Awaitable[TemplateInfo | None]] | None = None,
        tools: Callable[[], ChatTools | None] | None = None,
        watch_interval: float = WATCH_INTERVAL,
        silence_notice_s: float = SILENCE_NOTICE_S,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        self.store = store
        self.conversations = Conversations(store)
        self.pool = pool
        self._replies: dict[int, Message] = {}  # replies being written, as they were created
        self._live: dict[int, _ReplyBuffer] = {}  # their text so far
        self._plans = plans
        self._offered: set[tuple[str, str, str]] = set()  # (model, running engine, offered engine)
        self._launch_settings = launch_settings
        self._model_options = model_options
        self._save_model_options = save_model_options
        self._template = template
        self._templates: dict[Path, TemplateInfo | None] = {}
        self.tools = tools
        # Reply → its decode ceiling and share (engine, model, decode tok/s, depth); None: not shown.
        self.decode_limit: DecodeLimitSource | None = None
        # Called with the model once a local reply's first token is in (read while the rest streams).
        self.decode_limit_prefetch: Callable[[Path], None] | None = None
        self._prefetch_model: Path | None = None
        self._awaiting_first = 0  # replies sent whose first token has not arrived
        self._first_tokens_in: asyncio.Event | None = None  # set while no reply awaits its first token
        self._reply_spec: EngineSpec | None = None
        # Reading the next request ahead (see viewing): the conversation in view, the read in flight
        # (and for which conversation), what the engine was last given (engine serial, request).
        self._viewed: int | None = None
        self._reading: asyncio.Task[None] | None = None
        self._reading_for: int | None = None
        self._read_key: tuple[int, str] | None = None
        self._read_again = False
        self._tools_listed = False  # a reply listed the tools this session (a read ahead may list them too)
        self.last_read_ahead: int | None = None  # prompt tokens the last read left in the engine
        self.approver: ChatApprover | None = None  # asks the user about a tool call; None: calls are denied
        # "required": the first request of a reply must call a tool (later ones may answer); "auto": the model chooses.
        self.tool_choice = "auto"
        # Server-specific fields sent with every request as they are (llama-server's logit_bias, grammar, ...).
        self.request_extra: dict[str, Any] = {}
        self.watch_interval = watch_interval
        self.silence_notice_s = silence_notice_s
        self._max_tool_rounds = max_tool_rounds
        self._unparsed: set[Path] = set()  # models answering without chat-format parsing (this session)
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
            name = self.model.name if self.model is not None else QT_TRANSLATE_NOOP("Core", "This model")
            raise ChatError(texts.T(QT_TRANSLATE_NOOP("Core", "{model} cannot see images: no vision projector (mmproj) "
                                                        "was found next to it."), model=name),
                            hint=QT_TRANSLATE_NOOP("Core", "Download a vision model from the Models page (its "
                                                           "projector comes with it), or put its mmproj-*.gguf "
                                                           "file in the model's folder."))

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
        if projector is not None:
            settings = dataclasses.replace(settings, mmproj=str(projector))
        if self.model in self._unparsed:
            settings = dataclasses.replace(settings, chat_parsing=False)
        return settings

    def model_options(self) -> LoadOptions:
        """The chat model's options (reply limit, thinking, chat-format parsing): saved, else defaults."""
        if self._model_options is not None and self.model is not None:
            try:
                return self._model_options(self.model)
            except OSError:  # the file went away: the launch reports it
                pass
        return LoadOptions()

    async def template_info(self) -> TemplateInfo | None:
        """What the chat model's template supports (None: unknown, or replies go to a remote engine).

        Read from the model's header off the loop once per model, then remembered."""
        model = self.model
        if self._template is None or model is None or self.remote is not None:
            return None
        if model not in self._templates:
            try:
                self._templates[model] = await self._template(model)
            except (OSError, StrataError):  # an unreadable header: nothing special is assumed
                log.warning("could not read the chat template of %s", model, exc_info=True)
                self._templates[model] = None
        return self._templates[model]

    def options_changed(self) -> None:
        """The model's load options changed: the next reply reloads the model with them (the pool
        keys engines by their settings, so nothing needs doing here; kept for callers)."""

    def _checked_launch_settings(self) -> ServerSettings:
        try:
            return self.launch_settings()
        except OSError as exc:
            raise ChatError(texts.T(QT_TRANSLATE_NOOP("Core", "Cannot read the model file: {reason}."),
                              reason=str(exc.strerror or exc)),
                            hint=QT_TRANSLATE_NOOP("Core", "Choose the model again in the header.")) from exc

    def _may_fall_back(self, outcome: Outcome) -> bool:
        return self.settings.auto_fallback and outcome.engine_fault

    def _failed_over(self, event: FailedOver) -> None:
        # Before the next engine starts: listeners of its READY see which engine of the plan it is.
        self._engine_index = next((i for i, s in enumerate(self.plan) if s.id == event.next.id), self._engine_index)
        self._emit(Notice(event.text, event.details))

    async def _run(self, job: Callable[[Lease], Awaitable[R]], on_progress: ProgressCallback | None,
                   activity: str = "running") -> R:
        """Run ``job`` on the chat model's engine along the plan (the pool's fallback loop)."""
        if self.model is None:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "No model chosen."),
                            hint=QT_TRANSLATE_NOOP("Core", "Pick a GGUF model in the header first."))
        if not self.plan:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "No engine to run the model."),
                            hint=QT_TRANSLATE_NOOP("Core", "Install an engine on the Engines page."))
        model = self.model
        launch = self._checked_launch_settings()
        start = min(self._engine_index, len(self.plan) - 1)

        async def tracked(lease: Lease) -> R:
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

        ready = await self._run(client, on_progress)
        self._read_ahead_soon()  # the conversation in view: its next request starts from the cache
        return ready

    # -- reading the next request ahead -----------------------------------------------------------
    def viewing(self, conversation_id: int | None) -> None:
        """The conversation the user has in view (None: none), whose next message comes next.

        While its engine is loaded and idle, the engine reads that conversation (system prompt,
        tools, history, and the header of the next user message) ahead, as the user types: the next
        reply's prompt processing then starts from the engine's cache, so its first token comes
        sooner (after a restart, a long conversation is read while the message is written, not after
        it is sent). Never loads an engine, never delays a reply (one sent meanwhile waits for the
        read of its own conversation, whose work it needs, or cancels the read of another); off with
        ``Settings.read_ahead``. Call it again when the conversation's system prompt or settings change.
        """
        self._viewed = conversation_id
        self._read_ahead_soon()

    def _read_ahead_soon(self) -> None:
        conv_id = self._viewed
        previous = self._reading if self._reading is not None and not self._reading.done() else None
        if previous is not None:
            if self._reading_for == conv_id:
                self._read_again = True  # it changed meanwhile (say its system prompt): once more after
                return
            previous.cancel()  # another conversation's: the new read starts once it has let go
        self._reading = None
        self._read_again = False
        if conv_id is None or self.remote is not None or not self.settings.read_ahead:
            return
        engine = self.running_engine
        if engine is None or not engine.ready or self._awaiting_first:
            # Nothing to read into now (ensure_engine calls again once it is loaded). Checked before
            # making a task: this runs from widgets too, also inside a task's processEvents.
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._reading_for = conv_id
        self._reading = task = loop.create_task(self._read_ahead(conv_id, previous), name="strata-chat-read-ahead")

        def ended(_task: asyncio.Task[None]) -> None:
            if self._reading is task and self._read_again and not task.cancelled():
                self._reading = None
                self._read_ahead_soon()

        task.add_done_callback(ended)

    async def _read_ahead(self, conversation_id: int, previous: asyncio.Task[None] | None) -> None:
        try:
            if previous is not None:
                await asyncio.wait([previous])  # its lease is given back as it ends
            await self._read_ahead_now(conversation_id)
        except Exception:  # an optimisation: its failure must not reach anyone (the reply reads its prompt)
            log.warning("reading conversation %s ahead failed", conversation_id, exc_info=True)

    async def _read_ahead_now(self, conversation_id: int) -> None:
        # (A reply sent since the task was made waits for it: see _before_request.)
        engine = self.running_engine
        if engine is None or not engine.ready or engine.busy:
            return
        conv = self.store.conversation(conversation_id)
        if conv is None:
            return
        try:
            template = await self.template_info()
            options = for_template(self.request_options(conv), template)
            tools = self._chat_tools(template)
            if tools is not None:
                if not self._tools_listed:
                    return  # listing them starts their servers: not before a reply has used them
                catalog = await tools.host.list_tools()
                if catalog.tools:
                    options = dataclasses.replace(options, tools=catalog.openai_tools(), tool_choice=self.tool_choice)
            history = self.conversations.history(conv, with_images=self.accepts_images,
                                                 with_reasoning=template is not None and template.keeps_past_reasoning)
        except (StrataError, OSError):
            log.debug("nothing read ahead for conversation %s", conversation_id, exc_info=True)
            return
        if any(not isinstance(m.get("content"), str) for m in history):
            return  # images go in a request's parts, not in a prompt read ahead
        key = (engine.serial, json.dumps([history, options.to_request(), conv.sampling.to_json()],
                                         sort_keys=True, default=str))
        if key == self._read_key:
            return
        lease = await self.pool.lease_now(engine, self.USER)
        if lease is None:
            return
        try:
            client = ChatClient(self._http, lease.base_url, lease.api_key or None)
            held = await client.read_ahead(history, sampling=conv.sampling, options=options)
        finally:
            lease.release()
        if held is not None:
            self._read_key = key
            self.last_read_ahead = held
            log.debug("read ahead conversation %s: the engine holds %s prompt tokens", conversation_id, held)

    async def _before_request(self, conversation_id: int) -> None:
        """A reply is about to be sent in ``conversation_id``: a read ahead of it is waited for (the
        request continues from its cache), one of another conversation is stopped."""
        reading, self._reading = self._reading, None
        self._read_key = None  # the reply changes what the engine holds
        if reading is None or reading.done():
            return
        if self._reading_for != conversation_id:
            reading.cancel()
        # wait(), not the task itself: how the read ended (cancelled, failed) is not this reply's;
        # Stop while waiting still cancels the reply (wait() raises then, the read goes on).
        await asyncio.wait([reading])

    @property
    def reading_ahead(self) -> bool:
        """A read ahead is in flight."""
        return self._reading is not None and not self._reading.done()

    async def read_ahead_settled(self) -> None:
        """Return once no read ahead is in flight (tests, benchmarks)."""
        reading = self._reading
        if reading is not None:
            await asyncio.wait([reading])

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
        reading, self._reading = self._reading, None
        if reading is not None and not reading.done():
            reading.cancel()
            with contextlib.suppress(BaseException):
                await reading
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

    def answer_choice(self, conversation_id: int) -> tuple[int, int]:
        """Which answer to the last question is shown, of how many: (1-based index, count)."""
        return self.conversations.answer_choice(conversation_id)

    def switch_answer(self, conversation_id: int, step: int) -> bool:
        """Show the previous (-1) or next (+1) kept answer to the last question (not while a reply
        streams: the caller waits for it); False when there is none that way."""
        return self.conversations.switch_answer(conversation_id, step)

    async def regenerate(self, conversation_id: int, on_progress: ProgressCallback | None = None) -> Message:
        """Answer the last user message again; the earlier answer is kept (:meth:`switch_answer`)."""
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
        """Stream a new reply (answering tool calls on the way); ``user`` (just saved) and the
        reply are announced with it."""
        try:
            conv = self.conversations.get(conversation_id)
            options = self.request_options(conv)  # a bad schema fails here, before anything is saved
            reply = self._new_reply(conv)
        except BaseException:
            if user is not None:
                self._emit(MessageAdded(user))
            raise
        # Held back until the request is sent: building a reply's widgets takes milliseconds
        # that the engine can spend on the prompt meanwhile (time to first token).
        self._unannounced += [m for m in (user, reply) if m is not None]
        deadline = asyncio.get_running_loop().call_later(ANNOUNCE_WAIT, self._announce)
        pending = [True]  # this reply waits for its first token (see first_tokens_in)
        entered = _FIRST_TOKEN_PENDING.set(pending)
        self._awaiting_first += 1
        if self._first_tokens_in is not None:
            self._first_tokens_in.clear()
        try:
            return await self._converse(conv, reply, options, on_progress)
        finally:
            _FIRST_TOKEN_PENDING.reset(entered)
            self._first_token_in(pending, prefetch=False)  # ended without a token (or had one)
            deadline.cancel()
            self._announce()

    def _new_reply(self, conv: Conversation) -> Message:
        settings: dict[str, Any] = {"system_prompt": conv.system_prompt, "sampling": conv.sampling.to_json(),
                                    "model": str(self.model or "")}
        remote = self.remote
        if remote is not None:
            settings["model"] = remote.label
        if conv.structured_output.mode != OUTPUT_OFF:
            settings["output"] = conv.structured_output.to_json()
        reply = self.store.add_message(conv.id, "assistant", "", status=STREAMING, settings=settings)
        self._replies[reply.id] = reply
        return reply

    def request_options(self, conv: Conversation) -> RequestOptions:
        """What a reply in ``conv`` asks of the engine: the conversation's thinking settings over the
        model's, its structured output, and the output limit (the conversation's "Max tokens", else
        the model's limit, else :data:`~strata_gui.core.runtime.client.DEFAULT_MAX_TOKENS`).

        Raises:
            ChatError: The conversation's JSON schema is not valid.
        """
        model = self.model_options() if self.remote is None else LoadOptions()
        mine = conv.thinking
        enabled = mine.enabled if mine.enabled is not None else {"on": True, "off": False}.get(model.thinking)
        effort = mine.effort or (model.effort or None)
        budget = mine.budget if mine.budget is not None else (model.thinking_budget if model.thinking_budget >= 0
                                                              else None)
        limit = conv.sampling.max_tokens or model.max_output_tokens or DEFAULT_MAX_TOKENS
        return RequestOptions(thinking=enabled, effort=effort if effort in EFFORTS else None,  # type: ignore[arg-type]
                              thinking_budget=budget, response_format=conv.structured_output.response_format(),
                              max_tokens=limit, extra=dict(self.request_extra))

    def _chat_tools(self, template: TemplateInfo | None) -> ChatTools | None:
        """The tools to offer this reply: none without a tool host, when the engine does not parse
        the chat format (a tool call would arrive as text), or when the template has no tools."""
        if self.tools is None:
            return None
        if self.remote is None:
            if not self.launch_settings_or_default().chat_parsing:
                return None
            if template is not None and not template.tools:
                return None
        return self.tools()

    def launch_settings_or_default(self) -> ServerSettings:
        try:
            return self.launch_settings()
        except OSError:
            return ServerSettings()

    async def _tool_catalog(self, tools: ChatTools) -> ToolCatalog | None:
        catalog = await tools.host.list_tools()
        for problem in catalog.problems:  # the others' tools are still offered: the chat goes on
            err = problem.error
            self._emit(Notice(err.message + (f" {err.hint}" if err.hint else ""), err.details or ""))
        return catalog if catalog.tools else None

    async def _converse(self, conv: Conversation, reply: Message, options: RequestOptions,
                        on_progress: ProgressCallback | None) -> Message:
        """Stream the reply; while it asks for tools, run them (each asked about first), save their
        results and let the model go on, until it answers in words."""
        try:
            template = await self.template_info()
            if self.remote is None:
                await self._before_request(conv.id)
        except asyncio.CancelledError:
            self._finish(reply.id, "", STOPPED, ReplyStats(finish_reason="stopped"))
            raise
        options = for_template(options, template)
        tools = self._chat_tools(template)
        catalog: ToolCatalog | None = None
        if tools is not None:
            try:
                catalog = await self._tool_catalog(tools)
                self._tools_listed = True
            except BaseException as exc:
                stopped = isinstance(exc, asyncio.CancelledError)
                self._finish(reply.id, "", STOPPED if stopped else FAILED,
                             ReplyStats(finish_reason="stopped" if stopped else "error"))
                raise
        rounds = 0
        while True:
            last = rounds >= self._max_tool_rounds
            offered = options
            if catalog is not None:
                # The last round still shows the tools (the history holds calls of them) but asks for words.
                choice = "none" if last else self.tool_choice if rounds == 0 else "auto"
                offered = dataclasses.replace(options, tools=catalog.openai_tools(), tool_choice=choice)
            done = await self._stream_reply(conv, reply, offered, on_progress, template)
            if catalog is not None and last and done.status == COMPLETE and done.tool_calls:
                # Asked for words, the model called tools again (a remote server may ignore "none"):
                # its calls are answered as not run, so none waits for an answer that never comes.
                limit = T(QT_TRANSLATE_NOOP("Core", "Not run: this reply reached its limit of {rounds} rounds of "
                                                    "tool calls."), rounds=self._max_tool_rounds)
                self._answer_unrun(done, limit, "limit")
                self._emit(Notice(limit))
                return self.store.message(done.id) or done
            if catalog is None or tools is None or last or done.status != COMPLETE or not done.tool_calls:
                return done
            await self._run_tools(done, catalog, tools)
            rounds += 1
            reply = self._new_reply(conv)
            self._emit(MessageAdded(reply))

    async def _run_tools(self, reply: Message, catalog: ToolCatalog, tools: ChatTools) -> None:
        """Run each call ``reply`` asked for, in order: ask (unless always allowed), call, save the
        result as a ``tool`` message. A server that fails gives a result saying so; Stop cancels
        the call running and is raised after the call and the reply are saved as stopped."""
        for record in reply.tool_calls:
            if record.status != TOOL_PENDING:
                continue
            try:
                await self._run_tool(reply, record, catalog, tools)
            except asyncio.CancelledError:  # Stop: the calls after it are not run, and say so
                self._answer_unrun(reply, QT_TRANSLATE_NOOP("Core", "Not run: stopped by the user."), "stopped")
                raise

    def _answer_unrun(self, reply: Message, text: str, outcome: str) -> None:
        """Answer every call of ``reply`` still pending with ``text`` (saved, shown, and sent to the
        model as its result, so no call is left waiting)."""
        current = self.store.message(reply.id)
        for record in (current or reply).tool_calls:
            if record.status != TOOL_PENDING:
                continue
            self.store.update_tool_call(reply.id, dataclasses.replace(record, status=TOOL_ERROR, result=text))
            self._add_tool_message(reply, record, text, {"outcome": outcome})
        msg = self.store.message(reply.id)
        if msg is not None:
            self._emit(MessageUpdated(msg))

    async def _run_tool(self, reply: Message, record: ToolCallRecord, catalog: ToolCatalog, tools: ChatTools) -> None:
        def update(changed: ToolCallRecord) -> None:
            self.store.update_tool_call(reply.id, changed)
            msg = self.store.message(reply.id)
            if msg is not None:
                self._emit(MessageUpdated(msg))

        started: list[bool] = []  # the call ran (approved or always allowed), not only waited for an answer

        async def approve(request: ApprovalRequest) -> Decision:
            approver = self.approver
            if approver is None:
                log.info("tool call %s denied: nobody to ask", record.name)
                return Decision.DENY
            decision = await approver(ToolApproval(reply.id, record.id, request))
            if decision.allowed:
                started.append(True)
                update(dataclasses.replace(record, status=TOOL_RUNNING))
            return decision

        try:
            tool = catalog.resolve(record.name)
        except ToolError:
            tool = None
        if tool is not None and tools.policy.is_always_allowed(tool.server, tool.name):
            started.append(True)
            update(dataclasses.replace(record, status=TOOL_RUNNING))
        try:
            result = await tools.host.run_call(catalog, record.name, record.arguments, policy=tools.policy,
                                               approver=approve)
        except asyncio.CancelledError:
            stopped = (QT_TRANSLATE_NOOP("Core", "Stopped by the user before the tool finished.") if started
                       else QT_TRANSLATE_NOOP("Core", "Not run: stopped by the user."))
            update(dataclasses.replace(record, status=TOOL_ERROR, result=stopped))
            self._add_tool_message(reply, record, stopped, {"outcome": "stopped"})
            raise
        from strata_gui.core.tools.host import ToolOutcome  # loaded with the host, when tools are used

        status = {ToolOutcome.OK: TOOL_ALLOWED, ToolOutcome.DENIED: TOOL_DENIED}.get(result.outcome, TOOL_ERROR)
        update(dataclasses.replace(record, status=status, result=result.text, duration_s=result.duration_s))
        info: dict[str, Any] = {"server": result.server, "tool": result.tool, "outcome": result.outcome.value}
        if result.details:
            info["details"] = result.details
        self._add_tool_message(reply, record, result.text, info)

    def _add_tool_message(self, reply: Message, record: ToolCallRecord, text: str, info: dict[str, Any]) -> None:
        msg = self.store.add_message(reply.conversation_id, "tool", text, settings=info, tool_call_id=record.id,
                                     tool_name=record.name)
        self._emit(MessageAdded(msg))

    async def _stream_reply(self, conv: Conversation, reply: Message, options: RequestOptions,
                            on_progress: ProgressCallback | None, template: TemplateInfo | None) -> Message:
        history = self.conversations.history(conv, upto=reply.id, with_images=self.accepts_images,
                                             with_reasoning=template is not None and template.keeps_past_reasoning)
        remote = self.remote
        if remote is not None:
            # Broken off midway: what came is kept and goes back to the model, as for a local engine.
            where = _Where(remote.label, "remote", f"remote:{remote.label}", INTERRUPTED, "interrupted")
            return await self._stream_into(reply.id, remote, history, conv, options, where)
        if self.model is not None and not self._loaded_for_reply():
            self._announce()  # the engine starts first: the user sees their message meanwhile
        attempts = 0
        job_failed = False  # the last attempt's request failed (its partial reply is kept)
        spec: EngineSpec | None = None

        async def answer(lease: Lease) -> Message:
            nonlocal attempts, job_failed, spec
            attempts += 1
            spec = lease.spec
            self._reply_spec = spec
            self._prefetch_model = self.model  # read once the first token is in (see _first_token_in)
            if attempts > 1:  # the last engine failed: start the reply afresh on this one
                self.store.update_message(reply.id, content="", thinking="", status=STREAMING)
                again = self.store.message(reply.id)
                assert again is not None
                self._emit(MessageUpdated(again))
            job_failed = False
            client = ChatClient(self._http, lease.base_url, lease.api_key or None)
            where = _Where(spec.label, spec.backend, f"local:{spec.label}", INTERRUPTED, "interrupted")
            try:
                return await self._stream_into(reply.id, client, history, conv, options, where)
            except ServerError:
                job_failed = True
                raise

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
                said = exc.message if exc.message.endswith(".") else exc.message + "."
                raise ServerError(texts.T(QT_TRANSLATE_NOOP("Core", "{error} The partial reply was kept."), error=said),
                                  hint=QT_TRANSLATE_NOOP("Core", "Send again to restart the engine."),
                                  details=exc.details) from exc
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

    async def _stream_into(self, reply_id: int, client: ReplyClient, history: list[dict[str, Any]],
                           conv: Conversation, options: RequestOptions, where: _Where) -> Message:
        """Stream one request's reply into the saved message ``reply_id`` and settle it.

        Whatever arrived is kept however the stream ends: Stop, the engine failing, or its
        chat-format parser rejecting the model's output (:class:`ChatFormatError`, raised after the
        partial reply is saved; never an engine failure).
        """
        buffer = _ReplyBuffer(reply_id, self, self._clock())
        watch = self._watch(buffer, client)
        self._live[reply_id] = buffer
        try:
            try:
                result = await client.stream(history, sampling=conv.sampling, options=options, on_piece=buffer.add,
                                             on_sent=self._announce)
                await buffer.complete()
            finally:
                if watch is not None:
                    watch.cancel()
                buffer.flush()  # listeners get all the text before the final update
        except asyncio.CancelledError:
            text, thinking = self._kept(buffer, options)
            self._finish(reply_id, text, STOPPED, where.stats(buffer.counted_stats(), "stopped"),
                         thinking=thinking, ran_on=where.ran_on)
            raise
        except ChatFormatError as exc:
            partial = exc.partial if isinstance(exc.partial, ChatReply) else None
            if partial is None:
                partial = ChatReply(buffer.text, buffer.counted_stats(), buffer.thinking_text)
            self._finish(reply_id, partial.text, FORMAT_FAILED, where.stats(partial.stats, "chat format"),
                         thinking=partial.thinking, tool_calls=[ToolCallRecord.from_call(c) for c in partial.tool_calls],
                         ran_on=where.ran_on)
            raise
        except ServerError:
            text, thinking = self._kept(buffer, options)
            self._finish(reply_id, text, where.broken, where.stats(ReplyStats(), where.broken_reason),
                         thinking=thinking, ran_on=where.ran_on)
            raise
        except Exception:
            self._finish(reply_id, buffer.text, FAILED, where.stats(ReplyStats(), "error"),
                         thinking=buffer.thinking_text, ran_on=where.ran_on)
            raise
        finally:
            self._live.pop(reply_id, None)
        stats = result.stats
        stats.engine, stats.backend = where.engine, where.backend
        if options.max_tokens is not None and options.max_tokens > 0:
            stats.extra["output_limit"] = options.max_tokens
        await self._add_limit(stats)
        settings = self._checked_output(reply_id, conv, result.text, stats.finish_reason)
        return self._finish(reply_id, result.text, COMPLETE, stats, thinking=result.thinking,
                            tool_calls=[ToolCallRecord.from_call(c) for c in result.tool_calls],
                            ran_on=where.ran_on, settings=settings)

    def live_reply(self, message: Message) -> Message:
        """``message`` as shown now if it is a reply being written (its saved copy is up to a second
        behind: a conversation opened again mid-reply showed a gap before the new text), else as is."""
        buffer = self._live.get(message.id)
        if buffer is None:
            return message
        text, thinking = buffer.shown()
        return dataclasses.replace(message, content=text, thinking=thinking)

    @staticmethod
    def _kept(buffer: _ReplyBuffer, options: RequestOptions) -> tuple[str, str]:
        """(answer, thinking) of a reply that ended early, told apart as a finished one would be: with
        only ``</think>`` in the text (the prompt opened the thinking), the thinking was saved as
        the answer, and sent back to the model as what it had said."""
        if options.split_thinking:
            return split_lone_close(buffer.text, buffer.thinking_text)
        return buffer.text, buffer.thinking_text

    async def _add_limit(self, stats: ReplyStats) -> None:
        """Keep the decode ceiling with a local reply's statistics ("71 % of this GPU's memory limit")."""
        if self.decode_limit is None or self.model is None or not stats.decode_tps or self.remote is not None:
            return
        # The average depth while decoding: the prompt, then half the reply on top.
        depth = (stats.prompt_n or 0) + (stats.cache_n or 0) + (stats.predicted_n or 0) // 2
        try:
            limit = await self.decode_limit(self._reply_spec, self.model, stats.decode_tps, depth)
        except (StrataError, OSError) as exc:
            log.info("no decode ceiling for %s: %s", self.model, exc)
            return
        if limit is not None:
            stats.extra["limit"] = limit

    def _checked_output(self, reply_id: int, conv: Conversation, text: str,
                        finish_reason: str | None) -> dict[str, Any] | None:
        """The reply's settings with the structured-output check added (None: no structured output)."""
        output = conv.structured_output
        if output.mode == OUTPUT_OFF or finish_reason == "tool_calls":
            return None
        from strata_gui.core.runtime.structured import check_json  # jsonschema, only when used

        fmt = output.response_format()
        check = check_json(text, fmt.schema if fmt is not None else None)
        msg = self.store.message(reply_id)
        settings = dict(msg.settings) if msg is not None else {}
        settings["structured"] = {"mode": output.mode, "ok": check.ok, "problems": list(check.problems)}
        return settings

    def _first_token_in(self, pending: list[bool] | None = None, *, prefetch: bool = True) -> None:
        """The first token of the reply being answered (``pending``: its mark, else the current
        one) arrived (``prefetch``), or the reply ended; only the first call per reply counts."""
        if pending is None:
            pending = _FIRST_TOKEN_PENDING.get()
        if pending is None or not pending[0]:
            return
        pending[0] = False
        self._awaiting_first = max(0, self._awaiting_first - 1)
        model, self._prefetch_model = self._prefetch_model, None
        loop = asyncio.get_running_loop()
        if prefetch and model is not None and self.decode_limit_prefetch is not None:
            loop.call_soon(self.decode_limit_prefetch, model)
        if self._awaiting_first == 0 and self._first_tokens_in is not None:
            loop.call_later(FIRST_TOKEN_SETTLE_S, self._settle_first_tokens)

    def _settle_first_tokens(self) -> None:
        if self._awaiting_first == 0 and self._first_tokens_in is not None:
            self._first_tokens_in.set()

    async def first_tokens_in(self) -> None:
        """Return once no reply waits for its first token (and that token had time to be painted).

        Background work that can wait (the app's start-up checks) waits for this: on 2 cores it
        held the first token of a message sent at once back by ~50 ms.
        """
        if self._first_tokens_in is None:
            self._first_tokens_in = asyncio.Event()
            if self._awaiting_first == 0:
                self._first_tokens_in.set()
        await self._first_tokens_in.wait()

    def _watch(self, buffer: _ReplyBuffer, client: ReplyClient) -> asyncio.Task[None] | None:
        """Start looking at the engine's progress while nothing streams (None: it cannot say)."""
        progress = getattr(client, "decoded_tokens", None)
        if progress is None:
            return None
        return asyncio.get_running_loop().create_task(self._watch_progress(buffer, progress))

    async def _watch_progress(self, buffer: _ReplyBuffer, progress: Callable[[], Awaitable[int | None]]) -> None:
        """While no piece arrives for two looks in a row, ask the engine how far it is and tell the
        listeners (the counter moves on); after ``silence_notice_s`` of that, the reply says so."""
        interval = self.watch_interval
        while True:
            await asyncio.sleep(interval)
            silent = self._clock() - buffer.last_seen
            if silent < 2 * interval:
                continue  # streaming: the pieces carry the count
            decoded = await progress()
            if decoded is None:
                continue
            tokens = max(decoded, buffer.tokens)
            notice = silent >= self.silence_notice_s and decoded > buffer.tokens
            self._emit(ReplyProgress(buffer.message_id, tokens, silent, decoded, notice))

    def _loaded_for_reply(self) -> bool:
        engine = self.running_engine
        return engine is not None and engine.ready

    async def retry_without_format_parsing(self, conversation_id: int,
                                           on_progress: ProgressCallback | None = None) -> Message:
        """Answer the last question again with the engine's chat-format parsing off for this model
        (llama-server's ``--skip-chat-parsing``): the model's text then arrives as written, its
        thinking split here when it opens with ``<think>``. The model's engine is reloaded with
        that flag (the pool swaps it in); the choice is saved with the model's options.

        Raises:
            ChatError: Replies go to a remote engine (its chat format is the server's to change),
                or no model is chosen.
        """
        if self.remote is not None:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "A remote engine's chat-format parsing cannot be changed "
                                                      "from here."),
                            hint=QT_TRANSLATE_NOOP("Core", "Change it on the server that runs the model."))
        model = self.model
        if model is None:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "No model chosen."),
                            hint=QT_TRANSLATE_NOOP("Core", "Pick a GGUF model in the header first."))
        if self._save_model_options is not None and self._model_options is not None:
            try:
                self._save_model_options(model, self._model_options(model).replace(chat_parsing=False))
            except (OSError, StrataError):
                log.warning("could not save the model's options; parsing is off for this session", exc_info=True)
                self._unparsed.add(model)
        else:
            self._unparsed.add(model)
        return await self.regenerate(conversation_id, on_progress)

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

    def _finish(self, message_id: int, content: str, status: str, stats: ReplyStats, ran_on: str | None = None, *,
                thinking: str | None = None, tool_calls: Sequence[ToolCallRecord] | None = None,
                settings: dict[str, Any] | None = None) -> Message:
        started = self._replies.pop(message_id, None)
        try:
            self.store.update_message(message_id, content=content, status=status, stats=stats, ran_on=ran_on,
                                      thinking=thinking, tool_calls=tool_calls or None, settings=settings)
            msg = self.store.message(message_id)
        except StorageError:
            # Not saved (a full disk, a lock held elsewhere): the reply is still shown as it ended,
            # never left "Generating…", and the error says why it was not kept.
            if started is not None:
                self._emit(MessageUpdated(dataclasses.replace(
                    started, content=content, status=status, stats=stats, ran_on=ran_on or started.ran_on,
                    thinking=thinking or "", tool_calls=tuple(tool_calls or ()), settings=settings or started.settings)))
            raise
        if msg is None:  # its conversation was deleted while the reply was written
            raise ChatError(QT_TRANSLATE_NOOP("Core", "The conversation was deleted while its reply was written."))
        self._emit(MessageUpdated(msg))
        return msg


def for_template(options: RequestOptions, template: TemplateInfo | None) -> RequestOptions:
    """``options`` with thinking and effort spelled the way the model's template reads them.

    The client sends ``chat_template_kwargs.enable_thinking`` and ``reasoning_effort`` (which
    llama-server also maps to ``enable_thinking``); a template with another switch (``thinking``,
    ``reasoning``, ``thinking_mode``, ``thinking_budget``) or another effort name gets it under its own
    name, with the value it takes for "off". "On" is sent only to a true/false switch: for the
    others the template's own default is the "on" (a mode name or a budget Strata cannot guess).
    """
    if template is None:
        return options
    toggle, off, effort_key = template.thinking_toggle, template.thinking_off, template.effort
    thinking = options.thinking
    kwargs: dict[str, Any] = {}
    if thinking is not None and toggle is not None and toggle != "enable_thinking":
        if thinking is False:
            kwargs[toggle] = off
        elif isinstance(off, bool):
            kwargs[toggle] = True
        thinking = None  # not the client's enable_thinking, which this template does not read
    effort = options.effort
    if effort is not None and options.thinking is not False and effort_key is not None \
            and effort_key != "reasoning_effort":
        kwargs[effort_key] = effort
        effort = None
    if not kwargs:
        return dataclasses.replace(options, thinking=thinking)
    if thinking is not None:
        kwargs["enable_thinking"] = thinking  # the client's spelling, which ``extra`` now carries
    extra = dict(options.extra)
    extra["chat_template_kwargs"] = {**dict(extra.get("chat_template_kwargs") or {}), **kwargs}
    if options.thinking is False:
        extra["reasoning_effort"] = "none"
        effort = None
    # Spelled out in ``extra`` now: the client's own spelling would overwrite it.
    return dataclasses.replace(options, thinking=None, effort=effort, extra=extra)
