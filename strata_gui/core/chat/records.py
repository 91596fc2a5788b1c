"""What the conversation history holds: conversations, messages, tool calls, and their settings,
as plain records (the SQLite store in :mod:`.store` reads and writes them; everything else reads
them). Every value read from JSON is read defensively: a damaged one reads as its default."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from strata_gui.core.base.texts import well_formed
from strata_gui.core.runtime.client import (
    Effort,
    ReplyStats,
    RequestOptions,
    ResponseFormat,
    SamplingParams,
    ToolCall,
)

from .images import ChatImage

# Message status: what the user sees next to a reply.
COMPLETE = "complete"
STREAMING = "streaming"
INTERRUPTED = "interrupted"  # the engine died or the app closed mid-reply
STOPPED = "stopped"  # the user pressed Stop
FAILED = "error"
FORMAT_FAILED = "format_error"  # the engine's chat-format parser rejected the model's output (kept as it came)

# What became of a tool call the model asked for.
TOOL_PENDING = "pending"  # asked, not run yet (waiting for the user's approval)
TOOL_RUNNING = "running"  # allowed, and running now
TOOL_ALLOWED = "allowed"  # the user (or a rule) allowed it and it ran; ``result`` holds its output
TOOL_DENIED = "denied"  # the user refused it
TOOL_ERROR = "error"  # it ran and failed; ``result`` holds the error
TOOL_STOPPED = "stopped"  # the user pressed Stop while it waited for an answer or ran; ``result`` says which
TOOL_STATUSES = (TOOL_PENDING, TOOL_RUNNING, TOOL_ALLOWED, TOOL_DENIED, TOOL_ERROR, TOOL_STOPPED)

# Structured output of a conversation.
OUTPUT_OFF = "off"
OUTPUT_JSON = "json"  # any JSON object
OUTPUT_SCHEMA = "schema"  # JSON following the conversation's schema
OUTPUT_MODES = (OUTPUT_OFF, OUTPUT_JSON, OUTPUT_SCHEMA)
EFFORTS = ("low", "medium", "high")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ToolCallRecord:
    """A tool call a reply asked for, and what became of it.

    Attributes:
        id: The call's id (a ``tool`` message quotes it as ``tool_call_id``).
        name: The function's name.
        arguments: The arguments as the model wrote them (JSON text).
        result: What the tool returned (or the error, for :data:`TOOL_ERROR`); None until it ran.
        status: :data:`TOOL_PENDING`, :data:`TOOL_RUNNING`, :data:`TOOL_ALLOWED`, :data:`TOOL_DENIED`,
            :data:`TOOL_ERROR` or :data:`TOOL_STOPPED`.
        duration_s: How long the tool ran.
    """

    id: str
    name: str
    arguments: str = ""
    result: str | None = None
    status: str = TOOL_PENDING
    duration_s: float | None = None

    @classmethod
    def from_call(cls, call: ToolCall) -> ToolCallRecord:
        return cls(call.id, call.name, call.arguments)

    def call(self) -> ToolCall:
        """The call as the client returned it (to send the history back to the model)."""
        return ToolCall(self.id, self.name, self.arguments)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "result": self.result,
                "status": self.status, "duration_s": self.duration_s}

    @classmethod
    def from_json(cls, data: Any) -> ToolCallRecord | None:
        """Read a stored record; None when it is too damaged to name a call."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("name"), str):
            return None
        arguments, result, status = data.get("arguments"), data.get("result"), data.get("status")
        return cls(data["id"], data["name"], arguments if isinstance(arguments, str) else "",
                   result if isinstance(result, str) else None,
                   status if status in TOOL_STATUSES else TOOL_PENDING, _number(data.get("duration_s")))


@dataclass(frozen=True)
class StructuredOutput:
    """A conversation's structured-output setting.

    Attributes:
        mode: :data:`OUTPUT_OFF`, :data:`OUTPUT_JSON` (any JSON object) or :data:`OUTPUT_SCHEMA`.
        schema: The JSON schema as the user wrote it (kept while the mode is off or plain JSON, so
            switching back does not lose it).
    """

    mode: str = OUTPUT_OFF
    schema: str = ""

    def response_format(self) -> ResponseFormat | None:
        """What the request carries for this setting (None when off).

        Raises:
            ChatError: The mode is :data:`OUTPUT_SCHEMA` and the schema is not a valid JSON schema.
        """
        if self.mode == OUTPUT_JSON:
            return ResponseFormat()
        if self.mode == OUTPUT_SCHEMA:
            from strata_gui.core.runtime.structured import load_schema  # jsonschema, only when used

            return ResponseFormat(load_schema(self.schema))
        return None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "schema": self.schema}

    @classmethod
    def from_json(cls, data: Any) -> StructuredOutput:
        if not isinstance(data, dict):
            return cls()
        mode, schema = data.get("mode"), data.get("schema")
        return cls(mode if mode in OUTPUT_MODES else OUTPUT_OFF, schema if isinstance(schema, str) else "")


@dataclass(frozen=True)
class ThinkingSettings:
    """A conversation's thinking settings (None: the model's default).

    Attributes:
        enabled: Thinking on or off, for models that can switch it.
        effort: ``"low"``, ``"medium"`` or ``"high"``, for models that take an effort level.
        budget: Most thinking tokens per reply.
    """

    enabled: bool | None = None
    effort: Effort | None = None
    budget: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "effort": self.effort, "budget": self.budget}

    @classmethod
    def from_json(cls, data: Any) -> ThinkingSettings:
        if not isinstance(data, dict):
            return cls()
        enabled, effort, budget = data.get("enabled"), data.get("effort"), data.get("budget")
        return cls(enabled if isinstance(enabled, bool) else None,
                   effort if effort in EFFORTS else None,
                   budget if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0 else None)


@dataclass
class Conversation:
    id: int
    title: str
    created_at: float
    updated_at: float
    system_prompt: str = ""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    model: str = ""
    ran_on: str = ""
    structured_output: StructuredOutput = field(default_factory=StructuredOutput)
    thinking: ThinkingSettings = field(default_factory=ThinkingSettings)

    def request_options(self, **more: Any) -> RequestOptions:
        """The request options its settings ask for (``more``: further :class:`RequestOptions` fields).

        Raises:
            ChatError: Its schema is not a valid JSON schema (structured output by schema).
        """
        t = self.thinking
        return RequestOptions(thinking=t.enabled, effort=t.effort, thinking_budget=t.budget,
                              response_format=self.structured_output.response_format(), **more)


@dataclass
class Message:
    """A stored message.

    ``role`` is ``"user"``, ``"assistant"``, ``"system"`` or ``"tool"``; a ``tool`` message's
    ``content`` is a call's result, ``tool_call_id`` and ``tool_name`` say which call.
    """

    id: int
    conversation_id: int
    role: str
    content: str
    status: str
    created_at: float
    settings: dict[str, Any] = field(default_factory=dict)
    stats: ReplyStats = field(default_factory=ReplyStats)
    ran_on: str = ""
    images: tuple[ChatImage, ...] = ()
    thinking: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str = ""
    tool_name: str = ""


def json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def tool_calls_from_json(text: str | None) -> tuple[ToolCallRecord, ...]:
    try:
        value = json.loads(text or "[]")
    except (ValueError, TypeError):
        return ()
    if not isinstance(value, list):
        return ()
    return tuple(r for r in map(ToolCallRecord.from_json, value) if r is not None)


def tool_calls_json(calls: Sequence[ToolCallRecord]) -> str:
    return json.dumps([c.to_json() for c in calls])


def storable(params: Sequence[Any]) -> tuple[Any, ...]:
    """``params`` with text made encodable: SQLite takes UTF-8 only, and half an emoji (a JSON
    ``\\ud83d`` from a server, a byte that was not UTF-8 on a command line) raised and lost the reply."""
    return tuple(well_formed(p) if isinstance(p, str) else p for p in params)
