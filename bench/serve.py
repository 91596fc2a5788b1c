"""Overhead of "Serve to other apps": the same requests direct to llama-server vs through Strata's
local API (aiohttp server, the library router over the chat's engine pool), on one real engine, in one process.

Two measures, each as interleaved pairs (direct, Strata) on the same engine, prompt and seed:

* decode: a streamed reply of --tokens tokens; each content piece is stamped when the client
  parses it; the decode rate is 16 tokens over the median time 16 consecutive pieces took (robust
  to the machine-wide stalls of a shared computer). Also for the Ollama API (``/api/chat``, translated to the engine's OpenAI stream).
  Goal: Strata/direct >= 0.98.
  The process's CPU time per token is reported too: the client is the same on both sides, so the
  difference is the server's own work per token, a figure that holds on a loaded machine where
  rates drift.
* keep-alive overhead: --small non-streamed one-token requests on one kept-alive connection per
  side; the median wall time per request, and Strata's extra milliseconds.
* cold start: the first request to a model nothing has loaded, through Strata (the router finds
  it in the library, the pool starts the engine, the request goes through), against a script that
  starts the same llama-server by hand (same command line), polls /health every 10 ms and sends
  the same request. Goal: Strata/by hand <= 1.1.

Reported as medians of per-pair ratios, which are robust to load drift on a shared machine.

Usage: python bench/serve.py [--engine DIR] [--model FILE] [--reps 7] [--tokens 256] [--small 200] [--threads N]
Defaults: the CPU test engine from ~/.cache/strata-dev/engines.env and the generated test model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
from strata_gui.core.pool import EnginePool
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.runtime.engine import Backend, EngineSpec
from strata_gui.core.runtime.kinds import TEXT
from strata_gui.core.runtime.supervisor import ServerSupervisor
from strata_gui.core.serve.service import ServeService
from tests.support.engines import bench_engine_and_model, free_port
from tests.support.pool import library_router

PROMPT = "Write a long story about a lighthouse keeper."
MESSAGES = [{"role": "user", "content": PROMPT}]


Sample = tuple[float, float, float]  # TTFT (s), decode (tokens/s), this process's CPU seconds per token


WINDOW = 16  # tokens per decode window
SERVED = ["model"]  # the id Strata serves the model under (set once the server runs)


def _rate(start: float, cpu: float, stamps: list[float]) -> Sample:
    """TTFT, decode rate and CPU per token of one reply.

    The decode rate is WINDOW tokens over the median time any WINDOW consecutive tokens took: a
    stall of the whole machine (other processes on shared cores: 250 ms pauses were seen, on
    direct and proxied streams alike) spoils only the windows it falls in, where a first-to-last
    rate would charge it to whichever side it hit.
    """
    ttft = stamps[0] - start
    spans = [b - a for a, b in zip(stamps, stamps[WINDOW:], strict=False)]
    decode = WINDOW / statistics.median(spans) if spans else 0.0
    return ttft, decode, (time.process_time() - cpu) / max(1, len(stamps))


async def openai_stream(http: httpx.AsyncClient, root: str, tokens: int, headers: dict[str, str]) -> Sample:
    body = {"messages": MESSAGES, "max_tokens": tokens, "seed": 7, "temperature": 1.0, "stream": True}
    cpu = time.process_time()
    start = time.perf_counter()
    stamps: list[float] = []
    async with http.stream("POST", root + "/v1/chat/completions", json=body, headers=headers) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:]).get("choices") or []
                if choices and (choices[0].get("delta") or {}).get("content"):
                    stamps.append(time.perf_counter())
    return _rate(start, cpu, stamps)


async def ollama_stream(http: httpx.AsyncClient, root: str, tokens: int, headers: dict[str, str]) -> Sample:
    body = {"model": SERVED[0], "messages": MESSAGES, "options": {"num_predict": tokens, "seed": 7, "temperature": 1.0}}
    cpu = time.process_time()
    start = time.perf_counter()
    stamps: list[float] = []
    async with http.stream("POST", root + "/api/chat", json=body, headers=headers) as resp:
        async for line in resp.aiter_lines():
            if line and (json.loads(line).get("message") or {}).get("content"):
                stamps.append(time.perf_counter())
    return _rate(start, cpu, stamps)


async def small_requests(http: httpx.AsyncClient, root: str, n: int, headers: dict[str, str]) -> float:
    """Median seconds per non-streamed one-token request, ``n`` in a row on kept-alive connections."""
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "seed": 7}
    times = []
    for _ in range(n):
        t = time.perf_counter()
        resp = await http.post(root + "/v1/chat/completions", json=body, headers=headers)
        resp.raise_for_status()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


Stream = Callable[[httpx.AsyncClient, str, int, dict[str, str]], Awaitable[Sample]]
COLD_BODY = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "seed": 7}


async def by_hand(http: httpx.AsyncClient, command: list[str], port: int, env: dict[str, str]) -> float:
    """Seconds from starting llama-server by hand to the answer of one request (then it is stopped)."""
    t = time.perf_counter()
    proc = subprocess.Popen([*command[:command.index("--port") + 1], str(port),  # noqa: ASYNC220 (as the app does)
                             *command[command.index("--port") + 2:]], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                if (await http.get(base + "/health", timeout=1.0)).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.01)
        resp = await http.post(base + "/v1/chat/completions", json=COLD_BODY)
        resp.raise_for_status()
        return time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(10)


async def through_strata(http: httpx.AsyncClient, root: str, model_id: str) -> float:
    """Seconds from a request for an unloaded model to its answer, through Strata."""
    t = time.perf_counter()
    resp = await http.post(root + "/v1/chat/completions", json={**COLD_BODY, "model": model_id})
    resp.raise_for_status()
    return time.perf_counter() - t


async def pairs(http: httpx.AsyncClient, fn: Stream, direct: tuple[str, dict[str, str]], strata: str,
                reps: int, tokens: int) -> list[tuple[Sample, Sample]]:
    """(direct OpenAI stream, ``fn`` through Strata) ``reps`` times, interleaved."""
    out = []
    for _ in range(reps):
        d = await openai_stream(http, direct[0], tokens, direct[1])
        s = await fn(http, strata, tokens, {})
        out.append((d, s))
    return out


def report(name: str, results: list[tuple[Sample, Sample]]) -> None:
    med = statistics.median
    print(f"{name}:")
    print(f"  direct: TTFT {med(d[0] for d, _ in results) * 1000:.1f} ms  decode {med(d[1] for d, _ in results):.0f} tok/s")
    print(f"  strata: TTFT {med(s[0] for _, s in results) * 1000:.1f} ms  decode {med(s[1] for _, s in results):.0f} tok/s")
    print(f"  ratio strata/direct (median of pairs): TTFT {med(s[0] / d[0] for d, s in results):.2f}  "
          f"decode {med(s[1] / d[1] for d, s in results):.3f}")
    # The client is the same on both sides: the difference is the server's work per token (what it
    # takes from the engine where they share cores).
    print(f"  CPU of this process per token: direct {med(d[2] for d, _ in results) * 1e6:.0f} us  "
          f"strata {med(s[2] for _, s in results) * 1e6:.0f} us  "
          f"(server: {med(s[2] - d[2] for d, s in results) * 1e6:.0f} us/token)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", type=Path)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--backend", choices=("cpu", "vulkan", "rocm"), default="cpu",
                    help="the engine's backend (a GPU backend offloads every layer)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--small", type=int, default=200, help="one-token requests per side and round")
    ap.add_argument("--threads", type=int, default=0,
                    help="engine CPU threads (0: its default, every core; 1 leaves a core to the app, as a GPU "
                         "engine would)")
    args = ap.parse_args()
    engine_dir, model = bench_engine_and_model() if not (args.engine and args.model) else (args.engine, args.model)

    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            settings = SettingsService(SettingsStore(Path(tmp) / "settings.json"),
                                       Settings(context_size=args.tokens + 512, serve_port=0,
                                                threads=args.threads))
            limits = httpx.Limits(keepalive_expiry=2.0)  # llama-server drops idle connections after 5 s
            async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None), limits=limits) as http:
                pool = EnginePool(lambda e, m, s: ServerSupervisor(e, m, s, http=http))
                chat = ChatService(ConversationStore(Path(tmp) / "db.sqlite3").open(), pool, http, settings)
                chat.set_model(model)
                backend = Backend(args.backend)
                chat.set_plan([EngineSpec(f"bench-{backend}", backend.label, backend, TEXT.executable(engine_dir),
                                          {"LD_LIBRARY_PATH": str(engine_dir)})])
                serve = ServeService(settings, FileSecretStore(Path(tmp) / "secrets.json"), library_router(chat))
                try:
                    strata = (await serve.start()).removesuffix("/v1")
                    SERVED[0] = serve.router.models()[0].id
                    client = await chat.ensure_engine()
                    sup = chat.supervisor
                    direct = (client.base_url, sup.auth_headers() if sup is not None else {})
                    # Clients of their own, as other apps would have: one kept-alive connection each.
                    async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None),
                                                 limits=limits) as apps:
                        await openai_stream(apps, direct[0], 16, direct[1])  # warm-up
                        await openai_stream(apps, strata, 16, {})
                        openai_pairs = await pairs(apps, openai_stream, direct, strata, args.reps, args.tokens)
                        ollama_pairs = await pairs(apps, ollama_stream, direct, strata, args.reps, args.tokens)
                        rounds = []
                        for _ in range(3):
                            d = await small_requests(apps, direct[0], args.small, direct[1])
                            s = await small_requests(apps, strata, args.small, {})
                            rounds.append((d, s))
                        # Cold start: the same engine's command line by hand, or the first request to
                        # the model through Strata with nothing loaded.
                        assert sup is not None
                        command = sup.command
                        env = {**os.environ, **sup.engine.env}
                        model_id = serve.router.models()[0].id
                        cold = []
                        for _ in range(args.reps):
                            await chat.stop_engine()
                            hand = await by_hand(apps, command, free_port(), env)
                            assert pool.engines() == []
                            cold.append((hand, await through_strata(apps, strata, model_id)))
                finally:
                    await serve.stop()
                    await chat.aclose()
                    await pool.aclose()
        print(f"engine {engine_dir} ({args.backend})  model {model.name}  reps {args.reps}  max_tokens {args.tokens}  "
              f"engine threads {args.threads or 'default'}  cores {os.cpu_count()}  load {os.getloadavg()[0]:.1f}")
        print("(direct: OpenAI stream from llama-server; strata: the same through Strata)")
        report("OpenAI /v1/chat/completions, streamed (bytes passed through)", openai_pairs)
        report("Ollama /api/chat, streamed (translated from the engine's OpenAI stream)", ollama_pairs)
        med = statistics.median
        d, s = med(r[0] for r in rounds), med(r[1] for r in rounds)
        print(f"keep-alive, {args.small} one-token requests x 3 rounds per side:")
        print(f"  direct {d * 1000:.2f} ms/request  strata {s * 1000:.2f} ms/request  "
              f"ratio {med(r[1] / r[0] for r in rounds):.2f}  overhead {(s - d) * 1000:.2f} ms/request")
        hand, through = med(c[0] for c in cold), med(c[1] for c in cold)
        print(f"cold start, first request to an unloaded model ({args.reps} pairs):")
        print(f"  by hand {hand * 1000:.0f} ms  strata {through * 1000:.0f} ms  "
              f"ratio {med(c[1] / c[0] for c in cold):.2f} (goal <= 1.1)")

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
