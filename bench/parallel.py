"""Several requests on one model at once: the pool's parallel slots, through Strata's model server.

Three measures on one real engine (the CPU test engine by default, ``--engine DIR`` for another
build), the chat service and the local API wired as the app wires them, in one process:

* **first token while another streams**: the time to the first streamed token of a short OpenAI
  request through the local API on an idle engine, and the same request sent while the chat
  streams a long reply from the same model. Goal: busy / idle <= 1.5 (with one slot the request
  waited for the whole long reply).
* **4 streams vs 1**: the total decode rate of 4 concurrent streamed requests (tokens of all four
  over the time from the first request to the last token) against one request alone. Goal: >= 1.0
  on 2 CPU cores, >= 2.5 on a GPU.
* each figure as the median of ``--reps`` repetitions, idle and busy interleaved.

``--slots 1`` runs the same with one slot per engine (what the pool did before it had slots); the
busy request's first token then waits for the long reply.

Usage: python bench/parallel.py [--engine DIR] [--model FILE] [--reps 5] [--slots 4] [--tokens 128] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
from strata_gui.core.pool import EnginePool
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.engine import Backend, EngineSpec
from strata_gui.core.runtime.supervisor import ServerSupervisor
from strata_gui.core.serve.service import ServeService
from tests.support.engines import bench_engine_and_model
from tests.support.pool import library_router

PROMPT = [{"role": "user", "content": "Write a short poem about the sea."}]


@dataclass
class Figures:
    idle_ttft_s: list[float]
    busy_ttft_s: list[float]
    one_stream_tps: list[float]
    four_streams_tps: list[float]

    def summary(self) -> dict[str, float]:
        med = statistics.median
        return {
            "idle_ttft_ms": 1000 * med(self.idle_ttft_s),
            "busy_ttft_ms": 1000 * med(self.busy_ttft_s),
            "busy_vs_idle": med(b / i for b, i in zip(self.busy_ttft_s, self.idle_ttft_s, strict=True)),
            "one_stream_tps": med(self.one_stream_tps),
            "four_streams_tps": med(self.four_streams_tps),
            "four_vs_one": med(f / o for f, o in zip(self.four_streams_tps, self.one_stream_tps, strict=True)),
        }


async def stream(http: httpx.AsyncClient, root: str, tokens: int) -> tuple[float, int, float]:
    """One streamed OpenAI request through the local API: (seconds to the first token, tokens,
    seconds to the last)."""
    body = {"messages": PROMPT, "max_tokens": tokens, "seed": 7, "temperature": 1.0, "stream": True,
            "ignore_eos": True}
    start = time.perf_counter()
    first, count = 0.0, 0
    async with http.stream("POST", root + "/v1/chat/completions", json=body) as resp:
        resp.raise_for_status()
        async for line in resp.aiter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:]).get("choices") or []
                if choices and (choices[0].get("delta") or {}).get("content"):
                    count += 1
                    first = first or time.perf_counter() - start
    return first, count, time.perf_counter() - start


async def busy_ttft(chat: ChatService, http: httpx.AsyncClient, root: str) -> float:
    """The short request's first token while the chat streams a long reply from the same model."""
    conv = chat.new_conversation()
    chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=100_000, seed=1))
    streaming = asyncio.Event()
    unsubscribe = chat.events.subscribe(lambda e: streaming.set() if type(e).__name__ == "MessageDelta" else None)
    reply = asyncio.create_task(chat.send(conv.id, "Tell me a very long story."))
    try:
        await asyncio.wait_for(streaming.wait(), 120)
        ttft, _count, _total = await asyncio.wait_for(stream(http, root, 8), 600)
        return ttft
    finally:
        unsubscribe()
        reply.cancel()  # Stop
        await asyncio.wait([reply])


async def concurrent_tps(http: httpx.AsyncClient, root: str, n: int, tokens: int) -> float:
    start = time.perf_counter()
    results = await asyncio.gather(*(stream(http, root, tokens) for _ in range(n)))
    return sum(count for _f, count, _t in results) / (time.perf_counter() - start)


async def run(engine_dir: Path, model: Path, reps: int, slots: int, tokens: int) -> Figures:
    spec = EngineSpec("bench", "CPU", Backend.CPU, engine_dir / "llama-server", {})
    figures = Figures([], [], [], [])
    with tempfile.TemporaryDirectory() as tmp:
        settings = SettingsService(SettingsStore(Path(tmp) / "settings.json"),
                                   Settings(context_size=2048, parallel_slots=slots, serve_port=0,
                                            api_wait_seconds=3600))
        async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None)) as http:
            pool = EnginePool(lambda e, m, s: ServerSupervisor(e, m, s, http=http))
            chat = ChatService(ConversationStore(Path(tmp) / "chat.db").open(), pool, http, settings)
            chat.set_plan([spec])
            chat.set_model(model)
            serve = ServeService(settings, FileSecretStore(Path(tmp) / "secrets.json"), library_router(chat))
            try:
                root = (await serve.start()).removesuffix("/v1")
                await stream(http, root, 4)  # load and warm up
                for _ in range(reps):
                    figures.idle_ttft_s.append((await stream(http, root, 8))[0])
                    figures.busy_ttft_s.append(await busy_ttft(chat, http, root))
                    figures.one_stream_tps.append(await concurrent_tps(http, root, 1, tokens))
                    figures.four_streams_tps.append(await concurrent_tps(http, root, 4, tokens))
            finally:
                await serve.stop()
                await chat.aclose()
                await pool.aclose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", type=Path, help="folder with llama-server (default: the CPU test engine)")
    parser.add_argument("--model", type=Path, help="a GGUF (default: the generated test model)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--slots", type=int, default=4, help="parallel slots per engine (1: one request at a time)")
    parser.add_argument("--tokens", type=int, default=128, help="tokens per request of the throughput measure")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    engine, model = args.engine, args.model
    if engine is None or model is None:
        default_engine, default_model = bench_engine_and_model()
        engine, model = engine or default_engine, model or default_model
    figures = asyncio.run(run(engine, model, args.reps, args.slots, args.tokens))
    out = figures.summary()
    if args.json:
        print(json.dumps({"slots": args.slots, **out, "raw": figures.__dict__}, indent=2))
        return
    print(f"{model.name} on {engine}, {args.slots} slot(s), {args.reps} repetitions (medians)")
    print(f"  first token, idle engine:              {out['idle_ttft_ms']:8.1f} ms")
    print(f"  first token while the chat streams:    {out['busy_ttft_ms']:8.1f} ms   ratio {out['busy_vs_idle']:.2f} "
          "(goal <= 1.5)")
    print(f"  one stream:                            {out['one_stream_tps']:8.1f} tok/s")
    print(f"  four streams together:                 {out['four_streams_tps']:8.1f} tok/s   ratio "
          f"{out['four_vs_one']:.2f} (goal >= 1.0 on 2 CPU cores, >= 2.5 on a GPU)")


if __name__ == "__main__":
    main()
