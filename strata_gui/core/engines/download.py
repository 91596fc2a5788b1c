"""Release assets downloaded with the shared fetcher (:mod:`strata_gui.core.net.download`), in the
engine installer's words.

The file grows as ``<name>.part`` in the downloads folder; an interrupted download (network cut,
Cancel, app restart) continues from there, and only a complete file whose SHA-256 matches the
published one takes its name.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from strata_gui.core.base.errors import ChecksumMismatchError, EngineDownloadError, StorageError, StrataError
from strata_gui.core.base.progress import ProgressCallback, RateMeter
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.net.download import Fetch, FetchErrors, FetchResult, fetch, partial_size
from strata_gui.core.net.transfer import DEFAULT_PACE, PROGRESS_INTERVAL, Pace

DownloadResult = FetchResult
_RESUMES = "Check the connection and install again: the download resumes where it stopped."


class EngineFetchErrors(FetchErrors):
    """A failed release download as an :class:`EngineDownloadError` (the part is kept to resume),
    a :class:`ChecksumMismatchError` or a :class:`StorageError`."""

    def status(self, resp: httpx.Response, job: Fetch) -> StrataError:
        return EngineDownloadError(f"The download server answered {resp.status_code} for {job.name}.",
                                   hint="Try again later; the part already downloaded is kept and resumed.",
                                   details=str(resp.url))

    def transport(self, exc: httpx.RequestError, job: Fetch, *, got: int, had: int) -> StrataError:
        details = f"{job.url}: {exc!r}"
        if isinstance(exc, httpx.TooManyRedirects):
            return EngineDownloadError(
                f"The download server of {job.name} sent Strata round in a loop of redirects.",
                hint="The release server is misconfigured; try again later.", details=details)
        if isinstance(exc, httpx.DecodingError):
            return EngineDownloadError(
                f"The download server sent {job.name} in an encoding Strata could not decode.",
                hint="A proxy may be altering downloads; try again later or from another network.",
                details=details)
        return EngineDownloadError(f"The download of {job.name} was interrupted ({type(exc).__name__}).",
                                   hint=_RESUMES, details=details)

    def short(self, job: Fetch, got: int) -> StrataError:
        return EngineDownloadError(f"The download of {job.name} ended early ({got} of {job.size} bytes).",
                                   hint="Install again: the download resumes where it stopped.")

    def mismatch(self, job: Fetch, actual: str) -> StrataError:
        return ChecksumMismatchError(
            f"{job.name} does not match its published checksum; the file was deleted.",
            hint="Try again. If it happens again the release or a proxy is serving bad data.",
            details=f"expected sha256 {job.sha256}, got {actual}")

    def storage(self, exc: OSError, job: Fetch) -> StrataError:
        return StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not write {file}: {reason}"), file=job.dest.name,
                              reason=exc.strerror or exc),
                            hint=QT_TRANSLATE_NOOP("Core", "Check free space and permissions of the downloads "
                                                           "folder."))


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
    job = Fetch(url, dest, dest.with_name(dest.name + ".part"), expected_size, expected_sha256)
    errors = EngineFetchErrors()
    try:
        have = partial_size(job)
    except OSError as exc:
        raise errors.storage(exc, job) from exc
    meter = RateMeter(expected_size, on_progress, message=message, start=have, min_interval=PROGRESS_INTERVAL)
    meter.update(0, force=True)
    result = await fetch(http, job, meter, errors=errors, pace=pace)
    meter.finish()
    return result
