"""The app's HTTP clients, and what bulk transfers add to them: the file sink downloads use.

Strata's own clients are httpx clients made with public options only (:func:`network_client` for
the network, :func:`loopback_client` for the engines on this computer), sharing one TLS context.

The cost a download adds in Python is the hop of every chunk between the event loop and a
worker: an executor future per batch costs a self-pipe wake-up of the loop and a Future per batch.
:class:`FileSink` is a writer thread and a hasher thread fed by queues: the loop enqueues batches of
received chunks and only waits (and only gets woken) when more than :data:`MAX_IN_FLIGHT` bytes are
not written and hashed yet. Both release the GIL for their work, so they overlap each other and
the next network reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, TypeVar

import httpx

from strata_gui.core.base.progress import RateMeter

BATCH = 1 << 20
"""Bytes of received chunks handed to the writer and hasher threads at once."""

MAX_IN_FLIGHT = 16 << 20
"""Bytes received but not yet written (or hashed) after which the network reads wait for the disk."""

PROGRESS_INTERVAL = 0.25
"""Seconds between two progress snapshots of a download (a few per second is enough to watch)."""

REQUEST_DEADLINE = 120.0
"""Seconds one request that is not a bulk download (an API call, a HEAD, a header read) may take
in all. httpx's own time-outs are per read: a server that drips a byte now and then keeps a
request alive forever under them."""

MIN_RATE = 1024.0
"""Bytes per second below which a bulk download is given up (over :data:`RATE_WINDOW`)."""

RATE_WINDOW = 60.0
"""Seconds over which a download must average :data:`MIN_RATE`; the headers count too."""

NETWORK_TIMEOUT = httpx.Timeout(30.0, read=60.0)
"""The network client's time-outs (a download's reads included)."""

LOOPBACK_TIMEOUT = httpx.Timeout(30.0, read=None)
"""The loopback client's: no limit between two pieces of a reply (a long prompt is read before the
first token); each engine request sets its own where it wants one."""

LOOPBACK_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20, keepalive_expiry=2.0)
"""The loopback client's connections: as many as requests in flight (the engine pool, its slots
and the local API's queue bound those, not the client); idle ones expire well before
llama-server drops them (after 5 s)."""


def tls_context() -> ssl.SSLContext:
    """The app's TLS context (certifi's CA bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), made
    once for all its clients: each client (and each proxy it mounts) would load the bundle again."""
    return httpx.create_ssl_context()


def network_client(tls: ssl.SSLContext | None = None, **kwargs: Any) -> httpx.AsyncClient:
    """The app's client for the network (GitHub, the hub, remote engines): proxies from the
    environment honoured, redirects followed, TLS verified with ``tls``.

    Args:
        tls: The shared TLS context (:func:`tls_context`); None: one made for this client.
        **kwargs: ``httpx.AsyncClient`` options, over these defaults.
    """
    options: dict[str, Any] = {"follow_redirects": True, "timeout": NETWORK_TIMEOUT, **kwargs}
    return httpx.AsyncClient(verify=tls or tls_context(), **options)


def loopback_client(tls: ssl.SSLContext | None = None, **kwargs: Any) -> httpx.AsyncClient:
    """The app's client for the engines on this computer: never through a proxy, no overall
    limit on a reply, see :data:`LOOPBACK_LIMITS`. Every engine request goes through
    :class:`~strata_gui.core.runtime.engine_http.EngineHttp` on it.

    Args:
        tls: The shared TLS context (engines speak plain HTTP; an ``https://`` URL is verified with
            it); None: one made for this client.
        **kwargs: ``httpx.AsyncClient`` options, over these defaults.
    """
    options: dict[str, Any] = {"trust_env": False, "timeout": LOOPBACK_TIMEOUT, "limits": LOOPBACK_LIMITS,
                               **kwargs}
    return httpx.AsyncClient(verify=tls or tls_context(), **options)


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


class FileSink:
    """Writes and hashes chunks on two threads, each in order, while the event loop keeps reading.

    Use as ``async with FileSink(fh, hasher) as sink`` and call :meth:`put` with lists of chunks.
    Leaving the block waits until every queued byte is written and hashed (also when leaving by an
    error or a cancel, so a resume starts after everything that arrived), then re-raises a write
    error. After a write error the writer drops later batches: nothing lands after a hole.

    Writing and hashing each run on their own thread because with one thread doing both, that
    thread was the download's bottleneck (py-spy and per-thread CPU in bench/engine_download.py:
    busy all the time, a quarter of it waiting for the GIL between calls); apart, the slower of the
    two (SHA-256) sets the pace. Both release the GIL for the bulk of their work.

    Args:
        fh: Binary file open for writing at the right offset (the sink does not close it).
        hasher: Fed with the same bytes, in the same order (e.g. ``hashlib.sha256()``).
        max_in_flight: Bytes queued but not both written and hashed after which :meth:`put` waits.
        name: Thread name (the hasher's gets "-hash" added).
    """

    def __init__(self, fh: BinaryIO, hasher: Hasher, *, max_in_flight: int = MAX_IN_FLIGHT,
                 name: str = "strata-file-sink") -> None:
        self._fh = fh
        self._hasher = hasher
        self._max = 2 * max_in_flight  # each batch is counted once per thread
        self._name = name
        self._queues: tuple[queue.SimpleQueue[list[bytes] | None], ...] = (queue.SimpleQueue(), queue.SimpleQueue())
        self._lock = threading.Lock()
        self._in_flight = 0
        self._waiter: asyncio.Future[None] | None = None
        self._finished: list[asyncio.Future[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads: list[threading.Thread] = []
        self.error: BaseException | None = None
        self.written = 0

    async def __aenter__(self) -> FileSink:
        self._loop = asyncio.get_running_loop()
        write, update = self._fh.write, self._hasher.update
        for q, work, suffix in ((self._queues[0], write, ""), (self._queues[1], update, "-hash")):
            done = self._loop.create_future()
            thread = threading.Thread(target=self._run, args=(q, work, work is write, done),
                                      name=self._name + suffix, daemon=True)
            self._finished.append(done)
            self._threads.append(thread)
            thread.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def put(self, chunks: list[bytes], size: int) -> None:
        """Queue ``chunks`` (``size`` bytes in all); wait only if the disk or the hash is far behind.

        The chunks are queued before any wait, so a cancel during the wait loses nothing.

        Raises:
            OSError: an earlier write failed.
        """
        if self.error is not None:
            raise self.error
        with self._lock:
            self._in_flight += 2 * size
            wait = self._in_flight > self._max
            if wait:
                assert self._loop is not None
                self._waiter = self._loop.create_future()
            waiter = self._waiter
        for q in self._queues:
            q.put(chunks)
        if wait and waiter is not None:
            await waiter
            if self.error is not None:
                raise self.error

    async def close(self) -> None:
        """Wait for both threads to finish everything queued (cancel-safe), then raise a write error."""
        if not self._threads:
            return
        for q in self._queues:
            q.put(None)
        cancelled = False
        for done in self._finished:
            while not done.done():
                try:
                    await asyncio.shield(done)
                except asyncio.CancelledError:
                    cancelled = True
        for thread in self._threads:
            thread.join()
        self._threads = []
        if cancelled:
            raise asyncio.CancelledError
        if self.error is not None:
            raise self.error

    def _run(self, q: queue.SimpleQueue[list[bytes] | None], work: Callable[[bytes], object], writes: bool,
             done: asyncio.Future[None]) -> None:
        try:
            while (chunks := q.get()) is not None:
                total = sum(map(len, chunks))
                if self.error is None:  # after a failure nothing more lands (and the hash is moot)
                    try:
                        for chunk in chunks:
                            work(chunk)
                    except BaseException as exc:  # handed to the loop by put() / close()
                        with self._lock:
                            self.error = self.error or exc
                    else:
                        if writes:
                            self.written += total
                self._release(total)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                assert self._loop is not None
                self._loop.call_soon_threadsafe(_resolve, done)

    def _release(self, size: int) -> None:
        with self._lock:
            self._in_flight -= size
            waiter = self._waiter
            # Wake the loop only when it waits and the queue drained to half: a handful of
            # wake-ups per second at most, instead of one per batch.
            if waiter is None or (self._in_flight > self._max // 2 and self.error is None):
                return
            self._waiter = None
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(_resolve, waiter)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def body_chunks(resp: httpx.Response) -> AsyncIterator[bytes]:
    """The body as it arrives: raw bytes unless the server compressed it anyway."""
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    return resp.aiter_raw() if encoding in ("", "identity") else resp.aiter_bytes()


async def stream_to_sink(resp: httpx.Response, sink: FileSink, meter: RateMeter, *, batch: int = BATCH,
                         watch: PaceWatch | None = None, limit: int | None = None) -> int:
    """Copy ``resp``'s body into ``sink`` in batches of about ``batch`` bytes; return the bytes received.

    The chunks collected so far are queued also when the stream breaks or the task is cancelled,
    so everything that arrived is written (the caller's ``async with`` waits for it). ``watch``
    (the :class:`PaceWatch` around the request) is told of every chunk.

    Raises:
        httpx.RemoteProtocolError: more than ``limit`` bytes arrived (a server that compresses
            although asked not to can otherwise unpack without end onto the disk); what arrived
            up to the limit is written.
    """
    pending: list[bytes] = []
    size = received = 0
    try:
        async for chunk in body_chunks(resp):
            if watch is not None:
                watch.update(len(chunk))
            if limit is not None and received + size + len(chunk) > limit:
                raise httpx.RemoteProtocolError(f"the server sent more than the {limit} bytes expected")
            pending.append(chunk)
            size += len(chunk)
            if size >= batch:
                received += size
                meter.update(size)
                chunks, pending, n, size = pending, [], size, 0
                await sink.put(chunks, n)
    finally:
        if pending and sink.error is None:
            received += size
            meter.update(size)
            await sink.put(pending, size)
    return received


T = TypeVar("T")


async def within(aw: Awaitable[T], deadline: float | None = None, what: str = "the request") -> T:
    """Await ``aw`` (one request and its small body) for at most ``deadline`` seconds in all.

    Raises:
        httpx.ReadTimeout: it took longer (a ``TransportError``, so callers map it as a time-out).
    """
    limit = REQUEST_DEADLINE if deadline is None else deadline
    try:
        return await asyncio.wait_for(aw, limit)
    except TimeoutError as exc:
        raise httpx.ReadTimeout(f"{what} took more than {limit:g} s") from exc


@dataclass(frozen=True)
class Pace:
    """The slowest a bulk download may go: at least ``min_rate`` bytes/s over every ``window`` s.

    A server that accepts and then sends nothing, or drips a byte every few seconds (each read
    within httpx's read time-out), would otherwise hold a download, its socket and its task forever.
    """

    min_rate: float = MIN_RATE
    window: float = RATE_WINDOW

    def watch(self) -> PaceWatch:
        """A guard for one transfer: ``async with pace.watch() as w:`` and ``w.update(n)`` per chunk."""
        return PaceWatch(self)


DEFAULT_PACE = Pace()


class PaceWatch:
    """Cancels the block it guards when a window passes with fewer than ``min_rate * window`` bytes.

    Leaving the block after that raises :class:`httpx.ReadTimeout` (a ``TransportError``, so a
    download's usual "connection dropped, resume" handling applies and nothing received is lost).
    """

    def __init__(self, pace: Pace) -> None:
        self.pace = pace
        self._need = pace.min_rate * pace.window
        self._got = 0
        self._timeout: asyncio.Timeout | None = None

    async def __aenter__(self) -> PaceWatch:
        self._timeout = asyncio.timeout(self.pace.window)
        await self._timeout.__aenter__()
        return self

    def update(self, n: int) -> None:
        """Count ``n`` received bytes; a window that got enough starts the next one now."""
        self._got += n
        if self._got >= self._need and self._timeout is not None:
            self._got = 0
            self._timeout.reschedule(asyncio.get_running_loop().time() + self.pace.window)

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._timeout is not None
        try:
            await self._timeout.__aexit__(*exc_info)
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"the transfer went slower than {self.pace.min_rate:g} bytes/s "
                                    f"for {self.pace.window:g} s") from exc


def same_origin(a: str | httpx.URL, b: str | httpx.URL) -> bool:
    """Whether two URLs share scheme, host and port (default ports filled in).

    Strata's rule for credentials: a token goes only to the origin it is meant for. A different
    host OR a different port is another origin (as for browsers and httpx's own redirects).
    """
    ua, ub = httpx.URL(str(a)), httpx.URL(str(b))
    defaults = {"http": 80, "https": 443}
    return (ua.scheme == ub.scheme and ua.host == ub.host
            and (ua.port or defaults.get(ua.scheme)) == (ub.port or defaults.get(ub.scheme)))


_CREDENTIALS = ("authorization", "cookie", "proxy-authorization")


def credentials_for(url: str | httpx.URL, origin: str | httpx.URL, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` for a request to ``url``: with credentials only when ``url`` is on ``origin``.

    A hub answers a file with a redirect to its CDN; the CDN's signed URL needs no token, and the
    token must not travel there (huggingface_hub drops it the same way).
    """
    if same_origin(url, origin):
        return dict(headers)
    return {k: v for k, v in headers.items() if k.lower() not in _CREDENTIALS}
