"""Client for the OpenAI-compatible chat endpoint of llama-server (or any compatible server).

It only needs a base URL and an optional API key, so the same client talks to a managed local
engine or a remote endpoint. Replies stream as Server-Sent Events; cancelling the awaiting task
closes the HTTP stream at once, which makes llama-server stop generating and free its slot.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from strata_gui.core.errors import ChatError, ServerError

log = logging.getLogger(__name__)

DeltaCallback = Callable[[str], None]


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
        data = data or {}
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class ReplyStats:
    """What the user sees under a reply."""

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
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ReplyStats:
        data = data or {}
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def summary(self, *, with_reason: bool = True) -> str:
        """One line: ``TTFT 42 ms · prefill 3,000 tok/s · decode 760 tok/s · 128 tokens · stop · CPU``.

        Args:
            with_reason: Include the finish reason (left out where a status sentence already says it).
        """
        parts = []
        if self.ttft_s is not None:
            parts.append(f"TTFT {self.ttft_s * 1000:.0f} ms")
        if self.prefill_tps:
            parts.append(f"prefill {self.prefill_tps:,.0f} tok/s")
        if self.decode_tps:
            parts.append(f"decode {self.decode_tps:,.1f} tok/s")
        if self.predicted_n is not None:
            parts.append(f"{self.predicted_n} tokens")
        if self.acceptance is not None:
            parts.append(f"draft accepted {self.acceptance:.0%} ({self.draft_accepted}/{self.draft_n})")
        if self.finish_reason and with_reason:
            parts.append(self.finish_reason)
        if self.engine:
            # The engine's label already names its backend ("Vulkan b7601"); say it only when it does not.
            named = not self.backend or self.engine.lower().startswith(self.backend.lower())
            parts.append(self.engine + ("" if named else f" ({self.backend})"))
        return " · ".join(parts)


@dataclass
class ChatReply:
    text: str
    stats: ReplyStats


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
        self._http = http
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._clock = clock

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def stream_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        sampling: SamplingParams | None = None,
        on_delta: DeltaCallback | None = None,
        *,
        model: str = "local",
        on_sent: Callable[[], None] | None = None,
    ) -> ChatReply:
        """Send ``messages`` and stream the reply, calling ``on_delta(text)`` per piece.

        Args:
            messages: The conversation, OpenAI style.
            sampling: The conversation's sampling (None: the server's defaults).
            on_delta: Called with each streamed piece of text.
            model: The model name sent (a remote endpoint may serve several).
            on_sent: Called once the request has left (its body is written to the connection):
                work done then overlaps the engine's prompt processing instead of delaying it.

        Raises:
            ServerError: The engine is unreachable, died mid-reply, or failed internally.
            ChatError: The request was refused (bad key, too long for the context ...).
            asyncio.CancelledError: Stop: the stream is closed before this propagates.
        """
        body: dict[str, Any] = {
            "model": model,
            "messages": [dict(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **(sampling or SamplingParams()).to_request(),
        }
        stats = ReplyStats()
        pieces: list[str] = []
        started = self._clock()
        timings: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        url = self.base_url + "/v1/chat/completions"
        answered = False
        extensions = {"trace": _SentTrace(on_sent)} if on_sent is not None else None
        for attempt in (1, 2):
            try:
                async with self._http.stream("POST", url, json=body, headers=self._headers(),
                                             timeout=httpx.Timeout(10.0, read=None), extensions=extensions) as resp:
                    answered = True
                    await self._read_stream(resp, stats, pieces, timings, usage, started, on_delta)
                break
            except httpx.RemoteProtocolError as exc:
                # llama-server closes idle keep-alive connections after a few seconds; a request
                # sent on one just as it closes gets no answer at all and is safe to send again.
                if not answered and attempt == 1:
                    log.debug("engine closed a kept-alive connection; resending once")
                    continue
                raise ServerError("The engine stopped answering in the middle of the reply.",
                                  hint="The engine probably crashed; the partial reply was kept.",
                                  details=str(exc)) from exc
            except httpx.ConnectError as exc:
                raise ServerError(f"Could not reach the engine at {self.base_url}.",
                                  hint="The engine may have stopped; Strata restarts it on the next message.",
                                  details=str(exc)) from exc
            except httpx.ReadError as exc:
                raise ServerError("The engine stopped answering in the middle of the reply.",
                                  hint="The engine probably crashed; the partial reply was kept.",
                                  details=str(exc)) from exc
            except httpx.TimeoutException as exc:
                raise ServerError("The engine did not answer in time.", details=str(exc)) from exc
        stats.total_s = self._clock() - started
        _fill_stats(stats, timings, usage)
        return ChatReply("".join(pieces), stats)

    async def _read_stream(self, resp: httpx.Response, stats: ReplyStats, pieces: list[str],
                           timings: dict[str, Any], usage: dict[str, Any], started: float,
                           on_delta: DeltaCallback | None) -> None:
        """Read the SSE body into ``pieces``/``stats`` (raises on HTTP and in-stream errors).

        This runs once per streamed token on the UI's event loop, so it works on the raw bytes:
        one ``split(b"\n")`` per network read, ``json.loads`` straight on the data payload, and
        no per-line objects beyond the slices themselves.
        """
        if resp.status_code != 200:
            await resp.aread()
            raise _http_error(resp)
        events = _SseEvents()
        done = False
        failure: ServerError | ChatError | None = None
        # The body is always read to its end (never ``break``): leaving httpx's async
        # generators suspended makes their clean-up run outside the loop under qasync.
        async for raw in resp.aiter_bytes():
            if done or failure is not None:
                continue
            for payload in events.feed(raw):
                if done or failure is not None:
                    break
                if payload.strip() == b"[DONE]":
                    done = True
                    break
                try:
                    chunk = _parse_chunk(payload)
                except (ServerError, ChatError) as exc:
                    failure = exc
                    break
                text = _apply_chunk(chunk, stats, timings, usage)
                if text:
                    if stats.ttft_s is None:
                        stats.ttft_s = self._clock() - started
                    pieces.append(text)
                    if on_delta is not None:
                        on_delta(text)
        if failure is not None:
            raise failure
        if not done and stats.finish_reason is None:
            raise ServerError("The engine stopped answering in the middle of the reply.",
                              hint="The engine probably crashed; the partial reply was kept.")


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


class _SseEvents:
    """Splits a Server-Sent Events byte stream into the data payloads of its events.

    Lines are split on line feeds only: httpx's ``aiter_lines`` also splits on U+2028/U+2029/U+0085,
    which JSON allows unescaped inside strings and llama-server sends as is (a reply holding one
    would be cut in two). Working on bytes makes that rule free: those characters are multi-byte
    UTF-8 sequences that never contain the byte 0x0A.
    """

    __slots__ = ("_data", "_pending")

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []  # data lines of the event being read

    def feed(self, raw: bytes) -> list[bytes]:
        """The payloads of the events completed by ``raw`` (``data:`` lines joined by line feeds)."""
        if self._pending:
            raw = self._pending + raw
        lines = raw.split(b"\n")
        self._pending = lines.pop()
        out: list[bytes] = []
        data = self._data
        for line in lines:
            if line.startswith(b"data:"):
                # One optional space after the colon; a trailing CR (CRLF streams) is JSON whitespace.
                data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif (not line or line == b"\r") and data:  # a blank line ends the event
                out.append(data[0] if len(data) == 1 else b"\n".join(d.removesuffix(b"\r") for d in data))
                data.clear()
            # comments (":"), event:/id:/retry: fields are not used by llama-server
        return out


def _parse_chunk(payload: bytes) -> dict[str, Any]:
    try:
        chunk = json.loads(payload)
    except ValueError as exc:
        raise ServerError("The engine sent a reply Strata cannot read.",
                          details=payload[:500].decode(errors="replace")) from exc
    if not isinstance(chunk, dict):
        raise ServerError("The engine sent a reply Strata cannot read.",
                          details=payload[:500].decode(errors="replace"))
    err = chunk.get("error")
    if err:
        raise _error_from_body(err, status=None)
    return chunk


def _apply_chunk(chunk: Mapping[str, Any], stats: ReplyStats, timings: dict[str, Any],
                 usage: dict[str, Any]) -> str:
    if isinstance(chunk.get("timings"), dict):
        timings.update(chunk["timings"])
    if isinstance(chunk.get("usage"), dict):
        usage.update(chunk["usage"])
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    if choice.get("finish_reason"):
        stats.finish_reason = str(choice["finish_reason"])
    delta = choice.get("delta") or {}
    content = delta.get("content")
    return content if isinstance(content, str) else ""


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


def _error_from_body(err: Any, status: int | None) -> ChatError | ServerError:
    if isinstance(err, dict):
        message = str(err.get("message") or "unknown error")
        code = err.get("code", status)
        kind = str(err.get("type") or "")
    else:
        message, code, kind = str(err), status, ""
    if code == 401 or kind == "authentication_error":
        return ChatError("The server rejected the API key.", hint="Check the API key in Settings.",
                         details=message)
    if code == 503 or kind == "unavailable_error":
        return ServerError("The engine is still loading the model.", hint="Try again in a moment.",
                           details=message)
    if kind == "exceed_context_size_error" or ("context" in message.lower() and code == 400):
        return ChatError(f"The conversation is too long for the model's context: {message}",
                         hint="Start a new conversation or raise the context size in Settings.")
    if isinstance(code, int) and 400 <= code < 500:
        return ChatError(f"The engine refused the request: {message}")
    return ServerError(f"The engine failed while answering: {message}")


def _http_error(resp: httpx.Response) -> ChatError | ServerError:
    try:
        body = resp.json()
        err = body.get("error", body) if isinstance(body, dict) else body
    except ValueError:
        err = {"message": resp.text[:300] or resp.reason_phrase, "code": resp.status_code}
    if isinstance(err, dict):
        err.setdefault("code", resp.status_code)
    return _error_from_body(err, resp.status_code)
