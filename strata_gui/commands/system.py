"""`strata system [--json]`: versions, OS, CPU, RAM and Strata's folders."""

from __future__ import annotations

import argparse

from strata_gui.core.app_services import AppServices
from strata_gui.core.diagnostics import collect_system_info


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("system", help="show versions, OS, CPU, RAM and Strata's folders")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, app: AppServices) -> int:
    info = collect_system_info(app.base.paths)
    print(info.to_json() if args.json else info.report())
    return 0
