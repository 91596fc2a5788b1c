"""Overhead of "Serve to other apps": the same streamed request direct to llama-server vs through
Strata's local API proxy, on one real engine.

Interleaved pairs (direct, proxy) on the same engine, prompt and seed; each timed on the client:
time to first token (TTFT) and decode rate (content chunks after the first divided by the time
from the first to the last). Reported as the median of per-pair ratios proxy/direct, which is
robust to load drift on a shared machine.

Usage: python bench/serve.py [--engine DIR] [--model FILE] [--reps 7] [--tokens 256]
Defaults: the CPU test engine from ~/.cache/strata-dev/engines.env and the generated test model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from strata_gui.core.chat.service import ChatService, default_supervisor_factory
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.runtime.engine import Backend, EngineSpec, server_executable
from strata_gui.core.serve.service import ChatUpstream, ServeService
from strata_gui.core.settings import Settings, SettingsService, SettingsStore

PROMPT = "Write a long story about a lighthouse keeper."


async def once(http: httpx.AsyncClient, url: str, tokens: int) -> tuple[float, float]:
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": tokens, "seed": 7,
            "temperature": 1.0, "stream": True}
    start = time.perf_counter()
    stamps: list[float] = []
    async with http.stream("POST", url + "/chat/completions", json=body) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                choices = chunk.get("choices") or []
                if choices and (choices[0].get("delta") or {}).get("content"):
                    stamps.append(time.perf_counter())
    ttft = stamps[0] - start
    decode = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return ttft, decode


def default_engine_and_model() -> tuple[Path, Path]:
    env = Path.home() / ".cache" / "strata-dev" / "engines.env"
    values = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line)
    os.environ.setdefault("STRATA_TEST_LLAMA_SRC", values["STRATA_TEST_LLAMA_SRC"])
    from tests.support import gguf_model

    model = Path(tempfile.gettempdir()) / "strata-bench-model.gguf"
    if not model.exists():
        gguf_model.write_model(model)
    return Path(values["STRATA_TEST_CPU_ENGINE"]), model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", type=Path)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()
    engine_dir, model = default_engine_and_model() if not (args.engine and args.model) else (args.engine, args.model)

    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            settings = SettingsService(SettingsStore(Path(tmp) / "settings.json"),
                                       Settings(context_size=args.tokens + 512, serve_port=0))
            async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None)) as http:
                chat = ChatService(ConversationStore(Path(tmp) / "db.sqlite3").open(),
                                   default_supervisor_factory(http), http, settings)
                chat.set_model(model)
                chat.set_plan([EngineSpec("bench-cpu", "CPU", Backend.CPU, server_executable(engine_dir),
                                          {"LD_LIBRARY_PATH": str(engine_dir)})])
                serve = ServeService(settings, FileSecretStore(Path(tmp) / "secrets.json"), http, ChatUpstream(chat))
                try:
                    proxy_url = await serve.start()
                    client = await chat.ensure_engine()
                    direct_url = client.base_url + "/v1"
                    await once(http, direct_url, 16)  # warm-up
                    await once(http, proxy_url, 16)
                    pairs = []
                    for _ in range(args.reps):
                        d = await once(http, direct_url, args.tokens)
                        p = await once(http, proxy_url, args.tokens)
                        pairs.append((d, p))
                finally:
                    await serve.stop()
                    await chat.aclose()
        med = statistics.median
        print(f"engine {engine_dir}  model {model.name}  reps {args.reps}  max_tokens {args.tokens}")
        print(f"direct: TTFT {med(d[0] for d, _ in pairs) * 1000:.1f} ms  decode {med(d[1] for d, _ in pairs):.0f} tok/s")
        print(f"proxy:  TTFT {med(p[0] for _, p in pairs) * 1000:.1f} ms  decode {med(p[1] for _, p in pairs):.0f} tok/s")
        print(f"ratio proxy/direct (median of pairs): TTFT {med(p[0] / d[0] for d, p in pairs):.2f}  "
              f"decode {med(p[1] / d[1] for d, p in pairs):.2f}")

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
