"""``/metrics`` scrape time with 20 models and 10,000 recorded requests (goal: <= 20 ms).

Run: ``.venv/bin/python bench/metrics_scrape.py [--models 20] [--requests 10000] [--scrapes 50]``

A real :class:`~strata_gui.core.serve.server.ApiServer` on loopback, over a router that lists
``--models`` models, all loaded (no engine: a scrape never reaches one); ``--requests`` finished
requests go through the same path as real ones (the activity list, then the metrics). Each scrape
is a real HTTP GET with a kept-alive httpx client, parsed with Prometheus' own parser once to
check it. Prints the median and the 95th percentile.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
from prometheus_client.parser import text_string_to_metric_families

from strata_gui.core.serve.activity import Trace
from strata_gui.core.serve.records import ApiRequest
from strata_gui.core.serve.router import LoadedModel, ServedModel, Upstream
from strata_gui.core.serve.server import ApiServer


class ListedModels:
    """A router with ``n`` models, all loaded; it lends nothing (a scrape never borrows)."""

    def __init__(self, n: int) -> None:
        self._models = [ServedModel(f"acme/Model-{i:02d}-GGUF:Q4_K_M", "text", Path(f"/m/{i}.gguf"), 4 << 30, 0.0)
                        for i in range(n)]

    def models(self) -> Sequence[ServedModel]:
        return self._models

    async def refresh(self) -> None:
        return None

    @asynccontextmanager
    async def borrow(self, model_id: str, *, kind: str | None = None,
                     keep_alive: float | None = None) -> AsyncIterator[Upstream]:
        raise NotImplementedError("the scrape bench lends no engine")
        yield  # pragma: no cover

    def loaded(self) -> Sequence[LoadedModel]:
        return [LoadedModel(m, 5 << 30, 0, 1.0, 300.0, "ROCm", 5 << 30, 8192) for m in self._models]

    async def unload(self, model_id: str) -> None:
        return None


def record(server: ApiServer, models: Sequence[ServedModel], n: int) -> None:
    """``n`` finished requests, spread over the models and the three APIs, as the server ends them."""
    ctx = server.ctx
    paths = ("/v1/chat/completions", "/api/chat", "/v1/messages")
    for i in range(n):
        m = models[i % len(models)]
        trace = Trace(started=ctx.clock() - 0.5, client="127.0.0.1", method="POST", path=paths[i % 3], model=m.id,
                      wait_s=0.01 * (i % 7))
        up = Upstream("http://127.0.0.1:1", "", m, frozenset())
        trace.stats = ApiRequest(paths[i % 3], 200, up, True, 100 + i % 900, None, 10 + i % 500, 900.0, 40.0,
                                 0.05 + (i % 50) / 100)
        entry = ctx.activity.end(trace, 200 if i % 20 else 500)
        assert ctx.metrics is not None
        ctx.metrics.observe(entry)


async def _scrape(http: httpx.AsyncClient, url: str) -> float:
    t = time.perf_counter()
    r = await http.get(url)
    elapsed = time.perf_counter() - t
    assert r.status_code == 200
    return elapsed


async def main(models: int, requests: int, scrapes: int) -> None:
    router = ListedModels(models)
    server = ApiServer(router, port=0)
    await server.start()
    try:
        record(server, router.models(), requests)
        url = f"http://127.0.0.1:{server.port}/metrics"
        async with httpx.AsyncClient(trust_env=False) as http:
            text = (await http.get(url)).text
            families = {f.name: f for f in text_string_to_metric_families(text)}
            total = sum(s.value for s in families["strata_requests"].samples if s.name == "strata_requests_total")
            assert total == requests and len(families["strata_model_memory_bytes"].samples) == models
            steady = [await _scrape(http, url) for _ in range(scrapes)]
            changed = []
            for _ in range(scrapes):
                record(server, router.models(), 3 * models)  # every (model, API) series changed since the last
                changed.append(await _scrape(http, url))
        print(f"/metrics with {models} models and {requests} recorded requests: {len(text) // 1024} KiB, "
              f"{len(text.splitlines())} lines")
        for what, times in (("nothing new", steady), ("every series changed", changed)):
            times.sort()
            print(f"  scrape, {what} (HTTP GET, {scrapes} times): median {statistics.median(times) * 1000:.1f} ms, "
                  f"p95 {times[int(len(times) * 0.95) - 1] * 1000:.1f} ms  (goal <= 20 ms)")
    finally:
        await server.stop(1.0)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--scrapes", type=int, default=50)
    args = ap.parse_args()
    asyncio.run(main(args.models, args.requests, args.scrapes))
