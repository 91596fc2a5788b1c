"""Client for the OpenAI-compatible chat endpoint of llama-server (or any compatible server).

It only needs a base URL and an optional API key, so the same client talks to a managed local
engine or a remote endpoint. Replies stream as Server-Sent Events; cancelling the awaiting task
closes the HTTP stream at once, which makes llama-server stop generating and free its slot.

A reply has up to three parts, streamed in any order and told apart here:

- **thinking**: ``delta.reasoning_content`` (llama-server with ``--jinja`` splits a reasoning
  model's thinking out), or a leading ``<think>…</think>`` block inside ``delta.content`` from a
  server that does not split it (remote engines, ``reasoning_format: "none"``);
- **answer**: the rest of ``delta.content``;
- **tool calls**: ``delta.tool_calls``, whose arguments stream in pieces.

Two ways to read a reply:

- :meth:`ChatClient.stream` (the full API): ``on_piece(StreamPiece)`` per streamed piece, with
  its kind and running token counts; :class:`RequestOptions` for thinking, structured output,
  tools and the output limit; the :class:`ChatReply` carries thinking and tool calls.
- :meth:`ChatClient.stream_chat` (the original API, kept for its callers): ``on_delta(text)``
  with answer text only.

Errors: :class:`~strata_gui.core.base.errors.ServerError` when the engine is unreachable or fails;
:class:`~strata_gui.core.base.errors.ChatFormatError` when the engine's chat-format parser rejects the
model's output (the model's doing, not the engine's: its ``partial`` holds the reply so far);
:class:`~strata_gui.core.base.errors.ChatError` when the request is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from types import UnionType
from typing import Any, Final, Literal, NamedTuple, Union, get_args, get_origin, get_type_hints

import httpx

from strata_gui.core.base.errors import ChatError, ChatFormatError, ServerError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text, from_json, joined, well_formed
from strata_gui.core.base.texts import to_json as texts_to_json
from strata_gui.core.runtime.engine_http import (
    STOPPED_ANSWERING,
    STOPPED_ANSWERING_HINT,
    EngineHttp,
    EngineReply,
)
from strata_gui.core.runtime.tool_arguments import parse_tool_arguments

log = logging.getLogger(__name__)

DeltaCallback = Callable[[str], None]

# The kinds of streamed pieces (plain strings: compared once per token).
THINKING: Final = "thinking"
ANSWER: Final = "answer"
TOOL_CALL: Final = "tool_call"
PieceKind = Literal["thinking", "answer", "tool_call"]

DEFAULT_MAX_TOKENS: Final = 8192
"""Output limit of :meth:`ChatClient.stream` when neither the options nor the sampling set one:
a model that never stops (a looping reply, thinking that never ends) is cut here instead of
generating until the context is full. ``max_tokens=-1`` asks for no limit."""

_OWN_FIELDS = ("model", "messages", "stream", "stream_options")
# The next user message while a request is read ahead (ChatClient.read_ahead): text no one types,
# which no template rewrites (invisible separators around a name).
READ_AHEAD_MARKER = "\u2063strata-read-ahead\u2063"

_ACCEPT_EVENTS: Final = {"Accept": "text/event-stream"}

THINK_OPEN: Final = "<think>"
THINK_CLOSE: Final = "</think>"


def _json_fields(cls: type, data: Mapping[str, Any] | None) -> dict[str, Any]:
    """The known fields of ``data`` whose values have the field's type (a damaged value is left
    out, so the field keeps its default): stored JSON may come from an older or broken writer."""
    if not isinstance(data, Mapping):
        return {}
    out: dict[str, Any] = {}
    for name, accepts in _field_types(cls).items():
        if name in data:
            value = data[name]
            if value is None or (isinstance(value, accepts) and not (isinstance(value, bool) and bool not in accepts)):
                out[name] = value
            elif isinstance(value, float) and int in accepts and float not in accepts and value.is_integer():
                out[name] = int(value)
    return out


@cache
def _field_types(cls: type) -> dict[str, tuple[type, ...]]:
    """Per dataclass field, the plain types its annotation allows (``float | None`` → float, int)."""
    out: dict[str, tuple[type, ...]] = {}
    for name, hint in get_type_hints(cls).items():
        if name not in cls.__dataclass_fields__:  # type: ignore[attr-defined]
            continue
        args = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
        types = tuple(t for t in (get_origin(a) or a for a in args) if isinstance(t, type) and t is not type(None))
        if float in types and int not in types:
            types += (int,)  # JSON writes 2.0 as 2
        out[name] = types
    return out


@dataclass
class SamplingParams:
    """Per-conversation sampling; None leaves the server's default."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def to_request(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SamplingParams:
        """Read stored settings; unknown keys and values of the wrong type are left out."""
        return cls(**_json_fields(cls, data))


@dataclass(frozen=True)
class ResponseFormat:
    """Structured output: the reply must be JSON (``schema`` None: any JSON object), enforced by
    the engine with a grammar. See :mod:`strata_gui.core.runtime.structured` to check a reply.

    Args:
        schema: A JSON schema the reply must follow, or None for any JSON object.
        name: The schema's name (OpenAI requires one; llama-server ignores it).
    """

    schema: Mapping[str, Any] | None = None
    name: str = "reply"

    def to_request(self) -> dict[str, Any]:
        if self.schema is None:
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": dict(self.schema)}}


Effort = Literal["low", "medium", "high"]


@dataclass(frozen=True)
class RequestOptions:
    """What one request may carry beyond sampling; None (or empty) leaves the server's default and
    is not sent. Only :meth:`to_request`'s fields reach the server.

    Args:
        thinking: Thinking on or off for templates that can switch it
            (``chat_template_kwargs.enable_thinking``; off also sends ``reasoning_effort: "none"``,
            which templates that take an effort level read as off).
        effort: How hard a reasoning model thinks (``reasoning_effort``; gpt-oss and others).
            Ignored when ``thinking`` is False.
        thinking_budget: Most thinking tokens before the engine ends the thinking
            (``thinking_budget_tokens``; llama-server applies it where the template marks its
            thinking with tags it knows).
        reasoning_format: ``"none"`` keeps the thinking inside the text (the engine does not
            split it; :attr:`split_thinking` may still split it here), ``"deepseek"`` splits it.
        response_format: JSON output (:class:`ResponseFormat`).
        tools: OpenAI-style tool definitions (``{"type": "function", "function": {...}}``).
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` (llama-server then constrains the
            output to a tool call), or an OpenAI ``{"type": "function", ...}`` object (remote
            servers; llama-server reads only the strings).
        max_tokens: Output limit; None: the sampling's, else :data:`DEFAULT_MAX_TOKENS`; -1: none.
        split_thinking: Client side, never sent: split a leading ``<think>…</think>`` out of the
            answer text. False shows the text exactly as the server sent it.
        extra: Server-specific fields sent as they are (llama-server's ``logit_bias``, ``grammar``,
            ...); the fields above win over them.
    """

    thinking: bool | None = None
    effort: Effort | None = None
    thinking_budget: int | None = None
    reasoning_format: str | None = None
    response_format: ResponseFormat | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    max_tokens: int | None = None
    split_thinking: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_request(self) -> dict[str, Any]:
        """The request-body fields these options set (merged over the sampling's)."""
        body: dict[str, Any] = dict(self.extra)
        if self.thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": self.thinking}
        if self.thinking is False:
            body["reasoning_effort"] = "none"
        elif self.effort is not None:
            body["reasoning_effort"] = self.effort
        if self.thinking_budget is not None:
            body["thinking_budget_tokens"] = self.thinking_budget
        if self.reasoning_format is not None:
            body["reasoning_format"] = self.reasoning_format
        if self.response_format is not None:
            body["response_format"] = self.response_format.to_request()
        if self.tools:
            body["tools"] = [dict(t) for t in self.tools]
            if self.tool_choice is not None:
                body["tool_choice"] = self.tool_choice if isinstance(self.tool_choice, str) else dict(self.tool_choice)
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body


class StreamPiece(NamedTuple):
    """One streamed piece of a reply, as :meth:`ChatClient.stream` hands it to ``on_piece``.

    A named tuple: one is made per token, and a tuple is the cheapest immutable record to make.

    Token counts are the engine's own count where each chunk carries it (llama-server's
    ``timings.predicted_n`` with ``timings_per_token``), so the live counter ends on the final
    figure; else the pieces so far (one token each on llama.cpp and vLLM, but tags and held-back
    text are tokens no piece carries).

    Attributes:
        kind: ``"thinking"``, ``"answer"`` or ``"tool_call"``.
        text: The new text; for a tool call, the next piece of its JSON arguments (may be empty
            on the piece that names the call).
        tokens: Tokens of this kind so far, this one included.
        total: Tokens of every kind so far.
        tool_index: Which tool call (0, 1, ...) a ``"tool_call"`` piece belongs to, else -1.
        tool_name: The called function's name on tool-call pieces (empty until the server sent it).
        prompt: The prompt's tokens in the engine's context (llama-server's per-chunk ``prompt_n``
            plus ``cache_n``); None where the engine does not say.
    """

    kind: PieceKind
    text: str
    tokens: int
    total: int
    tool_index: int = -1
    tool_name: str = ""
    prompt: int | None = None


PieceCallback = Callable[[StreamPiece], None]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for (complete once the reply ended).

    Attributes:
        id: The call's id, which the tool result quotes (``tool_call_id``).
        name: The function's name.
        arguments: Its arguments as the model wrote them (JSON text, maybe invalid).
    """

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a JSON object.

        Raises:
            ChatError: They are not a JSON object, or are nested too deeply
                (:func:`~strata_gui.core.runtime.tool_arguments.parse_tool_arguments`).
        """
        return parse_tool_arguments(self.arguments)

    def to_openai(self) -> dict[str, Any]:
        """The call as an assistant message's ``tool_calls`` entry (to send the history back)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ReplyStats:
    """What the user sees under a reply.

    Times are seconds from the moment the request was sent. ``ttft_s`` counts the first token of
    any kind (thinking included); ``answer_s`` the first token of the answer itself (or of a
    tool call); ``thinking_s`` how long the thinking lasted (first thinking token to the answer,
    or to the end when the reply never got past it). ``predicted_n`` counts every token generated,
    thinking included, as the engine counts them (the live counter counts the same);
    ``thinking_n`` the thinking's share of them (the engine's count at the thinking's last piece
    where it gives per-chunk counts, else its pieces).
    """

    ttft_s: float | None = None
    total_s: float | None = None
    prompt_n: int | None = None
    cache_n: int | None = None
    predicted_n: int | None = None
    prefill_tps: float | None = None
    decode_tps: float | None = None
    finish_reason: str | None = None
    engine: str | None = None
    backend: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    draft_n: int | None = None  # tokens the draft model proposed (speculative decoding)
    draft_accepted: int | None = None  # of those, accepted by the model
    answer_s: float | None = None
    thinking_n: int | None = None
    thinking_s: float | None = None

    @property
    def acceptance(self) -> float | None:
        """Share of drafted tokens the model accepted (None without speculative decoding)."""
        if not self.draft_n or self.draft_accepted is None:
            return None
        return self.draft_accepted / self.draft_n

    @property
    def context_used(self) -> int | None:
        if self.prompt_n is None and self.predicted_n is None:
            return None
        return (self.prompt_n or 0) + (self.cache_n or 0) + (self.predicted_n or 0)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if isinstance(self.engine, Text):  # "CPU (your build: bin)": read back, still translated
            data["engine"] = str(self.engine)
            data["engine_text"] = texts_to_json(self.engine)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ReplyStats:
        """Read stored statistics; unknown keys and values of the wrong type are left out."""
        stats = cls(**_json_fields(cls, data))
        saved = data.get("engine_text") if isinstance(data, Mapping) else None
        if saved is not None:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                stats.engine = from_json(saved)
        return stats

    @property
    def slow_path(self) -> str | None:
        """Why the prefill ran far below the compute limit, when a tuning table explains it
        (:mod:`strata_gui.core.engines.slow_path`; a text the GUI translates), else None."""
        prefill = self.extra.get("prefill_limit")
        saved = prefill.get("slow_path") if isinstance(prefill, dict) else None
        if saved is None:
            return None
        try:
            return from_json(saved)
        except (KeyError, TypeError, ValueError):
            return None

    def summary(self, *, with_reason: bool = True) -> str:
        """One line: ``TTFT 42 ms · thought 840 tokens in 12 s · answer after 12 s · prefill 3,000 tok/s
        · decode 760 tok/s · 1,128 tokens · stop · CPU``. A reply cut by its output limit (the
        limit in ``extra["output_limit"]``) says so: ``stopped at the output limit (8,192 tokens)``.

        Args:
            with_reason: Include the finish reason (left out where a status sentence already says it).
        """
        return " · ".join(self.summary_parts(with_reason=with_reason))

    def summary_parts(self, *, with_reason: bool = True) -> list[str]:
        """The pieces of :meth:`summary`, each a :class:`~strata_gui.core.base.texts.Text` the GUI translates."""
        parts: list[str] = []
        if self.ttft_s is not None:
            parts.append(T(QT_TRANSLATE_NOOP("Core", "TTFT {ms} ms"), ms=f"{self.ttft_s * 1000:.0f}"))
        if self.thinking_n:
            if self.thinking_s is not None:
                parts.append(T(QT_TRANSLATE_NOOP("Core", "thought {tokens} tokens in {duration}"),
                               tokens=f"{self.thinking_n:,}", duration=_duration(self.thinking_s)))
            else:
                parts.append(T(QT_TRANSLATE_NOOP("Core", "thought {tokens} tokens"), tokens=f"{self.thinking_n:,}"))
            if self.answer_s is not None:
                parts.append(T(QT_TRANSLATE_NOOP("Core", "answer after {duration}"), duration=_duration(self.answer_s)))
        if self.cache_n and self.prompt_n is not None:
            # The prompt's start was in the engine's cache (the conversation so far, or read ahead).
            parts.append(T(QT_TRANSLATE_NOOP("Core", "{cached} of {total} prompt tokens cached"),
                           cached=f"{self.cache_n:,}", total=f"{self.cache_n + self.prompt_n:,}"))
        if self.prefill_tps:
            parts.append(T(QT_TRANSLATE_NOOP("Core", "prefill {rate} tok/s"), rate=f"{self.prefill_tps:,.0f}"))
            prefill = self.extra.get("prefill_limit")
            if isinstance(prefill, dict) and isinstance(prefill.get("share"), (int, float)):
                parts.append(compute_share_phrase(float(prefill["share"]), str(prefill.get("device_kind", "gpu"))))
        if self.decode_tps:
            parts.append(T(QT_TRANSLATE_NOOP("Core", "decode {rate} tok/s"), rate=f"{self.decode_tps:,.1f}"))
            limit = self.extra.get("limit")
            if isinstance(limit, dict) and isinstance(limit.get("share"), (int, float)):
                parts.append(share_phrase(float(limit["share"]), str(limit.get("device_kind", "gpu")),
                                          measured=limit.get("peak") == "measured"))
                other = limit.get("other_peak")
                if isinstance(other, dict) and isinstance(other.get("share"), (int, float)):
                    # The same memory's other peak: an APU's spec-sheet figure and the one measured here.
                    template = (QT_TRANSLATE_NOOP("Core", "{percent} % of its measured peak")
                                if other.get("peak") == "measured"
                                else QT_TRANSLATE_NOOP("Core", "{percent} % of its nominal peak"))
                    parts.append(T(template, percent=percent_text(float(other["share"]))))
        if self.predicted_n is not None:
            # The count the live counter showed ("Generating… 1,128 tokens"), thinking included.
            template = (QT_TRANSLATE_NOOP("Core", "{count} tokens generated, thinking included") if self.thinking_n
                        else QT_TRANSLATE_NOOP("Core", "{count} tokens generated"))
            parts.append(T(template, count=f"{self.predicted_n:,}"))
        if self.acceptance is not None:
            parts.append(T(QT_TRANSLATE_NOOP("Core", "draft accepted {share} ({accepted}/{drafted})"),
                           share=f"{self.acceptance:.0%}", accepted=str(self.draft_accepted),
                           drafted=str(self.draft_n)))
        limit = self.extra.get("output_limit")
        if self.finish_reason == "length" and isinstance(limit, int) and limit > 0:
            # Said even where a status sentence is shown: it is why the reply is short, and how to fix it.
            parts.append(T(QT_TRANSLATE_NOOP("Core", "stopped at the output limit ({limit} tokens)"),
                           limit=f"{limit:,}"))
        elif self.finish_reason and with_reason:
            said = finish_words(self.finish_reason)
            if said:
                parts.append(said)
        if self.engine:
            # The engine's label already names its backend ("Vulkan b7601"); say it only when it does not.
            named = not self.backend or self.engine.lower().startswith(self.backend.lower())
            parts.append(self.engine if named else joined([self.engine, f"({self.backend})"]))
        return parts


# Why a reply ended, as the engine says it (the OpenAI API's words), in words people read. "stop"
# is the normal end: nothing to say. A reason not listed (a remote server's own) is shown as sent.
FINISH_WORDS = {
    "stop": "",
    "length": QT_TRANSLATE_NOOP("Core", "stopped at the output limit"),
    "tool_calls": QT_TRANSLATE_NOOP("Core", "called a tool"),
    "function_call": QT_TRANSLATE_NOOP("Core", "called a tool"),
    "content_filter": QT_TRANSLATE_NOOP("Core", "withheld by the server's content filter"),
    "stopped": QT_TRANSLATE_NOOP("Core", "stopped"),
}


def finish_words(reason: str) -> str:
    """Why a reply ended, said for a reader ("" for the normal end); a text the GUI translates."""
    words = FINISH_WORDS.get(reason)
    if words is None:
        return reason
    return T(words) if words else ""


def share_phrase(share: float, device_kind: str, *, measured: bool = False) -> str:
    """"71 % of this GPU's memory limit": a decode speed as a share of the device's bandwidth
    ceiling (``device_kind`` "gpu", "cpu" or "gpu+cpu"; see :mod:`strata_gui.core.engines.limits`);
    ``measured``: the ceiling is the bandwidth measured here, not a spec sheet's (the CPU's)."""
    percent = percent_text(share)
    if device_kind == "cpu" and measured:
        return T(QT_TRANSLATE_NOOP("Core", "{percent} % of the CPU's measured memory limit"), percent=percent)
    if device_kind == "cpu":
        return T(QT_TRANSLATE_NOOP("Core", "{percent} % of the CPU's memory limit"), percent=percent)
    if device_kind == "gpu+cpu":
        return T(QT_TRANSLATE_NOOP("Core", "{percent} % of this GPU + CPU's memory limit"), percent=percent)
    return T(QT_TRANSLATE_NOOP("Core", "{percent} % of this GPU's memory limit"), percent=percent)


def compute_share_phrase(share: float, device_kind: str) -> str:
    """"18 % of this GPU's compute limit": a prefill speed as a share of the device's peak matrix
    rate for the model's weights (see :mod:`strata_gui.core.models.compute`)."""
    percent = percent_text(share)
    if device_kind == "cpu" and share > 1.0:
        # The peak uses the clock the OS reports; a CPU boosting above it (a VM that shows its base
        # clock, a laptop on mains power) gets past the figure, and the line says why.
        return T(QT_TRANSLATE_NOOP("Core", "{percent} % of the CPU's compute limit at the clock it reports (it "
                                           "runs faster)"), percent=percent)
    if device_kind == "cpu":
        return T(QT_TRANSLATE_NOOP("Core", "{percent} % of the CPU's compute limit"), percent=percent)
    return T(QT_TRANSLATE_NOOP("Core", "{percent} % of this GPU's compute limit"), percent=percent)


# A decode rate counted on the client (a remote server that does not time its replies, a stopped
# reply) needs this many pieces over this long: a reply of three network chunks arriving within a
# millisecond is not a rate (it read 3,651 tok/s). Over 10 ms, a millisecond of network or timer
# jitter moves it by 10 % at most.
MIN_RATE_PIECES = 8
MIN_RATE_SPAN_S = 0.01


def counted_rate(tokens: int, pieces: int, span_s: float) -> float | None:
    """Tokens per second of a reply timed on the client: ``tokens`` (the first excluded, it ends
    the time to first token) over the ``span_s`` seconds from the first piece to the last; None
    when ``pieces`` or the span are too few to make it a rate."""
    if pieces < MIN_RATE_PIECES or span_s < MIN_RATE_SPAN_S or tokens < 2:
        return None
    return (tokens - 1) / span_s


def percent_text(share: float) -> str:
    """A share as a percentage a reader can trust: "0.3" rather than "0" for a small one."""
    percent = share * 100
    if percent < 1:
        return f"{percent:.1f}"
    return f"{percent:.0f}"


def _duration(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``2 min 5 s``: as precise as a reader needs."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


@dataclass
class ChatReply:
    """A finished (or, on :attr:`ChatFormatError.partial`, interrupted) reply.

    Attributes:
        text: The answer (thinking excluded).
        stats: Timing and token figures.
        thinking: The model's thinking ("" when it had none or did not show it).
        tool_calls: The tool calls it asked for, in order (finish reason ``"tool_calls"``).
    """

    text: str
    stats: ReplyStats
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class ChatClient:
    """Streams chat completions from one server.

    Args:
        http: Shared async client (timeouts are set per request).
        base_url: ``http://127.0.0.1:PORT`` or a remote ``https://host/...`` root (without ``/v1``).
        api_key: Sent as a bearer token when given.
        clock: Monotonic clock for time-to-first-token.
    """

    def __init__(self, http: httpx.AsyncClient, base_url: str, api_key: str | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._engine = EngineHttp(http, base_url, api_key)
        self.base_url = self._engine.base_url
        self._clock = clock

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        sampling: SamplingParams | None = None,
        options: RequestOptions | None = None,
        on_piece: PieceCallback | None = None,
        model: str = "local",
        on_sent: Callable[[], None] | None = None,
    ) -> ChatReply:
        """Send ``messages`` and stream the reply: thinking, answer and tool calls.

        ``on_piece`` runs once per streamed token on the caller's loop: keep it cheap (append,
        count; batch the repaint). The returned reply is authoritative: where a server left the
        thinking in the text without its opening tag (the template's prompt opened it), the
        pieces went out as answer and the reply splits it after the fact.

        Args:
            messages: The conversation, OpenAI style (``tool`` messages carry ``tool_call_id``).
            sampling: The conversation's sampling (None: the server's defaults).
            options: Thinking, structured output, tools, output limit (None: defaults, and the
                output limit :data:`DEFAULT_MAX_TOKENS` unless the sampling sets one).
            on_piece: Called with each :class:`StreamPiece`.
            model: The model name sent (a remote endpoint may serve several).
            on_sent: Called once the request has left (its body is written to the connection).

        Raises:
            ServerError: The engine is unreachable, died mid-reply, or failed internally.
            ChatFormatError: The engine's chat-format parser rejected the model's output; its
                ``partial`` is the :class:`ChatReply` received until then.
            ChatError: The request was refused (bad key, too long for the context ...).
            asyncio.CancelledError: Stop: the stream is closed before this propagates.
        """
        options = options or RequestOptions()
        body = self._request(messages, sampling, options, model)
        return await self._stream(body, _Reader(self._clock, None, on_piece, options.split_thinking), on_sent)

    def _request(self, messages: Sequence[Mapping[str, Any]], sampling: SamplingParams | None,
                 options: RequestOptions, model: str) -> dict[str, Any]:
        """The body :meth:`stream` sends."""
        body = self._body(messages, sampling, model)
        extra = options.to_request()
        for key in _OWN_FIELDS:  # what makes this a streamed chat request is not the options' to change
            extra.pop(key, None)
        body.update(extra)
        if body.get("max_tokens") is None:
            body["max_tokens"] = DEFAULT_MAX_TOKENS
        elif body["max_tokens"] == -1:
            del body["max_tokens"]
        return body

    async def read_ahead(self, messages: Sequence[Mapping[str, Any]], *, sampling: SamplingParams | None = None,
                         options: RequestOptions | None = None, model: str = "local") -> int | None:
        """Have llama-server read the start of the next request now: ``messages`` and the header of
        the user message that will follow them (the tools and the system prompt with them), so that
        request's prompt processing starts from its cache instead of from the first token.

        The engine renders the request :meth:`stream` would send with a marker as the next user
        message (``POST /apply-template``: its own template, tools and thinking flags); the prompt
        up to the marker is then processed without generating (``POST /completion``, ``n_predict``
        0, ``cache_prompt``). The next request shares that prefix and llama-server reuses it.

        Returns:
            The prompt tokens the engine holds now (read now plus reused); None when the engine
            cannot do it (a server without these endpoints, a template that refuses the turn, a
            request it rejects): nothing is lost then, the next request reads its prompt as always.

        Raises:
            asyncio.CancelledError: The read is abandoned (the connection is closed; llama-server
                stops the task).
        """
        body = self._request([*messages, {"role": "user", "content": READ_AHEAD_MARKER}], sampling,
                             options or RequestOptions(), model)
        for key in ("stream", "stream_options"):
            body.pop(key, None)
        engine = self._engine
        try:
            resp = await engine.post("/apply-template", json=body, timeout=httpx.Timeout(10.0))
            if resp.status_code != 200:
                log.debug("read-ahead: /apply-template answered %s", resp.status_code)
                return None
            prompt = resp.json().get("prompt")
            cut = prompt.find(READ_AHEAD_MARKER) if isinstance(prompt, str) else -1
            if cut <= 0:
                return None
            resp = await engine.post("/completion", json={"prompt": prompt[:cut], "n_predict": 0, "cache_prompt": True},
                                     timeout=httpx.Timeout(10.0, read=None))
            if resp.status_code != 200:
                log.debug("read-ahead: /completion answered %s", resp.status_code)
                return None
            timings = resp.json().get("timings")
        except (ServerError, ValueError, AttributeError) as exc:
            log.debug("read-ahead failed: %s", exc)
            return None
        if not isinstance(timings, dict):
            return None
        held = [timings.get(k) for k in ("prompt_n", "cache_n")]
        return sum(int(v) for v in held if isinstance(v, (int, float)))

    async def stream_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        sampling: SamplingParams | None = None,
        on_delta: DeltaCallback | None = None,
        *,
        model: str = "local",
        on_sent: Callable[[], None] | None = None,
    ) -> ChatReply:
        """Send ``messages`` and stream the reply, calling ``on_delta(text)`` per piece of the answer.

        The original API: the answer text only reaches ``on_delta`` (thinking is split out into
        :attr:`ChatReply.thinking`, tool calls into :attr:`ChatReply.tool_calls`); no options, no
        output limit beyond the sampling's. :meth:`stream` is the full one.

        Args:
            messages: The conversation, OpenAI style.
            sampling: The conversation's sampling (None: the server's defaults).
            on_delta: Called with each streamed piece of text.
            model: The model name sent (a remote endpoint may serve several).
            on_sent: Called once the request has left (its body is written to the connection):
                work done then overlaps the engine's prompt processing instead of delaying it.

        Raises:
            ServerError: The engine is unreachable, died mid-reply, or failed internally.
            ChatFormatError: The engine's chat-format parser rejected the model's output.
            ChatError: The request was refused (bad key, too long for the context ...).
            asyncio.CancelledError: Stop: the stream is closed before this propagates.
        """
        body = self._body(messages, sampling, model)
        return await self._stream(body, _Reader(self._clock, on_delta, None, True), on_sent)

    @staticmethod
    def _body(messages: Sequence[Mapping[str, Any]], sampling: SamplingParams | None, model: str) -> dict[str, Any]:
        return {
            "model": model,
            "messages": [dict(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **(sampling or SamplingParams()).to_request(),
        }

    async def _stream(self, body: dict[str, Any], reader: _Reader, on_sent: Callable[[], None] | None) -> ChatReply:
        extensions = {"trace": _SentTrace(on_sent)} if on_sent is not None else None
        reader.started = self._clock()
        try:
            async with self._engine.stream("/v1/chat/completions", json=body, headers=_ACCEPT_EVENTS,
                                           extensions=extensions) as resp:
                await self._read_stream(resp, reader)
        except ChatFormatError as exc:
            exc.partial = reader.reply()
            raise
        return reader.reply()

    async def _read_stream(self, resp: EngineReply, reader: _Reader) -> None:
        """Read the SSE body into ``reader`` (raises on HTTP and in-stream errors).

        This runs once per streamed token on the UI's event loop: ``json.loads`` straight on each
        event's data bytes, and no per-line objects beyond the reader's slices.
        """
        if resp.status_code != 200:
            await resp.read()
            raise _http_error(resp.response)
        done = False
        failure: ServerError | ChatError | None = None
        apply = reader.apply
        # Read to its end (the engine ends the body right after [DONE]): the connection then goes
        # back to the pool instead of being closed.
        async for events in resp.events():
            if done or failure is not None:
                continue
            for event in events:
                payload = event.data
                if not payload.strip():
                    continue  # an event with no payload carries no chunk (a keep-alive)
                if payload == b"[DONE]" or payload.strip() == b"[DONE]":
                    done = True
                    break
                try:
                    apply(_parse_chunk(payload))
                except (ServerError, ChatError) as exc:
                    failure = exc
                    break
        if failure is not None:
            raise failure
        if not done and reader.stats.finish_reason is None:
            raise ServerError(STOPPED_ANSWERING, hint=STOPPED_ANSWERING_HINT)

    async def decoded_tokens(self) -> int | None:
        """How many tokens the engine has generated so far for the reply it is working on.

        Reads llama-server's ``GET /slots`` (``next_token[0].n_decoded`` of a slot with
        ``is_processing``): progress a caller can show while nothing visible streams (a long
        thinking the server does not stream, a grammar that holds text back). With several
        requests in progress (parallel slots), the largest count.

        Returns:
            The count; None when no slot is working or the server has no such endpoint (a remote
            engine, ``--no-slots``) or does not answer; progress is optional, so this never raises.
        """
        try:
            slots = await self._engine.get_json("/slots", timeout=2.0)
        except ServerError:
            return None
        if not isinstance(slots, list):
            return None
        found: int | None = None
        for slot in slots:
            if not isinstance(slot, dict) or not slot.get("is_processing"):
                continue
            nxt = slot.get("next_token")
            # A list of one entry per sequence on the pinned build; a plain object on older ones.
            entries = nxt if isinstance(nxt, list) else [nxt]
            for entry in entries:
                n = entry.get("n_decoded") if isinstance(entry, dict) else None
                if isinstance(n, int) and not isinstance(n, bool) and (found is None or n > found):
                    found = n
        return found


class _ToolCallParts:
    """A tool call being streamed: its arguments arrive in pieces."""

    __slots__ = ("args", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.args: list[str] = []


# States of the <think> splitter for servers that leave the thinking in the text: undecided (the
# text so far may be the start of "<think>"), inside the thinking, right after it (blank lines),
# watching an answer that did not open with the tag for a lone "</think>" (the template's prompt
# opened the thinking), plain answer.
_UNDECIDED, _IN_THINK, _AFTER_THINK, _WATCH, _PLAIN = range(5)


class _Reader:
    """Turns parsed chunks into the reply: thinking, answer, tool calls, statistics.

    :meth:`apply` runs once per token: the common case (one answer or thinking piece, no
    timings) costs a few dictionary look-ups and one callback.
    """

    __slots__ = ("_answering", "_clock", "_closed_at", "_on_delta", "_on_piece", "_split", "_tail", "_tools", "answer",
                 "answer_n", "generated", "prompt", "started", "stats", "think_t0", "thinking", "thinking_n",
                 "thinking_tokens", "timings", "tool_n", "total", "usage")

    def __init__(self, clock: Callable[[], float], on_delta: DeltaCallback | None, on_piece: PieceCallback | None,
                 split_thinking: bool) -> None:
        self._clock = clock
        self._on_delta = on_delta
        self._on_piece = on_piece
        self._split = _UNDECIDED if split_thinking else _PLAIN
        self._tail = ""  # text held back while a <think> tag may be arriving in pieces
        self._closed_at: tuple[float, int] | None = None  # when it came, after how many tokens
        self._tools: dict[int, _ToolCallParts] = {}
        self.started = clock()
        self.stats = ReplyStats()
        self.answer: list[str] = []
        self.thinking: list[str] = []
        self.answer_n = 0
        self.thinking_n = 0
        self.tool_n = 0
        self.total = 0  # pieces of every kind
        # The engine's own count of the tokens generated so far (llama-server's per-chunk
        # ``timings.predicted_n`` when asked with ``timings_per_token``): a piece is not a token
        # (tags and held-back tool-call text are tokens no piece carries; one piece may carry
        # several), so the live counts follow the engine's where it gives one.
        self.generated: int | None = None
        self.prompt: int | None = None  # the prompt's tokens in the context, as the engine counts them
        self.thinking_tokens = 0  # the thinking's tokens: the engine's count at its last piece, else its pieces
        self._answering = False  # the answer (or a tool call) has started
        self.think_t0: float | None = None
        self.timings: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}

    # -- per chunk ------------------------------------------------------------------------------
    def apply(self, chunk: Mapping[str, Any]) -> None:
        timings = chunk.get("timings")
        if timings is not None and isinstance(timings, dict):
            self.timings.update(timings)
            generated = timings.get("predicted_n")
            if isinstance(generated, int) and not isinstance(generated, bool):
                self.generated = generated
            read = timings.get("prompt_n")
            if isinstance(read, int) and not isinstance(read, bool):
                cached = timings.get("cache_n")
                self.prompt = read + (cached if isinstance(cached, int) and not isinstance(cached, bool) else 0)
        usage = chunk.get("usage")
        if usage is not None and isinstance(usage, dict):
            self.usage.update(usage)
        choices = chunk.get("choices")
        if not choices or not isinstance(choices, list):
            return
        choice = choices[0]
        if not isinstance(choice, dict):
            return
        finish = choice.get("finish_reason")
        if finish:
            self.stats.finish_reason = str(finish)
        delta = choice.get("delta")
        if not delta or not isinstance(delta, dict):
            return
        reasoning = delta.get("reasoning_content")
        if reasoning and isinstance(reasoning, str):
            # The server splits the thinking itself: its answer starts after blank lines, if any.
            if self._split == _UNDECIDED and not self._tail:
                self._split = _AFTER_THINK
            elif self._split == _WATCH:
                self._split = _PLAIN
            self._thinking(reasoning)
        content = delta.get("content")
        if content and isinstance(content, str):
            split = self._split
            if split == _PLAIN:
                self._answer(content)
            elif split == _WATCH:
                self._answer(content)
                if ">" in content:  # the piece that completes a "</think>" holds its ">"
                    self._check_close()
            else:
                self._split_content(content)
        calls = delta.get("tool_calls")
        if calls and isinstance(calls, list):
            self._tool_calls(calls)

    def _thinking(self, text: str) -> None:
        if self.think_t0 is None:
            self.think_t0 = now = self._clock()
            if self.stats.ttft_s is None:
                self.stats.ttft_s = now - self.started
        self.thinking.append(text)
        self.thinking_n += 1
        self.total += 1
        generated = self.generated
        self.thinking_tokens = self.thinking_n if generated is None else generated
        if self._on_piece is not None:
            self._on_piece(StreamPiece(THINKING, text, self.thinking_tokens, self.counted(), prompt=self.prompt))

    def _answer(self, text: str) -> None:
        if not self._answering:
            self._first_answer()
        self.answer.append(text)
        self.answer_n += 1
        self.total += 1
        if self._on_delta is not None:
            self._on_delta(text)
        if self._on_piece is not None:
            self._on_piece(StreamPiece(ANSWER, text, self.answer_n, self.counted(), prompt=self.prompt))

    def counted(self) -> int:
        """Tokens generated so far: the engine's count where it gives one, else the pieces."""
        generated = self.generated
        return self.total if generated is None else generated

    def _check_close(self) -> None:
        """Whether the answer so far just completed a lone ``</think>`` (the tag's pieces are among
        the last few: each holds at least one character)."""
        if THINK_CLOSE in "".join(self.answer[-len(THINK_CLOSE):]):
            self._closed_at = (self._clock(), self.answer_n if self.generated is None else self.generated)
            self._split = _PLAIN

    def _first_answer(self) -> None:
        """The answer (or a tool call) starts: the thinking, if any, is over."""
        self._answering = True
        now = self._clock()
        self.stats.answer_s = now - self.started
        if self.stats.ttft_s is None:
            self.stats.ttft_s = self.stats.answer_s
        if self.think_t0 is not None and self.stats.thinking_s is None:
            self.stats.thinking_s = now - self.think_t0

    def _split_content(self, text: str) -> None:
        """Content from a server that may have left a ``<think>…</think>`` block at its start.

        Tags may arrive cut anywhere (``"<thi"`` + ``"nk>"``): text that may still be part of
        one is held back until the next piece settles it.
        """
        if self._split == _WATCH:
            self._answer(text)
            if ">" in text:
                self._check_close()
            return
        text = self._tail + text
        self._tail = ""
        if self._split == _UNDECIDED:
            head = text.lstrip()
            if len(head) < len(THINK_OPEN) and THINK_OPEN.startswith(head):
                self._tail = text  # "", "<", "<thi": wait for more
                return
            if not head.startswith(THINK_OPEN):
                self._split = _WATCH
                self._split_content(text)
                return
            self._split = _IN_THINK
            text = head[len(THINK_OPEN):].lstrip("\n")
            if not text:
                return
        if self._split == _IN_THINK:
            end = text.find(THINK_CLOSE)
            if end < 0:
                keep = _cut_tag(text, THINK_CLOSE)
                if keep:
                    self._tail = text[-keep:]
                    text = text[:-keep]
                if text:
                    self._thinking(text)
                return
            if end:
                self._thinking(text[:end])
            self._split = _AFTER_THINK
            text = text[end + len(THINK_CLOSE):]
        # _AFTER_THINK: the blank lines between the thinking and the answer are not the answer's.
        text = text.lstrip()
        if text:
            self._split = _PLAIN
            self._answer(text)

    def _tool_calls(self, calls: list[Any]) -> None:
        if not self._answering:
            self._first_answer()
        self.tool_n += 1
        self.total += 1
        for item in calls:
            if not isinstance(item, dict):
                continue
            index = item.get("index")
            if not isinstance(index, int):
                index = len(self._tools) - 1 if self._tools and not item.get("id") else len(self._tools)
            parts = self._tools.get(index)
            if parts is None:
                parts = self._tools[index] = _ToolCallParts()
            if item.get("id"):
                parts.id = str(item["id"])
            function = item.get("function")
            piece = ""
            if isinstance(function, dict):
                name = function.get("name")
                if name and isinstance(name, str) and name != parts.name:
                    # Sent once by llama-server and OpenAI; in pieces, or repeated whole, by others.
                    parts.name = name if not parts.name or name.startswith(parts.name) else parts.name + name
                args = function.get("arguments")
                if isinstance(args, str):
                    piece = args
                elif isinstance(args, dict):  # some servers send the arguments as an object
                    piece = _arguments_text(args)
                if piece:
                    parts.args.append(piece)
            if self._on_piece is not None:
                self._on_piece(StreamPiece(TOOL_CALL, piece, self.tool_n, self.counted(), index, parts.name,
                                            self.prompt))

    # -- at the end ------------------------------------------------------------------------------
    def reply(self) -> ChatReply:
        """The reply so far (complete after the stream ended), with its statistics filled in."""
        if self._tail:  # a stream that ended inside a possible tag: the text is what it is
            tail, self._tail = self._tail, ""
            if self._split == _IN_THINK:
                self._thinking(tail)
            elif tail.strip():
                self._answer(tail)
        stats = self.stats
        end = self._clock()
        stats.total_s = end - self.started
        if self.think_t0 is not None and stats.thinking_s is None:
            stats.thinking_s = end - self.think_t0
        text = "".join(self.answer)
        thinking = "".join(self.thinking).strip()
        if self._closed_at is not None and not thinking and THINK_OPEN not in text.split(THINK_CLOSE, 1)[0]:
            # The template's prompt opened the thinking and the server left it in the text: only its
            # closing tag arrived. The pieces went out as answer; the reply tells them apart.
            text, thinking = split_lone_close(text, thinking)
            closed, self.thinking_tokens = self._closed_at
            if stats.answer_s is not None:
                stats.thinking_s = closed - self.started - stats.answer_s
                stats.answer_s = closed - self.started if text else None
        if self.thinking_tokens:
            stats.thinking_n = self.thinking_tokens
        _fill_stats(stats, self.timings, self.usage)
        calls = _with_own_ids(ToolCall(p.id, p.name, "".join(p.args)) for _, p in sorted(self._tools.items()))
        if stats.thinking_n and stats.predicted_n and not text.strip() and not calls:
            # Every token was thinking; the engine's count is exact where pieces are not (it sends
            # the tokens of a character cut across tokens in one piece).
            stats.thinking_n = stats.predicted_n
        return ChatReply(text, stats, thinking, calls)


def _cut_tag(text: str, tag: str) -> int:
    """Length of the end of ``text`` that is the start of ``tag`` (a tag cut by the network), else 0."""
    at = text.rfind(tag[0], max(0, len(text) - len(tag) + 1))  # one look-up for the usual "no"
    while at >= 0:
        if tag.startswith(text[at:]):
            return len(text) - at
        at = text.rfind(tag[0], max(0, len(text) - len(tag) + 1), at)
    return 0


class _SentTrace:
    """httpcore's ``trace`` extension, reduced to one call: the request is on its way."""

    __slots__ = ("_on_sent",)

    def __init__(self, on_sent: Callable[[], None]) -> None:
        self._on_sent: Callable[[], None] | None = on_sent

    async def __call__(self, name: str, info: Mapping[str, Any]) -> None:
        # "http11.send_request_body.complete" (or http2's): the engine has the request.
        if self._on_sent is not None and name.endswith("send_request_body.complete"):
            on_sent, self._on_sent = self._on_sent, None
            on_sent()


def _parse_chunk(payload: bytes) -> dict[str, Any]:
    try:
        chunk = json.loads(payload)
    except (ValueError, RecursionError) as exc:  # RecursionError: brackets nested thousands deep
        raise _unreadable(payload) from exc
    if not isinstance(chunk, dict):
        raise _unreadable(payload)
    if _SURROGATE_ESCAPE.search(payload):  # half an emoji (a lone \ud83d): text that cannot be printed or saved
        try:
            chunk = {well_formed(k): _well_formed_json(v) for k, v in chunk.items()}
        except RecursionError as exc:  # nested just below json's own limit
            raise _unreadable(payload) from exc
    err = chunk.get("error")
    if err:
        raise _error_from_body(err, status=None)
    return chunk


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _well_formed_json(value: Any) -> Any:
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, dict):
        return {well_formed(k): _well_formed_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_well_formed_json(v) for v in value]
    return value


def _arguments_text(args: dict[str, Any]) -> str:
    """Arguments a server sent as an object, as the JSON text a call keeps."""
    try:
        return json.dumps(args, ensure_ascii=False)
    except RecursionError:  # nested nearly as deep as json could read: no tool takes that
        raise ServerError(QT_TRANSLATE_NOOP("Core", "The engine sent a reply Strata cannot read."),
                          details="tool call arguments nested too deeply") from None


def _unreadable(payload: bytes) -> ServerError | ChatFormatError:
    text = payload[:500].decode(errors="replace")
    if _is_format_failure(text):  # a server that reports its parser's failure as plain text
        return _format_error(text)
    return ServerError(QT_TRANSLATE_NOOP("Core", "The engine sent a reply Strata cannot read."), details=text)


def _with_own_ids(calls: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    """``calls`` with an id each, none twice: a server may send none (OpenAI-compatible ones that
    skip it) or repeat one, and a result is matched to its call by id."""
    seen: set[str] = set()
    out = []
    for call in calls:
        own = call if call.id and call.id not in seen else dataclasses.replace(call, id=f"call_{os.urandom(6).hex()}")
        seen.add(own.id)
        out.append(own)
    return tuple(out)


def split_lone_close(text: str, thinking: str) -> tuple[str, str]:
    """(answer, thinking) of a reply whose prompt opened the thinking, so only ``</think>`` arrived
    in its text: what came before the tag is the thinking. Unchanged when the thinking came apart
    already, or the text has no lone closing tag."""
    if thinking or THINK_CLOSE not in text or THINK_OPEN in text.split(THINK_CLOSE, 1)[0]:
        return text, thinking
    before, after = text.split(THINK_CLOSE, 1)
    return after.strip(), before.strip()


def _fill_stats(stats: ReplyStats, timings: Mapping[str, Any], usage: Mapping[str, Any]) -> None:
    def num(key: str) -> Any:
        value = timings.get(key)
        return value if isinstance(value, (int, float)) else None

    stats.prompt_n = num("prompt_n") if num("prompt_n") is not None else usage.get("prompt_tokens")
    stats.cache_n = num("cache_n")
    stats.predicted_n = num("predicted_n") if num("predicted_n") is not None else usage.get("completion_tokens")
    stats.prefill_tps = num("prompt_per_second")
    stats.decode_tps = num("predicted_per_second")
    stats.draft_n = num("draft_n")
    stats.draft_accepted = num("draft_n_accepted")


# llama-server (common/chat.cpp): "The model produced output that does not match the expected
# peg-native format" (the format's name varies: peg-native, peg-gemma4, ...); older builds said
# "Failed to parse input at pos N".
_FORMAT_FAILURE = re.compile(r"does not match the expected [\w.-]+ format|failed to parse input at pos", re.I)


def _is_format_failure(message: str) -> bool:
    return _FORMAT_FAILURE.search(message) is not None


def _format_error(message: str) -> ChatFormatError:
    return ChatFormatError(details=message)


def _error_from_body(err: Any, status: int | None) -> ChatError | ServerError:
    if isinstance(err, dict):
        message = str(err.get("message") or "unknown error")
        code = err.get("code", status)
        kind = str(err.get("type") or "")
    else:
        message, code, kind = str(err), status, ""
    if _is_format_failure(message):
        # Sent as a 500 "server_error", but the engine is fine: the model's text broke the format.
        return _format_error(message)
    if code == 401 or kind == "authentication_error":
        return ChatError(QT_TRANSLATE_NOOP("Core", "The server rejected the API key."),
                         hint=QT_TRANSLATE_NOOP("Core", "Check the API key in Settings."),
                         details=message)
    if code == 503 or kind == "unavailable_error":
        return ServerError(QT_TRANSLATE_NOOP("Core", "The engine is still loading the model."),
                           hint=QT_TRANSLATE_NOOP("Core", "Try again in a moment."),
                           details=message)
    if kind == "exceed_context_size_error" or ("context" in message.lower() and code == 400):
        return ChatError(T(QT_TRANSLATE_NOOP("Core", "The conversation is too long for the model's context: "
                                                     "{reason}"), reason=message),
                         hint=QT_TRANSLATE_NOOP("Core", "Start a new conversation or raise the context size in "
                                                        "Settings."))
    if isinstance(code, int) and 400 <= code < 500:
        return ChatError(T(QT_TRANSLATE_NOOP("Core", "The engine refused the request: {reason}"), reason=message))
    return ServerError(T(QT_TRANSLATE_NOOP("Core", "The engine failed while answering: {reason}"), reason=message))


def _http_error(resp: httpx.Response) -> ChatError | ServerError:
    try:
        body = resp.json()
        err = body.get("error", body) if isinstance(body, dict) else body
    except ValueError:
        err = {"message": resp.text[:300] or resp.reason_phrase, "code": resp.status_code}
    if isinstance(err, dict):
        err.setdefault("code", resp.status_code)
    return _error_from_body(err, resp.status_code)
