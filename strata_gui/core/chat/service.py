"""The chat session: conversations, streaming replies, and where they run.

:class:`ChatService` is the one object the UI and the CLI hold: the composition of the chat's parts,
each in its own module: the history sent to the model (:mod:`.conversations`), the model and the
engine it runs on (:mod:`.model`, :mod:`.engine`: the pool's fallback loop), a turn
(:mod:`.turns`), streaming one reply (:mod:`.streaming`, :mod:`.replies`), the tool loop
(:mod:`.tool_loop`) and reading the next prompt ahead (:mod:`.read_ahead`). They call listeners
with :class:`ChatEvent` objects, on the event loop's thread.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.models.load_options import LoadOptions
from strata_gui.core.pool import EnginePool, PooledEngine
from strata_gui.core.runtime.client import ChatClient
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerSettings, ServerState

from .announcer import ChatAnnouncer
from .conversations import DEFAULT_TITLE, MODEL_SWITCHED, Conversations, ModelResume
from .engine import ChatEngine
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
from .first_token import FirstTokens
from .images import ChatImage
from .model import ChatModel
from .read_ahead import ReadAhead
from .records import Conversation, Message
from .replies import DELTA_INTERVAL
from .request import RequestBuilder, for_template
from .store import ConversationStore
from .streaming import SILENCE_NOTICE_S, WATCH_INTERVAL, ReplyStreamer
from .tool_loop import MAX_TOOL_ROUNDS, ToolLoop
from .turns import Turns

if TYPE_CHECKING:
    from strata_gui.core.runtime.supervisor import ServerSupervisor

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


class ChatService:
    """Conversations plus running their replies on an engine borrowed from the pool.

    Args:
        store: Conversation persistence.
        pool: Where engines are borrowed.
        http: Shared HTTP client for the chat API.
        settings_service: User settings (auto_fallback, read_ahead ...; the last model is kept there).
        plans: The engine resolver (:class:`~.engine.ChatEngine`); without it, :meth:`set_plan`'s.
        clock: Monotonic clock (save throttling, delta batching, statistics of a stopped reply).
        save_interval: Seconds between saves of a reply that is streaming.
        delta_interval: Shortest time between two :class:`MessageDelta` events of a reply (a frame).
        launch_settings: How to launch a model (its saved load options); without it, Settings'.
        model_options: A model's saved options (reply limit, thinking, ...); without it, the defaults.
        template: What the model's chat template supports (tools, past reasoning); None when unknown.
        tools: The tools replies may call (built on first use); None or returning None: no tools.
        watch_interval: Seconds between looks at the engine's progress while nothing streams.
        silence_notice_s: After this long generating with nothing arriving, the reply says so.
        max_tool_rounds: Tool calls answered in one reply before the model must answer in words.

    Attributes:
        events: The chat's listeners (:meth:`subscribe`).
        conversations: The history sent to the model, answer versions, edits.
        chat_model: The model (or remote endpoint) that answers, and how it loads.
        chat_engine: The model's plan of engines, and the engine replies run on.
        requests: What a reply asks of the engine.
        streamer: Streams one reply into its saved message.
        tool_loop: Runs the tool calls a reply asks for.
        read_ahead: Reads the conversation in view into the idle engine.
        turns: Sends messages and answers them.
        first_tokens: The replies waiting for their first token.
    """

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
        template: Callable[[Path], Awaitable[TemplateInfo | None]] | None = None,
        tools: Callable[[], ChatTools | None] | None = None,
        watch_interval: float = WATCH_INTERVAL,
        silence_notice_s: float = SILENCE_NOTICE_S,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        self.store = store
        self.pool = pool
        self.settings_service = settings_service
        self.conversations = Conversations(store)
        self.announcer = ChatAnnouncer()
        self.events = self.announcer.listeners
        self.first_tokens = FirstTokens()
        self.chat_model = ChatModel(settings_service, launch_settings=launch_settings, model_options=model_options,
                                    template=template)
        self.chat_engine = ChatEngine(pool, http, self.chat_model, self.announcer.emit, plans=plans)
        self.requests = RequestBuilder(self.chat_model)
        self.streamer = ReplyStreamer(store, self.conversations, self.chat_model, self.chat_engine, self.announcer,
                                      self.first_tokens, clock=clock, save_interval=save_interval,
                                      delta_interval=delta_interval, watch_interval=watch_interval,
                                      silence_notice_s=silence_notice_s)
        self.tool_loop = ToolLoop(store, self.chat_model, self.streamer, self.announcer.emit, tools=tools,
                                  max_rounds=max_tool_rounds)
        self.read_ahead = ReadAhead(pool, http, store, self.conversations, self.chat_model, self.chat_engine,
                                    self.tool_loop, self.first_tokens, self.requests)
        self.turns = Turns(self.conversations, self.chat_model, self.requests, self.streamer, self.tool_loop,
                           self.read_ahead, self.announcer, self.first_tokens)
        self.turns.context_size = lambda: self.chat_engine.context_size

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: changes go through ``settings_service``)."""
        return self.settings_service.current

    # -- settings of the parts (set by the app and the CLI) -------------------------------------
    @property
    def tools(self) -> Callable[[], ChatTools | None] | None:
        """The tools replies may call (None or returning None: no tools)."""
        return self.tool_loop.tools

    @tools.setter
    def tools(self, tools: Callable[[], ChatTools | None] | None) -> None:
        self.tool_loop.tools = tools

    @property
    def approver(self) -> ChatApprover | None:
        """Asks the user about a tool call; None: calls are denied."""
        return self.tool_loop.approver

    @approver.setter
    def approver(self, approver: ChatApprover | None) -> None:
        self.tool_loop.approver = approver

    @property
    def tool_choice(self) -> str:
        """"required": a reply's first request must call a tool; "auto": the model chooses."""
        return self.tool_loop.tool_choice

    @tool_choice.setter
    def tool_choice(self, choice: str) -> None:
        self.tool_loop.tool_choice = choice

    @property
    def request_extra(self) -> dict[str, Any]:
        """Server-specific fields sent with every request as they are (llama-server's logit_bias, grammar, ...)."""
        return self.requests.extra

    @request_extra.setter
    def request_extra(self, extra: dict[str, Any]) -> None:
        self.requests.extra = extra

    # -- the model, its plan and its engine (ChatEngine) ---------------------------------------------
    @property
    def model(self) -> Path | None:
        """The GGUF the chat answers with."""
        return self.chat_engine.model

    @property
    def plan(self) -> list[EngineSpec]:
        """The engines the next reply tries, best first."""
        return self.chat_engine.plan

    @property
    def remote(self) -> RemoteEngine | None:
        """The remote engine replies go to (None: the managed local one)."""
        return self.chat_model.remote

    def set_plan(self, plan: list[EngineSpec]) -> None:
        """Engines to try, best first (see :meth:`ChatEngine.set_plan`)."""
        self.chat_engine.set_plan(plan)

    def set_remote(self, remote: RemoteEngine | None) -> None:
        """Answer through ``remote`` (None: the managed local engine again)."""
        self.chat_model.remote = remote

    def set_model(self, model: Path, *, remember: bool = True) -> None:
        """The GGUF to chat with; the next reply loads it (see :meth:`ChatEngine.set_model`)."""
        self.chat_engine.set_model(model, remember=remember)

    @property
    def running_engine(self) -> PooledEngine | None:
        """The pool's engine for the chat's model, when one is loaded or loading."""
        return self.chat_engine.running_engine

    @property
    def supervisor(self) -> ServerSupervisor | None:
        """The running engine's server (its pid, address and log), if any."""
        return self.chat_engine.supervisor

    @property
    def engine(self) -> EngineSpec | None:
        """The running engine's spec."""
        return self.chat_engine.engine

    @property
    def engine_state(self) -> ServerState:
        """The running engine's state; after a crash, the crash (until the next start)."""
        return self.chat_engine.engine_state

    @property
    def preferred_engine(self) -> EngineSpec | None:
        """The plan's first engine."""
        return self.chat_engine.preferred_engine

    @property
    def on_fallback_engine(self) -> bool:
        """True when running on a later engine than the preferred one."""
        return self.chat_engine.on_fallback_engine

    @property
    def projector(self) -> Path | None:
        """The chosen model's vision projector, loaded with the model."""
        return self.chat_model.projector

    @property
    def accepts_images(self) -> bool:
        """Whether a message may carry images."""
        return self.chat_model.accepts_images

    def check_images_accepted(self) -> None:
        """Raise :class:`ChatError` unless images can be sent (see :meth:`ChatModel.check_images_accepted`)."""
        self.chat_model.check_images_accepted()

    @property
    def context_size(self) -> int:
        """The context the running engine has, else the one the model's next load will have."""
        return self.chat_engine.context_size

    def launch_settings(self) -> ServerSettings:
        """What the next engine start uses for the current model (raises OSError: unreadable model)."""
        return self.chat_model.launch_settings()

    async def ensure_engine(self, on_progress: ProgressCallback | None = None) -> ChatClient:
        """Load the chat's model now (falling back along the plan); returns a client of its engine.

        The engine stays loaded in the pool after this returns (the next reply finds it ready).
        """
        ready = await self.chat_engine.load(on_progress)
        self.read_ahead.soon()  # the conversation in view: its next request starts from the cache
        return ready

    async def retry_preferred_engine(self, on_progress: ProgressCallback | None = None) -> None:
        """Unload the current engine and start again from the first one of the plan."""
        await self.chat_engine.retry_preferred(on_progress)
        self.read_ahead.soon()

    async def stop_engine(self) -> None:
        """Unload the chat model's engine (once the jobs running on it are done)."""
        await self.chat_engine.stop()

    async def accept_depth_switch(self, depth: int, on_progress: ProgressCallback | None = None) -> None:
        """Re-plan for a conversation ``depth`` tokens deep and load the model on the new plan's
        first engine (the cost the offer named: the pool swaps the model over)."""
        if await self.chat_engine.accept_depth_switch(depth, on_progress):
            self.read_ahead.soon()

    async def aclose(self) -> None:
        """Let go of the pool's events and close the store (the pool stops the engines)."""
        await self.read_ahead.aclose()
        self.chat_engine.close()
        self.store.close()

    # -- reading the next request ahead (ReadAhead) ----------------------------------------------------
    def viewing(self, conversation_id: int | None) -> None:
        """The conversation the user has in view (see :meth:`ReadAhead.view`)."""
        self.read_ahead.view(conversation_id)

    @property
    def reading_ahead(self) -> bool:
        """A read ahead is in flight."""
        return self.read_ahead.reading

    async def read_ahead_settled(self) -> None:
        """Return once no read ahead is in flight (tests, benchmarks)."""
        await self.read_ahead.settled()

    @property
    def last_read_ahead(self) -> int | None:
        """Prompt tokens the last read left in the engine."""
        return self.read_ahead.last_held

    # -- conversations ----------------------------------------------------------------------------
    def new_conversation(self, title: str = DEFAULT_TITLE) -> Conversation:
        """A new, empty conversation with the chat's model."""
        return self.conversations.new(title, model=str(self.model or ""))

    def resume_model(self, conversation_id: int) -> ModelResume:
        """Select the model ``conversation_id`` was last answered with again (see :meth:`Conversations.resume`)."""
        resume = self.conversations.resume(conversation_id, self.model, remote=self.remote is not None)
        if resume.outcome == MODEL_SWITCHED and resume.model is not None:
            self.set_model(resume.model)
        return resume

    def history(self, conversation: Conversation, upto: int | None = None) -> list[dict[str, Any]]:
        """Messages sent to the engine (see :meth:`Conversations.history`); images go along when
        the engine accepts them."""
        return self.conversations.history(conversation, upto, with_images=self.accepts_images)

    def context_used(self, conversation_id: int) -> int:
        """Tokens the conversation filled at its last measured reply (0 when unknown)."""
        return self.conversations.context_used(conversation_id)

    def answer_choice(self, conversation_id: int) -> tuple[int, int]:
        """Which answer to the last question is shown, of how many: (1-based index, count)."""
        return self.conversations.answer_choice(conversation_id)

    def switch_answer(self, conversation_id: int, step: int) -> bool:
        """Show the previous (-1) or next (+1) kept answer to the last question (not while a reply
        streams: the caller waits for it); False when there is none that way."""
        return self.conversations.switch_answer(conversation_id, step)

    def live_reply(self, message: Message) -> Message:
        """``message`` as shown now if it is a reply being written, else as is."""
        return self.streamer.live_reply(message)

    async def first_tokens_in(self) -> None:
        """Return once no reply waits for its first token (the app's start-up checks wait for this)."""
        await self.first_tokens.all_in()

    # -- replies (Turns) ----------------------------------------------------------------------------
    async def send(self, conversation_id: int, text: str, on_progress: ProgressCallback | None = None, *,
                   images: Sequence[ChatImage] = ()) -> Message:
        """Save the user's message, then stream the reply (see :meth:`Turns.send`)."""
        return await self.turns.send(conversation_id, text, on_progress, images=images)

    async def regenerate(self, conversation_id: int, on_progress: ProgressCallback | None = None) -> Message:
        """Answer the last user message again; the earlier answer is kept (:meth:`switch_answer`)."""
        return await self.turns.regenerate(conversation_id, on_progress)

    async def edit_and_resend(self, message_id: int, text: str,
                              on_progress: ProgressCallback | None = None) -> Message:
        """Replace a user message's text, drop everything after it, and answer again."""
        return await self.turns.edit_and_resend(message_id, text, on_progress)

    async def retry_without_format_parsing(self, conversation_id: int,
                                           on_progress: ProgressCallback | None = None) -> Message:
        """Answer the last question again, this once, with the engine's chat-format parsing off
        (see :meth:`Turns.retry_without_format_parsing`)."""
        return await self.turns.retry_without_format_parsing(conversation_id, on_progress)
