"""What the chat announces (:data:`ChatEvent`) and what it asks of its collaborators (protocols):
the vocabulary the chat page, the CLI and the services speak, apart from the service itself."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from strata_gui.core.base.events import Listeners
from strata_gui.core.runtime.client import (
    ChatReply,
    PieceCallback,
    RequestOptions,
    SamplingParams,
)
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerState
from strata_gui.core.tools.approvals import ApprovalRequest, Approver, Decision, ToolPolicy

from .records import Message

if TYPE_CHECKING:
    from strata_gui.core.tools.host import ToolCatalog, ToolResult

log = logging.getLogger(__name__)


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
    """What a streaming reply received since the previous delta (one or more tokens; at most
    about one delta per ``delta_interval``). ``complete``: the engine finished the reply, this is
    its last text (maybe empty); the reply's saved state follows on a later loop turn, so a
    listener shows this text at once (the reply's end is painted before the saving work).

    Attributes:
        message_id: The reply.
        text: New answer text.
        complete: The engine finished the reply.
        thinking: New thinking text (the model's reasoning, shown apart from the answer).
        tokens: Tokens of every kind streamed so far (thinking, answer, tool calls): the live counter.
        tool: The function a tool call being written names ("" when none is).
        context: Tokens in the context now: the prompt the engine read and the tokens generated
            since (0 where the engine does not say how long the prompt was).
    """

    message_id: int
    text: str
    complete: bool = False
    thinking: str = ""
    tokens: int = 0
    tool: str = ""
    context: int = 0


@dataclass(frozen=True)
class MessageUpdated:
    message: Message


@dataclass(frozen=True)
class ReplyProgress:
    """Nothing visible has arrived for a while: what the engine says it is doing.

    Sent about once per ``watch_interval`` while a reply streams nothing (a long prompt, thinking
    the server holds back, a tool call or a grammar-bound reply being written), with the count the
    engine reports (llama-server's ``/slots``), so a long think never looks frozen.

    Attributes:
        message_id: The reply.
        tokens: The best count known: the engine's, or the streamed one if higher.
        silent_s: Seconds since the last streamed piece (or since the request, before the first).
        decoded: Tokens the engine has generated for this reply (None: it does not say).
        silent: The engine has been generating for ``silence_notice_s`` or longer and none of it
            arrived: the reply says so.
    """

    message_id: int
    tokens: int
    silent_s: float
    decoded: int | None
    silent: bool = False

    @property
    def text(self) -> str:
        """The notice, in words (the CLI's; the app says it in the user's language)."""
        if not self.silent:
            return ""
        return (f"The engine has generated {self.tokens:,} tokens, but nothing has arrived for "
                f"{self.silent_s:.0f} s: the model may be writing something its chat format holds back "
                "(a tool call, a structured reply) or thinking the server does not stream. Stop keeps "
                "what arrived.")


@dataclass(frozen=True)
class ToolApproval:
    """A tool call waiting for the user's answer: "Allow once / Always allow this tool / Deny".

    Attributes:
        message_id: The reply that asked for the call.
        call_id: The call (its :class:`~strata_gui.core.chat.store.ToolCallRecord` id).
        request: Which tool of which server, with which arguments.
    """

    message_id: int
    call_id: str
    request: ApprovalRequest


# Asks the user about one tool call (the app's inline buttons, the CLI's prompt).
ChatApprover = Callable[[ToolApproval], Awaitable[Decision]]


class ToolHost(Protocol):
    """Where tools come from and run (:class:`~strata_gui.core.tools.McpHost`)."""

    async def list_tools(self) -> ToolCatalog: ...

    async def run_call(self, catalog: ToolCatalog, name: str, arguments: str | Mapping[str, Any] | None, *,
                       policy: ToolPolicy, approver: Approver, timeout: float | None = None) -> ToolResult: ...


@dataclass(frozen=True)
class ChatTools:
    """The tools replies may call: the servers' host and who decides whether a call runs.

    Attributes:
        host: Lists the enabled servers' tools and runs calls.
        policy: "Always allow" memory; every other call asks the chat's approver.
    """

    host: ToolHost
    policy: ToolPolicy


class TemplateInfo(Protocol):
    """What the chat needs to know of a model's chat template
    (:class:`~strata_gui.core.models.chat_template.TemplateCapabilities`)."""

    @property
    def tools(self) -> bool: ...

    @property
    def keeps_past_reasoning(self) -> bool: ...

    @property
    def thinking_toggle(self) -> str | None: ...

    @property
    def thinking_off(self) -> bool | int | str | None: ...

    @property
    def effort(self) -> str | None: ...


ChatEvent = (EngineStatus | Notice | EngineSwitchOffer | PlanChanged | MessageAdded | MessageDelta | MessageUpdated
             | ReplyProgress)
Listener = Callable[[ChatEvent], None]


class ReplyClient(Protocol):
    """What streams one reply: :class:`~strata_gui.core.runtime.client.ChatClient` for the local
    engine, :class:`~strata_gui.core.remote.service.RemoteChat` for a remote one."""

    async def stream(self, messages: Sequence[Mapping[str, Any]], *, sampling: SamplingParams | None = None,
                     options: RequestOptions | None = None, on_piece: PieceCallback | None = None,
                     on_sent: Callable[[], None] | None = None) -> ChatReply: ...


class RemoteEngine(ReplyClient, Protocol):
    """An engine Strata does not manage (a remote OpenAI-compatible endpoint)."""

    @property
    def label(self) -> str: ...


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
