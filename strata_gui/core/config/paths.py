"""Where Strata keeps its files: config, data, cache and logs.

Resolved once in the composition root from the environment (platformdirs per OS) and passed
down; nothing else looks these up. ``STRATA_CONFIG_DIR``, ``STRATA_DATA_DIR``,
``STRATA_CACHE_DIR`` and ``STRATA_LOG_DIR`` override each folder (tests and portable installs),
``STRATA_HOME`` moves all four under one folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from strata_gui import APP_ID, ORG_NAME


@dataclass(frozen=True)
class AppPaths:
    """The user folders Strata writes to."""

    config_dir: Path
    data_dir: Path
    cache_dir: Path
    log_dir: Path

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> AppPaths:
        """Resolve the folders for this OS, honouring the ``STRATA_*`` overrides."""
        env = os.environ if environ is None else environ
        home = env.get("STRATA_HOME")
        if home:
            base = Path(home)
            defaults = {
                "config": base / "config",
                "data": base / "data",
                "cache": base / "cache",
                "log": base / "logs",
            }
        else:
            import platformdirs

            dirs = platformdirs.PlatformDirs(APP_ID, ORG_NAME, roaming=False)
            defaults = {
                "config": Path(dirs.user_config_dir),
                "data": Path(dirs.user_data_dir),
                "cache": Path(dirs.user_cache_dir),
                "log": Path(dirs.user_log_dir),
            }
        return cls(
            config_dir=Path(env.get("STRATA_CONFIG_DIR") or defaults["config"]),
            data_dir=Path(env.get("STRATA_DATA_DIR") or defaults["data"]),
            cache_dir=Path(env.get("STRATA_CACHE_DIR") or defaults["cache"]),
            log_dir=Path(env.get("STRATA_LOG_DIR") or defaults["log"]),
        )

    def ensure(self) -> None:
        """Create every folder (no error when they exist)."""
        for d in (self.config_dir, self.data_dir, self.cache_dir, self.log_dir):
            d.mkdir(parents=True, exist_ok=True)

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    @property
    def log_file(self) -> Path:
        return self.log_dir / "strata.log"

    @property
    def engines_dir(self) -> Path:
        """Installed llama.cpp engines, one folder each."""
        return self.data_dir / "engines"

    @property
    def database_file(self) -> Path:
        """SQLite database with conversations, request statistics and benchmarks."""
        return self.data_dir / "strata.sqlite3"

    @property
    def warm_start_file(self) -> Path:
        """How the chat's last engine was launched, to launch it early next time (core/platform/warm.py)."""
        return self.data_dir / "warm-start.json"

    @property
    def instance_lock_file(self) -> Path:
        """Locked by the running app, so a second launch shows its window (core/platform/instance.py)."""
        return self.data_dir / "app.lock"

    @property
    def instance_address_file(self) -> Path:
        """Where the running app listens for a second launch (core/platform/instance.py)."""
        return self.data_dir / "app-instance.json"

    @property
    def serve_lock_file(self) -> Path:
        """Locked by a headless `strata serve` for as long as it runs (core/serve/handover.py)."""
        return self.data_dir / "serve.lock"

    @property
    def serve_address_file(self) -> Path:
        """Where a headless `strata serve` listens for the app that takes its place."""
        return self.data_dir / "serve-instance.json"

    @property
    def model_facts_file(self) -> Path:
        """What each model file's header says (identity, shape, chat template), kept across runs
        (core/models/facts.py): a cache, read again when gone."""
        return self.cache_dir / "model-facts.json"

    @property
    def downloads_dir(self) -> Path:
        """Partial downloads (resumable) live here until verified."""
        return self.cache_dir / "downloads"

    def as_dict(self) -> dict[str, str]:
        return {
            "config": str(self.config_dir),
            "data": str(self.data_dir),
            "cache": str(self.cache_dir),
            "logs": str(self.log_dir),
        }
