"""Images per second through Strata's ImageService against stable-diffusion.cpp's own sd-cli.

Same model, settings, seed and thread count, interleaved repetitions in the same run:
  * sd-cli: one process per repetition; its generation time is what sd.cpp itself reports
    ("generate_image completed in X s": text encoding, sampling, decoding), so the model load
    that a one-shot CLI pays every time is not held against it;
  * strata: ImageService.generate on the composed core with the model already loaded (as on the
    Images page after the first image): HTTP job, progress parsing, PNG decode, parameters
    embedded, gallery write, metrics record, all counted.
The first Strata job (engine start + model load) is reported apart. Ratio = strata / sd-cli
images per second (goal: at least 0.95).

Usage: python bench/image.py [--engine DIR] [--model FILE] [--reps 3] [--steps 4] [--size 128x128]
       [--count 1] [--threads 2]
Defaults: the CPU sd-server/sd-cli from ~/.cache/strata-dev/engines.env and the generated test model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.images import ImageRequest, parse_size
from strata_gui.core.runtime.kinds import IMAGE

_GEN_RE = re.compile(r"generate_image completed in ([0-9.]+)s")


def _default_sd_dir() -> Path:
    from tests.support.engines import locate

    return locate().sd_server.parent


def _default_model() -> Path:
    from tests.support.image_model import cached_image_model

    return cached_image_model()


def run_sd_cli(sd_cli: Path, model: Path, req: ImageRequest, threads: int, out: Path) -> tuple[float, float]:
    """One sd-cli run: (sd.cpp's generation seconds, wall seconds of the whole process)."""
    cmd = [str(sd_cli), "-m", str(model), "-p", req.prompt, "-n", req.negative_prompt, "-W", str(req.width),
           "-H", str(req.height), "--steps", str(req.steps), "--cfg-scale", str(req.cfg_scale),
           "--sampling-method", req.sampler, "-s", str(req.seed), "-b", str(req.count), "-t", str(threads),
           "-o", str(out)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    wall = time.perf_counter() - t0
    m = _GEN_RE.search(done.stdout + done.stderr)
    if done.returncode != 0 or not m:
        raise SystemExit(f"sd-cli failed ({done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
    return float(m.group(1)), wall


async def strata_runs(sd_dir: Path, model: Path, req: ImageRequest, threads: int, reps: int,
                      sd_cli: Path, cli_out: Path) -> dict[str, object]:
    base = build_services()
    app = build_app_services(base)
    try:
        await app.resolver.use_folder(sd_dir, kind=IMAGE)
        app.images.threads = threads
        t0 = time.perf_counter()
        first = await app.images.generate(model, req, source="bench")
        cold = time.perf_counter() - t0
        strata: list[float] = []
        cli: list[float] = []
        cli_wall: list[float] = []
        for _ in range(reps):  # interleaved, so load from elsewhere hits both alike
            gen, wall = run_sd_cli(sd_cli, model, req, threads, cli_out)
            cli.append(gen)
            cli_wall.append(wall)
            t = time.perf_counter()
            await app.images.generate(model, req, source="bench")
            strata.append(time.perf_counter() - t)
        return {"engine": first.engine.label, "cold_first_job_s": cold, "strata_s": strata, "sd_cli_gen_s": cli,
                "sd_cli_wall_s": cli_wall}
    finally:
        await app.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", type=Path, help="folder with sd-server and sd-cli")
    ap.add_argument("--model", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--size", default="128x128")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sd_dir = args.engine or _default_sd_dir()
    model = args.model or _default_model()
    width, height = parse_size(args.size)
    req = ImageRequest("a lighthouse on a cliff at dusk", negative_prompt="blurry", width=width, height=height,
                       steps=args.steps, cfg_scale=7.0, sampler="euler_a", seed=42, count=args.count).validate()
    with tempfile.TemporaryDirectory(prefix="strata-bench-image-") as tmp:
        os.environ["STRATA_HOME"] = str(Path(tmp) / "home")  # a throwaway gallery and database
        res = asyncio.run(strata_runs(sd_dir, model, req, args.threads, args.reps, sd_dir / "sd-cli",
                                      Path(tmp) / "cli.png"))
    strata_s = statistics.median(res["strata_s"])  # type: ignore[arg-type]
    cli_s = statistics.median(res["sd_cli_gen_s"])  # type: ignore[arg-type]
    strata_ips, cli_ips = args.count / strata_s, args.count / cli_s
    ratio = strata_ips / cli_ips
    summary = {**res, "images_per_s": {"strata": strata_ips, "sd_cli": cli_ips}, "ratio": ratio,
               "settings": req.to_json(), "threads": args.threads}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"engine: {res['engine']} · {req.size}, {req.steps} steps, {req.count} image(s), {args.threads} threads")
    print(f"sd-cli  (generation as sd.cpp reports it): {cli_ips:.3f} images/s  (median {cli_s:.2f} s; "
          f"whole process incl. load {statistics.median(res['sd_cli_wall_s']):.2f} s)")  # type: ignore[arg-type]
    print(f"strata  (ImageService, model loaded):      {strata_ips:.3f} images/s  (median {strata_s:.2f} s; "
          f"first job incl. engine start + load {res['cold_first_job_s']:.2f} s)")
    print(f"ratio strata / sd-cli: {ratio:.3f}  (goal >= 0.95)")


if __name__ == "__main__":
    main()
