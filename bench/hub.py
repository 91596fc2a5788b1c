"""Model browser speed against the loopback hub, as ratios to raw httpx in the same run.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/hub.py [--size-mb 128] [--rounds 3] [--searches 20]``

Prints:
- search latency: raw ``httpx`` GET of the search URL vs ``ModelService.search`` (parse included)
  vs search-to-rendered on the real ``ModelsPage`` (offscreen, qasync loop); ratios raw/ours;
- download throughput: raw ``httpx`` stream of the file (read and discard) vs
  ``ModelService.download`` (HEAD, write into the hub cache, SHA-256 while streaming, verify,
  link); ratio ours/raw, and ours against the slower of raw and a local write + SHA-256 of the
  same bytes (over loopback the disk and the hash, not the network, are the ceiling).
The hub runs in a separate process so its Python threads do not share our GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_gui.core.base.progress import no_progress
from strata_gui.core.models.downloads import DownloadJob
from strata_gui.core.models.fit import GIB, MemoryTarget
from strata_gui.core.models.hub_config import HubTokens, SavedHubToken
from strata_gui.core.models.service import ModelService
from strata_gui.core.net.transfer import network_client
from strata_gui.core.remote.secrets import FileSecretStore

SERVE = """
import sys, time
from pathlib import Path
from tests.support.hub_server import HubRepo, running_hub
big = Path(sys.argv[1])
repos = [HubRepo("bench/big-GGUF", {"big-Q4_K_M.gguf": big}, downloads=10**6)]
repos += [HubRepo(f"bench/model-{i:03d}-GGUF", {"README.md": b"x"}, downloads=i) for i in range(200)]
with running_hub(repos) as hub:
    print(hub.url, flush=True)
    sys.stdin.read()
"""


def _service(client: httpx.AsyncClient, url: str, home: Path) -> ModelService:
    return ModelService(
        client=client, endpoint=url, cache_dir=home / "hub", queue_file=home / "downloads.json",
        token_store=HubTokens(SavedHubToken(FileSecretStore(home / "secrets.json")), environ={}), model_dirs=[],
        memory_target=lambda: MemoryTarget("bench", 8 * GIB), ram_bytes=32 * GIB,
    )


async def _search_bench(url: str, home: Path, n: int) -> tuple[float, float]:
    async with httpx.AsyncClient(timeout=30) as client:
        svc = _service(client, url, home)
        try:
            first = await svc.search("model", "downloads")
            assert first.items
            raw_url = f"{url}/api/models?filter=gguf&search=model&sort=downloads&limit=30"
            raw, ours = [], []
            await client.get(raw_url)  # warm-up
            for i in range(n):
                for step in ((0, 1) if i % 2 else (1, 0)):
                    t = time.perf_counter()
                    if step == 0:
                        (await client.get(raw_url)).json()
                        raw.append(time.perf_counter() - t)
                    else:
                        await svc.search("model", "downloads")
                        ours.append(time.perf_counter() - t)
            return statistics.median(raw), statistics.median(ours)
        finally:
            await svc.aclose()


def _rendered_search(url: str, home: Path, n: int) -> float:
    from PySide6.QtWidgets import QApplication

    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.event_loop import new_event_loop
    from strata_gui.ui.pages.models_page import ModelsPage

    app = QApplication.instance() or QApplication([])
    loop = new_event_loop(app)
    client = httpx.AsyncClient(timeout=30)
    svc = _service(client, url, home)
    bridge = AsyncBridge()
    page = ModelsPage(svc, bridge)
    page.resize(1200, 800)
    page.show()
    times = []
    try:
        for i in range(n):
            page.search_box.blockSignals(True)
            page.search_box.setText("model" if i % 2 else "model-1")
            page.search_box.blockSignals(False)
            t = time.perf_counter()
            page.start_search()
            handle = page.search_handle
            assert handle is not None
            loop.run_until_complete(handle.wait())
            app.processEvents()  # paint the new rows
            times.append(time.perf_counter() - t)
            assert page.hit_ids()
    finally:
        loop.run_until_complete(bridge.shutdown())
        page.close()
        loop.run_until_complete(client.aclose())
        loop.run_until_complete(svc.aclose())
        loop.close()
        asyncio.set_event_loop(None)
    return statistics.median(times)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _download_bench(url: str, home: Path, rounds: int, size: int) -> tuple[float, float, float, float]:
    """Median rates (raw, ours) in bytes/s and least CPU seconds per GB (raw, ours), all threads."""
    file_url = f"{url}/bench/big-GGUF/resolve/main/big-Q4_K_M.gguf"
    raw_rates: list[float] = []
    our_rates: list[float] = []
    raw_cpu: list[float] = []
    our_cpu: list[float] = []
    # Raw: a stock httpx client. Ours: the client build_app_services gives ModelService.
    async with httpx.AsyncClient(timeout=60) as client, network_client(timeout=60) as app_client:

        async def raw() -> None:
            t, c = time.perf_counter(), _cpu()
            got = 0
            async with client.stream("GET", file_url) as resp:
                async for chunk in resp.aiter_bytes():
                    got += len(chunk)
            raw_rates.append(got / (time.perf_counter() - t))
            raw_cpu.append((_cpu() - c) / (got / 1e9))

        async def ours(r: int) -> None:
            svc = _service(app_client, url, home / f"round-{r}")
            try:
                detail = await svc.detail("bench/big-GGUF")
                job = DownloadJob.for_quant(detail.repo_id, detail.commit, detail.quants[0])
                t, c = time.perf_counter(), _cpu()
                await svc.download(job, no_progress)
                our_rates.append(size / (time.perf_counter() - t))
                our_cpu.append((_cpu() - c) / (size / 1e9))
            finally:
                await svc.aclose()
                # Each round's copy goes, as bench/engine_download.py's does: on this VM, writing
                # into memory the guest has not touched lately costs ~10x the system time (new
                # 128 MB files: 3.7 GB/s for the first 256 MB, then ~350 MB/s), which would charge
                # later rounds for the earlier ones' files. The raw side writes nothing.
                shutil.rmtree(home / f"round-{r}", ignore_errors=True)

        await raw()  # warm-up: page cache and server, not counted
        raw_rates.clear()
        raw_cpu.clear()
        for r in range(rounds):
            # Alternate the order so neither side always runs on a warmer system.
            if r % 2:
                await ours(r)
                await raw()
            else:
                await raw()
                await ours(r)
    return statistics.median(raw_rates), statistics.median(our_rates), min(raw_cpu), min(our_cpu)


def _local_write_hash(src: Path, dst: Path, rounds: int) -> float:
    """Best rate of writing + SHA-256 of the same bytes with no network (the disk/CPU ceiling).

    The bytes are in memory first and go out in 1 MiB blocks, as the app's sink gets them from the
    network (the same floor as bench/engine_download.py): reading the source file in the timed loop
    would charge the ceiling for a read the download never does.
    """
    import hashlib

    data = memoryview(src.read_bytes())
    best = 0.0
    for _ in range(rounds):
        sha = hashlib.sha256()
        t = time.perf_counter()
        with open(dst, "wb") as fout:
            for i in range(0, len(data), 1 << 20):
                block = data[i:i + (1 << 20)]
                fout.write(block)
                sha.update(block)
        best = max(best, len(data) / (time.perf_counter() - t))
        dst.unlink()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size-mb", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--searches", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        big = home / "big.gguf"
        with open(big, "wb") as fh:
            for _ in range(args.size_mb):
                fh.write(os.urandom(1024 * 1024))
        proc = subprocess.Popen([sys.executable, "-c", SERVE, str(big)], cwd=ROOT, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            raw_s, ours_s = asyncio.run(_search_bench(url, home / "s", args.searches))
            rendered = _rendered_search(url, home / "r", args.searches)
            print(f"search latency (median of {args.searches}): raw httpx {raw_s * 1000:.1f} ms, "
                  f"ModelService.search {ours_s * 1000:.1f} ms (ratio raw/ours {raw_s / ours_s:.2f}), "
                  f"search-to-rendered page {rendered * 1000:.1f} ms (ratio raw/rendered {raw_s / rendered:.2f})")
            raw_d, ours_d, raw_c, ours_c = asyncio.run(_download_bench(url, home / "d", args.rounds, big.stat().st_size))
            local = _local_write_hash(big, home / "copy.bin", args.rounds)
            ceiling = min(raw_d, local)
            print(f"download {args.size_mb} MB (median of {args.rounds}): raw httpx stream {raw_d / 1e6:.0f} MB/s, "
                  f"ModelService.download {ours_d / 1e6:.0f} MB/s (write + SHA-256 + verify), "
                  f"ratio ours/raw {ours_d / raw_d:.2f}; write+hash without network {local / 1e6:.0f} MB/s, "
                  f"ratio ours/min(raw, local) {ours_d / ceiling:.2f}")
            print(f"download CPU per GB (this process, all threads, least of {args.rounds}): raw {raw_c:.2f} s, "
                  f"ours {ours_c:.2f} s (ours pays SHA-256 + the write on top; raw/ours {raw_c / ours_c:.2f})")
        finally:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(10)


if __name__ == "__main__":
    main()
