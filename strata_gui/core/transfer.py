"""Bulk HTTP transfers at the pace of the wire: the network client and the file sink downloads use.

Two costs dominate a download in Python, measured with py-spy on 200 MB over loopback (2 cores):

- **Per-read overhead in the client.** httpcore asks the socket for 64 KiB at a time and anyio
  slices asyncio's 256 KiB receive buffers into those 64 KiB (copying the rest every time), so a
  stock client spends ~1 CPU-second per GB in Python before a byte is written. :func:`network_client`
  builds the app's one client on a network backend whose streams read up to :data:`READ_SIZE` per
  call: the same bytes in 4–16x fewer trips through httpcore/anyio, and no slicing copies.
- **Per-chunk hops between the loop and a worker.** An executor future per batch costs a
  self-pipe wake-up of the loop and a Future per batch. :class:`FileSink` is a writer thread and
  a hasher thread fed by queues: the loop enqueues batches of received chunks and only waits (and
  only gets woken) when more than :data:`MAX_IN_FLIGHT` bytes are not written and hashed yet. Both
  release the GIL for their work, so they overlap each other and the next network reads.
- **Page faults on every block (glibc).** A block of 1 MiB is above glibc's mmap threshold, and
  freeing the blocks a download keeps in flight leaves more free memory at the top of the heap
  than glibc's trim threshold: every new block came back from the kernel as fresh pages, ~130
  minor faults per MB and half the client's CPU per byte. :func:`tune_allocator` keeps blocks up
  to :data:`HEAP_BLOCK_LIMIT` in the heap and lets it keep :data:`HEAP_KEEP` free; the sink gives
  the memory back (:func:`release_memory`) shortly after a download ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import queue
import ssl
import sys
import threading
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TypeVar

import httpx

if TYPE_CHECKING:  # httpcore loads with the first request (DeferredTransport), not at start-up
    import httpcore

from strata_gui.core.progress import RateMeter

READ_SIZE = 1 << 20
"""Bytes asked of the socket per read (asyncio hands over at most 256 KiB per receive anyway)."""

BATCH = 1 << 20
"""Bytes of received chunks handed to the writer and hasher threads at once."""

MAX_IN_FLIGHT = 16 << 20
"""Bytes received but not yet written (or hashed) after which the network reads wait for the disk."""

PROGRESS_INTERVAL = 0.25
"""Seconds between two progress snapshots of a download (a few per second is enough to watch)."""

HEAP_BLOCK_LIMIT = 4 << 20
"""Allocations up to this size come from the heap, not from fresh mmap()s (glibc ``M_MMAP_THRESHOLD``)."""

HEAP_KEEP = 2 * MAX_IN_FLIGHT
"""Free memory the heap keeps at its top instead of returning it at once (glibc ``M_TRIM_THRESHOLD``):
more than a download keeps in flight, so its blocks are reused rather than faulted in again."""

RELEASE_DELAY = 2.0
"""Seconds after a download ends before the heap's free pages go back to the system."""

REQUEST_DEADLINE = 120.0
"""Seconds one request that is not a bulk download (an API call, a HEAD, a header read) may take
in all. httpx's own time-outs are per read: a server that drips a byte now and then keeps a
request alive forever under them."""

MIN_RATE = 1024.0
"""Bytes per second below which a bulk download is given up (over :data:`RATE_WINDOW`)."""

RATE_WINDOW = 60.0
"""Seconds over which a download must average :data:`MIN_RATE`; the headers count too."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@functools.cache
def _glibc() -> Any | None:
    """The C library if it is glibc (whose ``mallopt``/``malloc_trim`` these settings are), else None."""
    if not sys.platform.startswith("linux"):
        return None  # Windows: the proactor loop reads 64 KiB at a time, which its heap reuses
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except (ValueError, OSError, AttributeError):
        return None  # musl and friends: leave their allocator alone


@functools.cache
def tune_allocator() -> bool:
    """Keep download-sized blocks in the heap (glibc only); True if the settings took.

    Process-wide and idempotent: made once, by the first bulk client (:class:`BulkNetworkBackend`).
    Setting either threshold turns off glibc's own adaptive thresholds, which is the point: they
    adapt to 1 MiB blocks but then trim the heap each time a download's in-flight blocks are freed.
    """
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCK_LIMIT)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, HEAP_KEEP))


def release_memory() -> None:
    """Hand the heap's free pages back to the system (after a download, when the blocks are gone)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


class _BulkStream:
    """A network stream that reads big blocks whatever size httpcore asks for.

    httpcore's HTTP/1.1 parser accepts any amount of data per read, so reading more per call is
    safe: the surplus is parsed as the next part of the body (or the next response).
    """

    def __init__(self, inner: httpcore.AsyncNetworkStream, read_size: int) -> None:
        self._inner = inner
        self._read_size = read_size
        _widen_receive(inner, read_size)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max(max_bytes, self._read_size), timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        inner = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return typing.cast("httpcore.AsyncNetworkStream", _BulkStream(inner, self._read_size))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def _widen_receive(stream: object, read_size: int) -> None:
    """Let asyncio's socket transport receive up to ``read_size`` per ``recv`` (it caps at 256 KiB).

    Best effort, on the layers httpcore 1.x and anyio 4.x build (httpcore stream → anyio socket
    stream → asyncio transport): one ``recv`` per MiB instead of per 256 KiB took a third off the
    client's CPU per byte in ``bench/engine_download.py``. Any other layout is left as it is.
    """
    anyio_stream = getattr(stream, "_stream", None)
    transport = getattr(anyio_stream, "_transport", None)
    if isinstance(transport, asyncio.Transport) and isinstance(getattr(transport, "max_size", None), int):
        transport.max_size = max(transport.max_size, read_size)  # type: ignore[attr-defined]


class BulkNetworkBackend:
    """httpcore's default async backend with streams that read ``read_size`` bytes per call.

    (httpcore's network interfaces are protocols in practice: it only calls these methods.)
    """

    def __init__(self, read_size: int = READ_SIZE, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        import httpcore

        self._inner = inner or httpcore.AnyIOBackend()
        self._read_size = read_size
        tune_allocator()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: typing.Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return typing.cast("httpcore.AsyncNetworkStream", _BulkStream(stream, self._read_size))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: typing.Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(path, timeout, socket_options)
        return typing.cast("httpcore.AsyncNetworkStream", _BulkStream(stream, self._read_size))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class BulkTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (same options, same error mapping) on a :class:`BulkNetworkBackend`."""

    def __init__(self, *args: Any, read_size: int = READ_SIZE, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # httpx does not take a network backend, httpcore's pool does: hand ours to the pool httpx
        # built (a plain pool or a proxy pool, both keep it in this attribute).
        pool = typing.cast(Any, self._pool)
        pool._network_backend = BulkNetworkBackend(read_size)


class TlsContext:
    """The app's one TLS context, made on first use (loading the CA bundle takes tens of ms)."""

    def __init__(self, make: Callable[[], ssl.SSLContext] = httpx.create_ssl_context) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._ctx: ssl.SSLContext | None = None

    def get(self) -> ssl.SSLContext:
        """The context (thread-safe: :meth:`warm_up` may be making it on another thread)."""
        with self._lock:
            if self._ctx is None:
                self._ctx = self._make()
            return self._ctx


class DeferredTransport(httpx.AsyncBaseTransport):
    """Makes the real transport on the first request.

    Creating an httpx transport imports httpcore and loads the CA bundle (~80 ms on this machine,
    a fifth of the way to a usable window); a client made at start-up but first used seconds
    later should not pay that before the window is usable.
    """

    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._make: Callable[[], httpx.AsyncBaseTransport] | None = make
        self._inner: httpx.AsyncBaseTransport | None = None

    @property
    def inner(self) -> httpx.AsyncBaseTransport:
        """The real transport (made now if no request was sent yet)."""
        if self._inner is None:
            assert self._make is not None
            # No await between the check and the assignment: concurrent first requests share one.
            self._inner, self._make = self._make(), None
        return self._inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        if self._inner is not None:
            await self._inner.aclose()


class PlainOrTlsTransport(httpx.AsyncBaseTransport):
    """Plain ``http://`` requests on a transport that never loads the CA bundle, ``https://`` on
    one that does; each made on its first request. Engines on this computer speak plain HTTP, so
    their first request (an engine's readiness) no longer waits ~25 ms for certificates it never
    uses; a remote engine behind HTTPS still gets the verified one."""

    def __init__(self, make_plain: Callable[[], httpx.AsyncBaseTransport],
                 make_tls: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._plain = DeferredTransport(make_plain)
        self._tls = DeferredTransport(make_tls)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        transport = self._plain if request.url.scheme == "http" else self._tls
        return await transport.handle_async_request(request)

    def prepare_plain(self) -> None:
        """Make the plain transport (and import what it uses), for a server that is idle now and
        wants its first request to an engine to be quick."""
        assert self._plain.inner is not None

    async def aclose(self) -> None:
        await self._plain.aclose()
        await self._tls.aclose()


_TRANSPORT_OPTIONS = ("cert", "trust_env", "http1", "http2", "limits")


def prepare_loopback(client: httpx.AsyncClient) -> None:
    """:meth:`PlainOrTlsTransport.prepare_plain` for a client made by :func:`loopback_client`."""
    transport = getattr(client, "_transport", None)
    if isinstance(transport, PlainOrTlsTransport):
        transport.prepare_plain()


def network_client(tls: TlsContext | None = None, **kwargs: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` (same keyword arguments) whose transport reads in big blocks.

    The transport is made on the first request (:class:`DeferredTransport`) with ``tls`` (or
    ``verify=`` if given). Proxies from the environment keep working: httpx mounts its own
    transports for them.
    """
    opts = {k: kwargs[k] for k in _TRANSPORT_OPTIONS if k in kwargs}
    verify = kwargs.get("verify")

    def make() -> httpx.AsyncBaseTransport:
        return BulkTransport(verify=verify if verify is not None else (tls.get() if tls else True), **opts)

    return httpx.AsyncClient(transport=DeferredTransport(make), **kwargs)


def loopback_client(tls: TlsContext | None = None, **kwargs: Any) -> httpx.AsyncClient:
    """A plain ``httpx.AsyncClient`` (same keyword arguments) whose transport is made on first use."""
    opts = {k: kwargs[k] for k in _TRANSPORT_OPTIONS if k in kwargs}
    verify = kwargs.get("verify")

    def make() -> httpx.AsyncBaseTransport:
        return httpx.AsyncHTTPTransport(verify=verify if verify is not None else (tls.get() if tls else True),
                                        **opts)

    def make_plain() -> httpx.AsyncBaseTransport:
        # Not httpx's transport: its httpcore and anyio imports were ~65 ms of an engine's first request.
        from strata_gui.core.plainhttp import PlainHttpTransport

        limits = kwargs.get("limits")
        return PlainHttpTransport(keepalive_expiry=limits.keepalive_expiry if limits and limits.keepalive_expiry
                                  is not None else 5.0)

    return httpx.AsyncClient(transport=PlainOrTlsTransport(make_plain, make), **kwargs)


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
        # Not at once: the next download (a model's next file, an engine's fallback build) would
        # fault the same memory in again. An idle app gives it back a moment later.
        asyncio.get_running_loop().call_later(RELEASE_DELAY, release_memory)
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
