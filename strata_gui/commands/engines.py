"""`strata engines plan|list|resolve|install|update|rollback|history|remove|pin|gc|probe|add-local|check-tuning [--json]`.

GPU targets default to the detected GPUs (``--gfx`` plans for others); every verdict, order and
reason comes from the core (engine service and resolver), the same the GUI shows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from strata_gui.commands.device_option import add_device_option, apply_device_option
from strata_gui.core.app_services import AppServices
from strata_gui.core.base import EngineError, Progress
from strata_gui.core.engines import EngineService, GpuTarget, InstalledEngine, Release, load_releases_file
from strata_gui.core.runtime import IMAGE, INSTALLABLE, TEXT, EngineKind, kind_named


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("engines", help="plan, install, probe and manage llama.cpp engines")
    esub = p.add_subparsers(dest="engines_command", metavar="ACTION", required=True)

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        ap = esub.add_parser(name, help=help_text)
        ap.add_argument("--json", action="store_true", help="machine-readable output")
        ap.set_defaults(func=run)
        return ap

    def gpu_args(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--gfx", action="append", default=[], metavar="GFX",
                        help="plan for this gfx target (repeatable; default: the detected GPUs)")

    def images_arg(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--images", action="store_true",
                        help="image engines (stable-diffusion.cpp's sd-server) instead of llama.cpp's")
        # Every kind with builds of its own, named as the catalog and manifests name it.
        ap.add_argument("--kind", choices=[k.name for k in INSTALLABLE],
                        help="whose engines: " + ", ".join(f"{k.name} ({k.project}'s {k.binary})" for k in INSTALLABLE))

    plan = add("plan", "which builds would be tried for this GPU, and why")
    gpu_args(plan)
    images_arg(plan)
    plan.add_argument("--os", choices=("windows", "linux"), help="plan for another OS")
    plan.add_argument("--releases-json", action="append", default=[], type=Path, metavar="FILE",
                      help="use saved GitHub release JSON instead of the network (repeatable)")
    add("list", "installed engines and their last check on this machine")
    res = add("resolve", "which engine a model would run on, and why (nothing is launched)")
    res.add_argument("--model", "-m", type=Path, help="GGUF file (default: the last model used)")
    res.add_argument("--depth", type=int, metavar="TOKENS",
                     help="tokens already in the conversation: choose the engine measured fastest there")
    add_device_option(res)
    images_arg(res)
    inst = add("install", "install engines: the first usable one, or one backend")
    gpu_args(inst)
    images_arg(inst)
    inst.add_argument("--backend", choices=("rocm", "vulkan", "cpu"),
                      help="install only the first candidate of this backend (default: try in order until one works)")
    upd = add("update", "try newer releases on this machine; use each only when it works and is not slower")
    upd.add_argument("--check", action="store_true",
                     help="only say what is new (works offline from the saved release list)")
    upd.add_argument("--trial-only", action="store_true", help="try the new builds without using them")
    upd.add_argument("--channel", choices=("stable", "latest"),
                     help="stable: the catalog's pinned/minimum tags; latest: the newest release (default: Settings)")
    upd.add_argument("--retry", action="store_true", help="try again a build an earlier trial refused")
    rb = add("rollback", "use the last good build again (after an update replaced it)")
    rb.add_argument("engine", metavar="ID", nargs="?", help="an engine of the kind to roll back (default: the latest update)")
    add("history", "every engine update trial, promotion and rollback, with its figures")
    rm = add("remove", "delete an installed engine")
    rm.add_argument("engine", metavar="ID")
    pin = add("pin", "always use this engine (no ID: choose automatically)")
    pin.add_argument("engine", metavar="ID", nargs="?")
    add("gc", "delete older versions (keeps the build in use, the last good one and the pinned one)")
    probe = add("probe", "run engines' --list-devices with their launch environment")
    probe.add_argument("engine", metavar="ID", nargs="?", help="default: every installed engine")
    gpu_args(probe)
    local = add("add-local", "register a folder holding a llama-server you built")
    local.add_argument("folder", type=Path)
    local.add_argument("--backend", choices=("rocm", "vulkan", "cpu"),
                       help="default: told from its libraries, else from the devices it lists")
    local.add_argument("--name", help="name for the list (default: the folder name)")
    gpu_args(local)
    images_arg(local)
    tune = add("check-tuning", "check a hipBLASLt tuning table against an engine and GPU")
    tune.add_argument("file", type=Path)
    tune.add_argument("--engine", required=True, metavar="ID")
    tune.add_argument("--gfx", help="the GPU's gfx target (default: the detected GPU)")
    tune.add_argument("--table-gfx", help="gfx target the table was made for (default: the GPU's)")


def _kind(args: argparse.Namespace) -> EngineKind:
    if getattr(args, "kind", None):
        return kind_named(args.kind)
    return IMAGE if getattr(args, "images", False) else TEXT


def _gpus(args: argparse.Namespace, app: AppServices) -> list[GpuTarget]:
    gfx = getattr(args, "gfx", None) or []
    if isinstance(gfx, list) and gfx:
        return [GpuTarget(g.lower(), None, g.lower()) for g in gfx]
    return app.resolver.gpu_targets()


def _progress_printer(enabled: bool) -> Callable[[Progress], None]:
    def show(p: Progress) -> None:
        if enabled:
            print("\r" + p.describe()[:100].ljust(100), end="", file=sys.stderr, flush=True)
    return show


def _engine_json(e: InstalledEngine, svc: EngineService, gpu: GpuTarget | None) -> dict[str, Any]:
    data = e.to_json()
    probe = svc.last_probe(e.id, gpu)
    data["probe"] = probe.to_json() if probe else None
    data["pinned"] = e.id == svc.settings.pinned_engine
    data["unverified"] = e.unverified
    return data


def _engine_line(e: InstalledEngine, svc: EngineService, gpu: GpuTarget | None) -> str:
    probe = svc.last_probe(e.id, gpu)
    state = f"{probe.verdict}: {probe.message}" if probe else "not checked on this machine yet (strata engines probe)"
    pin = " (pinned)" if e.id == svc.settings.pinned_engine else ""
    kind = "" if e.kind.follows_choices else f" ({e.kind.label} engine)"
    warn = f"\n    warning: {e.unverified_notice()}" if e.unverified else ""
    return f"{e.id}{pin}{kind}\n    {e.backend} {e.tag}  {e.server_path}\n    {state}{warn}"


def _warn_unverified(*engines: InstalledEngine | None) -> None:
    """An engine installed without a published checksum says so (on stderr, also with --json)."""
    for e in engines:
        if e is not None and e.unverified:
            print(f"warning: {e.unverified_notice()}", file=sys.stderr)


def _history_line(entry: Any) -> str:
    when = datetime.fromtimestamp(entry.at).strftime("%Y-%m-%d %H:%M")
    return f"{when}  {entry.action}: {entry.message}"


def _out(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2) if args.json else text)


async def run(args: argparse.Namespace, app: AppServices) -> int:
    action = args.engines_command
    show = _progress_printer(not args.json and sys.stderr.isatty())
    svc = app.engines
    if not getattr(args, "gfx", None):
        await app.detect_gpus()
    if action == "plan":
        return await _plan(args, app)
    gpus = _gpus(args, app)
    gpu = gpus[0] if gpus else None
    if action == "list":
        engines = svc.installed()
        text = "\n".join(_engine_line(e, svc, gpu) for e in engines) or (
            "No engines installed. Run `strata engines install`.")
        _out(args, [_engine_json(e, svc, gpu) for e in engines], text)
        for entry in svc.ledger.unfinished():  # a trial stopped, or whose process ended, since
            print(f"note: {_history_line(entry)}; the next `strata engines update` tries it again.",
                  file=sys.stderr)
        return 0
    if action == "resolve":
        model = args.model or (Path(app.settings.current.last_model) if app.settings.current.last_model else None)
        apply_device_option(args, app)
        await app.resolver.prepare(show)
        resolution = app.resolver.resolve(model.expanduser() if model else None, depth=args.depth,
                                          kind=_kind(args))
        _out(args, resolution.to_json(), resolution.report())
        return 0 if resolution.chosen else 1
    if action == "install":
        return await _install(args, app, gpus, show)
    if action in ("update", "rollback", "history"):
        return await _update(args, app, show)
    if action == "remove":
        svc.remove(args.engine)
        _out(args, {"removed": args.engine}, f"removed {args.engine}")
        return 0
    if action == "pin":
        svc.pin(args.engine)
        _out(args, {"pinned": args.engine}, f"pinned {args.engine}" if args.engine else "choosing automatically")
        return 0
    if action == "gc":
        removed = svc.garbage_collect()
        _out(args, {"removed": removed}, "\n".join(f"removed {r}" for r in removed) or "nothing to remove")
        return 0
    if action in ("probe", "add-local", "check-tuning"):
        return await _check(args, app, gpu)
    raise EngineError(f"Unknown engines action '{action}'.")


async def _plan(args: argparse.Namespace, app: AppServices) -> int:
    """`engines plan`: for this machine's GPUs (or ``--gfx``), from the network or saved release lists."""
    svc = app.engines
    if args.os:
        svc.os_name = args.os
    releases: dict[str, tuple[Release, ...]] | None = None
    if args.releases_json:
        releases = {}
        for f in args.releases_json:
            repo, rels = load_releases_file(f)
            releases[repo] = releases.get(repo, ()) + rels
    plan = await svc.plan(_gpus(args, app), releases, _kind(args))
    _out(args, plan.to_json(), plan.report())
    return 0


async def _install(args: argparse.Namespace, app: AppServices, gpus: list[GpuTarget],
                   show: Callable[[Progress], None]) -> int:
    """`engines install`: the first build of the plan that works here, or the first of ``--backend``."""
    svc = app.engines
    gpu = gpus[0] if gpus else None
    if args.backend:
        plan = await svc.plan(gpus, kind=_kind(args))
        cand = next((c for c in plan.included if c.backend == args.backend), None)
        if cand is None:
            raise EngineError(f"The plan has no {args.backend} build for this machine.",
                              hint="See `strata engines plan` for the reasons.")
        engine = await svc.install(cand, show, gpu)
        _warn_unverified(engine)
        result = await svc.probe(engine, gpu)
        _out(args, _engine_json(engine, svc, gpu), f"\ninstalled {engine.id}: {result.verdict}: {result.message}")
        return 0 if result.usable else 1
    outcome = await svc.setup(gpus, show, kind=_kind(args))
    _warn_unverified(outcome.chosen)
    data = {"plan": outcome.plan.to_json(), "attempts": list(outcome.notices),
            "chosen": outcome.chosen.id if outcome.chosen else None}
    text = "\n".join(outcome.notices) + (
        f"\nusing {outcome.chosen.id}" if outcome.chosen else "\nno engine works on this machine")
    _out(args, data, text)
    return 0 if outcome.chosen else 1


async def _update(args: argparse.Namespace, app: AppServices, show: Callable[[Progress], None]) -> int:
    """`engines update|rollback|history`: engine updates, tried on this machine before they are used."""
    if args.engines_command == "rollback":
        entry = app.updater.rollback(args.engine)
        _out(args, entry.to_json(), entry.message)
        return 0
    if args.engines_command == "history":
        entries = app.updater.ledger.history()
        _out(args, [h.to_json() for h in entries],
             "\n".join(_history_line(h) for h in entries) or "No engine update has been tried yet.")
        return 0
    started = time.time()
    with _stopped_by_signals() as stops:
        try:
            survey = await app.updater.survey(channel=args.channel)
            if args.check:
                _out(args, survey.to_json(), survey.report())
                return 0
            outcomes = await app.updater.update(trial_only=args.trial_only, retry_refused=args.retry,
                                                on_progress=show, survey=survey)
        except asyncio.CancelledError:
            if not stops:
                raise
            return _stopped(args, app, stops[0], started)
    if outcomes and not args.json and sys.stderr.isatty():  # end the progress line
        print(file=sys.stderr)
    text = "\n".join([f"{o.verdict}: {o.message}" for o in outcomes] or ["All engines are up to date."])
    lines = survey.candidate_lines() + survey.notes()
    _out(args, {"outcomes": [o.to_json() for o in outcomes], **survey.to_json()}, "\n".join([*lines, text]))
    return 0


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[list[signal.Signals]]:
    """While an update runs, SIGTERM and Ctrl+C cancel it (its trial then ends cleanly: recorded as
    not finished, the build in use kept) instead of ending the process mid-trial. Yields the
    signals received. Where the loop cannot watch signals (Windows), Ctrl+C still cancels it."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    received: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        received.append(sig)
        if task is not None:
            task.cancel(msg="Ctrl+C" if sig == signal.SIGINT else sig.name)

    watched: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)
        try:
            loop.add_signal_handler(sig, stop, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not on this loop, or not the main thread
            continue
        watched[sig] = previous
    try:
        yield received
    finally:
        for sig, previous in watched.items():
            loop.remove_signal_handler(sig)
            if previous is not None:  # None: not set from Python; the loop put the default back
                signal.signal(sig, previous)  # asyncio.run's own Ctrl+C handling, as it was
        if received and task is not None:
            task.uncancel()


def _stopped(args: argparse.Namespace, app: AppServices, sig: signal.Signals, started: float) -> int:
    """An update stopped by ``sig``: say what its trials recorded, exit as the signal's code."""
    entries = [h for h in app.updater.ledger.history() if h.at >= started]
    how = "Ctrl+C" if sig == signal.SIGINT else sig.name
    _out(args, {"stopped": how, "history": [h.to_json() for h in entries]},
         "\n".join([f"stopped ({how})"] + [f"{h.action}: {h.message}" for h in entries]))
    return 128 + int(sig)


async def _check(args: argparse.Namespace, app: AppServices, gpu: GpuTarget | None) -> int:
    """`engines probe|add-local|check-tuning`: what engines (and a tuning table) do on this machine."""
    svc = app.engines
    if args.engines_command == "probe":
        engines = [svc.get(args.engine)] if args.engine else svc.installed()
        results = {}
        for e in engines:
            results[e.id] = (await svc.probe(e, gpu)).to_json()
        text = "\n".join(f"{k}: {v['verdict']}: {v['message']}" for k, v in results.items()) or (
            "No engines installed.")
        _out(args, results, text)
        return 0 if any(v["verdict"] == "works" for v in results.values()) else 1
    if args.engines_command == "add-local":
        engine, result = await svc.add_local(args.folder, args.backend, gpu, args.name, _kind(args))
        _out(args, {**_engine_json(engine, svc, gpu), "probe": result.to_json()},
             f"added {engine.id} ({engine.backend}): {result.verdict}: {result.message}")
        return 0 if result.usable else 1
    engine = svc.get(args.engine)
    gfx = args.gfx or (app.resolver.primary_target().gfx if app.resolver.primary_target() else None)  # type: ignore[union-attr]
    check = svc.check_tuning(args.file, engine, gfx, args.table_gfx)
    _out(args, {"ok": check.ok, "reason": check.reason, "revision": check.revision, "rows": check.rows},
         ("valid: " if check.ok else "rejected: ") + check.reason)
    return 0 if check.ok else 1
