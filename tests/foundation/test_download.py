"""The one resumable downloader (engine installs and model downloads), at its edges: a part on disk
that cannot be the file's start, a server that ignores Range, a part that already is the whole
file, and a digest that does not match. Real HTTP over loopback."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import StrataError
from strata_gui.core.base.progress import Progress, RateMeter
from strata_gui.core.net.download import Fetch, FetchResult, fetch
from tests.models.test_hostile_hub import BODY, Behaviour, serve
from tests.support.github_server import github_server


def _fetch(job: Fetch, seen: list[Progress] | None = None) -> FetchResult:
    async def go() -> FetchResult:
        have = job.partial.stat().st_size if job.partial.exists() else 0
        meter = RateMeter(job.size, (seen if seen is not None else []).append,
                          start=have if job.size is None or have <= job.size else 0)
        async with httpx.AsyncClient() as client:
            result = await fetch(client, job, meter)
        meter.finish()
        return result

    return asyncio.run(go())


def _release(tmp_path: Path, gh: object) -> tuple[Path, str, str]:
    src = tmp_path / "asset.bin"
    src.write_bytes(os.urandom(300_000))
    gh.add_release("ggml-org/llama.cpp", "b1", [src])  # type: ignore[attr-defined]
    url = f"{gh.base}/ggml-org/llama.cpp/releases/download/b1/{src.name}"  # type: ignore[attr-defined]
    return src, url, hashlib.sha256(src.read_bytes()).hexdigest()


def test_a_part_longer_than_the_file_is_discarded_not_kept_forever(tmp_path: Path) -> None:
    """A part longer than the file (left by another version of it) cannot be its start: the
    download starts over instead of failing on every resume."""
    with github_server() as gh:
        src, url, sha = _release(tmp_path, gh)
        dest = tmp_path / "out" / "asset.bin"
        job = Fetch(url, dest, dest.with_name("asset.bin.part"), src.stat().st_size, sha)
        dest.parent.mkdir()
        job.partial.write_bytes(b"x" * (src.stat().st_size + 10))
        result = _fetch(job)
        assert gh.state.ranges_seen == []  # asked from byte 0
    assert result.verified and result.resumed_from == 0 and dest.read_bytes() == src.read_bytes()
    assert not job.partial.exists()


def test_a_server_that_ignores_range_restarts_the_file_and_the_bar(tmp_path: Path) -> None:
    b = Behaviour()  # answers every GET with the whole body (200), whatever the Range
    seen: list[Progress] = []
    dest = tmp_path / "asset.zip"
    job = Fetch("", dest, tmp_path / "asset.zip.part", len(BODY), hashlib.sha256(BODY).hexdigest())
    job.partial.write_bytes(b"not the start of the file")
    with serve(b) as base:
        result = _fetch(Fetch(f"{base}/asset.zip", job.dest, job.partial, job.size, job.sha256), seen)
    assert b.seen[-1][2].get("Range") == "bytes=25-"
    assert result.resumed_from == 0 and result.received == len(BODY) and dest.read_bytes() == BODY
    assert seen[-1].done == len(BODY)  # the 25 bytes counted before are taken back, not counted twice


def test_a_part_that_is_the_whole_file_is_verified_and_kept(tmp_path: Path) -> None:
    """Size unknown, part complete: the server answers 416 to the resume, nothing is sent again,
    and the digest of what is on disk decides."""
    with github_server() as gh:
        src, url, sha = _release(tmp_path, gh)
        dest = tmp_path / "out.bin"
        job = Fetch(url, dest, tmp_path / "out.bin.part", None, sha)
        job.partial.write_bytes(src.read_bytes())
        result = _fetch(job)
        assert gh.state.ranges_seen == [f"bytes={src.stat().st_size}-"]
    assert result.verified and result.received == 0 and result.resumed_from == src.stat().st_size
    assert dest.read_bytes() == src.read_bytes()


def test_a_wrong_digest_deletes_the_part_and_says_so(tmp_path: Path) -> None:
    with github_server() as gh:
        src, url, _ = _release(tmp_path, gh)
        dest = tmp_path / "out.bin"
        job = Fetch(url, dest, tmp_path / "out.bin.part", src.stat().st_size, "0" * 64)
        with pytest.raises(StrataError, match="does not match its checksum") as info:
            _fetch(job)
    assert "expected sha256 " + "0" * 64 in (info.value.details or "")
    assert not job.partial.exists() and not dest.exists()
