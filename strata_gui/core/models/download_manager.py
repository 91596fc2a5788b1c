"""DownloadManager: the one owner of what a model download is doing.

Pages, the first-run guide and ``strata models pull`` never change a job's state themselves:
they send commands (:meth:`~DownloadManager.enqueue`, ``pause``, ``resume``, ``retry``,
``cancel``) and subscribe to typed events. The manager keeps the :class:`DownloadQueue`
(every transition saved at once), runs at most one job at a time as an asyncio task through
:class:`HubCacheDownloader`, and turns a task cancel into PAUSED or CANCELLED as commanded.

Transitions (checked by :class:`DownloadState`)::

    QUEUED ──> DOWNLOADING ──> DONE
      │  ▲         │  └──────> FAILED ──┐
      │  │         └─────────> PAUSED ──┤ resume / retry → QUEUED
      │  └──────────────────────────────┘
      └──> PAUSED;  any unfinished state ──> CANCELLED (partial files deleted)
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import ModelError, StorageError, StrataError, describe
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import Progress, ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.downloads import (
    DownloadJob,
    DownloadQueue,
    DownloadState,
    DownloadStateError,
    HubCacheDownloader,
)
from strata_gui.core.models.hub import ModelDetail
from strata_gui.core.models.hub_config import HubTokens
from strata_gui.core.models.hub_errors import HubAuthError
from strata_gui.core.models.hub_files import QuantEntry

log = logging.getLogger(__name__)

_FAILED = QT_TRANSLATE_NOOP("Core", "The download failed.")
_NO_SUCH_DOWNLOAD = QT_TRANSLATE_NOOP("Core", "There is no download {job} in the queue.")

PROGRESS_INTERVAL = 0.25  # seconds between two progress events of a job (a few per second)


class DownloadStoppedError(ModelError):
    """A download someone was waiting for was paused or cancelled instead of finishing."""

    title = "Download stopped"


@dataclass(frozen=True)
class JobStateChanged:
    """``job`` moved to ``state``; ``error`` is set when it FAILED in this session."""

    job: DownloadJob
    state: DownloadState
    error: StrataError | None = None

    @property
    def job_id(self) -> str:
        return self.job.job_id

    @property
    def needs_token(self) -> bool:
        """The hub wants an access token (gated or private repo): offer the token box."""
        return isinstance(self.error, HubAuthError)


@dataclass(frozen=True)
class JobProgress:
    """A progress snapshot of the running job (at most a few per second, plus the last one)."""

    job: DownloadJob
    progress: Progress

    @property
    def job_id(self) -> str:
        return self.job.job_id


@dataclass(frozen=True)
class JobFinished:
    """``job`` is DONE; ``paths`` are its snapshot files in the hub cache (shard 1 first)."""

    job: DownloadJob
    paths: tuple[Path, ...]

    @property
    def job_id(self) -> str:
        return self.job.job_id


DownloadEvent = JobStateChanged | JobProgress | JobFinished


def _loop() -> asyncio.AbstractEventLoop:
    # Commands come from Qt slots too; under qasync the app's loop is the current one even when
    # a slot runs between two loop iterations (as AsyncBridge.run relies on as well).
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.get_event_loop()


class DownloadManager:
    """Runs the model download queue, one job at a time; subscribers see every change.

    Args:
        queue: The persisted queue (its jobs are only changed through this manager).
        downloader: Streams a job's files into the hub cache.
        tokens: The hub's token store ("save token and retry").
        check_online: Raises a StrataError when downloads must not run (offline mode).
        clock: Monotonic clock for progress throttling.
        progress_interval: Minimum seconds between two progress events of one job.
    """

    def __init__(
        self,
        queue: DownloadQueue,
        downloader: HubCacheDownloader,
        tokens: HubTokens,
        *,
        check_online: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        progress_interval: float = PROGRESS_INTERVAL,
    ) -> None:
        self._queue = queue
        self._downloader = downloader
        self._tokens = tokens
        self._check_online = check_online
        self._clock = clock
        self._interval = progress_interval
        self.events: Listeners[DownloadEvent] = Listeners()
        self._task: asyncio.Task[None] | None = None
        self._running: DownloadJob | None = None
        self._stop: dict[str, DownloadState] = {}  # job id -> PAUSED/CANCELLED asked for
        self._last_progress: dict[str, float] = {}
        self._finished: dict[str, tuple[Path, ...]] = {}  # DONE this session: job id -> paths
        self._closed = False

    # -- observing ---------------------------------------------------------------------------------
    def jobs(self) -> list[DownloadJob]:
        """Unfinished jobs (queued, downloading, paused, failed) in queue order."""
        return self._queue.jobs()

    def get(self, job_id: str) -> DownloadJob | None:
        return self._queue.get(job_id)

    @property
    def running(self) -> DownloadJob | None:
        """The job being downloaded (or about to start), if any."""
        return self._running

    # -- commands ----------------------------------------------------------------------------------
    def enqueue(self, detail: ModelDetail, quant: QuantEntry) -> DownloadJob:
        """Queue ``quant`` of ``detail`` (a split set as one job) and start the queue.

        A vision model's projector (``mmproj``) is part of the same job, so the model arrives
        able to see images.

        The same quant again returns the job already queued; a paused or failed one is queued
        again.

        Raises:
            HubError: Offline mode.
        """
        return self.add(DownloadJob.for_quant(detail.repo_id, detail.commit, quant, detail.projector_for(quant)))

    def add(self, job: DownloadJob) -> DownloadJob:
        """Queue ``job`` (see :meth:`enqueue`); returns the job the queue holds under its id."""
        if self._closed:
            raise DownloadStateError(QT_TRANSLATE_NOOP("Core", "Downloads have stopped: Strata is closing."))
        self._check_online()
        existing = self._queue.get(job.job_id)
        if existing is None:
            fresh = dataclasses.replace(job, state=DownloadState.QUEUED, error="", failure=None)
            self._finished.pop(fresh.job_id, None)
            queued = self._queue.add(fresh)
            self._emit(JobStateChanged(queued, DownloadState.QUEUED))
        else:
            queued = existing
            if queued.state.can_resume:
                self._set(queued, DownloadState.QUEUED)
        self._kick()
        return queued

    def pause(self, job_id: str) -> None:
        """Stop a queued or running job, keeping the bytes already on disk (no-op when paused).

        Raises:
            DownloadStateError: No such job, or it FAILED (retry or cancel it instead).
        """
        job = self._job(job_id)
        if job.state is DownloadState.PAUSED:
            return
        if self._stop_running(job, DownloadState.PAUSED):
            return
        self._set(job, DownloadState.PAUSED)

    def resume(self, job_id: str) -> None:
        """Queue a paused or failed job again; it continues from the bytes already on disk.

        Raises:
            DownloadStateError: No such job.
            HubError: Offline mode.
        """
        job = self._job(job_id)
        if job.state in (DownloadState.QUEUED, DownloadState.DOWNLOADING) and job_id not in self._stop:
            return
        self._check_online()
        self._set(job, DownloadState.QUEUED)
        self._kick()

    def retry(self, job_id: str) -> None:
        """Queue a failed job again (the same as :meth:`resume`)."""
        self.resume(job_id)

    def save_token_and_retry(self, job_id: str, token: str) -> None:
        """Save a hub access token (for a gated repo) and retry the job that needed it.

        Raises:
            HubError: The token is empty. StorageError: it could not be saved.
        """
        self._tokens.set(token)
        self.retry(job_id)

    def cancel(self, job_id: str) -> None:
        """Stop and forget a job and delete its partial files. A job that is no longer in the
        queue (finished or already cancelled) is left alone."""
        job = self._queue.get(job_id)
        if job is None:
            return
        if self._stop_running(job, DownloadState.CANCELLED):
            return
        self._discard(job)
        self._set(job, DownloadState.CANCELLED)

    async def wait(self, job_id: str, on_progress: ProgressCallback | None = None) -> list[Path]:
        """Wait until ``job_id`` is DONE and return its paths; ``on_progress`` gets its progress.

        Cancelling this wait does not stop the job (send ``pause`` or ``cancel`` for that).

        Raises:
            StrataError: The job FAILED (its error).
            DownloadStoppedError: It was paused or cancelled instead.
            DownloadStateError: There is no such job.
        """
        fut: asyncio.Future[list[Path]] = asyncio.get_running_loop().create_future()

        def on_event(event: DownloadEvent) -> None:
            if event.job_id != job_id or fut.done():
                return
            if isinstance(event, JobProgress):
                if on_progress is not None:
                    on_progress(event.progress)
            elif isinstance(event, JobFinished):
                fut.set_result(list(event.paths))
            elif event.state is DownloadState.FAILED:
                fut.set_exception(event.error or ModelError(event.job.error or _FAILED))
            elif event.state in (DownloadState.PAUSED, DownloadState.CANCELLED):
                fut.set_exception(self._stopped(event.job, event.state))

        unsubscribe = self.events.subscribe(on_event)
        try:
            job = self._queue.get(job_id)
            if job is None:
                if job_id in self._finished:
                    return list(self._finished[job_id])
                raise DownloadStateError(T(_NO_SUCH_DOWNLOAD, job=job_id))
            if job.state is DownloadState.FAILED:
                raise job.failure or ModelError(job.error or _FAILED)
            if job.state is DownloadState.PAUSED:
                raise self._stopped(job, job.state)
            return await fut
        finally:
            unsubscribe()

    async def wait_stopped(self, job_id: str) -> None:
        """Wait until ``job_id`` is not being downloaded any more (after ``pause``/``cancel``)."""
        task = self._task
        if task is not None and self._running is not None and self._running.job_id == job_id:
            await asyncio.wait([task])

    async def aclose(self) -> None:
        """Stop the running download (it becomes PAUSED) and wait for it. Safe to call twice."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

    # -- internals ---------------------------------------------------------------------------------
    def _job(self, job_id: str) -> DownloadJob:
        job = self._queue.get(job_id)
        if job is None:
            raise DownloadStateError(T(_NO_SUCH_DOWNLOAD, job=job_id))
        return job

    @staticmethod
    def _stopped(job: DownloadJob, state: DownloadState) -> DownloadStoppedError:
        if state is DownloadState.CANCELLED:
            return DownloadStoppedError(T(QT_TRANSLATE_NOOP("Core", "The download of {name} was cancelled."),
                                          name=job.name))
        return DownloadStoppedError(T(QT_TRANSLATE_NOOP("Core", "The download of {name} was paused."),
                                      name=job.name),
                                    hint=QT_TRANSLATE_NOOP("Core", "Resume it on the Models page; it "
                                                                   "continues where it stopped."))

    def _stop_running(self, job: DownloadJob, state: DownloadState) -> bool:
        """Ask the running task to stop ``job`` as ``state``; False if ``job`` is not running."""
        if self._running is not job or self._task is None or self._task.done():
            return False
        if job.state is DownloadState.QUEUED:
            # Its task has not begun yet: cancel it unstarted and change the state right here.
            self._task.cancel()
            return False
        self._stop[job.job_id] = state
        self._task.cancel()
        return True

    def _set(self, job: DownloadJob, state: DownloadState, error: StrataError | None = None) -> None:
        try:
            self._queue.set_state(job.job_id, state, error.message if error else "", error)
        except StorageError as exc:
            # The move happened in memory; losing it on disk only costs a resume after a restart.
            log.error("download queue not saved: %s", exc)
        self._emit(JobStateChanged(job, state, error))

    def _emit(self, event: DownloadEvent) -> None:
        self.events.emit(event)  # one broken subscriber must not stop the downloads (emit logs it)

    def _progress(self, job: DownloadJob, p: Progress) -> None:
        now = self._clock()
        last = self._last_progress.get(job.job_id)
        complete = p.total is not None and p.done >= p.total
        if last is None or complete or now - last >= self._interval:
            self._last_progress[job.job_id] = now
            self._emit(JobProgress(job, p))

    def _discard(self, job: DownloadJob) -> None:
        try:
            self._downloader.discard_partial(job)
        except OSError as exc:
            log.warning("partial files of %s not deleted: %s", job.name, exc)

    def _kick(self) -> None:
        """Start the first QUEUED job when nothing runs."""
        if self._closed or (self._task is not None and not self._task.done()):
            return
        job = next((j for j in self._queue.jobs() if j.state is DownloadState.QUEUED), None)
        if job is None:
            return
        self._running = job
        task = _loop().create_task(self._run(job), name=f"download {job.name}")
        task.add_done_callback(self._on_task_done)
        self._task = task

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if self._task is task:
            self._task, self._running = None, None
        if not task.cancelled() and task.exception() is not None:
            log.error("download task crashed", exc_info=task.exception())
        self._kick()

    async def _run(self, job: DownloadJob) -> None:
        self._last_progress.pop(job.job_id, None)
        self._set(job, DownloadState.DOWNLOADING)
        try:
            self._check_online()
            paths = await self._downloader.download(job, lambda p: self._progress(job, p))
        except asyncio.CancelledError:
            # A pause, a cancel, or the app closing (which pauses: it resumes after a restart).
            stop = self._stop.pop(job.job_id, DownloadState.PAUSED)
            if stop is DownloadState.CANCELLED:
                self._discard(job)
            self._set(job, stop)
            raise
        except Exception as exc:
            err = describe(exc)
            log.warning("download of %s failed: %s", job.name, err)
            self._set(job, DownloadState.FAILED, err)
        else:
            self._finished[job.job_id] = tuple(paths)
            self._set(job, DownloadState.DONE)
            self._emit(JobFinished(job, tuple(paths)))
        finally:
            self._stop.pop(job.job_id, None)
