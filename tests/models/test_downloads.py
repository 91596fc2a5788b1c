"""Downloads into the hub cache over real loopback HTTP: resume, pause, corruption, gated, space."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.base.errors import ChecksumMismatchError, HubError, InsufficientSpaceError
from strata_gui.core.base.progress import Progress
from strata_gui.core.models.downloads import DownloadJob
from strata_gui.core.models.hub_config import SavedHubToken
from strata_gui.core.models.hub_errors import HubAuthError
from strata_gui.core.remote.secrets import FileSecretStore

REPO = "strata/test-llama-GGUF"


async def _job(svc: Any, repo: str = REPO, label: str = "Q4_K_M") -> DownloadJob:
    detail = await svc.detail(repo)
    quant = next(q for q in detail.quants if q.label == label)
    job: DownloadJob = svc.enqueue(detail, quant)
    return job


def test_download_lands_in_the_hub_cache_where_huggingface_hub_finds_it(
    hub: Any, make_service: Any, test_model: Path, tmp_path: Path
) -> None:
    seen: list[Progress] = []

    async def go() -> list[Path]:
        async with make_service(hub) as svc:
            job = await _job(svc)
            paths: list[Path] = await svc.download(job, seen.append)
            assert svc.pending_downloads() == []
            return paths

    paths = asyncio.run(go())
    assert paths[0].read_bytes() == test_model.read_bytes()
    assert seen[-1].done == seen[-1].total == test_model.stat().st_size and seen[-1].unit == "bytes"
    from huggingface_hub import hf_hub_download, scan_cache_dir

    cache = tmp_path / "hf-home" / "hub"
    found = hf_hub_download(REPO, "strata-test-llama-Q4_K_M.gguf", cache_dir=cache, local_files_only=True)
    assert Path(found) == paths[0]
    info = scan_cache_dir(cache)
    assert [r.repo_id for r in info.repos] == [REPO]
    (repo,) = info.repos
    assert repo.size_on_disk == test_model.stat().st_size and set(repo.refs) == {"main"}


def test_interrupted_download_resumes_after_a_restart(hub: Any, make_service: Any, test_model: Path) -> None:
    hub.state.cut_after["strata-test-llama-Q8_0.gguf"] = 3_000_000

    async def first() -> None:
        async with make_service(hub) as svc:
            job = await _job(svc, label="Q8_0")
            with pytest.raises(HubError, match="stopped at"):
                await svc.download(job, lambda p: None)
            assert svc.pending_downloads()[0].state == "failed"

    async def after_restart() -> Path:
        async with make_service(hub) as svc:
            (job,) = svc.pending_downloads()
            paths: list[Path] = await svc.download(job, lambda p: None)
            return paths[0]

    asyncio.run(first())
    path = asyncio.run(after_restart())
    assert path.read_bytes() == test_model.read_bytes()
    ranges = [h.get("Range") for m, p, h in hub.state.requests if m == "GET" and p.endswith("Q8_0.gguf")]
    assert ranges[-1] == "bytes=3000000-"


def test_pause_keeps_the_partial_file_and_resume_finishes(hub: Any, make_service: Any, test_model: Path) -> None:
    hub.state.chunk_delay = 0.02
    full_size = test_model.stat().st_size
    async def go() -> Path:
        async with make_service(hub) as svc:
            job = await _job(svc)

            def pause_early(p: Progress) -> None:
                if p.done > 1_000_000:
                    task.cancel()

            task = asyncio.ensure_future(svc.download(job, pause_early))
            with pytest.raises(asyncio.CancelledError):
                await task
            (paused,) = svc.pending_downloads()
            assert paused.state == "paused"
            partial = svc.downloader.partial_files(job)[0]
            assert 0 < partial.stat().st_size < full_size
            paths: list[Path] = await svc.download(paused, lambda p: None)
            return paths[0]

    assert asyncio.run(go()).read_bytes() == test_model.read_bytes()


def test_cancel_deletes_the_partial_file(hub: Any, make_service: Any) -> None:
    hub.state.chunk_delay = 0.02
    async def go() -> None:
        async with make_service(hub) as svc:
            job = await _job(svc)
            task = asyncio.ensure_future(svc.download(job, lambda p: task.cancel() if p.done > 500_000 else None))
            with pytest.raises(asyncio.CancelledError):
                await task
            partial = svc.downloader.partial_files(job)[0]
            assert partial.exists()
            svc.cancel_download(job)
            assert not partial.exists() and svc.pending_downloads() == []

    asyncio.run(go())


def test_corrupt_download_is_rejected_and_deleted(hub: Any, make_service: Any) -> None:
    hub.state.corrupt.add("strata-test-llama-F16.gguf")

    async def go() -> None:
        async with make_service(hub) as svc:
            job = await _job(svc, label="F16")
            with pytest.raises(ChecksumMismatchError, match="corrupted") as info:
                await svc.download(job, lambda p: None)
            assert "expected" in (info.value.details or "")
            assert not any(p.exists() for p in svc.downloader.partial_files(job))
            assert not list(svc.cache_dir.rglob("snapshots/*/*.gguf"))

    asyncio.run(go())


def test_split_set_downloads_as_one_unit(hub: Any, make_service: Any, split_model: list[Path]) -> None:
    seen: list[Progress] = []

    async def go() -> list[Path]:
        async with make_service(hub) as svc:
            job = await _job(svc, repo="strata/test-llama-split-GGUF", label="F16")
            assert len(job.files) == 3
            paths: list[Path] = await svc.download(job, seen.append)
            return paths

    paths = asyncio.run(go())
    assert [p.name for p in paths] == [p.name for p in split_model]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(paths, split_model, strict=True))
    assert {p.total for p in seen} == {sum(p.stat().st_size for p in split_model)}


def test_gated_repo_needs_a_token_saved_in_strata(hub: Any, make_service: Any, test_model: Path,
                                                   tmp_path: Path) -> None:
    async def go() -> Path:
        async with make_service(hub) as svc:
            job = await _job(svc, repo="strata/gated-llama-GGUF")
            with pytest.raises(HubAuthError, match="access token") as info:
                await svc.download(job, lambda p: None)
            assert "token" in (info.value.hint or "")
            svc.save_token(hub.state.token)
            paths: list[Path] = await svc.download(job, lambda p: None)
            return paths[0]

    assert asyncio.run(go()).read_bytes() == test_model.read_bytes()
    # Kept in Strata's user-only key store, not in the hub's shared token file.
    secrets = tmp_path / "strata-home" / "secrets.json"
    assert SavedHubToken(FileSecretStore(secrets)).get() == hub.state.token
    assert (secrets.stat().st_mode & 0o777) == 0o600
    assert not (tmp_path / "hf-home" / "token").exists()


def test_not_enough_space_is_reported_before_downloading(hub: Any, make_service: Any) -> None:
    async def go() -> None:
        async with make_service(hub, disk_free=lambda p: 50_000_000) as svc:
            job = await _job(svc)
            with pytest.raises(InsufficientSpaceError, match="Not enough disk space") as info:
                await svc.download(job, lambda p: None)
            # The margin is said: "needs 42.9 MiB, 59.7 MiB are free" read as a refusal for nothing.
            assert "plus 200.0 MiB that Strata keeps free" in info.value.message

    asyncio.run(go())
    assert not [p for m, p, h in hub.state.requests if m == "GET" and p.endswith("Q4_K_M.gguf")]


def test_server_errors_during_download(hub: Any, make_service: Any) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            job = await _job(svc)
            hub.state.fail_next.append(("Q4_K_M.gguf", 503))
            with pytest.raises(HubError, match="server error"):
                await svc.download(job, lambda p: None)
            hub.state.fail_next.append(("Q4_K_M.gguf", 429))
            with pytest.raises(HubError, match="rate-limiting"):
                await svc.download(job, lambda p: None)

    asyncio.run(go())


def test_a_download_that_cannot_fit_is_explained_in_chinese(hub: Any, make_service: Any, qapp: Any) -> None:
    """The same refusal, shown by the GUI in Chinese (its message and hint are core texts), with
    the sizes filled in; the CLI keeps the English sentence."""
    from strata_gui.ui.i18n import error_text, install_language

    async def go() -> InsufficientSpaceError:
        async with make_service(hub, disk_free=lambda p: 50_000_000) as svc:
            job = await _job(svc)
            with pytest.raises(InsufficientSpaceError) as info:
                await svc.download(job, lambda p: None)
            return info.value

    error = asyncio.run(go())
    assert error.message.startswith("Not enough disk space: the download needs ")
    assert install_language(qapp, "zh_CN") == "zh_CN"
    try:
        text = error_text(error)
    finally:
        install_language(qapp, "en")
    needed = error.message.split("needs ")[1].split(",")[0]
    assert text == (f"磁盘空间不足：下载需要 {needed}，另需 200.0 MiB 由 Strata 保留为空闲以免磁盘写满；可用 47.7 MiB。\n"
                    "请释放一些空间（在“模型库”标签页删除模型），或在设置中移动 hub 缓存。")
