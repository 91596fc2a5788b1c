"""Engine fetcher throughput over loopback vs a raw httpx stream of the same file, and resume cost.

Run: ``.venv/bin/python bench/engine_download.py [--size-mb 200] [--rounds 3]``

Prints:
- raw httpx stream rate (a stock ``httpx.AsyncClient``, read and discard), the fetcher's rate (write + SHA-256 while
  streaming, through the same fake GitHub 302 redirect, on the app's client), and their ratio (goal >= 0.9);
- the rate of writing + hashing the same bytes with no network, since over loopback the disk
  can be slower than the socket, and the fetcher's ratio against the slower of the two;
- for a download cut at 40 %: bytes the resume re-sent beyond the missing remainder (goal 0);
- CPU seconds this process spent per GB for the raw stream and the fetcher (all threads). Unlike
  the rates, this does not swing with what else runs on the machine: on a busy machine the
  fetcher can only keep up with the raw stream if it costs about as much CPU per byte.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_gui.core.base.errors import EngineDownloadError
from strata_gui.core.base.progress import no_progress
from strata_gui.core.engines.download import download_file
from strata_gui.core.net.transfer import network_client
from tests.support.github_server import github_server

SERVE = """
import sys
from pathlib import Path
from tests.support.github_server import github_server
with github_server() as gh:
    gh.add_release("ggml-org/llama.cpp", "b9999", [Path(sys.argv[1])])
    print(gh.base, flush=True)
    sys.stdin.read()
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(run: Coroutine[Any, Any, float]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of ``asyncio.run(run)``."""
    c0 = _cpu()
    wall = asyncio.run(run)
    return wall, _cpu() - c0


async def raw_stream(url: str) -> float:
    async with httpx.AsyncClient(follow_redirects=True, timeout=60) as http:
        t0 = time.perf_counter()
        async with http.stream("GET", url) as resp:
            async for _chunk in resp.aiter_raw():
                pass
        return time.perf_counter() - t0


async def fetcher(url: str, dest: Path, size: int, sha: str) -> float:
    # The app's client (core.transfer.network_client, as build_app_services makes it).
    async with network_client(follow_redirects=True, timeout=60) as http:
        t0 = time.perf_counter()
        await download_file(http, url, dest, expected_size=size, expected_sha256=sha, on_progress=no_progress)
        return time.perf_counter() - t0


async def resume_cost(gh_state: object, url: str, dest: Path, size: int, sha: str) -> tuple[int, int]:
    state = gh_state
    state.cut_after = int(size * 0.4)  # type: ignore[attr-defined]
    async with httpx.AsyncClient(follow_redirects=True, timeout=60) as http:
        try:
            await download_file(http, url, dest, expected_size=size, expected_sha256=sha, on_progress=no_progress)
        except EngineDownloadError:
            pass
        part = dest.with_name(dest.name + ".part")
        have = part.stat().st_size
        before = state.body_bytes_sent  # type: ignore[attr-defined]
        result = await download_file(http, url, dest, expected_size=size, expected_sha256=sha,
                                     on_progress=no_progress)
        sent = state.body_bytes_sent - before  # type: ignore[attr-defined]
        assert result.sha256 == sha
        return sent - (size - have), have


def local_floor(src: Path, dest: Path) -> float:
    """Seconds to write + hash the same bytes with no network at all (what the disk allows)."""
    data = src.read_bytes()
    t0 = time.perf_counter()
    h = hashlib.sha256()
    with open(dest, "wb") as fh:
        for i in range(0, len(data), 1 << 20):
            block = data[i:i + (1 << 20)]
            fh.write(block)
            h.update(block)
    elapsed = time.perf_counter() - t0
    dest.unlink()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        src = d / "llama-b9999-bin-ubuntu-vulkan-x64.tar.gz"
        with open(src, "wb") as fh:
            for _ in range(args.size_mb):
                fh.write(os.urandom(1 << 20))
        sha = hashlib.sha256(src.read_bytes()).hexdigest()
        size = src.stat().st_size
        # Throughput: the server runs in its own process, as GitHub's CDN is not in ours.
        server = subprocess.Popen([sys.executable, "-c", SERVE, str(src)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            assert server.stdout is not None
            base = server.stdout.readline().strip()
            url = f"{base}/ggml-org/llama.cpp/releases/download/b9999/{src.name}"
            raw_t, fetch_t, raw_cpu, fetch_cpu = [], [], [], []
            for _ in range(args.rounds):  # interleaved so both see the same machine load
                wall, cpu = timed(raw_stream(url))
                raw_t.append(wall)
                raw_cpu.append(cpu)
                (d / "out.tar.gz").unlink(missing_ok=True)
                wall, cpu = timed(fetcher(url, d / "out.tar.gz", size, sha))
                fetch_t.append(wall)
                fetch_cpu.append(cpu)
            raw_best, fetch_best = min(raw_t), min(fetch_t)
            floor_best = min(local_floor(src, d / "floor.bin") for _ in range(args.rounds))
        finally:
            server.communicate("", timeout=30)
        # Resume: in-process server, whose counters tell what crossed the wire.
        with github_server() as gh:
            gh.add_release("ggml-org/llama.cpp", "b9999", [src])
            url = f"{gh.base}/ggml-org/llama.cpp/releases/download/b9999/{src.name}"
            extra, had = asyncio.run(resume_cost(gh.state, url, d / "resume.tar.gz", size, sha))
    mb = size / 1e6
    print(f"file: {mb:.0f} MB over loopback, best of {args.rounds}")
    print(f"raw httpx stream:            {mb / raw_best:8.1f} MB/s")
    print(f"fetcher (write + sha256):    {mb / fetch_best:8.1f} MB/s")
    print(f"ratio fetcher / raw:         {raw_best / fetch_best:8.2f}  (goal >= 0.9)")
    print(f"disk write + sha256 alone:   {mb / floor_best:8.1f} MB/s (no network: the ceiling on this disk)")
    print(f"fetcher / min(raw, disk):    {max(raw_best, floor_best) / fetch_best:8.2f}")
    print(f"resume after cut at {had / 1e6:.0f} MB: bytes re-sent beyond the remainder = {extra}")
    gb = size / 1e9
    print(f"CPU per GB (this process, min of {args.rounds}): raw {min(raw_cpu) / gb:.2f} s, "
          f"fetcher {min(fetch_cpu) / gb:.2f} s (ratio raw/fetcher {min(raw_cpu) / min(fetch_cpu):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
