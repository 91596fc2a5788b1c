"""Resumable, verified downloads of release assets.

The file grows as ``<name>.part`` in the downloads folder; an interrupted download (network
cut, Cancel, app restart) continues from there with an HTTP ``Range`` request. SHA-256 is
computed while streaming (the bytes already on disk are hashed first when resuming), and
writing + hashing run on a :class:`~strata_gui.core.transfer.FileSink` (one writer thread, in
order) so they overlap with the network reads.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx

from strata_gui.core.blocking import run_blocking
from strata_gui.core.errors import ChecksumMismatchError, EngineDownloadError, StorageError
from strata_gui.core.progress import ProgressCallback, RateMeter
from strata_gui.core.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.transfer import DEFAULT_PACE, PROGRESS_INTERVAL, FileSink, Pace, stream_to_sink

log = logging.getLogger(__name__)

CHUNK = 1 << 20


@dataclass(frozen=True)
class DownloadResult:
    """A finished download.

    Attributes:
        path: The complete file.
        sha256: Its SHA-256 (hex).
        resumed_from: Bytes that were already on disk when this run started.
        received: Bytes that crossed the wire in this run.
        verified: Whether the hash was checked against an expected value.
    """

    path: Path
    sha256: str
    resumed_from: int
    received: int
    verified: bool


def _hash_existing(path: Path) -> tuple[int, hashlib._Hash]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK * 4):
            h.update(block)
            n += len(block)
    return n, h


def _body_limit(resp: httpx.Response, expected_size: int | None, have: int) -> int | None:
    """The most bytes the body may bring: what the catalog expects, else what the server announced
    for an unencoded body (a compressed one's length says nothing about what it unpacks to)."""
    if expected_size is not None:
        return expected_size - have
    length = resp.headers.get("content-length", "")
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    return int(length) if length.isdigit() and encoding in ("", "identity") else None


def _open(path: Path, append: bool) -> BinaryIO:
    return open(path, "ab") if append else open(path, "wb")


async def download_file(
    http: httpx.AsyncClient,
    url: str,
    dest: Path,
    *,
    expected_size: int | None,
    expected_sha256: str | None,
    on_progress: ProgressCallback,
    message: str = "Downloading",
    pace: Pace = DEFAULT_PACE,
) -> DownloadResult:
    """Download ``url`` to ``dest``, resuming ``dest.part`` if present.

    ``pace``: the slowest the transfer may go (headers included) before it is given up as
    interrupted; the part received is kept for the resume.

    Raises:
        EngineDownloadError: network failure or an HTTP error (the partial file is kept to resume).
        ChecksumMismatchError: the bytes do not match ``expected_sha256`` (the file is deleted).
        StorageError: the file could not be written.
    """
    part = dest.with_name(dest.name + ".part")

    try:
        part.parent.mkdir(parents=True, exist_ok=True)
        have, hasher = (0, hashlib.sha256())
        if part.exists():
            have, hasher = await run_blocking(_hash_existing, part, name="strata-download-hash")
            if expected_size is not None and have > expected_size:
                part.unlink()
                have, hasher = 0, hashlib.sha256()
        received = 0
        resumed_from = have
        if expected_size is None or have < expected_size:
            headers = {"Range": f"bytes={have}-"} if have else {}
            try:
                async with pace.watch() as watch, http.stream("GET", url, headers=headers) as resp:
                    if resp.status_code == 416 and have:
                        pass  # the server says we already have everything
                    elif resp.status_code not in (200, 206):
                        raise EngineDownloadError(
                            f"The download server answered {resp.status_code} for {dest.name}.",
                            hint="Try again later; the part already downloaded is kept and resumed.",
                            details=str(resp.url))
                    else:
                        if resp.status_code == 200 and have:
                            log.info("server ignored Range for %s; starting over", dest.name)
                            have, hasher, resumed_from = 0, hashlib.sha256(), 0
                        total = expected_size
                        if total is None:
                            length = resp.headers.get("content-length")
                            total = have + int(length) if length and length.isdigit() else None
                        meter = RateMeter(total, on_progress, message=message, start=have,
                                          min_interval=PROGRESS_INTERVAL)
                        meter.update(0, force=True)
                        with _open(part, bool(have)) as fh:  # opening is instant
                            # Whatever arrived is written before the sink closes, also when the
                            # connection broke or the user cancelled: a resume starts after it.
                            async with FileSink(fh, hasher, name="strata-download") as sink:
                                received = await stream_to_sink(resp, sink, meter, watch=watch,
                                                                limit=_body_limit(resp, expected_size, have))
                        meter.finish()
            except httpx.TooManyRedirects as exc:
                raise EngineDownloadError(
                    f"The download server of {dest.name} sent Strata round in a loop of redirects.",
                    hint="The release server is misconfigured; try again later.", details=f"{url}: {exc!r}") from exc
            except httpx.DecodingError as exc:
                raise EngineDownloadError(
                    f"The download server sent {dest.name} in an encoding Strata could not decode.",
                    hint="A proxy may be altering downloads; try again later or from another network.",
                    details=f"{url}: {exc!r}") from exc
            except httpx.RequestError as exc:
                raise EngineDownloadError(
                    f"The download of {dest.name} was interrupted ({type(exc).__name__}).",
                    hint="Check the connection and install again: the download resumes where it stopped.",
                    details=f"{url}: {exc!r}") from exc
        size = part.stat().st_size
        if expected_size is not None and size != expected_size:
            raise EngineDownloadError(
                f"The download of {dest.name} ended early ({size} of {expected_size} bytes).",
                hint="Install again: the download resumes where it stopped.")
        digest = hasher.hexdigest()
        if expected_sha256 and digest != expected_sha256.lower():
            part.unlink(missing_ok=True)
            raise ChecksumMismatchError(
                f"{dest.name} does not match its published checksum; the file was deleted.",
                hint="Try again. If it happens again the release or a proxy is serving bad data.",
                details=f"expected sha256 {expected_sha256}, got {digest}")
        os.replace(part, dest)
        return DownloadResult(dest, digest, resumed_from, received, bool(expected_sha256))
    except OSError as exc:
        raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not write {file}: {reason}"), file=dest.name,
                             reason=exc.strerror or exc),
                           hint=QT_TRANSLATE_NOOP("Core", "Check free space and permissions of the downloads "
                                                          "folder.")) from exc
