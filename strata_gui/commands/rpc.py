"""`strata rpc serve|add|remove|list|enable|disable`: llama.cpp RPC workers (pool several machines' GPUs)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from strata_gui.commands import arg_types
from strata_gui.core.app_services import AppServices
from strata_gui.core.rpc import DEFAULT_RPC_PORT, TRUST_WARNING, WorkerStatus


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("rpc", help="llama.cpp RPC: lend this GPU, or spread models over other machines")
    rsub = p.add_subparsers(dest="rpc_command", metavar="ACTION", required=True)
    serve = rsub.add_parser("serve", help="lend this machine's GPU: run rpc-server until Ctrl+C")
    serve.add_argument("--host", default="127.0.0.1",
                       help="interface to listen on (default: this computer only; use the LAN address "
                            "or 0.0.0.0 to lend it, on a trusted network only)")
    serve.add_argument("--port", type=arg_types.PORT, default=DEFAULT_RPC_PORT)
    serve.add_argument("--device", "-d", action="append", default=[],
                       help="device to lend (e.g. Vulkan0, ROCm0, CPU); repeat for several; default: all")
    serve.add_argument("--engine", "-e", metavar="DIR", help="engine folder with rpc-server (default: installed)")
    serve.add_argument("--duration", type=float, default=0.0, help=argparse.SUPPRESS)  # tests: stop after S s
    add = rsub.add_parser("add", help="add a worker (host:port) and check it")
    add.add_argument("address")
    add.add_argument("--engine", "-e", metavar="DIR", help="engine used to list the worker's devices")
    rm = rsub.add_parser("remove", help="forget a worker")
    rm.add_argument("address")
    ls = rsub.add_parser("list", help="list workers: reachable? which devices?")
    ls.add_argument("--engine", "-e", metavar="DIR", help="engine used to list the workers' devices")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    rsub.add_parser("enable", help="launch models with the workers (default once one is added)")
    rsub.add_parser("disable", help="launch models on this machine only")
    p.set_defaults(func=run)


def _describe(s: WorkerStatus) -> str:
    if not s.reachable:
        return f"{s.address}\tunreachable\t{s.error}"
    devices = ", ".join(f"{d.name} {d.free_mb:,} MiB free" for d in s.devices) or s.error
    return f"{s.address}\treachable\t{devices}"


def _status_json(s: WorkerStatus) -> dict[str, object]:
    return {"address": s.address, "reachable": s.reachable, "error": s.error,
            "devices": [{"name": d.name, "total_mb": d.total_mb, "free_mb": d.free_mb} for d in s.devices]}


async def run(args: argparse.Namespace, app: AppServices) -> int:
    pool = app.rpc
    action = args.rpc_command
    folder = getattr(args, "engine", None)
    await app.detect_gpus()
    if folder:
        # A one-off engine folder goes through the resolver like any engine: checked before use.
        spec = await app.resolver.use_folder(Path(folder), need_device=False)
        pool.use_engines(lambda: [spec])
    if action == "serve":
        print(f"warning: {TRUST_WARNING}", file=sys.stderr)
        server = await pool.serve(args.host, args.port, devices=args.device or None)
        print(f"lending this machine at {server.address} (pid {server.pid}); on the other machine run:\n"
              f"  strata rpc add {server.address if args.host not in ('0.0.0.0', '::') else 'THIS-IP:' + str(args.port)}",
              flush=True)
        print("press Ctrl+C to stop", file=sys.stderr, flush=True)
        try:
            if args.duration:
                await asyncio.sleep(args.duration)
            else:
                await asyncio.Event().wait()
        finally:
            await pool.stop_serving()
        return 0
    if action == "add":
        addr = pool.add_worker(args.address)
        status = await pool.check(addr)
        print(_describe(status))
        if not status.reachable:
            print("saved anyway; it is used once it answers (strata rpc list checks again)", file=sys.stderr)
        return 0
    if action == "remove":
        pool.remove_worker(args.address)
        print(f"removed {args.address}")
        return 0
    if action in ("enable", "disable"):
        pool.set_enabled(action == "enable")
        print(f"RPC workers {'enabled' if action == 'enable' else 'disabled'}")
        return 0
    statuses = await pool.check_all()
    if args.json:
        print(json.dumps({"enabled": app.base.settings.rpc_enabled,
                          "workers": [_status_json(s) for s in statuses]}, indent=2))
    elif not statuses:
        print("no RPC workers; add one with: strata rpc add HOST:PORT")
    else:
        print(f"RPC workers ({'enabled' if app.base.settings.rpc_enabled else 'disabled'}):")
        for s in statuses:
            print(_describe(s))
    return 0
