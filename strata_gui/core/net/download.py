"""Resumable, verified HTTP downloads: the one fetcher behind engine installs and model downloads.

A file grows in a partial file until it is complete (``<name>.part`` in the engines' downloads
folder, ``blobs/<etag>.incomplete`` in the hub cache). An interrupted download (network cut,
pause, Cancel, app restart) continues from there with ``Range: bytes=<have>-``; a server that
ignores the range sends the whole file and the download starts over. SHA-256 is computed while
streaming (the bytes already on disk are hashed first), writing and hashing run on a
:class:`~strata_gui.core.net.transfer.FileSink` so they overlap the network reads, and a transfer
slower than its :class:`~strata_gui.core.net.transfer.Pace` is given up, keeping what arrived. Only a
file of the expected size and digest takes its final name.

What a failure is called is the caller's (:class:`FetchErrors`): an engine install and a model
download tell the same interrupted transfer in their own words and error types.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import StrataError
from strata_gui.core.base.progress import RateMeter
from strata_gui.core.net.transfer import DEFAULT_PACE, FileSink, Hasher, Pace, PaceWatch, stream_to_sink

log = logging.getLogger(__name__)

HASH_BLOCK = 8 << 20
"""Bytes read per step when hashing the part already on disk (a pause stops between two)."""


@dataclass(frozen=True)
class Fetch:
    """One file to download.

    Attributes:
        url: Where it is; redirects are followed (httpx drops ``Authorization`` on a redirect to
            another origin, so a hub's token never reaches its CDN).
        dest: Its final path, replaced only by a complete, verified file.
        partial: Where it grows until then, kept across pauses and restarts.
        size: Bytes expected, or None: then the server's ``Content-Length`` (of an unencoded
            body) bounds what is written.
        sha256: The hex digest expected, or None (the download is then not verified).
        headers: Request headers, credentials already chosen for ``url``'s origin.
        label: The file's name in messages and logs.
    """

    url: str
    dest: Path
    partial: Path
    size: int | None = None
    sha256: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.dest.name


@dataclass(frozen=True)
class FetchResult:
    """A finished download.

    Attributes:
        path: The complete file.
        sha256: Its SHA-256 (hex).
        resumed_from: Bytes that were already on disk and kept when this run started.
        received: Bytes that crossed the wire in this run.
        verified: Whether the digest was checked against an expected one.
    """

    path: Path
    sha256: str
    resumed_from: int
    received: int
    verified: bool


class FetchErrors:
    """How a failed download is told: each method returns the error :func:`fetch` raises.

    Subclass per domain (engine installs, model downloads) for its error types and words; the
    defaults are plain :class:`StrataError` sentences.
    """

    def status(self, resp: httpx.Response, job: Fetch) -> StrataError:
        """The server answered with a status that is not the file."""
        return StrataError(f"The server answered {resp.status_code} for {job.name}.")

    def transport(self, exc: httpx.RequestError, job: Fetch, *, got: int, had: int) -> StrataError:
        """The transfer failed (network, time-out, redirect loop, bad encoding, too slow);
        ``got`` bytes are on disk now, ``had`` were when the request started."""
        return StrataError(f"The download of {job.name} was interrupted ({type(exc).__name__}).")

    def short(self, job: Fetch, got: int) -> StrataError:
        """The body ended before ``job.size`` bytes (``got`` are on disk and kept)."""
        return StrataError(f"The download of {job.name} ended early ({got} of {job.size} bytes).")

    def mismatch(self, job: Fetch, actual: str) -> StrataError:
        """The bytes do not have the expected digest (the partial file is already deleted)."""
        return StrataError(f"{job.name} does not match its checksum; the file was deleted.",
                           details=f"expected sha256 {job.sha256}, got {actual}")

    def storage(self, exc: OSError, job: Fetch) -> StrataError:
        """The file could not be written, read or moved into place."""
        return StrataError(f"Could not write {job.name}: {exc.strerror or exc}")


def free_bytes(path: Path) -> int:
    """Free bytes on the file system holding ``path`` (or its nearest existing parent)."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return int(shutil.disk_usage(p).free)


def partial_size(job: Fetch) -> int:
    """Bytes of ``job`` already on disk (a part longer than the file is discarded: 0).

    Raises:
        OSError: the part cannot be examined or removed.
    """
    try:
        have = job.partial.stat().st_size
    except FileNotFoundError:
        return 0
    if job.size is not None and have > job.size:
        job.partial.unlink()
        return 0
    return have


async def fetch(client: httpx.AsyncClient, job: Fetch, meter: RateMeter, *, errors: FetchErrors | None = None,
                pace: Pace = DEFAULT_PACE) -> FetchResult:
    """Download ``job``, resuming its partial file; report the bytes to ``meter``.

    ``meter`` counts the part on disk as done already (its ``start``), so the caller can show one
    bar over several files; a meter with no total learns it from ``Content-Length``. Cancelling
    the task pauses: everything that arrived is written before the cancel goes on.

    Raises:
        StrataError: from ``errors`` (default :class:`FetchErrors`): an HTTP error status, a
            broken or too slow transfer (the part is kept), a short body, a digest mismatch
            (the part is deleted), or a file that cannot be written.
    """
    errors = errors or FetchErrors()
    try:
        have = partial_size(job)
        job.partial.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise errors.storage(exc, job) from exc
    sha = hashlib.sha256()
    if have:
        try:
            # What was hashed is what is kept: a part that shrank meanwhile resumes where it ends.
            have = await hash_prefix(job.partial, have, sha)
        except OSError as exc:
            raise errors.storage(exc, job) from exc
    resumed_from, received = have, 0
    if job.size is None or have < job.size:
        resumed_from, sha, received = await _transfer(client, job, have, sha, meter, errors, pace)
    return _finish(job, sha, resumed_from, received, errors)


async def _transfer(client: httpx.AsyncClient, job: Fetch, have: int, sha: Any, meter: RateMeter,
                    errors: FetchErrors, pace: Pace) -> tuple[int, Any, int]:
    """One GET from byte ``have`` into the partial file; (bytes kept from before, the hash, bytes
    received). The hash comes back new when the server ignored the range and the file restarted."""
    headers = {**job.headers, **({"Range": f"bytes={have}-"} if have else {})}
    try:
        async with (pace.watch() as watch,
                    client.stream("GET", job.url, headers=headers, follow_redirects=True) as resp):
            if resp.status_code == 416 and have:
                return have, sha, 0  # the part already is the whole file
            if resp.status_code == 200 and have:
                log.info("the server ignored Range for %s; starting over", job.name)
                meter.update(-have)
                have, sha = 0, hashlib.sha256()
            elif resp.status_code not in (200, 206):
                raise errors.status(resp, job)
            received = await _write_body(resp, job, have, sha, meter, watch)
    except httpx.RequestError as exc:
        got = job.partial.stat().st_size if job.partial.exists() else 0
        raise errors.transport(exc, job, got=got, had=have) from exc
    except OSError as exc:
        raise errors.storage(exc, job) from exc
    return have, sha, received


async def _write_body(resp: httpx.Response, job: Fetch, have: int, sha: Hasher, meter: RateMeter,
                      watch: PaceWatch) -> int:
    """Stream ``resp``'s body after the first ``have`` bytes of the partial file; bytes received."""
    limit = job.size - have if job.size is not None else _announced(resp)
    if meter.total is None and limit is not None:
        meter.total = meter.done + limit
    # Opening is instant; the writes and hashing run on the sink's threads, which write
    # everything that arrived before the sink closes (a pause or a dropped connection keeps
    # every received byte for the resume; after a failed write nothing more lands, so the file
    # never has a hole).
    with open(job.partial, "r+b" if have else "wb") as fh:  # noqa: ASYNC230
        if have:  # anything past the hashed prefix goes
            fh.seek(have)
            fh.truncate()
        # (Not on a fresh file: ext4 takes a truncate to 0 followed by writes as a rewrite in
        # place and flushes the whole file on close, ~30 ms per 128 MB the user waits for.)
        async with FileSink(fh, sha, name="strata-download") as sink:
            # The limit: a server that compresses although asked not to could otherwise unpack
            # without end onto the disk.
            return await stream_to_sink(resp, sink, meter, watch=watch, limit=limit)


def _announced(resp: httpx.Response) -> int | None:
    """The body's length as the server announced it, for an unencoded body (a compressed one's
    length says nothing about what it unpacks to)."""
    length = resp.headers.get("content-length", "").strip()
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    return int(length) if length.isdigit() and encoding in ("", "identity") else None


def _finish(job: Fetch, sha: Any, resumed_from: int, received: int, errors: FetchErrors) -> FetchResult:
    """Check the partial file's size and digest, then give it its final name."""
    try:
        got = job.partial.stat().st_size
        if job.size is not None and got != job.size:
            raise errors.short(job, got)
        digest: str = sha.hexdigest()
        if job.sha256 and digest != job.sha256.lower():
            job.partial.unlink(missing_ok=True)
            raise errors.mismatch(job, digest)
        os.replace(job.partial, job.dest)
    except OSError as exc:
        raise errors.storage(exc, job) from exc
    return FetchResult(job.dest, digest, resumed_from, received, bool(job.sha256))


async def hash_prefix(path: Path, n: int, sha: Hasher) -> int:
    """Feed the first ``n`` bytes of ``path`` to ``sha`` on a worker thread; the bytes hashed
    (fewer when the file is shorter). A pause meanwhile stops the thread at the next block and
    waits for it, so the file is closed on return.

    Raises:
        OSError: the file cannot be read.
    """
    stop = threading.Event()

    def work() -> int:
        done = 0
        with open(path, "rb") as fh:
            while done < n and not stop.is_set():
                data = fh.read(min(HASH_BLOCK, n - done))
                if not data:
                    break
                sha.update(data)
                done += len(data)
        return done

    task = asyncio.ensure_future(run_blocking(work, name="strata-download-hash"))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        stop.set()
        with contextlib.suppress(Exception):  # a pause stays a pause even if the read failed
            await _settle(task)
        raise


async def _settle(fut: asyncio.Future[Any]) -> None:
    """Wait for ``fut`` even if this task is cancelled meanwhile (the cancel is re-raised after)."""
    cancelled = False
    while not fut.done():
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            if not fut.done():
                cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    fut.result()
