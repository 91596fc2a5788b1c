"""What every API of the local server shares: its error shapes, request bodies, the engine leg, statistics.

Each API answers errors in its own JSON shape, because each client library parses its own:

- OpenAI: ``{"error": {"message", "type", "param", "code"}}``
- Ollama: ``{"error": "message"}``
- Anthropic: ``{"type": "error", "error": {"type", "message"}}``

and inside a stream that already started, as the API's own stream item (an SSE ``data:`` event, an
NDJSON line, an SSE ``event: error``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import httpx
from aiohttp import web

from strata_gui.core.base.errors import (
    ServerBusyError,
    ServerError,
    StrataError,
    UnknownModelError,
    WrongModelKindError,
)
from strata_gui.core.base.events import Listeners
from strata_gui.core.runtime.engine_http import EngineHttp, EngineReply, Form
from strata_gui.core.runtime.sse import SseEvent, SseReader
from strata_gui.core.serve.activity import CURRENT, UNKNOWN_MODEL, Activity
from strata_gui.core.serve.catalog import find_served
from strata_gui.core.serve.records import ApiRequest, Counters, ServerLimits
from strata_gui.core.serve.router import ModelRouter, ServedModel, Upstream

if TYPE_CHECKING:
    from strata_gui.core.serve.metrics import ServerMetrics
    from strata_gui.core.serve.model_admin import ModelAdmin

log = logging.getLogger(__name__)

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"
NDJSON_TYPE = "application/x-ndjson"


class Flavor(Enum):
    """Which API a path belongs to: decides the shape of its errors."""

    OPENAI = "openai"
    OLLAMA = "ollama"
    ANTHROPIC = "anthropic"


def flavor_of(path: str) -> Flavor:
    if path.startswith("/api/"):
        return Flavor.OLLAMA
    if path.startswith("/v1/messages"):
        return Flavor.ANTHROPIC
    return Flavor.OPENAI


# Generic error kinds → each API's own type names.
_TYPES: dict[Flavor, dict[str, str]] = {
    Flavor.OPENAI: {"invalid_request": "invalid_request_error", "authentication": "authentication_error",
                    "forbidden": "permission_error",
                    "not_found": "invalid_request_error", "no_route": "invalid_request_error",
                    "too_large": "invalid_request_error",
                    "timeout": "invalid_request_error", "busy": "server_error", "upstream": "server_error",
                    "internal": "server_error", "unsupported": "invalid_request_error"},
    Flavor.ANTHROPIC: {"invalid_request": "invalid_request_error", "authentication": "authentication_error",
                       "forbidden": "permission_error",
                       "not_found": "not_found_error", "no_route": "not_found_error", "too_large": "request_too_large",
                       "timeout": "invalid_request_error", "busy": "overloaded_error", "upstream": "api_error",
                       "internal": "api_error", "unsupported": "invalid_request_error"},
}
_OPENAI_CODES = {"not_found": "model_not_found", "authentication": "invalid_api_key", "too_large": "request_too_large",
                 "busy": "server_busy", "timeout": "request_timeout", "unsupported": "unsupported_endpoint"}


class ApiError(Exception):
    """A request the server answers with an error, in the API's own shape.

    Args:
        status: HTTP status.
        message: What went wrong, for the client's user.
        kind: ``invalid_request``, ``authentication``, ``forbidden``, ``not_found`` (a model),
            ``no_route`` (a path), ``too_large``, ``timeout``, ``busy``, ``upstream``, ``internal`` or
            ``unsupported``.
        headers: Extra response headers (``Retry-After``).
    """

    def __init__(self, status: int, message: str, kind: str = "invalid_request",
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.headers = dict(headers or {})


def error_body(flavor: Flavor, err: ApiError) -> dict[str, Any]:
    if flavor is Flavor.OLLAMA:
        return {"error": err.message}
    kind = _TYPES[flavor].get(err.kind, "api_error" if flavor is Flavor.ANTHROPIC else "server_error")
    if flavor is Flavor.ANTHROPIC:
        return {"type": "error", "error": {"type": kind, "message": err.message}}
    return {"error": {"message": err.message, "type": kind, "param": None, "code": _OPENAI_CODES.get(err.kind)}}


def error_response(flavor: Flavor, err: ApiError) -> web.Response:
    headers = dict(err.headers)
    if err.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="strata"'
    return web.Response(status=err.status, body=json.dumps(error_body(flavor, err)).encode(),
                        content_type=JSON_TYPE, headers=headers)


def stream_error(flavor: Flavor, message: str, kind: str = "upstream") -> bytes:
    """An error as the last item of a stream that already started (its status line was 200)."""
    body = error_body(flavor, ApiError(500, message, kind))
    if flavor is Flavor.OLLAMA:
        return json.dumps(body).encode() + b"\n"
    if flavor is Flavor.ANTHROPIC:
        return b"event: error\ndata: " + json.dumps(body).encode() + b"\n\n"
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def from_strata_error(exc: StrataError) -> ApiError:
    """The answer to a router's error (see :meth:`ModelRouter.borrow`)."""
    text = exc.user_text().replace("\n", " ")
    if isinstance(exc, UnknownModelError):
        return ApiError(404, text, "not_found")
    if isinstance(exc, WrongModelKindError):
        return ApiError(400, text, "invalid_request")
    if isinstance(exc, ServerBusyError):
        retry = max(1, math.ceil(exc.retry_after))  # Retry-After is whole seconds: never earlier than asked
        return ApiError(503, text, "busy", {"Retry-After": str(retry)})
    return ApiError(502, text, "upstream")


# --------------------------------------------------------------------------- the server's shared state

# The status line went out (a stream started): errors can no longer be answered with a status.
STARTED: web.RequestKey[bool] = web.RequestKey("strata_started", bool)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Route = tuple[str, str, Handler, bool]  # (method, path, handler, runs a model: counted and recorded)

# The response started (status 200 sent) but the request did not complete: counted as failed.
FAILED: web.RequestKey[bool] = web.RequestKey("strata_failed", bool)


@dataclass
class ServeContext:
    """Everything a route handler needs, shared by the server's routes."""

    router: ModelRouter
    limits: ServerLimits = field(default_factory=ServerLimits)
    clock: Callable[[], float] = time.perf_counter
    finished: Listeners[ApiRequest] = field(default_factory=Listeners)  # each completed model request
    counters: Counters = field(default_factory=Counters)
    stopping: bool = False
    inflight: set[asyncio.Task[Any]] = field(default_factory=set)  # request handlers running now
    # Connections (aiohttp's handlers) with a request in a handler now, and those still reading its
    # body: what the connection cap may not close, or closes last (connections.ConnectionGuard).
    requests: dict[Any, web.BaseRequest] = field(default_factory=dict)
    reading: set[Any] = field(default_factory=set)
    http: httpx.AsyncClient | None = None  # the engines' client (the app's loopback one), while the server runs
    admin: ModelAdmin | None = None  # pulls, deletes and names library models (Ollama's model routes)
    activity: Activity = field(default_factory=Activity)  # recent requests (the Activity view, the log)
    waiting: int = 0  # requests waiting for an engine or a slot now (/metrics' queue depth)
    metrics: ServerMetrics | None = None  # /metrics' series

    def record(self, req: ApiRequest) -> None:
        trace = CURRENT.get()
        if trace is not None:
            trace.stats = req
        self.finished.emit(req)

    def find(self, model_id: str) -> ServedModel | None:
        """The model a client names: its id (with Ollama's ``:latest`` or not) or the hub name it
        was pulled as (``hf.co/org/repo:quant``)."""
        return find_served(self.router.models(), model_id)

    def pick_model(self, body: Mapping[str, Any], kind: str | None, key: str = "model") -> str:
        """The model a request names; none named means the only model of ``kind`` served, if there is one."""
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
        if value is not None and not isinstance(value, str):
            raise ApiError(400, f"'{key}' must be a string.")
        models = [m for m in self.router.models() if kind is None or m.kind == kind]
        if len(models) == 1:
            return models[0].id
        names = ", ".join(m.id for m in models[:10]) or "none"
        raise ApiError(400, f"The request names no model ('{key}'). Models served here: {names}.")

    @asynccontextmanager
    async def borrow(self, model_id: str, *, kind: str | None = None, keep_alive: float | None = None,
                     needs: str | None = None) -> AsyncIterator[Upstream]:
        """Borrow an engine for ``model_id``; router errors become :class:`ApiError`.

        Args:
            model_id: The model.
            kind: The engine kind the endpoint needs.
            keep_alive: Seconds to keep it loaded afterwards (None: the router's default).
            needs: An ``API_*`` the engine must speak (400 otherwise).
        """
        found = self.find(model_id)  # "name:latest" from Ollama's clients, a hub name: the id
        model_id = found.id if found is not None else model_id
        trace = CURRENT.get()
        if trace is not None:
            # Only a name the library serves is recorded: a client's made-up names (any length, a
            # new one per request) would grow /metrics, the Activity list and the log without end.
            trace.model = found.id if found is not None else UNKNOWN_MODEL
        began = self.clock()
        self.waiting += 1
        try:
            cm = self.router.borrow(model_id, kind=kind, keep_alive=keep_alive)
            up = await cm.__aenter__()
        except StrataError as exc:
            raise from_strata_error(exc) from exc
        finally:
            self.waiting -= 1
        if trace is not None:
            trace.model, trace.wait_s = up.model.id, self.clock() - began  # the router also knows file names
        try:
            if needs is not None and needs not in up.apis:
                raise ApiError(400, f"The engine serving {up.model.id} does not offer this endpoint "
                                    f"(it speaks {', '.join(sorted(up.apis)) or 'nothing'}).", "unsupported")
            yield up
        except BaseException as exc:
            if not await cm.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await cm.__aexit__(None, None, None)


CTX: web.AppKey[ServeContext] = web.AppKey("strata_serve_context", ServeContext)
"""The application key under which route handlers find the :class:`ServeContext`."""


def context(request: web.Request) -> ServeContext:
    return request.app[CTX]


# --------------------------------------------------------------------------- request bodies

def too_large(ctx: ServeContext) -> ApiError:
    """The 413 for a body over the size limit."""
    return ApiError(413, f"The request is larger than {ctx.limits.max_body_bytes // 1024} KiB.", "too_large")


@asynccontextmanager
async def receiving(request: web.Request, ctx: ServeContext) -> AsyncIterator[None]:
    """The block that reads the request's body: within the time limit (408), one announced over
    the size limit refused before (413), a broken body answered 400."""
    if request.content_length is not None and request.content_length > ctx.limits.max_body_bytes:
        raise too_large(ctx)
    ctx.reading.add(request.protocol)
    try:
        async with asyncio.timeout(ctx.limits.body_timeout_s):
            yield
    except TimeoutError as exc:
        raise ApiError(408, "The request body did not arrive in time.", "timeout") from exc
    except web.HTTPRequestEntityTooLarge as exc:
        raise too_large(ctx) from exc
    except web.RequestPayloadError as exc:  # broken chunked framing, a body shorter than its length
        raise ApiError(400, f"The request body is malformed: {exc}.") from exc
    finally:
        ctx.reading.discard(request.protocol)


def keep_for_capture(ctx: ServeContext, body: bytes) -> None:
    """Keep the request's body with its activity entry when captures are on."""
    trace = CURRENT.get()
    if trace is not None and ctx.activity.capture():
        trace.body = body


async def read_body(request: web.Request, ctx: ServeContext) -> bytes:
    """The request body, within the size and time limits."""
    async with receiving(request, ctx):
        body = await request.read()  # the size limit holds while reading (client_max_size)
    keep_for_capture(ctx, body)
    return body


async def read_json(request: web.Request, ctx: ServeContext) -> tuple[bytes, dict[str, Any]]:
    """The raw body and its JSON object (400 when it is not a JSON object)."""
    raw = await read_body(request, ctx)
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError as exc:
        raise ApiError(400, f"The request body is not valid JSON: {exc}.") from exc
    except RecursionError as exc:  # thousands of nested brackets: Python's parser gives up
        raise ApiError(400, "The request body nests too deeply to read.") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    return raw, body


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(data).encode(), content_type=JSON_TYPE)


# --------------------------------------------------------------------------- the engine leg

ENGINE_TIMEOUT = httpx.Timeout(30.0, read=None)
"""The engine leg of a request: 30 s to connect and send, then no limit on the reply (a long
generation is fine; a client that leaves closes it)."""

ENGINE_ERRORS = (ServerError,)  # what a failing engine connection raises (the engine client's translation)
# Raw bytes are passed through as they are: the engine is asked not to compress them.
_ENGINE_ENCODING = {"Accept-Encoding": "identity"}
_ENGINE_HEADERS = {"Content-Type": JSON_TYPE, **_ENGINE_ENCODING}


def engine_failure(exc: ServerError) -> str:
    """What broke on the engine leg, in one phrase for an API client.

    Never the engine's internal address or the HTTP library's words: a client cannot act on
    either, and the port is Strata's business. Those go to the log.
    """
    log.warning("the engine leg failed: %s (%s)", exc.message, exc.details or "no details")
    cause = exc.__cause__
    if isinstance(cause, httpx.ConnectError):
        return "it could not be reached (it may have stopped; it is started again on the next request)"
    if isinstance(cause, httpx.TimeoutException):
        return "it did not answer in time"
    return "the connection broke off (the engine probably crashed; it is started again on the next request)"


@asynccontextmanager
async def upstream_post(ctx: ServeContext, up: Upstream, path: str,
                        body: bytes | Form) -> AsyncIterator[EngineReply]:
    """POST ``body`` (JSON, or a multipart form) to the engine and hold its response open (the
    answer is read by the caller).

    The engines' client is the app's shared loopback client: no proxy, a kept-alive connection
    reused, one the engine closed just then sent again (see
    :class:`~strata_gui.core.runtime.engine_http.EngineHttp`). Leaving the block before the
    body's end closes the connection, which also stops the engine generating.

    Raises:
        ApiError: The engine could not be reached, did not answer, or its answer broke off while
            the caller read all of it (502).
    """
    http = ctx.http
    if http is None:
        raise ApiError(503, "Strata's server is not running.", "busy")
    engine = EngineHttp(http, up.base_url, up.api_key)
    try:
        if isinstance(body, Form):  # httpx names the form's content type (its boundary)
            sent = engine.stream(path, form=body, headers=_ENGINE_ENCODING, timeout=ENGINE_TIMEOUT, raw=True)
        else:
            sent = engine.stream(path, content=body, headers=_ENGINE_HEADERS, timeout=ENGINE_TIMEOUT, raw=True)
        async with sent as resp:
            yield resp
    except ServerError as exc:
        raise ApiError(502, f"The engine did not answer: {engine_failure(exc)}.", "upstream") from exc


def upstream_error(resp: EngineReply, data: bytes) -> ApiError:
    """An engine's error answer, carried over into the client's API with the engine's status."""
    message = data[:500].decode(errors="replace") or f"The engine answered {resp.status_code}."
    with contextlib.suppress(ValueError):
        body = json.loads(data)
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            message = err["message"]
        elif isinstance(err, str):
            message = err
    kind = {400: "invalid_request", 401: "upstream", 404: "not_found", 413: "too_large",
            501: "unsupported", 503: "busy"}.get(resp.status_code, "upstream")
    status = 502 if resp.status_code == 401 else resp.status_code  # the engine's key is ours, not the client's
    return ApiError(status, f"The engine refused the request: {message}", kind)


async def write_chunk(request: web.Request, out: web.StreamResponse, data: bytes) -> None:
    """Write to a client; one that stops reading is dropped after the write time-out.

    A small write to a socket whose buffer is empty cannot wait (the kernel takes it), so no timer
    is armed then: the client keeps up nearly always, and that saves a timer per token.
    """
    transport = request.transport
    if transport is not None and transport.get_write_buffer_size() == 0 and len(data) < 16384:
        await out.write(data)
        return
    try:
        async with asyncio.timeout(context(request).limits.write_timeout_s):
            await out.write(data)
    except TimeoutError as exc:
        raise ConnectionResetError("the client stopped reading") from exc


async def end_stream_on_stop(out: web.StreamResponse, flavor: Flavor) -> None:
    """Close a stream cleanly because the server stops: an error item, then the end of the body.

    Called from a handler cancelled by :meth:`ApiServer.stop` after the grace period; the
    cancellation is consumed so the response ends normally.
    """
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    with contextlib.suppress(ConnectionError, TimeoutError, RuntimeError):
        async with asyncio.timeout(1.0):
            await out.write(stream_error(flavor, "Strata's server is stopping.", "busy"))
            await out.write_eof()


# --------------------------------------------------------------------------- statistics

def obj(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (for reading answers of unknown shape)."""
    return value if isinstance(value, Mapping) else {}


def _num(d: Mapping[str, Any], key: str) -> Any:
    value = d.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def has_text(data: Mapping[str, Any]) -> bool:
    """An OpenAI chunk (chat or completion) or Anthropic event that carries generated text."""
    for choice in data.get("choices") or []:
        if isinstance(choice, dict):
            delta = choice.get("delta")
            if (isinstance(delta, dict) and (delta.get("content") or delta.get("reasoning_content")
                                             or delta.get("tool_calls"))) or choice.get("text"):
                return True
    delta = data.get("delta")
    return data.get("type") == "content_block_delta" and isinstance(delta, dict)


class Meter:
    """Reads the statistics of one reply: the engine's ``timings``, ``usage``, time to first token.

    Pass-through streams are fed as bytes (:meth:`feed_sse`, then :meth:`end_sse`): every event is
    parsed until the first text, then only the last :data:`TAIL_BYTES` are kept and parsed at the end,
    where the engine puts its statistics; the bytes in between cost an append each. Translated
    replies hand over their parsed chunks (:meth:`take`).
    """

    TAIL_BYTES = 16 * 1024

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.started = clock()
        self.timings: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.ttft_s: float | None = None
        self.failed = False  # the engine sent an error event
        self._sse = SseReader()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0

    def first_text(self) -> None:
        if self.ttft_s is None:
            self.ttft_s = self._clock() - self.started

    def take(self, data: Mapping[str, Any]) -> None:
        timings = data.get("timings")
        if isinstance(timings, dict):
            self.timings.update(timings)
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.usage.update(usage)
        message = data.get("message")  # Anthropic's message_start carries the usage inside
        if isinstance(message, dict) and isinstance(message.get("usage"), dict):
            self.usage.update(message["usage"])

    def feed_sse(self, chunk: bytes) -> None:
        if self.ttft_s is not None:
            tail = self._tail
            tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail_size > self.TAIL_BYTES and len(tail) > 1:
                self._tail_size -= len(tail.popleft())
            return
        self._read(self._sse.feed(chunk))
        if self.ttft_s is not None:  # what is left of an event cut by the network goes on in the tail
            self._tail.append(self._sse.pending)

    def end_sse(self) -> None:
        """The stream ended: read the statistics (or an error) in its last bytes. The tail may start
        in the middle of a line: a reader started there sees the rest of that line as a field it does
        not know, and skips it. An event the stream left unfinished is discarded, as the SSE
        standard says."""
        if self._tail:
            self._read(SseReader().feed(b"".join(self._tail)))
            self._tail.clear()

    def _read(self, events: list[SseEvent]) -> None:
        for event in events:
            payload = event.data
            if event.event == "error" or payload.startswith(b'{"error"'):
                self.failed = True
                continue
            if self.ttft_s is not None and b'"timings"' not in payload and b'"usage"' not in payload:
                continue  # after the first text only the statistics are of interest
            try:
                data = json.loads(payload)
            except ValueError:
                continue
            if isinstance(data, dict):
                self.take(data)
                if self.ttft_s is None and has_text(data):
                    self.first_text()

    def feed_body(self, body: bytes) -> None:
        with contextlib.suppress(ValueError):
            data = json.loads(body)
            if isinstance(data, dict):
                self.take(data)

    def request(self, path: str, status: int, up: Upstream, stream: bool) -> ApiRequest:
        t, u = self.timings, self.usage
        ttft = self.ttft_s
        if not stream and _num(t, "prompt_ms") is not None:
            ttft = t["prompt_ms"] / 1000.0  # no stream: the engine's prefill time is the closest
        prompt = _num(t, "prompt_n")
        if prompt is None:
            prompt = _num(u, "prompt_tokens") if _num(u, "prompt_tokens") is not None else _num(u, "input_tokens")
        output = _num(t, "predicted_n")
        if output is None:
            output = (_num(u, "completion_tokens") if _num(u, "completion_tokens") is not None
                      else _num(u, "output_tokens"))
        return ApiRequest(path=path, status=status, upstream=up, stream=stream, prompt_tokens=prompt,
                          cached_tokens=_num(t, "cache_n"), output_tokens=output,
                          prefill_tps=_num(t, "prompt_per_second"), decode_tps=_num(t, "predicted_per_second"),
                          ttft_s=ttft)


# --------------------------------------------------------------------------- pass-through

# The engine's "model" field: llama-server names the file it was started with (its path, with the
# user's folders in it), not the id the client asked for. Quotes inside strings are escaped, so the
# pattern only meets the real key.
_MODEL_FIELD = re.compile(rb'"model":\s*"(?:[^"\\]|\\.)*"')
# A blank line: two line ends in a row, each CRLF, LF or CR (atomic: a CRLF is one line end, not two).
_EVENT_END = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")


def named(data: bytes, model_id: str) -> bytes:
    """``data`` (JSON or whole SSE events) with every "model" field naming ``model_id``."""
    if b'"model"' not in data:
        return data
    value = b'"model":' + json.dumps(model_id).encode()
    return _MODEL_FIELD.sub(lambda _m: value, data)


class EventRenamer:
    """Renames the model in a stream cut anywhere by the network: whole events go out at once, the
    start of one waits for its end (its reader could not use it before either)."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._pending + chunk if self._pending else chunk
        end = 0
        for m in _EVENT_END.finditer(data, max(0, len(self._pending) - 3)):
            end = m.end()
        self._pending = data[end:]
        return named(data[:end], self.model_id) if end else b""

    def rest(self) -> bytes:
        rest, self._pending = self._pending, b""
        return named(rest, self.model_id)


async def relay(request: web.Request, up: Upstream, path: str, raw: bytes | Form, *, stream: bool,
                flavor: Flavor, record: bool = True) -> web.StreamResponse:
    """Send the client's body to the engine's ``path`` unchanged and its answer back as it comes.

    A stream's bytes go out as they arrive (SSE events are not re-encoded); statistics are read on
    the way. The engine's errors are answered in the client's API shape. ``raw``: a JSON body, or
    a multipart form (an audio upload).
    """
    ctx = context(request)
    meter = Meter(ctx.clock)
    async with upstream_post(ctx, up, path, raw) as resp:
        ctype = resp.content_type
        if resp.status_code != 200 or not ctype.startswith(SSE_TYPE):
            data = await resp.read()
            if resp.status_code != 200:
                raise upstream_error(resp, data)
            meter.feed_body(data)
            if record:
                ctx.record(meter.request(request.path, 200, up, stream=False))
            return web.Response(status=200, body=named(data, up.model.id), headers={"Content-Type": ctype})
        out = web.StreamResponse(status=200, headers={"Content-Type": ctype, "Cache-Control": "no-cache"})
        await out.prepare(request)
        request[STARTED] = True
        renamer = EventRenamer(up.model.id)
        try:
            async for chunk in resp.chunks():
                meter.feed_sse(chunk)
                whole = renamer.feed(chunk)
                if whole:
                    await write_chunk(request, out, whole)
            rest = renamer.rest()
            if rest:
                await write_chunk(request, out, rest)
            meter.end_sse()
        except asyncio.CancelledError:
            if not ctx.stopping:
                raise
            request[FAILED] = True
            await end_stream_on_stop(out, flavor)
            return out
        except ENGINE_ERRORS as exc:
            request[FAILED] = True
            await end_stream_with_error(request, out, flavor, f"The engine stopped answering: {engine_failure(exc)}.")
            return out
        await out.write_eof()
    if meter.failed:
        request[FAILED] = True
    elif record:
        ctx.record(meter.request(request.path, 200, up, stream=True))
    return out


async def end_stream_with_error(request: web.Request, out: web.StreamResponse, flavor: Flavor, message: str) -> None:
    """End a started stream with an error item (the engine failed mid-reply)."""
    with contextlib.suppress(ConnectionError):
        await write_chunk(request, out, stream_error(flavor, message))
        await out.write_eof()
