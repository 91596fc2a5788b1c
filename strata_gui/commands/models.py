"""`strata models search|info|pull|list|rm|inspect`: the model browser, headless.

Offline mode (Settings.offline) keeps ``list``, ``rm`` and ``inspect`` working; the hub
commands then explain how to go online.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from strata_gui.commands import arg_types, load_options
from strata_gui.core.app_services import AppServices
from strata_gui.core.base import ModelError, Progress, format_bytes, run_blocking
from strata_gui.core.gpu import format_mem
from strata_gui.core.models import (
    MOST_AUTO_SLOTS,
    SORTS,
    DownloadJob,
    FitEstimate,
    FitReport,
    ImageReport,
    ImageVariantFit,
    LibraryEntry,
    LoadOptions,
    ModelDetail,
    ModelService,
    ModelShape,
    RepoSummary,
    format_params,
    metadata_summary,
)
from strata_gui.core.runtime import IMAGE, TEXT

INSPECT_PROMPT = 512  # the prompt `models inspect` gives the prefill ceiling for


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("models", help="search the hub, download GGUF models, manage the local library")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    s = msub.add_parser("search", help="search GGUF models (or, with --images, image models) on the hub")
    s.add_argument("query", nargs="?", default="", help="free text (empty: most downloaded)")
    s.add_argument("--images", action="store_true", help="text-to-image models (GGUF or safetensors checkpoints)")
    s.add_argument("--sort", choices=sorted(SORTS), default="downloads")
    s.add_argument("--limit", type=int, default=20, help="number of results (default 20)")
    s.add_argument("--json", action="store_true", help="machine-readable output")

    i = msub.add_parser("info", help="files of a repo grouped by quant (image repos: model files), with fit verdicts")
    i.add_argument("repo", help="repo id, e.g. bartowski/Qwen2.5-7B-Instruct-GGUF")
    i.add_argument("--ctx", type=arg_types.CONTEXT, default=0, help="context size to judge fits at (default: Settings)")
    i.add_argument("--card", action="store_true", help="also print the model card")
    i.add_argument("--json", action="store_true", help="machine-readable output")

    pl = msub.add_parser("pull", help="download a quant into the hub cache (resumes an interrupted one); "
                                      "an image model comes with the text encoders and VAE it needs")
    pl.add_argument("repo")
    pl.add_argument("quant", nargs="?", default="",
                    help="quant label (Q4_K_M ...) or file name; default: the best fit")
    pl.add_argument("--json", action="store_true", help="machine-readable output")

    ls = msub.add_parser("list", help="models in the hub cache, your folders and opened files")
    ls.add_argument("--json", action="store_true", help="machine-readable output")

    rm = msub.add_parser("rm", help="delete a local model (all parts of a split set)")
    rm.add_argument("model", help="path or file name as `strata models list` shows it")
    rm.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    rm.add_argument("--json", action="store_true", help="machine-readable output")

    ins = msub.add_parser("inspect", help="read a GGUF file's header and estimate its memory need")
    ins.add_argument("file", type=Path)
    ins.add_argument("--json", action="store_true", help="machine-readable output")
    # The fit is judged with the options the model would load with; these change them for the estimate.
    load_options.add_arguments(ins)
    p.set_defaults(func=run)


async def run(args: argparse.Namespace, app: AppServices) -> int:
    if args.models_command in ("info", "pull"):
        await app.detect_gpus()  # fit verdicts judge against the detected GPU, as the Models page does
    if args.models_command == "inspect":
        return await _inspect(args, app)
    return await _dispatch(args, app.models)


async def _dispatch(args: argparse.Namespace, svc: ModelService) -> int:
    handlers = {"search": _search, "info": _info, "pull": _pull, "list": _list, "rm": _rm}
    return await handlers[args.models_command](args, svc)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


async def _search(args: argparse.Namespace, svc: ModelService) -> int:
    items: list[RepoSummary] = []
    next_url: str | None = None
    while len(items) < args.limit:
        page = await svc.search(args.query, args.sort, next_url, kind=IMAGE if args.images else TEXT)
        items.extend(page.items)
        next_url = page.next_url
        if next_url is None:
            break
    items = items[: args.limit]
    if args.json:
        _print_json([i.to_json() for i in items])
        return 0
    if not items:
        print("No image models found." if args.images else "No GGUF models found.")
        return 0
    print(f"{'REPO':<56} {'DOWNLOADS':>10} {'LIKES':>6} {'PARAMS':>7}  UPDATED")
    for i in items:
        updated = i.last_modified.date().isoformat() if i.last_modified else ""
        params = format_params(i.params) if i.params else ""
        print(f"{i.repo_id:<56} {i.downloads:>10} {i.likes:>6} {params:>7}  {updated}")
    return 0


def _report_json(report: FitReport) -> dict[str, Any]:
    return {
        "target": {"name": report.target.name, "usable_bytes": report.target.usable_bytes},
        "n_ctx": report.n_ctx, "architecture": report.architecture, "trained_context": report.trained_context,
        "note": report.note or None,
        "quants": [
            {**f.entry.to_json(), "default": f.is_default,
             "verdict": f.estimate.describe() if f.estimate else None,
             "gpu_layers": f.estimate.gpu_layers if f.estimate else None,
             "max_context": f.estimate.max_context if f.estimate else None,
             "memory_bytes": f.estimate.total_bytes if f.estimate else None,
             "bf16": f.bf16}
            for f in report.fits
        ],
    }


def _variant_line(f: ImageVariantFit) -> str:
    mark = "*" if f.is_default else " "
    verdict = f.fit.message if f.fit else "unknown"
    return f" {mark} {f.entry.label:<14} {format_bytes(f.size):>10}  {verdict}  {f.entry.name}"


def _print_image_report(report: ImageReport) -> None:
    if report.family:
        print(f"image model, {report.family}; fit for {report.target.name} "
              f"({format_bytes(report.target.usable_bytes)} usable) at {report.width}x{report.height}:")
    if report.note:
        print(f"  note: {report.note}")
    for f in report.fits:
        print(_variant_line(f))
        for c in f.companions:
            print(f"      + {c.path} ({format_bytes(c.size)})")
        for m in f.missing:
            print(f"      missing {m.describe()}")
    if report.default:
        print("* default pick (sizes include the parts that download with it)")


async def _image_info(args: argparse.Namespace, svc: ModelService, detail: ModelDetail) -> int:
    report = await svc.image_report(detail)
    if args.json:
        _print_json({**detail.to_json(), "image_fit": report.to_json(), "card": detail.card if args.card else None})
        return 0
    print(f"{detail.repo_id}  ({detail.downloads} downloads, {detail.likes} likes{', gated' if detail.gated else ''})")
    _print_image_report(report)
    if args.card and detail.card:
        print()
        print(detail.card)
    return 0


async def _info(args: argparse.Namespace, svc: ModelService) -> int:
    detail = await svc.detail(args.repo)
    if detail.kind is IMAGE:
        return await _image_info(args, svc, detail)
    report = await svc.fit_report(detail, args.ctx or None)
    if args.json:
        _print_json({**detail.to_json(), "fit": _report_json(report), "card": detail.card if args.card else None})
        return 0
    print(f"{detail.repo_id}  ({detail.downloads} downloads, {detail.likes} likes{', gated' if detail.gated else ''})")
    if report.architecture:
        print(f"architecture {report.architecture}, trained context {report.trained_context}")
    print(f"fit for {report.target.name} ({format_bytes(report.target.usable_bytes)} usable) at context {report.n_ctx}:")
    if report.note:
        print(f"  note: {report.note}")
    for f in report.fits:
        mark = "*" if f.is_default else " "
        verdict = f.estimate.describe() if f.estimate else "unknown"
        ctx = f"max ctx {f.estimate.max_context}" if f.estimate and f.estimate.max_context else ""
        note = f"  [{f.bf16_note()}]" if f.bf16 else ""
        print(f" {mark} {f.entry.label:<10} {format_bytes(f.entry.size):>10}  {verdict:<34} {ctx}  {f.entry.name}{note}")
    if report.default:
        print("* default pick")
    if args.card and detail.card:
        print()
        print(detail.card)
    return 0


async def _image_pull(args: argparse.Namespace, svc: ModelService, detail: ModelDetail) -> int:
    report = await svc.image_report(detail)
    wanted = args.quant.strip()
    if wanted:
        matches = [f for f in report.fits
                   if f.entry.label.upper() == wanted.upper() or wanted in (f.entry.name, f.entry.first.path)]
        if not matches:
            labels = ", ".join(f.entry.label for f in report.fits) or "none"
            raise ModelError(f"{args.repo} has no image model file '{wanted}'.", hint=f"Available: {labels}")
        variant = matches[0]
    else:
        if not report.fits:
            raise ModelError(f"{args.repo} has no single-file image model.",
                             hint="Pick a repository with .gguf or .safetensors checkpoints.")
        variant = report.default or report.fits[0]
    if variant.missing:
        raise ModelError(f"{variant.entry.name} needs parts this repository does not have.",
                         hint="; ".join(m.describe() for m in variant.missing))
    if not args.json:
        parts = ", ".join(f.path for f in variant.files)
        print(f"downloading {len(variant.files)} file(s), {format_bytes(variant.size)}: {parts}", file=sys.stderr)
    paths = await _wait(svc, svc.enqueue_image(detail, variant))
    if args.json:
        _print_json({"repo_id": detail.repo_id, "label": variant.entry.label, "kind": "image",
                     "files": [str(p) for p in paths], "size": variant.size})
    else:
        print(f"downloaded {variant.entry.label} ({format_bytes(variant.size)}) to {paths[0]}")
    return 0


async def _wait(svc: ModelService, job: DownloadJob) -> list[Path]:
    interactive = sys.stderr.isatty()

    def show(p: Progress) -> None:
        if interactive:
            print(f"\r{p.describe():<100}", end="", file=sys.stderr, flush=True)

    paths = await svc.download(job, show)
    if interactive:
        print(file=sys.stderr)
    return paths


async def _pull(args: argparse.Namespace, svc: ModelService) -> int:
    detail = await svc.detail(args.repo)
    if detail.kind is IMAGE:
        return await _image_pull(args, svc, detail)
    quant = await svc.choose_quant(detail, args.quant)
    paths = await _wait(svc, svc.enqueue(detail, quant))
    if args.json:
        _print_json({"repo_id": detail.repo_id, "label": quant.label, "files": [str(p) for p in paths], "size": quant.size})
    else:
        print(f"downloaded {quant.label} ({format_bytes(quant.size)}) to {paths[0]}")
    return 0


async def _list(args: argparse.Namespace, svc: ModelService) -> int:
    entries = await svc.scan_library()
    if args.json:
        _print_json([e.to_json() for e in entries])
        return 0
    if not entries:
        print(f"No models yet. Download one with `strata models pull REPO`, or add a folder in Settings. "
              f"(hub cache: {svc.cache_dir})")
        return 0
    for e in entries:
        if e.broken:
            print(f"BROKEN  {e.path}\n        {e.error}")
            continue
        chat = "chat template" if e.has_chat_template else "no chat template"
        print(f"{e.display_name}\n        {e.architecture} {e.params_text} {e.quant}, ctx {e.context_length}, "
              f"{format_bytes(e.size)}, {chat}, {e.source}{' ' + e.repo_id if e.repo_id else ''}\n        {e.path}")
    return 0


def _find(entries: list[LibraryEntry], key: str) -> list[LibraryEntry]:
    path = Path(key).expanduser()
    return [e for e in entries if e.path == path or str(e.path) == key or e.path.name == key
            or any(f == path for f in e.files)]


async def _rm(args: argparse.Namespace, svc: ModelService) -> int:
    matches = _find(await svc.scan_library(), args.model)
    if not matches:
        raise ModelError(f"No local model matches '{args.model}'.", hint="See `strata models list` for names and paths.")
    if len(matches) > 1:
        raise ModelError(f"'{args.model}' matches {len(matches)} models.", hint="Pass the full path instead.")
    entry = matches[0]
    if not args.yes:
        if not sys.stdin.isatty():
            raise ModelError("Deleting needs confirmation.", hint="Run with --yes to delete without asking.")
        prompt = f"Delete {entry.display_name} ({format_bytes(entry.size)})? [y/N] "
        answer = await run_blocking(input, prompt, name="strata-confirm")
        if answer.strip().lower() not in ("y", "yes"):
            print("kept")
            return 1
    freed = await svc.delete(entry)
    if args.json:
        _print_json({"deleted": str(entry.path), "freed_bytes": freed})
    else:
        print(f"deleted {entry.display_name}, freed {format_bytes(freed)}")
    return 0


def _memory(shape: ModelShape, estimate: FitEstimate, options: LoadOptions) -> dict[str, int]:
    """The memory need in bytes: weights, KV cache (per token, trained and chosen context), compute."""
    k, v = options.cache_type_k, options.cache_type_v
    return {
        "weights_bytes": shape.weights_bytes,
        "kv_bytes_per_token": shape.kv_bytes_per_token(k, v),
        "trained_context": shape.trained_context,
        "kv_bytes_trained_context": shape.kv_bytes(shape.trained_context, k, v),
        "n_ctx": estimate.n_ctx,
        "slots": estimate.slots,  # parallel requests, each with n_ctx: the KV cache holds them all
        "kv_bytes_n_ctx": estimate.kv_bytes,
        "compute_bytes": estimate.compute_bytes,
        "total_bytes": estimate.total_bytes,
    }


def _memory_lines(m: dict[str, int]) -> list[str]:
    # Binary units, as the GPU page shows memory: the two can be compared at a glance.
    rows = [
        ("weights", format_mem(m["weights_bytes"]), ""),
        ("KV cache per token", format_mem(m["kv_bytes_per_token"]), ""),
        (f"KV cache at {m['trained_context']}", format_mem(m["kv_bytes_trained_context"]), "trained context"),
        (f"KV cache at {m['slots']} × {m['n_ctx']}" if m["slots"] > 1 else f"KV cache at {m['n_ctx']}",
         format_mem(m["kv_bytes_n_ctx"]),
         f"chosen context, {m['slots']} parallel requests" if m["slots"] > 1 else "chosen context"),
        ("compute buffer", format_mem(m["compute_bytes"]), f"at context {m['n_ctx']}"),
        ("total", format_mem(m["total_bytes"]), f"at context {m['n_ctx']}"),
    ]
    return [f"    {name:<22} {value:>10}  {note}".rstrip() for name, value, note in rows]


def _slots_line(estimate: FitEstimate, *, automatic: bool) -> str:
    """"4 requests at once, 4096 tokens each (automatic)", or "1 request at a time, 4096 tokens"."""
    if estimate.slots > 1:
        line = f"{estimate.slots} requests at once, {estimate.n_ctx} tokens each"
    else:
        line = f"1 request at a time, {estimate.n_ctx} tokens"
    return line + (f" (automatic: as many as fit, at most {MOST_AUTO_SLOTS})" if automatic else "")


async def _inspect(args: argparse.Namespace, app: AppServices) -> int:
    if args.ctx_size is not None and args.ctx_size < 0:
        raise ModelError("The context size cannot be negative.", hint="Pass --ctx-size N with N > 0.")
    svc = app.models
    meta = await svc.inspect(args.file)
    entry = await svc.open_file(args.file)
    await app.detect_gpus()  # the fit and the ceiling are for the device the engine runs on
    load_options.apply(args, app)
    options = app.load_options.options(args.file)
    shape = ModelShape.from_metadata(meta, entry.size)
    estimate = app.load_options.fit(shape, options)
    memory = _memory(shape, estimate, options)
    # The decode ceiling at the start of a reply (depth 0) on the device the engine runs on.
    limit = await run_blocking(lambda: app.limits.limit(args.file), name="strata-decode-limit")
    # The prefill ceiling of a typical prompt (INSPECT_PROMPT tokens, nothing cached) on the same device.
    prefill, _where = await run_blocking(lambda: app.limits.prefill_limit(args.file, INSPECT_PROMPT),
                                         name="strata-prefill-limit")
    if args.json:
        _print_json({
            "file": str(args.file), "architecture": meta.architecture, "name": meta.name, "quant": meta.quant,
            "params": entry.params, "context_length": meta.context_length, "layers": meta.block_count,
            "kv_heads": meta.kv_heads_per_layer, "key_length": meta.key_length, "value_length": meta.value_length,
            "chat_template": meta.has_chat_template, "size": entry.size, "tensors": len(meta.tensors),
            "fit": {"verdict": estimate.describe(), "max_context": estimate.max_context, "n_ctx": estimate.n_ctx,
                    "slots": estimate.slots, "automatic_slots": options.parallel == 0,
                    "gpu_layers": estimate.gpu_layers, "target": app.fit_target().name},
            "limit": limit.to_json() if limit is not None else None,
            "prefill_limit": prefill.to_json(device_kind=limit.device_kind) if prefill is not None else None,
            "load_options": options.to_json(),
            "problems": app.load_options.problems(shape, options),
            "memory": memory,
            "metadata": metadata_summary(meta, drop=("tokenizer.chat_template",)),
        })
        return 0
    print(f"{args.file.name}: {meta.name or ''}")
    print(f"  architecture   {meta.architecture}")
    print(f"  parameters     {entry.params_text} ({entry.params})")
    print(f"  quant          {meta.quant or 'unknown'}")
    print(f"  context        {meta.context_length}")
    print(f"  layers         {meta.block_count}, KV heads {meta.kv_heads_per_layer[:1]}..., head dims {meta.key_length}/{meta.value_length}")
    print(f"  chat template  {'yes' if meta.has_chat_template else 'no'}")
    print(f"  size           {format_bytes(entry.size)} in {len(entry.files)} file(s)")
    print(f"  fit            {estimate.describe()} at context {estimate.n_ctx} (largest context that fits: {estimate.max_context})")
    print(f"  parallel       {_slots_line(estimate, automatic=options.parallel == 0)}")
    print(f"  KV cache       K {options.cache_type_k}, V {options.cache_type_v}")
    if limit.ceiling is not None:
        c = limit.ceiling
        print(f"  memory limit   {c.tokens_per_s:,.1f} tok/s on {c.device}: {c.bytes_per_token / 1e6:,.1f} MB read per "
              f"token at {', '.join(f'{p.gbps:,.1f} GB/s ({p.source})' for p in c.parts if p.bytes_per_token)} "
              f"[{limit.peak} peak]")
        other = limit.to_json().get("other_peak")
        if isinstance(other, dict):
            print(f"  {other['peak'] + ' peak':<14} {other['ceiling_tps']:,.1f} tok/s at {other['gbps']:,.1f} GB/s "
                  f"({other['source']})")
    else:
        print(f"  memory limit   unknown ({limit.where.describe()}; no bandwidth figure for it)")
    if prefill is not None:
        unit = "TOPS" if prefill.rate.compute_type == "int8" else "TFLOPS"
        print(f"  compute limit  {prefill.tokens_per_s:,.1f} tok/s prefill of a {INSPECT_PROMPT}-token prompt on "
              f"{prefill.rate.device}: {prefill.flops_per_token / 1e9:,.2f} GFLOP per token at "
              f"{prefill.rate.tflops:,.2f} {unit} {prefill.rate.compute_type} ({prefill.rate.source})")
    else:
        print(f"  compute limit  unknown ({limit.where.describe()}; no matrix rate for it)")
    for warning in limit.warnings:
        print(f"  warning        {warning}")
    for problem in app.load_options.problems(shape, options):
        print(f"  problem        {problem}")
    print("  memory")
    for line in _memory_lines(memory):
        print(line)
    return 0
