"""The services Strata is made of, built once and shared by the GUI (app.py) and the CLI.

This is the only place that decides which concrete implementation each service gets;
everything else receives its collaborators as constructor arguments.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from strata_gui.core.paths import AppPaths
from strata_gui.core.settings import Settings, SettingsStore

log = logging.getLogger(__name__)


@dataclass
class Services:
    """Every long-lived service, wired together.

    Attributes:
        paths: The user folders.
        settings_store: Loads/saves settings.
        settings: The current settings (mutated in place by the Settings page, then saved).
        settings_notice: A one-time message about an unusable settings file, or None.
        environ: The environment the services were built from (engines inherit it).
    """

    paths: AppPaths
    settings_store: SettingsStore
    settings: Settings
    settings_notice: str | None
    environ: Mapping[str, str]

    def save_settings(self) -> None:
        self.settings_store.save(self.settings)

    async def aclose(self) -> None:
        """Release network clients, stop processes. Safe to call more than once."""


def build_services(environ: Mapping[str, str] | None = None) -> Services:
    """Build every service from the environment (user folders, settings)."""
    env = dict(os.environ if environ is None else environ)
    paths = AppPaths.from_environment(env)
    paths.ensure()
    store = SettingsStore(paths.settings_file)
    settings, notice = store.load()
    if notice:
        log.warning("%s", notice)
    return Services(
        paths=paths,
        settings_store=store,
        settings=settings,
        settings_notice=notice,
        environ=env,
    )
