"""`strata platform-check [--json]`: run the OS-specific layers for real (see core.platform_check)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from strata_gui.core.app_services import AppServices
from strata_gui.core.diagnostics import hold_child, hold_lock, run_checks


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("platform-check",
                       help="check this OS's layers for real: folders, key store, engine clean-up, one-app lock, GPU probe")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    # The two processes of the engine clean-up check (an "app" and its "engine").
    p.add_argument("--hold-child", type=Path, metavar="PIDFILE", help=argparse.SUPPRESS)
    p.add_argument("--unguarded", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--sleep", type=float, help=argparse.SUPPRESS)
    # The other process of the one-app lock check: LOCKFILE HELDFILE.
    p.add_argument("--hold-lock", nargs=2, type=Path, metavar=("LOCKFILE", "HELDFILE"), help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, app: AppServices) -> int:
    if args.sleep is not None:
        time.sleep(args.sleep)
        return 0
    if args.hold_lock is not None:
        return hold_lock(*args.hold_lock)
    if args.hold_child is not None:
        return hold_child(args.hold_child, guarded=not args.unguarded)
    report = run_checks(app.base.paths)
    print(report.to_json() if args.json else report.report(), flush=True)
    return 0 if report.ok else 1
