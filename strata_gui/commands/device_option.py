"""``--device`` and ``--ignore-driver-check`` for the commands that launch or plan engines (chat,
bench, serve, engines resolve).

The options only override ``Settings.devices`` / ``Settings.ignore_driver_check`` for this run; which
engine devices that means, and whether ROCm runs, is the engine resolver's decision.
"""

from __future__ import annotations

import argparse

from strata_gui.core.app_services import AppServices


def add_device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", "-d", action="append", default=[], metavar="GPU",
                   help="GPU to run on: its key (card1), PCI bus, part of its name (7900) or an engine device "
                        "(ROCm0, Vulkan0); repeat or comma-separate for several; 'auto' lets Strata choose "
                        "(default: Settings, else the discrete AMD GPU with the most memory)")
    p.add_argument("--ignore-driver-check", action="store_true",
                   help="use ROCm builds even with a driver known to break them (see `strata gpu`)")


def apply_device_option(args: argparse.Namespace, app: AppServices) -> None:
    """Use the ``--device`` / ``--ignore-driver-check`` choice for this run only (never saved)."""
    given = [part.strip() for value in getattr(args, "device", []) for part in value.split(",") if part.strip()]
    if given:
        app.settings.override(devices=[] if [g.lower() for g in given] == ["auto"] else given)
    if getattr(args, "ignore_driver_check", False):
        app.settings.override(ignore_driver_check=True)
