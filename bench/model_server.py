"""The model server's goals of issue 46, as ratios against a baseline measured in the same run.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/model_server.py [--size-mb 256] [--rounds 3]
[--passages 100] [--only pull|rerank]``

- pull: Ollama's ``/api/pull`` (the real ``ollama`` client, streamed progress) vs ``strata models
  pull``'s path (the model service's detail, quant choice and download) of the same file from
  the loopback hub, each round deleting the file again; goal: API/CLI speed >= 0.95. The hub runs
  in its own process so its threads do not share our GIL.
- rerank: ``/v1/rerank`` of N passages through Strata's server vs the same request sent straight
  to the llama-server the pool started for it (the same process, so only the server's own work
  differs); interleaved pairs, median of per-pair ratios; goal >= 0.95.
The ``/metrics`` scrape is bench/metrics_scrape.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HOME = Path(tempfile.mkdtemp(prefix="strata-bench-server-"))
os.environ["STRATA_HOME"] = str(HOME / "home")
os.environ["HF_HUB_CACHE"] = str(HOME / "hf" / "hub")
os.environ["HF_HOME"] = str(HOME / "hf")

import httpx
import ollama

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.base.progress import no_progress
from strata_gui.core.config.services import build_services
from tests.support import gguf_model
from tests.support.engines import free_port, locate

REPO = "bench/big-GGUF"
SERVE_HUB = """
import sys
from pathlib import Path
from tests.support.hub_server import HubRepo, running_hub
with running_hub([HubRepo("bench/big-GGUF", {"big-Q4_K_M.gguf": Path(sys.argv[1])})]) as hub:
    print(hub.url, flush=True)
    sys.stdin.read()
"""


async def _app(models: Path, hub_url: str = "") -> tuple[AppServices, str]:
    app = build_app_services(build_services())
    app.settings.update(model_dirs=[str(models)], serve_port=free_port(), hub_endpoint=hub_url,
                        engine_memory_mb=4096)
    await app.prepare()
    await app.engines.add_local(locate().cpu_dir, "cpu")
    url = await app.serve.start()
    return app, url.removesuffix("/v1")


async def _cli_pull(app: AppServices) -> float:
    svc = app.models
    t = time.perf_counter()
    detail = await svc.detail(REPO)
    quant = await svc.choose_quant(detail, "Q4_K_M")
    await svc.download(svc.enqueue(detail, quant), no_progress)
    return time.perf_counter() - t


async def _api_pull(root: str) -> float:
    async with ollama.AsyncClient(host=root) as o:
        t = time.perf_counter()
        lines = [p async for p in await o.pull(f"hf.co/{REPO}:Q4_K_M", stream=True)]
        elapsed = time.perf_counter() - t
    assert lines[-1].status == "success", lines[-1]
    return elapsed


async def _forget(app: AppServices) -> None:
    for entry in await app.models.scan_library():
        if entry.repo_id == REPO:
            await app.models.delete(entry)


def start_hub(size_mb: int) -> tuple[subprocess.Popen[str], str]:
    """The loopback hub in its own process, serving a ``size_mb`` file; (process, its URL)."""
    big = HOME / "big-Q4_K_M.gguf"
    with big.open("wb") as f:
        for _ in range(size_mb):
            f.write(os.urandom(1024 * 1024))
    hub = subprocess.Popen([sys.executable, "-c", SERVE_HUB, str(big)], cwd=ROOT, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    assert hub.stdout is not None
    return hub, hub.stdout.readline().strip()


async def bench_pull(url: str, size_mb: int, rounds: int) -> None:
    (HOME / "models-pull").mkdir(exist_ok=True)
    app, root = await _app(HOME / "models-pull", url)
    try:
        cli: list[float] = []
        api: list[float] = []
        for i in range(rounds):
            for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                await _forget(app)
                (cli if which == 0 else api).append(await (_cli_pull(app) if which == 0 else _api_pull(root)))
        c, a = statistics.median(cli), statistics.median(api)
        mb = size_mb
        print(f"pull {mb} MiB from the loopback hub, {rounds} rounds (median):")
        print(f"  strata models pull path: {c:.2f} s ({mb / c:.0f} MiB/s)")
        print(f"  /api/pull (ollama client): {a:.2f} s ({mb / a:.0f} MiB/s)")
        print(f"  ratio /api/pull speed vs CLI: {c / a:.3f}  (goal >= 0.95)")
    finally:
        await app.aclose()


async def _timed_post(http: httpx.AsyncClient, url: str, body: dict[str, object], key: str = "") -> float:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    t = time.perf_counter()
    r = await http.post(url, json=body, headers=headers)
    elapsed = time.perf_counter() - t
    assert r.status_code == 200, r.text
    return elapsed


async def bench_rerank(passages: int, rounds: int) -> None:
    models = HOME / "models-rerank"
    models.mkdir(exist_ok=True)
    gguf_model.write_model(models / "rerank-Q8_0.gguf", gguf_model.ModelSpec(**gguf_model.RERANKER_SPEC_ARGS))
    app, root = await _app(models)
    docs = [f"Passage {i}: " + " ".join(["lighthouse", "keeper", "storm", "ship", "harbour"][j % 5]
                                         for j in range(i % 7 + 12)) for i in range(passages)]
    body: dict[str, object] = {"model": "rerank-Q8_0", "query": "a storm at the lighthouse", "documents": docs}
    try:
        async with httpx.AsyncClient(trust_env=False, timeout=600) as http:
            await _timed_post(http, root + "/v1/rerank", body)  # loads the engine (not timed)
            [engine] = app.pool.engines()
            direct_url, key = engine.base_url + "/v1/rerank", engine.server.api_key
            ratios, strata_t, direct_t = [], [], []
            for i in range(rounds):
                pair = {}
                for which in (("direct", "strata") if i % 2 == 0 else ("strata", "direct")):
                    url, k = (direct_url, key) if which == "direct" else (root + "/v1/rerank", "")
                    pair[which] = await _timed_post(http, url, body, k)
                direct_t.append(pair["direct"])
                strata_t.append(pair["strata"])
                ratios.append(pair["direct"] / pair["strata"])
        print(f"rerank of {passages} passages, {rounds} interleaved pairs (median):")
        print(f"  llama-server directly: {statistics.median(direct_t) * 1000:.0f} ms")
        print(f"  through Strata (/v1/rerank): {statistics.median(strata_t) * 1000:.0f} ms")
        print(f"  ratio Strata speed vs direct: {statistics.median(ratios):.3f}  (goal >= 0.95)")
    finally:
        await app.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passages", type=int, default=100)
    ap.add_argument("--only", choices=("pull", "rerank"))
    args = ap.parse_args()
    if args.only in (None, "pull"):
        hub, url = start_hub(args.size_mb)
        try:
            asyncio.run(bench_pull(url, args.size_mb, args.rounds))
        finally:
            assert hub.stdin is not None
            hub.stdin.close()
            hub.wait(10)
    if args.only in (None, "rerank"):
        asyncio.run(bench_rerank(args.passages, max(args.rounds, 5)))


if __name__ == "__main__":
    main()
