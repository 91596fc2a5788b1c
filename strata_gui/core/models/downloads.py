"""Model downloads into the Hugging Face hub cache, resumable, verified, queued across restarts.

Files are streamed with the shared ``httpx.AsyncClient`` into huggingface_hub's own cache
layout (``models--org--name/blobs/<etag>``, ``snapshots/<commit>/<file>`` → blob, ``refs/<rev>``),
so ``hf_hub_download``, ``scan_cache_dir`` and every other hub-cache tool find them. We do not
call ``hf_hub_download`` itself: it runs in a thread that cannot be stopped mid-file (pause and
cancel would wait for the whole file), and it does not check the SHA-256 of what it wrote. The
bytes travel through the fetcher engine installs use too (:mod:`strata_gui.core.net.download`):
pausing is a task cancel that keeps ``<blob>.incomplete``; resuming sends ``Range: bytes=n-``,
as huggingface_hub does, and the hash is computed while streaming.
"""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

from strata_gui.core.base.errors import (
    ChecksumMismatchError,
    HubError,
    InsufficientSpaceError,
    ModelError,
    StorageError,
    StrataError,
)
from strata_gui.core.base.progress import ProgressCallback, RateMeter, format_bytes
from strata_gui.core.base.state_file import load_record
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.hub_cache import repo_folder
from strata_gui.core.models.hub_errors import check_response, error_for_transport
from strata_gui.core.models.hub_files import (
    QuantEntry,
    RemoteFile,
    check_remote_files,
    safe_commit,
    safe_etag,
    safe_repo_id,
    safe_repo_path,
)
from strata_gui.core.net.download import Fetch, FetchErrors, fetch, free_bytes, partial_size
from strata_gui.core.net.transfer import DEFAULT_PACE, PROGRESS_INTERVAL, Pace, credentials_for, within

log = logging.getLogger(__name__)

SPACE_MARGIN = 200 * 1024 * 1024
_CHECK_ENDPOINT = QT_TRANSLATE_NOOP("Core", "Check the hub endpoint in Settings.")
_RESUME_HINT = QT_TRANSLATE_NOOP("Core", "Resume the download; it continues where it stopped.")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class DownloadState(enum.StrEnum):
    """Where a download is; the values are what the queue file stores."""

    QUEUED = "queued"
    DOWNLOADING = "downloading"
    PAUSED = "paused"
    FAILED = "failed"
    DONE = "done"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        """DONE or CANCELLED: the job has left the queue for good."""
        return self in (DownloadState.DONE, DownloadState.CANCELLED)

    @property
    def can_pause(self) -> bool:
        return DownloadState.PAUSED in _TRANSITIONS[self]

    @property
    def can_resume(self) -> bool:
        """PAUSED or FAILED: Resume (or Retry) puts it back in the queue."""
        return self in (DownloadState.PAUSED, DownloadState.FAILED)

    def can_become(self, new: DownloadState) -> bool:
        return new in _TRANSITIONS[self]


_TRANSITIONS: dict[DownloadState, frozenset[DownloadState]] = {
    DownloadState.QUEUED: frozenset({DownloadState.DOWNLOADING, DownloadState.PAUSED, DownloadState.CANCELLED}),
    DownloadState.DOWNLOADING: frozenset({DownloadState.PAUSED, DownloadState.FAILED, DownloadState.DONE,
                                          DownloadState.CANCELLED}),
    DownloadState.PAUSED: frozenset({DownloadState.QUEUED, DownloadState.CANCELLED}),
    DownloadState.FAILED: frozenset({DownloadState.QUEUED, DownloadState.CANCELLED}),
    DownloadState.DONE: frozenset(),
    DownloadState.CANCELLED: frozenset(),
}


class DownloadStateError(ModelError):
    """A download was asked to do something its state does not allow (resume a finished one ...)."""

    title = "Download problem"


@dataclass
class DownloadJob:
    """One queued download unit (a GGUF file or a whole split set).

    ``state`` only changes through :meth:`DownloadQueue.set_state` (which checks the transition
    and saves the queue). ``failure`` is the error of a FAILED job in this session; the queue
    file keeps only its message (``error``).
    """

    repo_id: str
    revision: str
    label: str
    name: str
    files: list[RemoteFile]
    state: DownloadState = DownloadState.QUEUED
    error: str = ""
    ref: str = "main"  # the branch the user browsed; ``revision`` pins its commit
    failure: StrataError | None = field(default=None, compare=False, repr=False)

    @property
    def job_id(self) -> str:
        return f"{self.repo_id}@{self.revision}:{self.files[0].path}"

    @property
    def total(self) -> int:
        return sum(f.size for f in self.files)

    @classmethod
    def for_quant(cls, repo_id: str, revision: str, quant: QuantEntry,
                  projector: RemoteFile | None = None) -> DownloadJob:
        """The job for ``quant``; a vision model's ``projector`` is fetched last, after the shards,
        so ``files[0]`` (and the first finished path) stays the file to load."""
        files = list(quant.files) + ([projector] if projector is not None else [])
        return cls(repo_id, revision, quant.label, quant.name, files)

    def to_json(self) -> dict[str, Any]:
        return {"repo_id": self.repo_id, "revision": self.revision, "label": self.label, "name": self.name,
                "files": [asdict(f) for f in self.files], "state": self.state.value, "error": self.error,
                "ref": self.ref}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DownloadJob:
        files = [RemoteFile(str(f["path"]), int(f["size"]), f.get("sha256")) for f in data["files"]]
        try:
            state = DownloadState(str(data.get("state", "queued")))
        except ValueError:
            state = DownloadState.PAUSED  # unknown (newer) state: keep the job, let the user resume it
        return cls(str(data["repo_id"]), str(data["revision"]), str(data["label"]), str(data["name"]), files,
                   state, str(data.get("error", "")), str(data.get("ref", "main")))


class DownloadQueue:
    """Jobs not yet finished, saved in a JSON file so they can be resumed after a restart.

    Every state change is written at once (temp file + rename, so a crash never leaves half a
    file). DONE and CANCELLED jobs leave the file. On load, a job that was DOWNLOADING (the app
    stopped mid-download) or still QUEUED comes back PAUSED: nothing starts downloading by itself
    when the app opens; Resume continues from the bytes already on disk.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._jobs: dict[str, DownloadJob] = {}
        self._load()

    def _load(self) -> None:
        raw = load_record(self.path, dict, QT_TRANSLATE_NOOP("Core", "the list of unfinished downloads")).data
        items = raw.get("jobs", []) if raw is not None else []
        if not isinstance(items, list):
            items = []
        for item in items:
            try:
                job = DownloadJob.from_json(item)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                log.warning("dropping an unreadable entry of %s: %s", self.path, exc)
                continue
            if job.state.finished:
                continue
            if job.state in (DownloadState.DOWNLOADING, DownloadState.QUEUED):
                job.state = DownloadState.PAUSED
            self._jobs[job.job_id] = job

    def save(self) -> None:
        data = {"version": 1, "jobs": [j.to_json() for j in self._jobs.values()]}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the download queue: {reason}"),
                                 reason=exc.strerror or exc)) from exc

    def jobs(self) -> list[DownloadJob]:
        return list(self._jobs.values())

    def get(self, job_id: str) -> DownloadJob | None:
        return self._jobs.get(job_id)

    def add(self, job: DownloadJob) -> DownloadJob:
        """Queue ``job`` (as QUEUED); the job already queued under its id when there is one."""
        existing = self._jobs.get(job.job_id)
        if existing is not None:
            return existing
        if job.state is not DownloadState.QUEUED:
            raise DownloadStateError(T(QT_TRANSLATE_NOOP("Core", "A new download must start queued, not "
                                                                 "{state}."), state=job.state.value))
        self._jobs[job.job_id] = job
        self.save()
        return job

    def set_state(self, job_id: str, state: DownloadState, error: str = "",
                  failure: StrataError | None = None) -> DownloadJob:
        """Move a job to ``state`` and save; DONE and CANCELLED remove it from the queue.

        Raises:
            DownloadStateError: No such job, or its state cannot become ``state``.
            StorageError: The queue file could not be written.
        """
        job = self._jobs.get(job_id)
        if job is None:
            raise DownloadStateError(T(QT_TRANSLATE_NOOP("Core", "There is no download {job} in the queue."),
                                       job=job_id))
        if not job.state.can_become(state):
            raise DownloadStateError(
                T(QT_TRANSLATE_NOOP("Core", "The download of {name} cannot go from {old} to {new}."),
                  name=job.name, old=job.state.value, new=state.value))
        job.state, job.error, job.failure = state, error, failure
        if state.finished:
            del self._jobs[job_id]
        self.save()
        return job


@dataclass
class _Resolved:
    etag: str
    size: int
    commit: str
    url: str


@dataclass
class _Plan:
    file: RemoteFile
    resolved: _Resolved
    blob: Path
    pointer: Path
    have: int = 0
    done: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _normalize_etag(value: str | None) -> str | None:
    if not value:
        return None
    return value.removeprefix("W/").strip('"')


class HubCacheDownloader:
    """Downloads repo files into the hub cache.

    Args:
        client: Shared async HTTP client.
        cache_dir: The hub cache (``$HF_HUB_CACHE``; Settings.hf_cache_dir overrides it).
        endpoint: Hub base URL.
        auth_headers: Returns the Authorization header for gated repos (token never logged). It
            is sent to ``endpoint``'s origin only, never to the CDN a file redirects to.
        disk_free: Free bytes of the folder holding a path (injected for tests).
        deadline: Seconds one metadata request (HEAD) may take in all (default
            :data:`~strata_gui.core.net.transfer.REQUEST_DEADLINE`).
        pace: The slowest a file download may go before it is given up (and can be resumed).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        cache_dir: Path,
        endpoint: str,
        auth_headers: Callable[[], dict[str, str]],
        *,
        disk_free: Callable[[Path], int] | None = None,
        deadline: float | None = None,
        pace: Pace = DEFAULT_PACE,
    ) -> None:
        self._client = client
        self.cache_dir = cache_dir
        self.endpoint = endpoint.rstrip("/")
        self._auth = auth_headers
        self._disk_free = disk_free or free_bytes
        self._deadline = deadline
        self._pace = pace

    def _headers_for(self, url: str) -> dict[str, str]:
        """The token only for the hub's own origin; a CDN (or any other host) gets none."""
        return credentials_for(url, self.endpoint, {**self._auth(), "Accept-Encoding": "identity"})

    def _url(self, repo_id: str, path: str, revision: str) -> str:
        from urllib.parse import quote

        return f"{self.endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"

    async def _resolve(self, repo_id: str, path: str, revision: str) -> _Resolved:
        url = self._url(repo_id, path, revision)
        try:
            resp = await within(self._client.head(url, headers=self._headers_for(url), follow_redirects=False),
                                self._deadline, f"the hub's answer for {path}")
        except httpx.RequestError as exc:
            raise error_for_transport(exc, self.endpoint) from exc
        if resp.is_redirect:
            location = urljoin(url, resp.headers.get("Location", ""))
            etag = _normalize_etag(resp.headers.get("X-Linked-Etag") or resp.headers.get("ETag"))
            size_text = resp.headers.get("X-Linked-Size")
            if size_text is None:
                # A relative redirect (mirrors, renamed repos): follow it for the real metadata.
                return await self._resolve_at(location, repo_id, path, resp.headers.get("X-Repo-Commit"))
        else:
            check_response(resp, f"{repo_id}/{path}", self.endpoint)
            location = url
            etag = _normalize_etag(resp.headers.get("X-Linked-Etag") or resp.headers.get("ETag"))
            size_text = resp.headers.get("X-Linked-Size") or resp.headers.get("Content-Length")
        commit = resp.headers.get("X-Repo-Commit")
        if not etag or not commit or size_text is None:
            raise HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} did not describe {path} (ETag, commit or "
                                                       "size missing)."), endpoint=self.endpoint, path=path),
                           hint=QT_TRANSLATE_NOOP("Core", "The endpoint may not be a hub mirror; check the hub endpoint "
                                                          "in Settings."))
        return self._checked(etag, size_text, commit, location, path)

    def _checked(self, etag: str, size: str, commit: str, url: str, path: str) -> _Resolved:
        """The hub's description of a file, refused if its ETag or commit could not be a name
        inside the cache (they become ``blobs/<etag>`` and ``snapshots/<commit>``)."""
        if not size.strip().isdigit():
            raise HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent a size that is not a number for "
                                                       "{path}."), endpoint=self.endpoint, path=path),
                           hint=_CHECK_ENDPOINT)
        return _Resolved(safe_etag(etag, endpoint=self.endpoint), int(size),
                         safe_commit(commit, endpoint=self.endpoint), url)

    async def _resolve_at(self, url: str, repo_id: str, path: str, commit: str | None) -> _Resolved:
        try:
            resp = await within(self._client.head(url, headers=self._headers_for(url), follow_redirects=True),
                                self._deadline, f"the hub's answer for {path}")
        except httpx.RequestError as exc:
            raise error_for_transport(exc, self.endpoint) from exc
        check_response(resp, f"{repo_id}/{path}", self.endpoint)
        etag = _normalize_etag(resp.headers.get("X-Linked-Etag") or resp.headers.get("ETag"))
        commit = resp.headers.get("X-Repo-Commit") or commit
        size = resp.headers.get("X-Linked-Size") or resp.headers.get("Content-Length")
        if not etag or not commit or size is None:
            raise HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} did not describe {path}."),
                             endpoint=self.endpoint, path=path), hint=_CHECK_ENDPOINT)
        return self._checked(etag, size, commit, str(resp.url), path)

    def pointer_paths(self, job: DownloadJob, commit: str) -> list[Path]:
        base = repo_folder(self.cache_dir, job.repo_id) / "snapshots" / commit
        return [base / f.path for f in job.files]

    def partial_files(self, job: DownloadJob) -> list[Path]:
        """``.incomplete`` blobs of ``job`` (LFS files are named by their SHA-256)."""
        blobs = repo_folder(self.cache_dir, job.repo_id) / "blobs"
        return [blobs / f"{f.sha256}.incomplete" for f in job.files if f.sha256]

    def discard_partial(self, job: DownloadJob) -> None:
        for p in self.partial_files(job):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    async def download(self, job: DownloadJob, on_progress: ProgressCallback) -> list[Path]:
        """Download every file of ``job``; return the snapshot paths (shard 1 first).

        Cancelling the task pauses: partial blobs stay and the next call resumes them.

        Raises:
            HubError: HTTP/network failures (401 gated, 404, 429, 5xx, unreachable).
            InsufficientSpaceError: Not enough free space for what is left to download.
            ChecksumMismatchError: A file's SHA-256 differs from the hub's LFS hash (the file is deleted).
        """
        # Every name that becomes a path is checked before anything touches the disk: the queue
        # file, a starter or a hub listing could carry ``../`` (a hostile mirror did).
        safe_repo_id(job.repo_id, endpoint=self.endpoint)
        if job.ref:
            safe_repo_path(job.ref, what="branch name", endpoint=self.endpoint)
        check_remote_files(job.files, endpoint=self.endpoint)
        repo_dir = repo_folder(self.cache_dir, job.repo_id)
        plans: list[_Plan] = []
        for f in job.files:
            resolved = await self._resolve(job.repo_id, f.path, job.revision)
            blob = repo_dir / "blobs" / resolved.etag
            plan = _Plan(f, resolved, blob, repo_dir / "snapshots" / resolved.commit / f.path)
            if blob.exists() and blob.stat().st_size == resolved.size:
                plan.done = True
                plan.have = resolved.size
            else:
                fetching = self._fetch_job(plan)
                try:
                    plan.have = partial_size(fetching)
                except OSError as exc:
                    raise _HubFetchErrors(self).storage(exc, fetching) from exc
            plans.append(plan)
        total = sum(p.resolved.size for p in plans)
        have = sum(p.have for p in plans)
        self._check_space(total - have)
        meter = RateMeter(total, on_progress,
                          message=T(QT_TRANSLATE_NOOP("Core", "Downloading {name}"), name=job.name),
                          start=have, min_interval=PROGRESS_INTERVAL)
        meter.update(0, force=True)
        for plan in plans:
            if not plan.done:
                await self._fetch(plan, meter)
            self._link(plan, repo_dir, job.ref)
        meter.finish()
        return [p.pointer for p in plans]

    def _check_space(self, needed: int) -> None:
        free = self._disk_free(self.cache_dir)
        if needed + SPACE_MARGIN > free:
            raise InsufficientSpaceError(
                T(QT_TRANSLATE_NOOP("Core", "Not enough disk space: the download needs {needed}, plus {margin} that "
                                            "Strata keeps free so the disk does not fill up; {free} are free."),
                  needed=format_bytes(needed), margin=format_bytes(SPACE_MARGIN), free=format_bytes(free)),
                hint=QT_TRANSLATE_NOOP("Core", "Free some space (delete models in the Library tab) or move the hub "
                                               "cache in Settings."),
            )

    def _fetch_job(self, plan: _Plan) -> Fetch:
        """The fetcher's description of a plan's file: into ``<blob>.incomplete``, checked against
        the hub's LFS hash (or the ETag, which is the SHA-256 of an LFS file)."""
        blob = plan.blob
        expected = plan.file.sha256 or (plan.resolved.etag if _SHA256.match(plan.resolved.etag) else None)
        return Fetch(plan.resolved.url, blob, blob.with_name(blob.name + ".incomplete"), plan.resolved.size,
                     expected, self._headers_for(plan.resolved.url), plan.file.path)

    async def _fetch(self, plan: _Plan, meter: RateMeter) -> None:
        await fetch(self._client, self._fetch_job(plan), meter, errors=_HubFetchErrors(self), pace=self._pace)

    def _link(self, plan: _Plan, repo_dir: Path, ref: str) -> None:
        try:
            plan.pointer.parent.mkdir(parents=True, exist_ok=True)
            if plan.pointer.is_symlink() or plan.pointer.exists():
                plan.pointer.unlink()
            rel = os.path.relpath(plan.blob, plan.pointer.parent)
            try:
                plan.pointer.symlink_to(rel)
            except OSError:
                # No symlinks (Windows without developer mode): huggingface_hub then keeps a copy too.
                shutil.copyfile(plan.blob, plan.pointer)
            if ref and ref != plan.resolved.commit:
                ref_file = repo_dir / "refs" / ref
                ref_file.parent.mkdir(parents=True, exist_ok=True)
                ref_file.write_text(plan.resolved.commit)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not add {file} to the hub cache: {reason}"),
                                 file=plan.file.path, reason=exc.strerror or exc)) from exc


class _HubFetchErrors(FetchErrors):
    """A failed file download in the Models page's words: a :class:`HubError` (the part is kept
    to resume), a :class:`ChecksumMismatchError` or a :class:`StorageError`."""

    def __init__(self, downloader: HubCacheDownloader) -> None:
        self._endpoint = downloader.endpoint
        self._cache_dir = downloader.cache_dir

    def status(self, resp: httpx.Response, job: Fetch) -> StrataError:
        try:
            check_response(resp, job.name, self._endpoint)
        except HubError as exc:
            return exc
        return HubError(T(QT_TRANSLATE_NOOP("Core", "Unexpected answer {status} for {path}."),
                          status=resp.status_code, path=job.name))

    def transport(self, exc: httpx.RequestError, job: Fetch, *, got: int, had: int) -> StrataError:
        if got > had:
            return HubError(
                T(QT_TRANSLATE_NOOP("Core", "The download of {file} stopped at {got} of {size}: the connection "
                                            "dropped."),
                  file=job.name, got=format_bytes(got), size=format_bytes(job.size or 0)),
                hint=_RESUME_HINT, details=f"{type(exc).__name__}: {exc}")
        return error_for_transport(exc, self._endpoint)

    def short(self, job: Fetch, got: int) -> StrataError:
        return HubError(T(QT_TRANSLATE_NOOP("Core", "The download of {file} stopped at {got} of {size}."),
                          file=job.name, got=format_bytes(got), size=format_bytes(job.size or 0)),
                        hint=_RESUME_HINT)

    def mismatch(self, job: Fetch, actual: str) -> StrataError:
        return ChecksumMismatchError(
            T(QT_TRANSLATE_NOOP("Core", "{file} is corrupted: its SHA-256 does not match the hub's."), file=job.name),
            hint=QT_TRANSLATE_NOOP("Core", "The damaged file was deleted; download it again."),
            details=f"expected {job.sha256}, got {actual}")

    def storage(self, exc: OSError, job: Fetch) -> StrataError:
        if not job.partial.parent.is_dir():
            return StorageError(T(QT_TRANSLATE_NOOP("Core", "Cannot write to the hub cache {folder}: {reason}"),
                                  folder=self._cache_dir, reason=exc.strerror or exc),
                                hint=QT_TRANSLATE_NOOP("Core", "Choose a writable hub cache folder in Settings."))
        return StorageError(T(QT_TRANSLATE_NOOP("Core", "Writing {file} failed: {reason}"), file=job.partial.name,
                              reason=exc.strerror or exc),
                            hint=QT_TRANSLATE_NOOP("Core", "Check free space and permissions of the hub cache."))
