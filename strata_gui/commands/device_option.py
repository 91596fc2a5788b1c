"""``--device`` for the commands that launch or plan engines (chat, bench, serve, engines resolve).

The option only overrides ``Settings.devices`` for this run; which engine devices that means, and
why, is the engine resolver's decision.
"""

from __future__ import annotations

import argparse

from strata_gui.core.app_services import AppServices


def add_device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", "-d", action="append", default=[], metavar="GPU",
                   help="GPU to run on: its key (card1), PCI bus, part of its name (7900) or an engine device "
                        "(ROCm0, Vulkan0); repeat or comma-separate for several; 'auto' lets Strata choose "
                        "(default: Settings, else the discrete AMD GPU with the most memory)")


def apply_device_option(args: argparse.Namespace, app: AppServices) -> None:
    """Use the ``--device`` choice for this run only (never written to the settings file)."""
    given = [part.strip() for value in getattr(args, "device", []) for part in value.split(",") if part.strip()]
    if given:
        app.settings.override(devices=[] if [g.lower() for g in given] == ["auto"] else given)
