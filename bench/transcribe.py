"""Speech to text through Strata's TranscriptionService against whisper.cpp's own tools by hand.

Same model, recording, decoding (greedy, best of 2: whisper-server's defaults, which Strata asks
for) and thread count, interleaved repetitions in the same run:
  * transcription: ``whisper-cli`` (one process per repetition; its own "total time" minus its
    "load time", so the model load a one-shot CLI pays is not held against it) vs
    ``TranscriptionService.transcribe`` on the composed core with the model loaded (the pool's
    lease, the WAV read and cut into pieces, the multipart upload, the answer) — ratio = Strata's
    speed / whisper-cli's (goal: at least 0.95);
  * cold start: ``whisper-server`` started by hand, /health polled until 200, one /inference —
    vs Strata's first transcription (engine resolved, started by the pool, model loaded, the same
    request) — ratio = Strata's time / by hand (goal: at most 1.2).

Usage: python bench/transcribe.py [--engine DIR] [--model FILE] [--audio FILE] [--reps 5] [--threads 2]
Defaults: the CPU whisper.cpp build from ~/.cache/strata-dev/engines.env, a generated whisper model
(real vocabulary, random weights: tests/support/whisper_model.py) and whisper.cpp's samples/jfk.wav.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.kinds import SPEECH
from strata_gui.core.speech.service import INFERENCE_PATH
from tests.support.engines import bench_profile, free_port

_TOTAL_RE = re.compile(r"total time =\s*([0-9.]+) ms")
_LOAD_RE = re.compile(r"load time =\s*([0-9.]+) ms")


def run_cli(cli: Path, model: Path, audio: Path, threads: int) -> tuple[float, float]:
    """One whisper-cli run: (its own transcription seconds, wall seconds of the whole process)."""
    cmd = [str(cli), "-m", str(model), "-f", str(audio), "-t", str(threads), "-bs", "1", "-bo", "2", "-l", "en"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    wall = time.perf_counter() - t0
    total, load = _TOTAL_RE.search(done.stderr), _LOAD_RE.search(done.stderr)
    if done.returncode != 0 or not total or not load:
        raise SystemExit(f"whisper-cli failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return (float(total.group(1)) - float(load.group(1))) / 1000, wall


def cold_by_hand(server: Path, model: Path, audio: Path, threads: int) -> float:
    """Seconds from starting whisper-server by hand to the first transcription's answer."""
    port = free_port()
    form = httpx.Request("POST", "http://engine" + INFERENCE_PATH,
                         data={"response_format": "json", "language": "en", "temperature": "0.0"},
                         files={"file": (audio.name, audio.read_bytes(), "application/octet-stream")})
    body, ctype = form.read(), form.headers["Content-Type"]
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                             "-t", str(threads), "-ng"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            while True:
                try:
                    if http.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.01)
            http.post("/inference", content=body, headers={"Content-Type": ctype}).raise_for_status()
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(10)


async def strata_runs(engine_dir: Path, model: Path, audio: Path, threads: int, reps: int) -> dict[str, object]:
    app = build_app_services(build_services())
    try:
        app.settings.update(threads=threads)
        await app.prepare()
        await app.engines.add_local(engine_dir, "cpu", kind=SPEECH)
        t0 = time.perf_counter()
        first = await app.speech.transcribe(model, audio, language="en")
        cold = time.perf_counter() - t0
        strata: list[float] = []
        cli: list[float] = []
        cli_wall: list[float] = []
        by_hand: list[float] = []
        for _ in range(reps):  # interleaved, so load from elsewhere hits both alike
            own, wall = run_cli(engine_dir / "whisper-cli", model, audio, threads)
            cli.append(own)
            cli_wall.append(wall)
            t = time.perf_counter()
            await app.speech.transcribe(model, audio, language="en")
            strata.append(time.perf_counter() - t)
        await app.speech.unload()
        for _ in range(reps):
            by_hand.append(cold_by_hand(engine_dir / "whisper-server", model, audio, threads))
            t = time.perf_counter()
            await app.speech.transcribe(model, audio, language="en")
            strata_cold = time.perf_counter() - t
            await app.speech.unload()
            by_hand.append(-strata_cold)  # kept apart below
        return {"engine": first.engine, "first_cold_s": cold, "strata_s": strata, "cli_s": cli,
                "cli_wall_s": cli_wall, "cold_by_hand_s": [x for x in by_hand if x > 0],
                "cold_strata_s": [-x for x in by_hand if x < 0], "words": len(first.text.split())}
    finally:
        await app.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--engine", type=Path, help="folder with whisper-server and whisper-cli")
    ap.add_argument("--model", type=Path)
    ap.add_argument("--audio", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with bench_profile("strata-bench-transcribe-") as (engines, root):
        from tests.support.whisper_model import write_whisper_model

        engine_dir = args.engine or engines.whisper_server.parent
        model = args.model or write_whisper_model(root / "ggml-strata-test.en.bin", engines.whisper_vocab_model())
        audio = args.audio or engines.whisper_sample
        res = asyncio.run(strata_runs(engine_dir, model, audio, args.threads, args.reps))
    strata_s = statistics.median(res["strata_s"])  # type: ignore[arg-type]
    cli_s = statistics.median(res["cli_s"])  # type: ignore[arg-type]
    cold_hand = statistics.median(res["cold_by_hand_s"])  # type: ignore[arg-type]
    cold_strata = statistics.median(res["cold_strata_s"])  # type: ignore[arg-type]
    summary = {**res, "ratio_speed": cli_s / strata_s, "ratio_cold": cold_strata / cold_hand,
               "model": str(model), "audio": str(audio), "threads": args.threads}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"engine: {res['engine']} · {model.name} · {audio.name} · {args.threads} threads · {args.reps} reps")
    print(f"whisper-cli (its own total minus load): median {cli_s:.3f} s  "
          f"(whole process {statistics.median(res['cli_wall_s']):.3f} s)")  # type: ignore[arg-type]
    print(f"strata (TranscriptionService, loaded):  median {strata_s:.3f} s")
    print(f"ratio strata / whisper-cli speed: {cli_s / strata_s:.3f}  (goal >= 0.95)")
    print(f"cold start to first transcript, by hand (whisper-server + /health + /inference): "
          f"median {cold_hand:.3f} s")
    print(f"cold start to first transcript, strata (pool start + load + job):             "
          f"median {cold_strata:.3f} s")
    print(f"ratio strata / by hand cold start: {cold_strata / cold_hand:.3f}  (goal <= 1.2)")


if __name__ == "__main__":
    main()
