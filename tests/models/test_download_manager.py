"""The download manager over the real loopback hub: states, events, pause/resume, cancel, restarts."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.base.errors import HubError
from strata_gui.core.models.download_manager import (
    DownloadEvent,
    DownloadManager,
    DownloadStoppedError,
    JobFinished,
    JobProgress,
    JobStateChanged,
)
from strata_gui.core.models.downloads import DownloadJob, DownloadQueue, DownloadState, DownloadStateError
from strata_gui.core.models.hub_errors import HubAuthError

REPO = "strata/test-llama-GGUF"
S = DownloadState


class Recorder:
    """Subscribes to a manager and keeps every event."""

    def __init__(self, manager: DownloadManager) -> None:
        self.events: list[tuple[float, DownloadEvent]] = []
        self.unsubscribe = manager.events.subscribe(lambda e: self.events.append((time.monotonic(), e)))

    def states(self, job_id: str) -> list[DownloadState]:
        return [e.state for _, e in self.events if isinstance(e, JobStateChanged) and e.job_id == job_id]

    def progress(self, job_id: str) -> list[tuple[float, Any]]:
        return [(t, e.progress) for t, e in self.events if isinstance(e, JobProgress) and e.job_id == job_id]

    async def until(self, job_id: str, state: DownloadState, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while state not in self.states(job_id):
            assert time.monotonic() < deadline, f"{job_id} never became {state}: {self.states(job_id)}"
            await asyncio.sleep(0.01)


async def _enqueue(svc: Any, label: str = "Q4_K_M", repo: str = REPO) -> DownloadJob:
    detail = await svc.detail(repo)
    quant = next(q for q in detail.quants if q.label == label)
    job: DownloadJob = svc.downloads.enqueue(detail, quant)
    return job


async def _until_bytes(svc: Any, job: DownloadJob, n: int, timeout: float = 20.0) -> int:
    partial = svc.downloader.partial_files(job)[0]
    deadline = time.monotonic() + timeout
    while not (partial.exists() and partial.stat().st_size >= n):
        assert time.monotonic() < deadline, "the download did not progress"
        await asyncio.sleep(0.01)
    return int(partial.stat().st_size)


def _saved_states(queue_file: Path) -> dict[str, str]:
    data = json.loads(queue_file.read_text())
    return {f"{j['repo_id']}@{j['revision']}:{j['files'][0]['path']}": j["state"] for j in data["jobs"]}


def test_enqueue_runs_to_done_into_the_hub_cache_with_events(hub: Any, make_service: Any, test_model: Path,
                                                              tmp_path: Path) -> None:
    hub.state.chunk_delay = 0.02  # about a second for the 9 MB file: several progress ticks

    async def go() -> tuple[DownloadJob, Recorder, list[Path]]:
        async with make_service(hub) as svc:
            rec = Recorder(svc.downloads)
            job = await _enqueue(svc)
            assert job.state is S.QUEUED and svc.downloads.jobs() == [job]
            paths = await svc.downloads.wait(job.job_id)
            assert svc.downloads.jobs() == []
            return job, rec, paths

    job, rec, paths = asyncio.run(go())
    assert rec.states(job.job_id) == [S.QUEUED, S.DOWNLOADING, S.DONE]
    (finished,) = [e for _, e in rec.events if isinstance(e, JobFinished)]
    assert list(finished.paths) == paths and paths[0].read_bytes() == test_model.read_bytes()
    from huggingface_hub import hf_hub_download

    found = hf_hub_download(REPO, "strata-test-llama-Q4_K_M.gguf", cache_dir=tmp_path / "hf-home" / "hub",
                            local_files_only=True)
    assert Path(found) == paths[0]
    # Progress: byte snapshots ending at the full size, at most a few per second.
    ticks = rec.progress(job.job_id)
    assert ticks[-1][1].done == ticks[-1][1].total == test_model.stat().st_size and ticks[-1][1].unit == "bytes"
    span = ticks[-1][0] - ticks[0][0]
    assert 2 <= len(ticks) <= span / 0.25 + 3
    # DONE leaves the queue file.
    assert _saved_states(tmp_path / "strata-home" / "downloads.json") == {}


def test_pause_then_resume_continues_from_the_bytes_on_disk(hub: Any, make_service: Any, test_model: Path,
                                                             tmp_path: Path) -> None:
    hub.state.chunk_delay = 0.03
    queue_file = tmp_path / "strata-home" / "downloads.json"
    full = test_model.stat().st_size

    async def go() -> Path:
        async with make_service(hub) as svc:
            rec = Recorder(svc.downloads)
            job = await _enqueue(svc)
            await _until_bytes(svc, job, 1_000_000)
            svc.downloads.pause(job.job_id)
            await svc.downloads.wait_stopped(job.job_id)
            assert job.state is S.PAUSED and rec.states(job.job_id)[-1] is S.PAUSED
            assert _saved_states(queue_file) == {job.job_id: "paused"}
            have = svc.downloader.partial_files(job)[0].stat().st_size
            assert 0 < have < full
            svc.downloads.pause(job.job_id)  # pausing a paused job changes nothing
            with pytest.raises(DownloadStoppedError, match="paused"):
                await svc.downloads.wait(job.job_id)
            hub.state.chunk_delay = 0.0
            svc.downloads.resume(job.job_id)
            paths = await svc.downloads.wait(job.job_id)
            ranges = [h.get("Range") for m, p, h in hub.state.requests if m == "GET" and p.endswith("Q4_K_M.gguf")]
            assert ranges == [None, f"bytes={have}-"]
            assert rec.states(job.job_id) == [S.QUEUED, S.DOWNLOADING, S.PAUSED, S.QUEUED, S.DOWNLOADING, S.DONE]
            return paths[0]

    assert asyncio.run(go()).read_bytes() == test_model.read_bytes()


def test_cancel_deletes_partial_files_running_or_paused(hub: Any, make_service: Any, split_model: list[Path]) -> None:
    hub.state.chunk_delay = 0.03

    async def go() -> None:
        async with make_service(hub) as svc:
            rec = Recorder(svc.downloads)
            running = await _enqueue(svc, "F16", repo="strata/test-llama-split-GGUF")
            waiting = await _enqueue(svc, "Q8_0")
            assert waiting.state is S.QUEUED  # one job at a time
            await _until_bytes(svc, running, 300_000)
            partial = svc.downloader.partial_files(running)[0]
            svc.downloads.cancel(running.job_id)
            await svc.downloads.wait_stopped(running.job_id)
            assert not partial.exists() and rec.states(running.job_id)[-1] is S.CANCELLED
            assert svc.downloads.get(running.job_id) is None
            # The next queued job starts by itself; cancel it once paused.
            await _until_bytes(svc, waiting, 300_000)
            svc.downloads.pause(waiting.job_id)
            await svc.downloads.wait_stopped(waiting.job_id)
            paused_partial = svc.downloader.partial_files(waiting)[0]
            assert paused_partial.exists()
            svc.downloads.cancel(waiting.job_id)
            assert not paused_partial.exists() and svc.downloads.jobs() == []
            svc.downloads.cancel(waiting.job_id)  # already gone: nothing to do
            assert not list(svc.cache_dir.rglob("*.incomplete"))

    asyncio.run(go())


@pytest.mark.parametrize(("status", "message"), [(500, "server error \\(500\\)"), (429, "rate-limiting")])
def test_hub_errors_leave_the_job_failed_with_a_clear_message(hub: Any, make_service: Any, tmp_path: Path,
                                                               status: int, message: str) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            rec = Recorder(svc.downloads)
            detail = await svc.detail(REPO)
            quant = next(q for q in detail.quants if q.label == "Q4_K_M")
            hub.state.fail_next.append(("Q4_K_M.gguf", status))
            job = svc.downloads.enqueue(detail, quant)
            with pytest.raises(HubError, match=message):
                await svc.downloads.wait(job.job_id)
            assert job.state is S.FAILED and rec.states(job.job_id)[-1] is S.FAILED
            (failed,) = [e for _, e in rec.events if isinstance(e, JobStateChanged) and e.state is S.FAILED]
            assert isinstance(failed.error, HubError) and not failed.needs_token
            assert _saved_states(tmp_path / "strata-home" / "downloads.json") == {job.job_id: "failed"}
            with pytest.raises(DownloadStateError, match="cannot go from failed to paused"):
                svc.downloads.pause(job.job_id)
            svc.downloads.retry(job.job_id)  # the hub is fine again
            await svc.downloads.wait(job.job_id)

    asyncio.run(go())


def test_gated_repo_stays_failed_until_a_token_is_saved(hub: Any, make_service: Any, test_model: Path) -> None:
    async def go() -> Path:
        async with make_service(hub) as svc:
            rec = Recorder(svc.downloads)
            job = await _enqueue(svc, repo="strata/gated-llama-GGUF")
            with pytest.raises(HubAuthError):
                await svc.downloads.wait(job.job_id)
            (failed,) = [e for _, e in rec.events if isinstance(e, JobStateChanged) and e.state is S.FAILED]
            assert failed.needs_token and job.error.startswith("The hub needs an access token")
            with pytest.raises(HubError, match="empty"):
                svc.downloads.save_token_and_retry(job.job_id, "  ")
            assert job.state is S.FAILED
            svc.downloads.save_token_and_retry(job.job_id, hub.state.token)
            paths = await svc.downloads.wait(job.job_id)
            return paths[0]

    assert asyncio.run(go()).read_bytes() == test_model.read_bytes()


def test_transitions_survive_a_restart_and_a_crash_mid_download_comes_back_paused(
    hub: Any, make_service: Any, test_model: Path, tmp_path: Path
) -> None:
    hub.state.chunk_delay = 0.03
    queue_file = tmp_path / "strata-home" / "downloads.json"
    crashed = tmp_path / "crashed" / "downloads.json"

    async def first() -> str:
        async with make_service(hub) as svc:
            job = await _enqueue(svc)
            await _until_bytes(svc, job, 1_000_000)
            # What a crash right now would leave on disk: the job saved as downloading.
            assert _saved_states(queue_file) == {job.job_id: "downloading"}
            crashed.parent.mkdir()
            shutil.copy(queue_file, crashed)
            return job.job_id
        # Leaving the block closes the manager: the running job is paused and saved so.

    job_id = asyncio.run(first())
    assert _saved_states(queue_file) == {job_id: "paused"}
    after_crash = DownloadQueue(crashed)
    (job,) = after_crash.jobs()
    assert job.job_id == job_id and job.state is S.PAUSED

    async def after_restart() -> Path:
        hub.state.chunk_delay = 0.0
        async with make_service(hub) as svc:
            (job,) = svc.downloads.jobs()
            assert job.state is S.PAUSED and svc.downloads.running is None  # nothing starts by itself
            svc.downloads.resume(job.job_id)
            paths = await svc.downloads.wait(job.job_id)
            return paths[0]

    assert asyncio.run(after_restart()).read_bytes() == test_model.read_bytes()
    ranges = [h.get("Range") for m, p, h in hub.state.requests if m == "GET" and p.endswith("Q4_K_M.gguf")]
    assert ranges[0] is None and ranges[-1] is not None and ranges[-1].startswith("bytes=")


def test_old_queue_files_load_and_illegal_transitions_raise(tmp_path: Path) -> None:
    queue_file = tmp_path / "downloads.json"
    old = {"version": 1, "jobs": [
        {"repo_id": "a/b", "revision": "c" * 40, "label": "Q4_K_M", "name": "b-Q4_K_M.gguf",
         "files": [{"path": "b-Q4_K_M.gguf", "size": 10, "sha256": None}], "state": state, "error": error}
        for state, error in (("queued", ""), ("failed", "The hub had a server error (503) for x."))
    ]}
    old["jobs"][1]["files"][0]["path"] = "b-Q8_0.gguf"
    queue_file.write_text(json.dumps(old))
    queue = DownloadQueue(queue_file)
    waiting, failed = queue.jobs()
    assert waiting.state is S.PAUSED and waiting.ref == "main"  # nothing starts by itself after a restart
    assert failed.state is S.FAILED and failed.error.startswith("The hub had a server error")

    with pytest.raises(DownloadStateError, match="cannot go from paused to done"):
        queue.set_state(waiting.job_id, S.DONE)
    with pytest.raises(DownloadStateError, match="cannot go from failed to downloading"):
        queue.set_state(failed.job_id, S.DOWNLOADING)
    assert waiting.state is S.PAUSED and failed.state is S.FAILED
    queue.set_state(waiting.job_id, S.QUEUED)
    queue.set_state(waiting.job_id, S.DOWNLOADING)
    queue.set_state(waiting.job_id, S.DONE)
    with pytest.raises(DownloadStateError, match="no download"):
        queue.set_state(waiting.job_id, S.QUEUED)  # finished jobs left the queue
    saved = json.loads(queue_file.read_text())
    assert [(j["files"][0]["path"], j["state"]) for j in saved["jobs"]] == [("b-Q8_0.gguf", "failed")]
    assert not S.DONE.can_become(S.QUEUED) and not S.CANCELLED.can_become(S.QUEUED)


def test_offline_refuses_to_queue_and_a_broken_subscriber_does_not_stop_downloads(
    hub: Any, make_service: Any, test_model: Path, _listener_errors: Any
) -> None:
    expected = test_model.read_bytes()

    async def go() -> None:
        async with make_service(hub) as svc:
            detail = await svc.detail(REPO)
            quant = next(q for q in detail.quants if q.label == "Q8_0")

            def broken(_event: DownloadEvent) -> None:
                raise RuntimeError("subscriber bug")

            svc.downloads.events.subscribe(broken)
            svc.offline = True
            with pytest.raises(HubError, match="offline mode"):
                svc.downloads.enqueue(detail, quant)
            assert svc.downloads.jobs() == []
            svc.offline = False
            job = svc.downloads.enqueue(detail, quant)
            paths = await svc.downloads.wait(job.job_id)
            assert paths[0].read_bytes() == expected
            assert await svc.downloads.wait(job.job_id) == paths  # a finished job answers at once
            with pytest.raises(DownloadStateError, match="no download"):
                svc.downloads.resume(job.job_id)
            await svc.downloads.aclose()  # the app is closing: nothing new starts
            with pytest.raises(DownloadStateError, match="closing"):
                svc.downloads.enqueue(detail, next(q for q in detail.quants if q.label == "F16"))
            assert svc.downloads.jobs() == []

    asyncio.run(go())
    # The broken subscriber was reported where bugs are (and on purpose here).
    assert _listener_errors.records and "subscriber bug" in str(_listener_errors.records[0].exc_info[1])
    _listener_errors.records.clear()
