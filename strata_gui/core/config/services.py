"""The services Strata is made of, built once and shared by the GUI (app.py) and the CLI.

This is the only place that decides which concrete implementation each service gets;
everything else receives its collaborators as constructor arguments.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
from strata_gui.core.platform.warm import WarmSlot

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Every long-lived service, wired together.

    Attributes:
        paths: The user folders.
        settings_service: The only writer of settings (validates, saves, tells subscribers).
        environ: The environment the services were built from (engines inherit it).
        warm: The chat engine launched before the core was imported, for the engine pool to adopt
            (see :mod:`strata_gui.core.platform.warm`); usually empty.
    """

    paths: AppPaths
    settings_service: SettingsService
    environ: Mapping[str, str]
    warm: WarmSlot = field(default_factory=WarmSlot)

    @property
    def settings(self) -> Settings:
        """The live settings (read-only by convention: change them through ``settings_service``)."""
        return self.settings_service.current

    @property
    def settings_notice(self) -> str | None:
        return self.settings_service.notice

    async def aclose(self) -> None:
        """Release network clients, stop processes. Safe to call more than once."""


def build_services(environ: Mapping[str, str] | None = None, warm: WarmSlot | None = None) -> Services:
    """Build every service from the environment (user folders, settings)."""
    env = dict(os.environ if environ is None else environ)
    paths = AppPaths.from_environment(env)
    paths.ensure()
    return Services(paths=paths, settings_service=SettingsService.load(SettingsStore(paths.settings_file)),
                    environ=env, warm=warm or WarmSlot())
