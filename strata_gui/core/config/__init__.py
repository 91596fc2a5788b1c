"""Where Strata keeps its files, what the user set, the data shipped with the app, and the base
services built from them (folders and settings) that the GUI and the CLI share."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.config.paths import (
        AppPaths,
    )
    from strata_gui.core.config.resources import (
        kernels_dir,
        resource_root,
        resources_dir,
    )
    from strata_gui.core.config.services import (
        Services,
        build_services,
    )
    from strata_gui.core.config.settings import (
        DEFAULT_GITHUB_API,
        LANGUAGES,
        LEGACY_HUB_ENDPOINT,
        MAX_CONTEXT,
        MAX_GPU_LAYERS,
        MAX_MB,
        MAX_PORT,
        RANGES,
        SETTINGS_VERSION,
        THEMES,
        Settings,
        SettingsChange,
        SettingsService,
        SettingsStore,
        not_saved,
    )

__all__ = [
    "DEFAULT_GITHUB_API",
    "LANGUAGES",
    "LEGACY_HUB_ENDPOINT",
    "MAX_CONTEXT",
    "MAX_GPU_LAYERS",
    "MAX_MB",
    "MAX_PORT",
    "RANGES",
    "SETTINGS_VERSION",
    "THEMES",
    "AppPaths",
    "Services",
    "Settings",
    "SettingsChange",
    "SettingsService",
    "SettingsStore",
    "build_services",
    "kernels_dir",
    "not_saved",
    "resource_root",
    "resources_dir",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "paths": ["AppPaths"],
    "resources": ["kernels_dir", "resource_root", "resources_dir"],
    "services": ["Services", "build_services"],
    "settings": ["DEFAULT_GITHUB_API", "LANGUAGES", "LEGACY_HUB_ENDPOINT", "MAX_CONTEXT", "MAX_GPU_LAYERS", "MAX_MB", "MAX_PORT", "RANGES", "SETTINGS_VERSION", "THEMES", "Settings", "SettingsChange", "SettingsService", "SettingsStore", "not_saved"],
})
