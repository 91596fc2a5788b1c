"""What RPC pooling costs on loopback: the same streamed request on llama-server alone vs with its
layers spread over two rpc-server workers (all on this machine's CPU backend).

On loopback this measures the protocol's per-token overhead only; across machines the network's
round-trip time adds to every token. Interleaved pairs; median of per-pair ratios pooled/alone.

Usage: python bench/rpc.py [--reps 5] [--tokens 64]
Needs the Vulkan test engine (its ggml-rpc-server) from ~/.cache/strata-dev/engines.env.
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

from strata_gui.core.rpc.workers import rpc_server_executable
from strata_gui.core.runtime.rpc_server import RpcServerProcess
from tests.support.engines import free_port, locate, running_server

PROMPT = "Write a long story about a lighthouse keeper."


async def once(http: httpx.AsyncClient, url: str, tokens: int) -> tuple[float, float]:
    """TTFT and decode rate (first to last token) of one streamed reply."""
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": tokens, "seed": 7,
            "temperature": 1.0, "stream": True}
    start = time.perf_counter()
    stamps: list[float] = []
    async with http.stream("POST", url + "/chat/completions", json=body) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:]).get("choices") or []
                if choices and (choices[0].get("delta") or {}).get("content"):
                    stamps.append(time.perf_counter())
    ttft = stamps[0] - start
    decode = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return ttft, decode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    engines = locate()
    from tests.support import gguf_model

    model = Path(tempfile.gettempdir()) / "strata-bench-model.gguf"
    if not model.exists():
        gguf_model.write_model(model)
    env = {**os.environ, "LD_LIBRARY_PATH": str(engines.vulkan_dir), "GGML_VK_VISIBLE_DEVICES": ""}
    exe = rpc_server_executable(engines.vulkan_dir)
    assert exe is not None
    workers = [RpcServerProcess(exe, "127.0.0.1", free_port(), env=env, devices=["CPU"]) for _ in range(2)]
    loop = asyncio.new_event_loop()
    try:
        for w in workers:
            loop.run_until_complete(w.start())
        rpc = ",".join(w.address for w in workers)
        with running_server(engines.vulkan_server, model, env=env, extra=["-c", "1024"]) as alone, \
                running_server(engines.vulkan_server, model, env=env, extra=["-c", "1024", "--rpc", rpc]) as pooled:

            async def run() -> list[tuple[tuple[float, float], tuple[float, float]]]:
                async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None)) as http:
                    await once(http, alone + "/v1", 8)
                    await once(http, pooled + "/v1", 8)
                    return [(await once(http, alone + "/v1", args.tokens), await once(http, pooled + "/v1", args.tokens))
                            for _ in range(args.reps)]

            pairs = loop.run_until_complete(run())
    finally:
        for w in workers:
            loop.run_until_complete(w.stop())
        loop.close()
    med = statistics.median
    print(f"model {model.name}  reps {args.reps}  max_tokens {args.tokens}  workers {len(workers)} (loopback, CPU)")
    print(f"alone:  TTFT {med(a[0] for a, _ in pairs) * 1000:.1f} ms  decode {med(a[1] for a, _ in pairs):.0f} tok/s")
    print(f"pooled: TTFT {med(p[0] for _, p in pairs) * 1000:.1f} ms  decode {med(p[1] for _, p in pairs):.0f} tok/s")
    print(f"ratio pooled/alone (median of pairs): TTFT {med(p[0] / a[0] for a, p in pairs):.2f}  "
          f"decode {med(p[1] / a[1] for a, p in pairs):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
