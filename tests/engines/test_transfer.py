"""The bulk download path: the sink writes in order and stops at a full disk, progress arrives a few
times per second, and a download reuses its memory, through the fake GitHub on loopback."""

from __future__ import annotations

import asyncio
import hashlib
import io
import itertools
import os
import time
import typing
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.progress import Progress, RateMeter, no_progress
from strata_gui.core.engines.download import download_file
from strata_gui.core.net.transfer import PROGRESS_INTERVAL, FileSink, network_client, stream_to_sink
from tests.support.github_server import github_server


def _asset(tmp_path: Path, mib: int) -> tuple[Path, str]:
    src = tmp_path / "llama-b9999-bin-ubuntu-vulkan-x64.tar.gz"
    src.write_bytes(os.urandom(mib << 20))
    return src, hashlib.sha256(src.read_bytes()).hexdigest()


def test_progress_of_a_download_arrives_a_few_times_per_second(tmp_path: Path) -> None:
    src, sha = _asset(tmp_path, 8)
    seen: list[tuple[float, Progress]] = []

    def on_progress(p: Progress) -> None:
        seen.append((time.monotonic(), p))

    async def body(url: str) -> None:
        async with network_client(follow_redirects=True) as http:
            result = await download_file(http, url, tmp_path / "out.tar.gz", expected_size=src.stat().st_size,
                                         expected_sha256=sha, on_progress=on_progress)
        assert result.sha256 == sha and result.verified

    with github_server() as gh:
        gh.add_release("ggml-org/llama.cpp", "b9999", [src])
        gh.state.block_delay = 0.03  # 32 blocks of 256 KiB: a slow link of ~1 s
        asyncio.run(body(f"{gh.base}/ggml-org/llama.cpp/releases/download/b9999/{src.name}"))
    # First and last snapshots are forced; between them at least PROGRESS_INTERVAL passes.
    times = [t for t, _ in seen[:-1]]
    assert len(times) >= 3  # the bar moves while the bytes arrive
    assert all(b - a >= PROGRESS_INTERVAL * 0.99 for a, b in itertools.pairwise(times))
    assert seen[0][1].done == 0 and seen[-1][1].done == src.stat().st_size
    assert [p.done for _, p in seen] == sorted(p.done for _, p in seen)


def test_sink_on_a_full_disk_raises_and_writes_nothing_after_the_failure() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (a device that is always out of space)")
    written: list[int] = []

    class Full(io.RawIOBase):
        """/dev/full, counting what it was asked to write."""

        def __init__(self) -> None:
            self.dev = open("/dev/full", "wb", buffering=0)  # noqa: SIM115 (closed in close())

        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            written.append(len(data))
            return self.dev.write(data) or 0

        def close(self) -> None:
            self.dev.close()
            super().close()

    async def body(fh: BinaryIO) -> None:
        async with FileSink(fh, hashlib.sha256()) as sink:
            await sink.put([b"x" * 1024] * 4, 4096)
            while sink.error is None:  # the writer thread meets the full disk
                await asyncio.sleep(0.01)
            with pytest.raises(OSError):  # and the next batch is refused
                await sink.put([b"y" * 1024], 1024)
            assert sink.written == 0  # the failed block is not counted as written

    with Full() as fh, pytest.raises(OSError) as info:
        asyncio.run(body(typing.cast(BinaryIO, fh)))
    assert "No space" in str(info.value) or getattr(info.value, "errno", None) == 28
    assert written == [1024]  # nothing was tried after the failure


def test_cancel_mid_download_keeps_every_received_byte_in_order(tmp_path: Path) -> None:
    src, sha = _asset(tmp_path, 8)
    part = tmp_path / "out.tar.gz.part"

    async def body(url: str) -> None:
        async with network_client(follow_redirects=True) as http:
            task = asyncio.ensure_future(download_file(
                http, url, tmp_path / "out.tar.gz", expected_size=src.stat().st_size, expected_sha256=sha,
                on_progress=no_progress))
            while not part.exists() or part.stat().st_size < (1 << 20):
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    with github_server() as gh:
        gh.add_release("ggml-org/llama.cpp", "b9999", [src])
        gh.state.block_delay = 0.02
        asyncio.run(body(f"{gh.base}/ggml-org/llama.cpp/releases/download/b9999/{src.name}"))
        kept = part.read_bytes()
    assert 0 < len(kept) < src.stat().st_size
    assert kept == src.read_bytes()[:len(kept)]


def test_stream_to_sink_counts_what_arrived(tmp_path: Path) -> None:
    src, sha = _asset(tmp_path, 3)
    out = tmp_path / "copy.bin"

    async def body(url: str) -> int:
        h = hashlib.sha256()
        async with network_client(follow_redirects=True) as http, http.stream("GET", url) as resp:
            with open(out, "wb") as fh:  # noqa: ASYNC230 (opening is instant)
                async with FileSink(fh, h) as sink:
                    n = await stream_to_sink(resp, sink, RateMeter(None, no_progress))
        assert h.hexdigest() == sha
        return n

    with github_server() as gh:
        gh.add_release("ggml-org/llama.cpp", "b9999", [src])
        n = asyncio.run(body(f"{gh.base}/ggml-org/llama.cpp/releases/download/b9999/{src.name}"))
    assert n == src.stat().st_size and out.read_bytes() == src.read_bytes()


def test_download_into_an_unwritable_folder_is_a_storage_error(tmp_path: Path) -> None:
    src, sha = _asset(tmp_path, 1)
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")

    async def body(url: str) -> None:
        async with network_client(follow_redirects=True) as http:
            await download_file(http, url, blocker / "out.tar.gz", expected_size=src.stat().st_size,
                                expected_sha256=sha, on_progress=no_progress)

    with github_server() as gh:
        gh.add_release("ggml-org/llama.cpp", "b9999", [src])
        with pytest.raises(StorageError):
            asyncio.run(body(f"{gh.base}/ggml-org/llama.cpp/releases/download/b9999/{src.name}"))
