"""A real settings service for tests that build services by hand (saves in the tmp user folder)."""

from __future__ import annotations

from typing import Any

from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore


def settings_service(**values: Any) -> SettingsService:
    """``Settings(**values)`` behind a :class:`SettingsService` whose file is the (redirected) user's."""
    return SettingsService(SettingsStore(AppPaths.from_environment().settings_file), Settings(**values))
