"""The real CPU engine's prefill as a share of the CPU's compute ceiling, and the ceiling checked by hand.

For a dense and an MoE model whose matrices are large enough to keep the CPU's vector units busy,
Strata's own chat path reads a long prompt on the real CPU llama-server (a fresh conversation each
time: nothing cached); the line printed is the prefill speed, the ceiling (the CPU's peak, cores ×
clock × FLOPs per cycle read from the OS, ÷ FLOPs per prompt token from the GGUF) and the share,
best of ``--reps``, as the chat statistics show it. Each model's FLOPs per token are also computed
by hand with llama.cpp's own ``gguf`` reader and compared (the goal: within 2 %).

Usage: python bench/prefill_ceiling.py [--words 300] [--reps 3]
Uses the CPU test engine from ~/.cache/strata-dev/engines.env; runs in a temporary profile.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import engines as engine_support
from tests.support import gguf_model

MODELS = {
    "dense (8 layers, width 1024)": gguf_model.ModelSpec(layers=8, width=1024, heads=16, kv_heads=4, ff=4096,
                                                        name="Prefill Dense"),
    "MoE (8 layers, width 1024, 2 of 8 experts)": gguf_model.ModelSpec(
        layers=8, width=1024, heads=16, kv_heads=4, ff=2048, experts=8, experts_used=2, name="Prefill MoE"),
}


def hand_flops(path: Path, prompt: int, depth: int) -> float:
    """FLOPs per prompt token from llama.cpp's ``gguf`` reader (tests/models/test_compute.py's rule)."""
    from tests.models.test_compute import hand_flops_per_token

    return hand_flops_per_token(path, prompt, depth)


async def run(folder: Path, engine: Path, words: int, reps: int) -> None:
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.config.services import build_services
    from strata_gui.core.runtime.client import SamplingParams

    app = build_app_services(build_services())
    try:
        await app.prepare()
        await app.use_engine_folder(engine)
        peak = app.limits.cpu_peak()
        print(f"CPU peak: {peak.tflops * 1000:,.1f} GFLOPS ({peak.source})" if peak else "CPU peak: unknown")
        prompt = " ".join(f"word{i} is here" for i in range(words))
        for label, spec in MODELS.items():
            path = gguf_model.write_model(folder / f"{spec.name.replace(' ', '-')}.gguf", spec)
            app.chat.set_model(path)
            runs: list[dict[str, float]] = []
            for rep in range(reps):
                conv = app.chat.new_conversation()
                app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=4, seed=3))
                # Another first word each time: the engine's prompt cache cannot reuse the last one.
                reply = await app.chat.send(conv.id, f"Run {rep} {label}: {prompt}")
                limit = reply.stats.extra.get("prefill_limit") or {}
                runs.append({"tps": reply.stats.prefill_tps or 0.0, "ceiling": float(limit.get("ceiling_tps") or 0),
                             "share": float(limit.get("share") or 0), "flops": float(limit.get("flops_per_token") or 0),
                             "prompt": float(reply.stats.prompt_n or 0), "depth": float(reply.stats.cache_n or 0)})
            best = max(runs, key=lambda r: r["tps"])
            each = ", ".join(f"{r['share'] * 100:.0f} %" for r in runs)
            by_hand = hand_flops(path, int(best["prompt"]), int(best["depth"]))
            print(f"{label}: {int(best['prompt'])}-token prompt, {best['flops'] / 1e9:,.3f} GFLOP per token "
                  f"(by hand with gguf: {by_hand / 1e9:,.3f}, {abs(best['flops'] / by_hand - 1) * 100:.2f} % apart); "
                  f"prefill {best['tps']:,.1f} tok/s of a {best['ceiling']:,.1f} tok/s ceiling = "
                  f"{best['share'] * 100:.0f} % (best of {reps}: {each})")
    finally:
        await app.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--words", type=int, default=300, help="prompt length in words (about 3 tokens each)")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with engine_support.bench_profile("strata-prefill-") as (engines, root):
        asyncio.run(run(root, engines.cpu_dir, args.words, args.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
