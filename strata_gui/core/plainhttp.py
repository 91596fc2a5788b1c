"""Plain HTTP/1.1 for the engines on this computer: asyncio's sockets and h11, no httpcore.

Every engine Strata starts speaks plain HTTP on loopback, and the first request to one (its
readiness) is on the path from a launch to the first token. httpx's own transport imports httpcore
when it is made and anyio's asyncio layer on its first connection: ~65 ms on this project's
2-core machine (bench/coldstart.py), for a connection to 127.0.0.1. :class:`PlainHttpTransport`
is an ``httpx`` transport for ``http://`` URLs built on what that path needs: asyncio streams and
h11 (the HTTP/1.1 state machine httpcore itself uses, so messages are framed and checked the same
way). It keeps idle connections for reuse, as httpcore does; the rest of httpx (the client,
timeouts, headers, streaming, errors) is unchanged.

Behaviour kept from httpx's transport: each phase honours the request's ``connect``/``write``/
``read`` timeout and raises the same httpx errors (``ConnectError``, ``ConnectTimeout``,
``WriteError``, ``ReadError``, ``ReadTimeout``, ``RemoteProtocolError``); a response read to its end
gives its connection back for the next request, one closed early (a stopped reply) closes it; a
connection the server closed while idle is not reused. Added: a request on a reused connection
that the server closed at the same moment (its keep-alive ran out) is sent once more on a new
connection, as browsers do, instead of failing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import h11
import httpx

_T = TypeVar("_T")
READ_SIZE = 64 * 1024
MAX_HEAD = 100 * 1024  # a response head may be this long (httpcore's limit; h11's own is 16 KiB)
DISCONNECTED = "Server disconnected without sending a response."


class _Connection:
    """One socket and its HTTP/1.1 state."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 in_use: set[_Connection]) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self._in_use = in_use  # the transport's connections carrying a request (closed with it)
        in_use.add(self)
        self.idle_since = 0.0
        self.reused = False
        self.received = False  # any byte of the current response arrived

    def usable(self, now: float, expiry: float) -> bool:
        """Idle, not past ``expiry``, not closed by the server meanwhile, and with nothing sent by it
        meanwhile (a "408 Request Timeout" before closing would be read as the next answer)."""
        return (now - self.idle_since < expiry and not self.reader.at_eof() and self.reader.exception() is None
                and not self.writer.is_closing() and not getattr(self.reader, "_buffer", b""))

    async def write(self, data: bytes, timeout: float | None) -> None:
        if not data:
            return
        async with asyncio.timeout(timeout):
            self.writer.write(data)
            await self.writer.drain()

    async def next_event(self, timeout: float | None) -> Any:
        """The next h11 event from the server, reading as needed."""
        while True:
            event = self.h11.next_event()
            if event is h11.PAUSED:  # after "101 Switching Protocols": no more HTTP on this socket
                raise h11.RemoteProtocolError("The server switched to another protocol.")
            if event is not h11.NEED_DATA:
                return event
            if timeout is None:  # a streamed reply: no timer to arm and cancel around every read
                data = await self.reader.read(READ_SIZE)
            else:
                async with asyncio.timeout(timeout):
                    data = await self.reader.read(READ_SIZE)
            if data:
                self.received = True
            self.h11.receive_data(data)  # b"" tells h11 the server closed its side

    def close(self) -> None:
        self._in_use.discard(self)
        self.writer.close()


def _replayable(request: httpx.Request) -> bool:
    """Whether the body can be sent a second time (bytes, not a generator used up by the first)."""
    return isinstance(request.stream, httpx.ByteStream)


async def _traced(trace: Any, name: str, request: httpx.Request, step: Callable[[], Awaitable[_T]]) -> _T:
    """``step()``, announced to the request's ``trace`` extension as httpcore announces it
    (``name.started``, then ``name.complete``): callers learn when the body was sent."""
    if trace is None:
        return await step()
    await trace(f"{name}.started", {"request": request})
    result = await step()
    await trace(f"{name}.complete", {"request": request, "return_value": result})
    return result


class _RetryOnNewConnection(Exception):
    """A reused connection turned out closed before any of the response arrived."""


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection as the caller asks for it."""

    def __init__(self, transport: PlainHttpTransport, conn: _Connection, key: tuple[str, int],
                 request: httpx.Request, timeout: float | None) -> None:
        self._transport = transport
        self._conn = conn
        self._key = key
        self._request = request
        self._timeout = timeout
        self._done = False
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped(self._request, httpx.ReadError, httpx.ReadTimeout):
            while not self._done:
                event = await self._conn.next_event(self._timeout)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    self._done = True
                else:  # ConnectionClosed mid-body (h11 raises for most cases itself)
                    raise httpx.RemoteProtocolError("The server closed the connection in the middle of a response.",
                                                    request=self._request)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._done:
            self._transport._release(self._key, self._conn)
        else:  # not read to its end (a reply stopped): the connection cannot carry another request
            self._conn.close()


@contextlib.contextmanager
def _mapped(request: httpx.Request, error: type[httpx.TransportError],
            timeout_error: type[httpx.TimeoutException]) -> Iterator[None]:
    """h11's and the socket's errors as the httpx errors its own transport raises."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout_error(str(exc) or "timed out", request=request) from exc
    except h11.RemoteProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc
    except h11.LocalProtocolError as exc:
        raise httpx.LocalProtocolError(str(exc), request=request) from exc
    except OSError as exc:
        raise error(str(exc) or type(exc).__name__, request=request) from exc


class PlainHttpTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport for plain ``http://`` (see the module's doc).

    Args:
        keepalive_expiry: Seconds an idle connection is kept (llama-server drops its idle ones
            after 5 s).
        max_idle: Idle connections kept per host and port.
        local_address: Local address to bind outgoing connections to.
    """

    def __init__(self, *, keepalive_expiry: float = 5.0, max_idle: int = 10, local_address: str | None = None,
                 clock: Any = time.monotonic) -> None:
        self._expiry = keepalive_expiry
        self._max_idle = max_idle
        self._local = local_address
        self._clock = clock
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._in_use: set[_Connection] = set()
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"This transport speaks plain http://, not {request.url.scheme}://.",
                                            request=request)
        if self._closed:
            raise RuntimeError("the transport is closed")
        timeouts = request.extensions.get("timeout") or {}
        key = (request.url.host, request.url.port or 80)
        conn = self._take_idle(key)
        if conn is not None:
            try:
                return await self._exchange(conn, key, request, timeouts)
            except _RetryOnNewConnection:
                pass
        conn = await self._connect(key, request, timeouts.get("connect"))
        return await self._exchange(conn, key, request, timeouts)

    async def _connect(self, key: tuple[str, int], request: httpx.Request, timeout: float | None) -> _Connection:
        with _mapped(request, httpx.ConnectError, httpx.ConnectTimeout):
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    key[0], key[1], local_addr=(self._local, 0) if self._local else None, limit=READ_SIZE)
        return _Connection(reader, writer, self._in_use)

    async def _exchange(self, conn: _Connection, key: tuple[str, int], request: httpx.Request,
                        timeouts: dict[str, float | None]) -> httpx.Response:
        """Send ``request`` on ``conn`` and read the response's head; the body is read later."""
        conn.received = False
        trace = request.extensions.get("trace")
        try:
            try:
                with _mapped(request, httpx.WriteError, httpx.WriteTimeout):
                    head = conn.h11.send(h11.Request(method=request.method, target=request.url.raw_path,
                                                     headers=request.headers.raw)) or b""
                    await _traced(trace, "http11.send_request_headers", request,
                                  lambda: conn.write(head, timeouts.get("write")))
                    await _traced(trace, "http11.send_request_body", request,
                                  lambda: self._send_body(conn, request, timeouts))
            except httpx.WriteError:
                if conn.reused and _replayable(request):
                    raise  # sent again on a new connection (below)
                # The server may have answered before closing (an early "413 Payload Too Large"):
                # that answer, else the read's error, as httpx's own transport gives them.
                event = await self._read_head(conn, request, timeouts)
                return self._response(conn, key, request, timeouts, event)
            event = await _traced(trace, "http11.receive_response_headers", request,
                                  lambda: self._read_head(conn, request, timeouts))
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            conn.close()
            if conn.reused and not conn.received and _replayable(request):
                raise _RetryOnNewConnection from exc
            if isinstance(exc, httpx.RemoteProtocolError) and not conn.received:
                raise httpx.RemoteProtocolError(DISCONNECTED, request=request) from exc
            raise
        except BaseException:  # cancelled, timed out: the connection is in an unknown state
            conn.close()
            raise
        return self._response(conn, key, request, timeouts, event)

    @staticmethod
    async def _send_body(conn: _Connection, request: httpx.Request, timeouts: dict[str, float | None]) -> None:
        async for chunk in request.stream:  # type: ignore[union-attr]  # an async request's body
            if chunk:
                await conn.write(conn.h11.send(h11.Data(data=chunk)) or b"", timeouts.get("write"))
        await conn.write(conn.h11.send(h11.EndOfMessage()) or b"", timeouts.get("write"))

    @staticmethod
    async def _read_head(conn: _Connection, request: httpx.Request, timeouts: dict[str, float | None]) -> h11.Response:
        with _mapped(request, httpx.ReadError, httpx.ReadTimeout):
            while True:
                event = await conn.next_event(timeouts.get("read"))
                if isinstance(event, h11.Response):
                    return event
                if isinstance(event, h11.ConnectionClosed):
                    raise httpx.RemoteProtocolError(DISCONNECTED, request=request)
                # h11.InformationalResponse (100 Continue...): the real answer follows

    def _response(self, conn: _Connection, key: tuple[str, int], request: httpx.Request,
                  timeouts: dict[str, float | None], event: h11.Response) -> httpx.Response:
        return httpx.Response(
            status_code=event.status_code, headers=event.headers.raw_items(),
            stream=_Body(self, conn, key, request, timeouts.get("read")),
            extensions={"http_version": b"HTTP/" + event.http_version, "reason_phrase": event.reason})

    def _take_idle(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = self._clock()
        while idle:
            conn = idle.pop()  # the most recently used: the least likely to be dropped by the server
            if conn.usable(now, self._expiry):
                conn.reused = True
                self._in_use.add(conn)
                return conn
            conn.close()
        return None

    def _release(self, key: tuple[str, int], conn: _Connection) -> None:
        """A connection whose response was read to its end: kept for the next request if it can."""
        if (self._closed or conn.h11.our_state is not h11.DONE or conn.h11.their_state is not h11.DONE):
            conn.close()  # the server said "Connection: close", or the exchange did not end cleanly
            return
        conn.h11.start_next_cycle()
        self._in_use.discard(conn)
        conn.idle_since = self._clock()
        idle = self._idle.setdefault(key, [])
        idle.append(conn)
        while len(idle) > self._max_idle:
            idle.pop(0).close()

    async def aclose(self) -> None:
        """Close every connection, also those of replies still being read (their next read fails)."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
        for conn in list(self._in_use):
            conn.close()
