"""The one HTTP client of an engine: every kind Strata runs (llama-server for chat, embeddings and
reranking, sd-server for images) and the remote OpenAI-compatible servers the chat talks to.

:class:`EngineHttp` is a base URL, the engine's key, and the app's shared ``httpx.AsyncClient``
(the loopback one for engines on this computer, the network one for remote servers): each request
names its own time-out; JSON requests and a streamed POST, read as bytes or as Server-Sent Events
(:mod:`strata_gui.core.runtime.sse`). httpx's errors are translated here, once, into core's
:class:`~strata_gui.core.base.errors.ServerError` with a hint; callers that answer differently (the
local API in its clients' shapes, the image jobs) catch that.

A request is sent once more when the engine closed the kept-alive connection it went out on
before any answer arrived: llama-server closes a connection after each streamed reply and after a
few idle seconds, so a request sent just then meets a connection that is closing (an end of
stream, or a reset where the request reached the socket first). Nothing was answered, so sending it
again is safe; callers whose request must not run twice say ``resend=False``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import IO, Any, Final

import httpx

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.sse import SseEvent, SseReader

log = logging.getLogger(__name__)

Timeout = float | httpx.Timeout

STREAM_TIMEOUT: Final = httpx.Timeout(10.0, read=None)
"""A streamed reply: ten seconds to connect and send, then no limit between two pieces (a long
prompt is processed before the first token; a client that stops the reply closes it)."""

STOPPED_ANSWERING: Final = QT_TRANSLATE_NOOP("Core", "The engine stopped answering in the middle of the reply.")
STOPPED_ANSWERING_HINT: Final = QT_TRANSLATE_NOOP("Core", "The engine probably crashed; the partial reply was kept.")

# What a connection the engine closed just as a request went out on it raises before any answer.
_CLOSED_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError)


@dataclass(frozen=True)
class Form:
    """A multipart form for an engine (whisper-server's ``/inference``): httpx encodes it and reads
    a file given as a file object in chunks while it sends, so a recording is never copied whole.

    Attributes:
        fields: The text fields.
        files: Field name to (file name, bytes or a binary file open for reading, content type).
    """

    fields: Mapping[str, str]
    files: Mapping[str, tuple[str, bytes | IO[bytes], str]]


def engine_error(exc: httpx.HTTPError, base_url: str) -> ServerError:
    """httpx's error for a request to the engine at ``base_url``, as the user reads it."""
    details = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        return ServerError(T(QT_TRANSLATE_NOOP("Core", "Could not reach the engine at {url}."), url=base_url),
                           hint=QT_TRANSLATE_NOOP("Core", "The engine may have stopped; Strata restarts it on "
                                                          "the next message."),
                           details=details)
    if isinstance(exc, httpx.TimeoutException):
        return ServerError(QT_TRANSLATE_NOOP("Core", "The engine did not answer in time."), details=details)
    return ServerError(STOPPED_ANSWERING, hint=STOPPED_ANSWERING_HINT, details=details)


class EngineHttp:
    """One engine's HTTP API (see the module's text).

    Args:
        http: The app's shared client (time-outs are set per request).
        base_url: ``http://127.0.0.1:PORT``, or a remote root without ``/v1``.
        api_key: Sent as a bearer token when given.
    """

    __slots__ = ("_api_key", "_http", "base_url")

    def __init__(self, http: httpx.AsyncClient, base_url: str, api_key: str | None = None) -> None:
        self._http = http
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key or None

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """What a request carries: the engine's key, and ``extra``."""
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        if extra:
            headers.update(extra)
        return headers

    async def get(self, path: str, *, timeout: Timeout, headers: Mapping[str, str] | None = None) -> httpx.Response:
        """``GET path``, its body read.

        Raises:
            ServerError: The engine could not be reached, did not answer in time, or broke the connection.
        """
        return await self._send(self._request("GET", path, timeout, headers), stream=False, resend=True)

    async def post(self, path: str, *, json: Any = None, content: bytes | None = None, form: Form | None = None,
                   timeout: Timeout, headers: Mapping[str, str] | None = None,
                   resend: bool = True) -> httpx.Response:
        """``POST path`` with a JSON (``json``), raw (``content``) or multipart (``form``) body, the
        answer's body read.

        Raises:
            ServerError: As :meth:`get`.
        """
        request = self._request("POST", path, timeout, headers, json=json, content=content, form=form)
        return await self._send(request, stream=False, resend=resend)

    async def get_json(self, path: str, *, timeout: Timeout) -> Any:
        """The JSON of a 200 answer to ``GET path``; None for any other answer or one that is not JSON.

        Raises:
            ServerError: As :meth:`get`.
        """
        resp = await self.get(path, timeout=timeout)
        if resp.status_code != 200:
            return None
        try:
            return resp.json()
        except ValueError:
            return None

    @asynccontextmanager
    async def stream(self, path: str, *, json: Any = None, content: bytes | None = None,
                     form: Form | None = None, timeout: Timeout = STREAM_TIMEOUT, headers: Mapping[str, str] | None = None,
                     extensions: dict[str, Any] | None = None, raw: bool = False,
                     resend: bool = True) -> AsyncIterator[EngineReply]:
        """``POST path`` and hold the answer open while the block reads it.

        Leaving the block before the body's end closes the connection, which makes llama-server stop
        generating and free its slot.

        Args:
            path: The endpoint.
            json: A JSON body, or
            content: a body sent as it is, or
            form: a multipart form (httpx sets its content type).
            timeout: The request's time-outs (by default no limit between two pieces of the body).
            headers: Sent besides the key.
            extensions: httpx request extensions (the ``trace`` that tells when the body was sent).
            raw: Hand the body over as it came (a compressed one not decoded).
            resend: Send once more when the kept-alive connection was closed before any answer.

        Raises:
            ServerError: As :meth:`get`, before the answer's head arrived; reading the body raises
                it too (the connection broke).
        """
        request = self._request("POST", path, timeout, headers, json=json, content=content, form=form,
                                extensions=extensions)
        reply = EngineReply(await self._send(request, stream=True, resend=resend), self.base_url, raw=raw)
        try:
            yield reply
        finally:
            await reply.aclose()

    def _request(self, method: str, path: str, timeout: Timeout, headers: Mapping[str, str] | None, *,
                 json: Any = None, content: bytes | None = None, form: Form | None = None,
                 extensions: dict[str, Any] | None = None) -> httpx.Request:
        if form is not None:
            return self._http.build_request(method, self.url(path), data=dict(form.fields), files=dict(form.files),
                                            headers=self.headers(headers), timeout=timeout, extensions=extensions)
        return self._http.build_request(method, self.url(path), json=json, content=content,
                                        headers=self.headers(headers), timeout=timeout, extensions=extensions)

    async def _send(self, request: httpx.Request, *, stream: bool, resend: bool) -> httpx.Response:
        connected = _Connected(request.extensions.get("trace"))
        request.extensions["trace"] = connected
        try:
            try:
                return await self._http.send(request, stream=stream)
            except _CLOSED_CONNECTION:
                # Only the keep-alive race is sent again: a kept-alive connection the engine closed
                # as the request went out on it. On a connection opened for this request, the engine
                # had it and broke off (it crashed, or refused it): sending it again could run it twice.
                if not resend or connected.opened:
                    raise
                log.debug("engine closed a kept-alive connection; resending once")
                connected.opened = False
                return await self._http.send(request, stream=stream)
        except httpx.HTTPError as exc:
            raise engine_error(exc, self.base_url) from exc


class _Connected:
    """A request's ``trace`` (httpx's documented request extension) that notes whether a new
    connection was opened for it, passing every event on to the caller's own trace."""

    __slots__ = ("_inner", "opened")

    def __init__(self, inner: Callable[[str, Mapping[str, Any]], Awaitable[None]] | None) -> None:
        self._inner = inner
        self.opened = False

    async def __call__(self, name: str, info: Mapping[str, Any]) -> None:
        if name.startswith("connection.connect_"):
            self.opened = True
        if self._inner is not None:
            await self._inner(name, info)


class EngineReply:
    """An engine's answer, open while the caller reads it (see :meth:`EngineHttp.stream`)."""

    __slots__ = ("_base_url", "_body", "_raw", "_resp")

    def __init__(self, resp: httpx.Response, base_url: str, *, raw: bool) -> None:
        self._resp = resp
        self._base_url = base_url
        self._raw = raw
        self._body: AsyncIterator[bytes] | None = None

    @property
    def status_code(self) -> int:
        return self._resp.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self._resp.headers

    @property
    def content_type(self) -> str:
        """The whole ``Content-Type`` header (charset included; JSON when the engine named none)."""
        return str(self._resp.headers.get("content-type", "application/json"))

    @property
    def response(self) -> httpx.Response:
        """httpx's response (read it with :meth:`read` first)."""
        return self._resp

    async def read(self) -> bytes:
        """The whole body.

        Raises:
            ServerError: The connection broke while reading it.
        """
        try:
            return await self._resp.aread()
        except httpx.HTTPError as exc:
            raise engine_error(exc, self._base_url) from exc

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, one item per network read (read it once).

        Raises:
            ServerError: The connection broke mid-body.
        """
        self._body = self._resp.aiter_raw() if self._raw else self._resp.aiter_bytes()
        return _Chunks(self._body, self._base_url)

    def events(self) -> AsyncIterator[list[SseEvent]]:
        """The body read as Server-Sent Events: the events each network read completed (reads that
        complete none give no item).

        Raises:
            ServerError: The connection broke mid-body.
        """
        return _EventBatches(self.chunks(), SseReader())

    async def aclose(self) -> None:
        """Let go of the answer; one not read to its end closes its connection."""
        body, self._body = self._body, None
        if isinstance(body, AsyncGenerator):
            # httpx's body iterator is an async generator: closed here, on the loop, rather than by
            # the garbage collector wherever it runs (qasync's loop does not finalize them).
            await body.aclose()
        await self._resp.aclose()


class _Chunks:
    """An iterator of body pieces whose connection errors arrive as :class:`ServerError`."""

    __slots__ = ("_base_url", "_body")

    def __init__(self, body: AsyncIterator[bytes], base_url: str) -> None:
        self._body = body
        self._base_url = base_url

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await anext(self._body)
        except httpx.HTTPError as exc:
            raise engine_error(exc, self._base_url) from exc


class _EventBatches:
    """The events of each network read that completed any."""

    __slots__ = ("_chunks", "_reader")

    def __init__(self, chunks: AsyncIterator[bytes], reader: SseReader) -> None:
        self._chunks = chunks
        self._reader = reader

    def __aiter__(self) -> _EventBatches:
        return self

    async def __anext__(self) -> list[SseEvent]:
        while True:
            events = self._reader.feed(await anext(self._chunks))
            if events:
                return events
