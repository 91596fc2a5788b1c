"""`strata gpu`: the GPUs Strata sees, their gfx targets, memory, ROCm verdict and live telemetry.

Replays a captured machine with ``--sysfs-root DIR`` (a Linux tree) or ``--snapshot FILE``
(``--windows-snapshot`` is the same option; a copied system report works too), and writes a
replayable snapshot of this machine with ``--capture FILE``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from strata_gui.core.app_services import AppServices
from strata_gui.core.base import GpuDetectionError
from strata_gui.core.gpu import GpuReport, GpuSample, fmt_opt_bytes, fmt_sample_value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("gpu", help="show GPUs, gfx targets, memory, ROCm support and live telemetry")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--watch", action="store_true", help="print telemetry every --interval seconds (Ctrl+C stops)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between --watch samples (default 1)")
    p.add_argument("--count", type=int, default=0, help="stop --watch after N samples (0 = until Ctrl+C)")
    p.add_argument("--sysfs-root", type=Path, metavar="DIR", help="replay a captured Linux sysfs tree")
    p.add_argument("--snapshot", "--windows-snapshot", dest="snapshot", type=Path, metavar="FILE",
                   help="replay a GPU snapshot (Linux or Windows) or a copied system report")
    p.add_argument("--capture", type=Path, metavar="FILE", help="write a replayable snapshot of this machine")
    p.add_argument("--engine-log", type=Path, metavar="FILE",
                   help="resolve unknown gfx targets from an engine's output (ROCm start-up lines)")
    p.set_defaults(func=run)


def _watch_line(report: GpuReport, samples: dict[str, GpuSample]) -> str:
    parts = []
    for gpu in report.gpus:
        s = samples.get(gpu.key)
        if s is None:
            continue
        parts.append(
            f"{gpu.key}: load {fmt_sample_value(s.load_percent, '%')}, VRAM {fmt_opt_bytes(s.vram_used)}"
            f"/{fmt_opt_bytes(gpu.vram_total)}, shared {fmt_opt_bytes(s.shared_used)}, "
            f"{fmt_sample_value(s.temperature_c, '°C')}, {fmt_sample_value(s.power_w, 'W', 1)}, "
            f"{fmt_sample_value(s.core_clock_mhz, 'MHz')}"
        )
    return time.strftime("%H:%M:%S ") + (" | ".join(parts) if parts else "no GPU telemetry")


def run(args: argparse.Namespace, app: AppServices) -> int:
    # --sysfs-root / --snapshot reach the core's GPU service through the environment (cli.py).
    if app.gpu_error is not None:
        raise app.gpu_error
    service = app.gpu
    report = service.detect()
    if args.engine_log is not None:
        try:
            text = args.engine_log.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise GpuDetectionError(f"Could not read {args.engine_log}: {exc.strerror or exc}",
                                    hint="Check the path of the engine log.") from exc
        report = service.resolve_from_engine_output(text)
    if args.capture is not None:
        try:
            args.capture.write_text(json.dumps(service.capture(), indent=1, sort_keys=True), encoding="utf-8")
        except OSError as exc:
            raise GpuDetectionError(f"Could not write {args.capture}: {exc.strerror or exc}",
                                    hint="Choose a folder you can write to.") from exc
        print(f"Snapshot written to {args.capture} (replay: strata gpu --snapshot {args.capture})",
              file=sys.stderr)
    sampler = service.sampler(report.gpus, interval=args.interval)
    samples = sampler.sample_once()
    picks = app.resolver.gpu_picks()  # which GPUs models run on, and why (the GPU page's picker)
    driver = app.engines.driver_verdict()  # the catalog's driver check (the GPU page's warning)
    if args.json:
        print(json.dumps({**report.to_dict(samples), "devices": [p.to_json() for p in picks],
                          "runs_on": app.resolver.run_on().to_json(),
                          "driver_check": driver.to_json() if driver is not None else None}, indent=2,
                         sort_keys=True))
    else:
        print(report.report(samples))
        if picks:
            print("Models run on:")
            for pick in picks:
                print(f"  {'✓' if pick.chosen else '–'} {pick.name} [{pick.key}]: {pick.reason}")
            where = app.resolver.run_on()
            if where.engine:
                print(f"  the engine ({where.engine}) reports: {', '.join(where.engine_devices) or 'the processor'}")
                if where.on_cpu:
                    print(f"  models run on the CPU, not the GPU ticked above: {where.why}")
                    if where.fix:
                        print(f"  {where.fix}")
                elif where.differs:
                    print("  this is not the GPU ticked above")
        if driver is not None:
            state = "OK" if driver.ok else ("ROCm used anyway (your choice)" if driver.overridden
                                            else "ROCm skipped, Vulkan instead")
            print(f"Driver check: {state}: {driver.message}")
            for link in driver.links:
                print(f"  see {link}")
    if not args.watch:
        return 0
    taken = 1
    try:
        while args.count <= 0 or taken < args.count:
            time.sleep(max(0.0, args.interval))
            samples = sampler.sample_once()
            taken += 1
            if args.json:
                print(json.dumps({k: s.to_dict() for k, s in samples.items()}, sort_keys=True), flush=True)
            else:
                print(_watch_line(report, samples), flush=True)
    except KeyboardInterrupt:
        pass
    return 0
