"""A small OpenAI-compatible HTTP proxy in front of the managed llama-server.

Why a hand-written asyncio server: llama-server already speaks the OpenAI API, so Strata only has
to check the key, start the engine on demand, pass bytes through (SSE streams unchanged, as they
arrive) and read the statistics on the way. ``asyncio.start_server`` does that in one class with
no new dependency and runs on the app's (qasync) loop, like the rest of the core; a framework
(aiohttp, uvicorn) would add a second HTTP stack and, for uvicorn, its own loop management.

Each connection carries one request (``Connection: close``); responses of unknown length use
chunked transfer encoding. Upstream requests go through the shared loopback ``httpx`` client.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from strata_gui.core.errors import ServerError, StrataError

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
FORWARDED = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           411: "Length Required", 413: "Payload Too Large", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass(frozen=True)
class Upstream:
    """The engine requests go to, and how it is named in the dashboard."""

    base_url: str
    headers: dict[str, str]
    model: str
    engine: str
    backend: str


class UpstreamSource(Protocol):
    def model_name(self) -> str | None:
        """The model that would answer (None: none chosen), without starting anything."""

    async def upstream(self) -> Upstream:
        """Start the engine if needed and say where it listens."""


@dataclass(frozen=True)
class ApiRequest:
    """One proxied completion, as recorded for the dashboard."""

    path: str
    status: int
    upstream: Upstream
    stream: bool
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    prefill_tps: float | None = None
    decode_tps: float | None = None
    ttft_s: float | None = None


@dataclass
class Counters:
    total: int = 0
    active: int = 0
    completed: int = 0
    failed: int = 0
    unauthorized: int = 0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def generate_api_key() -> str:
    return "strata-" + secrets.token_urlsafe(32)


class _HttpError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


class ApiProxy:
    """Serves ``/health``, ``/v1/models`` and forwards completions to the engine.

    Args:
        source: Gives the engine (started on demand).
        http: Loopback client for the engine.
        host: Interface to listen on; anything but loopback requires ``api_key``.
        port: TCP port (0: any free one).
        api_key: Bearer token clients must send (None: no check, loopback only).
        on_request: Called with each finished completion (dashboard recording).
        clock: Monotonic clock for time-to-first-token.
    """

    def __init__(self, source: UpstreamSource, http: httpx.AsyncClient, *, host: str = "127.0.0.1",
                 port: int = DEFAULT_PORT, api_key: str | None = None,
                 on_request: Callable[[ApiRequest], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not is_loopback(host) and not api_key:
            raise ServerError(f"Refusing to serve on {host} without an API key.",
                              hint="Other computers could use your GPU freely: generate an API key first.")
        self._source = source
        self._http = http
        self.host = host
        self.port = port
        self._api_key = api_key or None
        self._on_request = on_request
        self._clock = clock
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.counters = Counters()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "localhost") else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

    async def start(self) -> None:
        """Listen. Raises ServerError when the port is taken or the address is not on this machine."""
        if self._server is not None:
            return
        try:
            self._server = await asyncio.start_server(self._handle, self.host, self.port,
                                                      limit=MAX_HEADER_BYTES)
        except OSError as exc:
            raise ServerError(f"Cannot listen on {self.host}:{self.port}: {exc.strerror or exc}",
                              hint="Another program may use this port; choose another one.") from exc
        sock = self._server.sockets[0]
        self.port = int(sock.getsockname()[1])
        log.info("local API listening on %s:%d (key %s)", self.host, self.port,
                 "required" if self._api_key else "not required")

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)
        await server.wait_closed()
        log.info("local API stopped")

    # -- one connection ---------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve_one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except Exception:
            log.exception("local API request failed")
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, path, headers = await _read_head(reader)
            path = path.split("?", 1)[0]
            if path == "/health" and method == "GET":
                await _send_json(writer, 200, {"status": "ok"})
                return
            if self._api_key is not None and not _authorized(headers, self._api_key):
                self.counters.unauthorized += 1
                raise _HttpError(401, "Invalid or missing API key.", "authentication_error")
            if path == "/v1/models" and method == "GET":
                name = self._source.model_name()
                data = [{"id": name, "object": "model", "owned_by": "strata"}] if name else []
                await _send_json(writer, 200, {"object": "list", "data": data})
                return
            if path not in FORWARDED:
                raise _HttpError(404, f"Unknown endpoint {path}.", "not_found_error")
            if method != "POST":
                raise _HttpError(405, f"{path} expects POST.")
            body = await _read_body(reader, headers)
        except _HttpError as exc:
            await _send_error(writer, exc)
            return
        await self._forward(path, body, writer)

    async def _forward(self, path: str, body: bytes, writer: asyncio.StreamWriter) -> None:
        self.counters.total += 1
        self.counters.active += 1
        ok = False
        try:
            try:
                payload = json.loads(body or b"{}")
            except ValueError:
                await _send_error(writer, _HttpError(400, "The request body is not JSON."))
                return
            stream = bool(isinstance(payload, dict) and payload.get("stream"))
            try:
                up = await self._source.upstream()
            except StrataError as exc:
                await _send_error(writer, _HttpError(503, exc.message, "unavailable_error"))
                return
            started = self._clock()
            meter = _Meter()
            status = 502
            try:
                async with self._http.stream("POST", up.base_url + path, content=body,
                                             headers={**up.headers, "Content-Type": "application/json"},
                                             timeout=httpx.Timeout(10.0, read=None)) as resp:
                    status = resp.status_code
                    await _send_head(writer, status, resp.headers.get("content-type", "application/json"),
                                     chunked=True)
                    it = resp.aiter_raw()
                    try:
                        async for chunk in _iterate(it):
                            if meter.feed(chunk, stream) and meter.ttft_s is None:
                                meter.ttft_s = self._clock() - started
                            writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                            await writer.drain()
                    finally:
                        aclose = getattr(it, "aclose", None)
                        if aclose is not None:
                            await aclose()  # closing in-loop also stops generation upstream
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
            except httpx.HTTPError as exc:
                if status == 502:  # nothing was sent yet
                    await _send_error(writer, _HttpError(502, f"The engine did not answer: {exc}",
                                                         "unavailable_error"))
                return
            ok = status == 200
            if ok and self._on_request is not None:
                self._on_request(meter.request(path, status, up, stream))
        finally:
            self.counters.active -= 1
            if ok:
                self.counters.completed += 1
            else:
                self.counters.failed += 1


async def _iterate(it: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    while True:
        try:
            chunk = await it.__anext__()
        except StopAsyncIteration:
            return
        yield chunk


class _Meter:
    """Reads statistics out of the bytes passing through (SSE lines or one JSON body)."""

    def __init__(self) -> None:
        self._buf = b""
        self.timings: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.ttft_s: float | None = None
        self._first = False

    def feed(self, chunk: bytes, stream: bool) -> bool:
        """Take a chunk; True when it held the first generated text."""
        if not stream:
            self._buf += chunk
            return False
        self._buf += chunk
        first = False
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            line = line.strip()
            if not line.startswith(b"data:") or line.endswith(b"[DONE]"):
                continue
            if self._first and b'"timings"' not in line and b'"usage"' not in line:
                continue  # only the first text and the statistics are of interest
            try:
                data = json.loads(line[5:])
            except ValueError:
                continue
            if isinstance(data, dict):
                self._take(data)
                if not self._first and _has_text(data):
                    self._first = first = True
        return first

    def _take(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("timings"), dict):
            self.timings.update(data["timings"])
        if isinstance(data.get("usage"), dict):
            self.usage.update(data["usage"])

    def request(self, path: str, status: int, up: Upstream, stream: bool) -> ApiRequest:
        if not stream:
            with contextlib.suppress(ValueError):
                data = json.loads(self._buf)
                if isinstance(data, dict):
                    self._take(data)

        def num(d: dict[str, Any], key: str) -> Any:
            value = d.get(key)
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        t = self.timings
        ttft = self.ttft_s
        if not stream and num(t, "prompt_ms") is not None:
            ttft = t["prompt_ms"] / 1000.0  # no stream: the engine's prefill time is the closest
        return ApiRequest(
            path=path, status=status, upstream=up, stream=stream,
            prompt_tokens=num(t, "prompt_n") if num(t, "prompt_n") is not None else num(self.usage, "prompt_tokens"),
            cached_tokens=num(t, "cache_n"),
            output_tokens=(num(t, "predicted_n") if num(t, "predicted_n") is not None
                           else num(self.usage, "completion_tokens")),
            prefill_tps=num(t, "prompt_per_second"), decode_tps=num(t, "predicted_per_second"), ttft_s=ttft)


def _has_text(data: dict[str, Any]) -> bool:
    for choice in data.get("choices") or []:
        if isinstance(choice, dict):
            delta = choice.get("delta") or {}
            if (isinstance(delta, dict) and delta.get("content")) or choice.get("text"):
                return True
    return False


def _authorized(headers: dict[str, str], key: str) -> bool:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        token = headers.get("x-api-key", "")
    return secrets.compare_digest(token.strip().encode(), key.encode())


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]]:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as exc:
        raise _HttpError(413, "Request headers are too large.") from exc
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _HttpError(400, "Malformed request line.")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return parts[0].upper(), parts[1], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError as exc:
        raise _HttpError(400, "Bad Content-Length.") from exc
    if length > MAX_BODY_BYTES or length < 0:
        raise _HttpError(413, "The request is too large.")
    return await reader.readexactly(length) if length else b""


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError as exc:
            raise _HttpError(400, "Bad chunked body.") from exc
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)
        if len(body) > MAX_BODY_BYTES:
            raise _HttpError(413, "The request is too large.")


async def _send_head(writer: asyncio.StreamWriter, status: int, content_type: str, *,
                     length: int | None = None, chunked: bool = False) -> None:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"Content-Type: {content_type}",
             "Connection: close", "Cache-Control: no-cache"]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    elif length is not None:
        lines.append(f"Content-Length: {length}")
    if status == 401:
        lines.append('WWW-Authenticate: Bearer realm="strata"')
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    await writer.drain()


async def _send_json(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
    data = json.dumps(body).encode()
    await _send_head(writer, status, "application/json", length=len(data))
    writer.write(data)
    await writer.drain()


async def _send_error(writer: asyncio.StreamWriter, exc: _HttpError) -> None:
    await _send_json(writer, exc.status, {"error": {"message": exc.message, "type": exc.kind, "code": exc.status}})

