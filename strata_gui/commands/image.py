"""`strata image "prompt" --model M [--out FILE] [--steps N --size WxH --seed S --cfg F --sampler S
--negative TEXT --count N] [--engine DIR] [--settings-from PNG] [--json]`: make images.

The engines come from the core's resolver (image engines: ROCm → Vulkan → CPU, failed checks left
out), as on the Images page; an engine that cannot load the model or dies mid-job is replaced by the
next one and the job is sent again, with a note on stderr. Progress per step goes to stderr; Ctrl-C
cancels (the engine is stopped). Every image also lands in the gallery with its settings embedded.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path

from strata_gui.core.app_services import AppServices
from strata_gui.core.base import ImageError, run_blocking
from strata_gui.core.images import (
    ImageEvent,
    ImageNotice,
    ImageProgress,
    ImageRequest,
    parse_size,
    read_settings,
)
from strata_gui.core.platform import NotRegularFileError, check_regular
from strata_gui.core.runtime import IMAGE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("image", help="make images with a local Stable Diffusion model")
    p.add_argument("prompt", nargs="?", default=None, help="what to draw (default: the --settings-from image's)")
    p.add_argument("--model", "-m", required=True, help="image model file (GGUF or safetensors)")
    p.add_argument("--out", "-o", type=Path, help="also write the PNG here (several: FILE-2.png, ...)")
    p.add_argument("--negative", default=None, help="negative prompt")
    p.add_argument("--steps", type=int, default=None, help="sampling steps (default 20)")
    p.add_argument("--size", default=None, help="WIDTHxHEIGHT (default 512x512)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: random)")
    p.add_argument("--cfg", type=float, default=None, help="CFG scale (default 7)")
    p.add_argument("--sampler", default=None, help="sampler (euler_a, euler, dpm++2m, ...)")
    p.add_argument("--count", "-n", type=int, default=None, help="images to make (seeds S, S+1, ...)")
    p.add_argument("--settings-from", type=Path, metavar="PNG",
                   help="start from the settings embedded in an image (its prompt, size, steps, seed...)")
    p.add_argument("--engine", "-e", action="append", default=[], metavar="DIR",
                   help="use the sd-server in DIR first (checked before use; installed engines stay as fallbacks)")
    p.add_argument("--json", action="store_true", help="print one JSON object (paths, engine, timings)")
    p.set_defaults(func=run)


def request_from_args(args: argparse.Namespace) -> ImageRequest:
    """The request: ``--settings-from``'s settings (or the defaults), then each option given."""
    base = read_settings(args.settings_from.expanduser()).request if args.settings_from else ImageRequest("")
    changes: dict[str, object] = {}
    if args.prompt is not None:
        changes["prompt"] = args.prompt
    if args.negative is not None:
        changes["negative_prompt"] = args.negative
    if args.size is not None:
        changes["width"], changes["height"] = parse_size(args.size)
    for name, attr in (("steps", "steps"), ("seed", "seed"), ("cfg", "cfg_scale"), ("sampler", "sampler"),
                       ("count", "count")):
        value = getattr(args, name)
        if value is not None:
            changes[attr] = value
    return dataclasses.replace(base, **changes).validate()  # type: ignore[arg-type]


def _outputs(out: Path, count: int) -> list[Path]:
    if count == 1:
        return [out]
    return [out] + [out.with_name(f"{out.stem}-{i}{out.suffix or '.png'}") for i in range(2, count + 1)]


def _folder(text: str) -> Path:
    return Path(text).expanduser()


def _model(args: argparse.Namespace) -> Path:
    model = Path(args.model).expanduser()
    try:
        check_regular(model)  # a FIFO would make the engine wait on it forever
    except NotRegularFileError as exc:
        raise ImageError(f"The model file {model} cannot be used: {exc.message}", hint=exc.hint) from exc
    except OSError as exc:
        raise ImageError(f"The model file {model} does not exist.", hint="Pass --model FILE.") from exc
    return model


def _copy_out(sources: list[Path], out: Path) -> list[Path]:
    written = []
    for src, dest in zip(sources, _outputs(out.expanduser(), len(sources)), strict=True):
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        written.append(dest)
    return written


async def run(args: argparse.Namespace, app: AppServices) -> int:
    request = request_from_args(args)
    model = _model(args)
    await app.prepare()
    for folder in args.engine:
        await app.resolver.use_folder(_folder(folder), kind=IMAGE)
    resolution = app.resolver.resolve(model, kind=IMAGE)
    if resolution.chosen is None:
        raise ImageError(resolution.summary().replace("engine", "image engine", 1),
                         hint="Install one with `strata engines install --images`, or pass --engine DIR.")
    quiet = args.json
    if not quiet:
        print(f"engine: {resolution.summary()}", file=sys.stderr)
    tty = sys.stderr.isatty()

    def on_event(event: ImageEvent) -> None:
        if isinstance(event, ImageNotice):
            print(("\n" if tty else "") + f"note: {event.message}", file=sys.stderr)
        elif isinstance(event, ImageProgress) and not quiet:
            if event.phase == "loading" and event.steps:
                return  # tensor counts: too chatty for a terminal
            text = event.message()
            if tty:
                print(f"\r{text[:78]:<78}", end="", file=sys.stderr, flush=True)
            elif event.phase != "loading" or not event.steps:
                print(text, file=sys.stderr, flush=True)

    unsubscribe = app.images.events.subscribe(on_event)
    try:
        result = await app.images.generate(model, request, source="cli")
    finally:
        unsubscribe()
        if tty and not quiet:
            print("\r" + " " * 78 + "\r", end="", file=sys.stderr)
    written: list[Path] = []
    if args.out is not None:
        written = await run_blocking(_copy_out, [i.path for i in result.images], args.out, name="strata-copy-image")
    if args.json:
        data = result.to_json()
        data["out"] = [str(p) for p in written]
        data["request"] = request.to_json()
        print(json.dumps(data, indent=2))
    else:
        for dest in written or [i.path for i in result.images]:
            print(dest)
        spp = f", {result.seconds_per_step:.2f} s/step" if result.seconds_per_step else ""
        seeds = ", ".join(str(i.request.seed) for i in result.images)
        print(f"{len(result.images)} image(s) in {result.seconds:.1f} s on {result.engine.label}"
              f" ({result.seconds_per_image:.1f} s/image{spp}); seed {seeds}", file=sys.stderr)
    return 0
