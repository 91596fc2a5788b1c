"""The real CPU engine's decode as a share of the CPU's measured memory bandwidth ceiling.

For each model (the generated test model, and larger dense and MoE ones whose weights do not fit
in the CPU's caches), Strata's own chat path runs a reply on the real CPU llama-server; the line
printed is the reply's decode speed, the ceiling (measured copy bandwidth ÷ bytes read per token at
the reply's depth, from the GGUF's tensors) and the share, as the chat statistics show it.

Usage: python bench/decode_ceiling.py [--tokens 64] [--reps 3]
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
    "test model (2 layers, width 64)": gguf_model.ModelSpec(),
    "dense (8 layers, width 1024)": gguf_model.ModelSpec(layers=8, width=1024, heads=16, kv_heads=4, ff=4096,
                                                        name="Ceiling Dense"),
    "MoE (8 layers, width 512, 2 of 8 experts)": gguf_model.ModelSpec(
        layers=8, width=512, heads=8, kv_heads=4, ff=2048, experts=8, experts_used=2, name="Ceiling MoE"),
}


async def run(folder: Path, engine: Path, tokens: int, reps: int) -> None:
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.config.services import build_services
    from strata_gui.core.runtime.client import SamplingParams

    app = build_app_services(build_services())
    try:
        await app.prepare()
        await app.use_engine_folder(engine)
        measured = await asyncio.to_thread(app.limits.cpu.measure)
        print(f"CPU copy bandwidth: {measured.gbps:.1f} GB/s ({measured.source})")
        for label, spec in MODELS.items():
            path = gguf_model.write_model(folder / f"{spec.name.replace(' ', '-')}.gguf", spec)
            app.chat.set_model(path)
            shares: list[tuple[float, float, float, float]] = []
            for _ in range(reps):
                conv = app.chat.new_conversation()
                app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=tokens, seed=3))
                reply = await app.chat.send(conv.id, "Count from one to one hundred.")
                limit = reply.stats.extra.get("limit") or {}
                shares.append((reply.stats.decode_tps or 0.0, float(limit.get("ceiling_tps") or 0.0),
                               float(limit.get("share") or 0.0), float(limit.get("bytes_per_token") or 0.0)))
            best = max(shares, key=lambda s: s[0])
            tps, ceiling, share, per_token = best
            print(f"{label}: {path.stat().st_size / 1e6:,.1f} MB file, {per_token / 1e6:,.2f} MB read per token; "
                  f"decode {tps:,.1f} tok/s of a {ceiling:,.1f} tok/s ceiling = {share * 100:.0f} % "
                  f"(best of {reps}: {', '.join(f'{s[2] * 100:.0f} %' for s in shares)})")
    finally:
        await app.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with engine_support.bench_profile("strata-ceiling-") as (engines, root):
        asyncio.run(run(root, engines.cpu_dir, args.tokens, args.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
