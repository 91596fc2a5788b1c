"""The local API's connections: how many may be open, and what a malformed body gets.

aiohttp bounds the request head (size, and with its keep-alive timer, time) and the body (size,
and with :func:`~strata_gui.core.serve.wire.read_body`, time), but not how many connections are
open at once: 300 clients that each send half a request head hold 300 sockets until the head
time-out, and where the process may open 256 files, new connections, a keyed client's
included, then fail to be accepted at all. :class:`ConnectionGuard` is the listening socket's
protocol factory: at :func:`connection_cap` open connections, a new one closes the oldest that
has no request in a handler (half-sent heads, idle keep-alives), else the oldest still reading
its body, else it is closed itself. Apps that send whole requests are never the ones waiting.

:class:`ClientErrorLog` logs clients' malformed requests in one line. A chunked body whose framing
turns bad after its head was read (a negative chunk size in a later packet, say) is not failed by
aiohttp's C parser (3.14): it queues the error as the connection's next message and leaves the
body open, with no public way to see it. Such a request is answered 408 once ``body_timeout_s``
passes (see :func:`~strata_gui.core.serve.wire.read_body`); framing broken in the packet of the
head is refused by the parser at once (400).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import MutableMapping
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from strata_gui.core.serve.wire import ServeContext

log = logging.getLogger(__name__)


def connection_cap(configured: int) -> int:
    """How many connections may be open: ``configured``, and at most half the files the process
    may open (the engines, the database and the logs need the rest)."""
    if sys.platform == "win32":
        return configured
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return configured
    return max(8, min(configured, soft // 2))


class ClientErrorLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger (``handler_args={"logger": ...}``): a request the client got wrong
    (the parser's 4xx, a malformed body) is one line at INFO, not a traceback at ERROR; a bug in
    Strata still logs its traceback."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        exc = exc_info if isinstance(exc_info, BaseException) else sys.exc_info()[1]
        client_fault = isinstance(exc, web.RequestPayloadError) or (
            isinstance(exc, HttpProcessingError) and 400 <= (exc.code or 400) < 500)
        if client_fault:
            reason = str(getattr(exc, "message", "") or exc).strip().splitlines()
            self.logger.info("local API: refused a malformed request: %s", reason[0].rstrip(": ") if reason else type(exc).__name__)
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)

    def process(self, msg: str, kwargs: MutableMapping[str, Any]) -> tuple[str, MutableMapping[str, Any]]:
        return msg, kwargs


class _Refused(asyncio.Protocol):
    """A connection over the cap with nothing to make room: closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class _Connection(asyncio.Protocol):
    """aiohttp's handler of one connection, known to the guard (which may close it)."""

    def __init__(self, handler: Any, guard: ConnectionGuard) -> None:
        self.handler = handler
        self.closing = False
        self.connected = False  # the handler saw connection_made
        self._guard = guard

    def close(self) -> None:
        """Close it now, or as soon as it connects (the loop connects new ones a moment later)."""
        self.closing = True
        if self.connected:
            self.handler.force_close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self.closing:
            transport.close()
            self._guard.forget(self)
            return
        self.connected = True
        self.handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.handler.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard.forget(self)
        if self.connected:
            self.handler.connection_lost(exc)

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()


class ConnectionGuard:
    """The protocol factory of the local API's listening socket (see the module's text).

    Args:
        server: aiohttp's low-level server (``AppRunner.server``): makes each connection's handler.
        ctx: The routes' context: which connections have a request in a handler
            (``ctx.requests``) and which of those still read a body (``ctx.reading``).
        max_connections: The cap (see :func:`connection_cap`).
    """

    def __init__(self, server: web.Server, ctx: ServeContext, max_connections: int) -> None:
        self._server = server
        self._ctx = ctx
        self.max_connections = max(1, max_connections)
        # Oldest first. Our own count, not aiohttp's: the loop accepts a burst of connections before
        # any of them is connected (and known to aiohttp).
        self._open: dict[_Connection, None] = {}
        self.evicted = 0
        self.refused = 0

    @property
    def open_connections(self) -> int:
        return sum(not c.closing for c in self._open)

    def __call__(self) -> asyncio.Protocol:
        live = [c for c in self._open if not c.closing]
        if len(live) >= self.max_connections:
            victim = self._victim(live)
            if victim is None:
                self.refused += 1
                log.debug("local API: %d connections open, all with requests: refused a new one", len(live))
                return _Refused()
            self.evicted += 1
            log.debug("local API: %d connections open: closed the oldest without a request", len(live))
            victim.close()
        conn = _Connection(self._server(), self)
        self._open[conn] = None
        return conn

    def forget(self, conn: _Connection) -> None:
        self._open.pop(conn, None)

    def _victim(self, live: list[_Connection]) -> _Connection | None:
        idle = next((c for c in live if c.handler not in self._ctx.requests), None)
        if idle is not None:
            return idle
        return next((c for c in live if c.handler in self._ctx.reading), None)
