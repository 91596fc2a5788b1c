"""`strata bench --model M [--engines all] [--engine DIR ...] [--json]`: the backend shoot-out."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from strata_gui.commands import load_options
from strata_gui.commands.device_option import add_device_option, apply_device_option
from strata_gui.core.app_services import AppServices
from strata_gui.core.base import Progress, StrataError, from_json
from strata_gui.core.bench import DEFAULT_DEPTH, BenchConfig
from strata_gui.core.images import parse_size
from strata_gui.core.runtime import IMAGE, EngineSpec, percent_text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmark a model on each engine (prefill and decode tokens/s)")
    p.add_argument("--model", required=True, type=Path, help="GGUF file (first shard of a split model)")
    p.add_argument("--engines", default="all", help="'all' installed engines that work here, or 'none'")
    p.add_argument("--engine", action="append", type=Path, default=[], metavar="DIR",
                   help="also benchmark the llama-server in DIR (repeatable)")
    p.add_argument("--prefill", type=int, default=512, help="prompt tokens per repetition (default 512)")
    p.add_argument("--gen", type=int, default=128, help="generated tokens per repetition (default 128)")
    p.add_argument("--reps", type=int, default=3, help="repetitions per engine (default 3)")
    p.add_argument("--depth", type=int, default=DEFAULT_DEPTH, metavar="TOKENS",
                   help=f"also measure with this many tokens already in the context, like llama-bench -d "
                        f"(default {DEFAULT_DEPTH}; 0: depth 0 only)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--images", action="store_true",
                   help="an image model: seconds per image and per step on each image engine")
    p.add_argument("--size", default="512x512", help="image size for --images (default 512x512)")
    p.add_argument("--steps", type=int, default=20, help="sampling steps for --images (default 20)")
    add_device_option(p)
    load_options.add_arguments(p, ctx=False)  # the workload sizes the context
    p.set_defaults(func=run)


async def run_images(args: argparse.Namespace, app: AppServices) -> int:
    """`strata bench --images`: "Benchmark this model" for an image model, through the dashboards."""
    width, height = parse_size(args.size)
    await app.prepare()
    for folder in args.engine:
        await app.resolver.use_folder(folder, kind=IMAGE)

    def show(p: Progress) -> None:
        if not args.json:
            print(f"\r[{int(p.done)}/{int(p.total or 0)}] {p.message[:70]:<70}", end="", file=sys.stderr, flush=True)

    stats = await app.dashboard.run_image_benchmark(args.model, args.reps, show,
                                                    {"width": width, "height": height, "steps": args.steps})
    if args.json:
        print(json.dumps({"model": args.model.name, "engines": [s.to_json() for s in stats]}, indent=2))
    else:
        print(file=sys.stderr)
        for s in stats:
            spi = f"{s.seconds_per_image:.2f} s/image" if s.seconds_per_image is not None else "failed"
            sps = f", {s.seconds_per_step:.3f} s/step" if s.seconds_per_step is not None else ""
            print(f"{app.dashboard.engine_name(s.engine)}: {spi}{sps} ({s.images} images)")
    return 0 if stats else 1


async def run(args: argparse.Namespace, app: AppServices) -> int:
    if not args.model.is_file():
        raise StrataError(f"Model file not found: {args.model}", hint="Give the path of a .gguf file.")
    if args.images:
        return await run_images(args, app)
    config = BenchConfig(args.prefill, args.gen, args.reps, depth=args.depth)
    config.validate()
    apply_device_option(args, app)
    load_options.apply(args, app)
    await load_options.check(app, args.model)
    await app.prepare()  # engines whose last check failed are never benchmarked
    engines: list[EngineSpec] = app.resolver.installed_specs() if args.engines == "all" else []
    chosen = [await app.resolver.use_folder(folder) for folder in args.engine]
    engines = chosen + [e for e in engines if e.id not in {c.id for c in chosen}]
    if not engines:
        raise StrataError("No engine to benchmark.",
                          hint="Install one with `strata engines install`, or pass --engine DIR.")
    if not args.json:
        print("engines: " + ", ".join(f"{e.label} ({e.reason})" for e in engines), file=sys.stderr)

    def show(p: Progress) -> None:
        if not args.json:
            print(f"\r[{int(p.done)}/{int(p.total or 0)}] {p.message[:70]:<70}", end="", file=sys.stderr,
                  flush=True)

    results, rec = await app.dashboard.run_benchmark(args.model.resolve(), engines, config, show)
    # With a draft model in effect, the same workload runs again without it: the speed-up.
    speedups = await app.dashboard.draft_speedups(args.model.resolve(), results, engines, config, show)
    gpu = app.dashboard.gpu_label()
    limits = await app.dashboard.benchmark_limits(args.model.resolve(), results, engines)
    if args.json:
        print(json.dumps({"model": args.model.name, "gpu": gpu,
                          "results": [{**r.to_json(), "limit": lim} for r, lim in zip(results, limits, strict=True)],
                          "recommended": rec.engine,
                          "reason": rec.reason, "depth_note": rec.depth_note, "warnings": rec.warnings,
                          "draft_speedup": [s.to_json() for s in speedups]}, indent=2))
        return 0 if rec.engine else 1
    print(file=sys.stderr)
    print(f"{'engine':<24} {'backend':<8} {'depth':>6} {'prefill tok/s':>14} {'of compute':>10} {'decode tok/s':>13} "
          f"{'of memory':>9}  status")
    for r, lim in zip(results, limits, strict=True):
        pre = f"{r.prefill_median:,.0f}" if r.prefill_median else "—"
        dec = f"{r.decode_median:,.1f}" if r.decode_median else "—"
        print(f"{r.engine:<24} {r.backend:<8} {r.depth:>6} {pre:>14} {_share((lim or {}).get('prefill')):>10} {dec:>13} "
              f"{_share(lim):>9}  {'ok' if r.ok else r.error}")
    for r, lim in zip(results, limits, strict=True):
        _print_limits(r.engine, r.depth, lim)
    for s in speedups:
        ratio = f"x{s.speedup:.2f}" if s.speedup else "—"
        print(f"draft model on {s.engine}: decode {s.decode_without:,.1f} -> {s.decode_with:,.1f} tok/s ({ratio})")
    print(f"\n{rec.reason}")
    if rec.depth_note:
        print(rec.depth_note)
    for w in rec.warnings:
        print(f"warning: {w}")
    if rec.engine:
        print(f"Default engine for {args.model.name}: {rec.engine}")
    return 0 if rec.engine else 1


def _share(limit: Any) -> str:
    if not isinstance(limit, dict) or not isinstance(limit.get("share"), (int, float)):
        return "—"
    return f"{percent_text(limit['share'])} %"


def _print_limits(engine: str, depth: int, lim: dict[str, Any] | None) -> None:
    """Each run's ceilings, with what they are computed from."""
    if not lim:
        return
    prefill = lim.get("prefill")
    if isinstance(prefill, dict) and prefill.get("slow_path"):
        print(f"warning: {from_json(prefill['slow_path'])}")
    if isinstance(prefill, dict):
        print(f"compute limit for {engine} at depth {depth}: {prefill['ceiling_tps']:,.1f} tok/s on {prefill['device']} "
              f"({prefill['flops_per_token'] / 1e9:,.2f} GFLOP per prompt token at {prefill['tflops']:,.2f} "
              f"{'TOPS' if prefill['compute_type'] == 'int8' else 'TFLOPS'} {prefill['compute_type']}: "
              f"{prefill['source']})")
    if lim.get("ceiling_tps"):
        other = lim.get("other_peak")
        print(f"memory limit for {engine} at depth {depth}: {lim['ceiling_tps']:,.1f} tok/s on {lim['device']} "
              f"({lim['bytes_per_token'] / 1e6:,.1f} MB read per token, {lim.get('peak', 'nominal')} peak)"
              + (f"; {_share(other)} of the {other['peak']} peak ({other['ceiling_tps']:,.1f} tok/s at "
                 f"{other['gbps']:,.1f} GB/s)" if isinstance(other, dict) else ""))
