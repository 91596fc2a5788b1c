"""User settings: a versioned JSON file in the user config folder.

Loading never fails: a corrupt or unreadable file is moved aside, defaults are used, and the
returned notice tells the user once what happened. Saving is atomic (write a temp file, then
rename), so a crash mid-save never leaves a half-written file.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import SettingsError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.state_file import UnusableStateFile, keep_aside, read_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text, joined

log = logging.getLogger(__name__)

SETTINGS_VERSION = 2
THEMES = ("system", "light", "dark")
LANGUAGES = ("system", "en", "zh_CN")
# Saved as hub_endpoint's value before "" meant "not set"; such a file loads as not set.
LEGACY_HUB_ENDPOINT = "https://huggingface.co"
DEFAULT_GITHUB_API = "https://api.github.com"

# The values each number may take: past these an engine fails to start ("crashed") or a socket
# call raises OverflowError. The CLI's flags use the same ranges (``commands/arg_types.py``).
MAX_CONTEXT = 1 << 24  # 16M tokens: above every model's trained context
MAX_PORT = 65535
MAX_MB = 1 << 30  # 1 PiB in MB: any memory size past this is a typo
RANGES: dict[str, tuple[int, int]] = {
    "context_size": (0, MAX_CONTEXT),  # 0 = the model's trained context
    "parallel_slots": (0, 256),  # 0 = automatic (as many as fit, at most 4)
    "api_wait_seconds": (1, 24 * 3600),
    "threads": (0, 4096),
    "serve_port": (0, MAX_PORT),  # 0 = any free port
    "memory_budget_mb": (0, MAX_MB),
    "fallback_gpu_memory_mb": (0, MAX_MB),
    "engine_memory_mb": (0, MAX_MB),
    "engine_idle_minutes": (0, 60 * 24 * 366),
    "update_tolerance_pct": (0, 100),
}
MAX_GPU_LAYERS = 100_000


@dataclass
class Settings:
    """Everything the user can change. Field names are the JSON keys."""

    theme: str = "system"
    language: str = "system"
    # Network endpoints (mirrors, proxies, air-gapped setups).
    # "" = not set: HF_ENDPOINT, else the hub (core/models/hub_config.py decides).
    hub_endpoint: str = ""
    github_api_url: str = DEFAULT_GITHUB_API
    github_download_url: str = ""  # empty: use each asset's browser_download_url as given
    offline: bool = False
    # Folders: empty means "the default".
    engines_dir: str = ""
    hf_cache_dir: str = ""
    model_dirs: list[str] = field(default_factory=list)
    # Single model files added by "Open GGUF…" or a drop: listed in the library across restarts.
    model_files: list[str] = field(default_factory=list)
    # Hardware overrides for machines Strata cannot probe (or bug-report replays).
    gfx_override: str = ""
    # GPUs models run on (GPU keys such as "card1", PCI buses, part of a name, or an engine's
    # device name such as "Vulkan0"); empty = Strata chooses (the engine resolver decides).
    devices: list[str] = field(default_factory=list)
    # Use ROCm builds even when the driver check (engine catalog "drivers") says the driver breaks them.
    ignore_driver_check: bool = False
    memory_budget_mb: int = 0  # 0 = no cap beyond the GPU's memory
    fallback_gpu_memory_mb: int = 0  # used when no GPU memory can be detected
    # Engines and runtime.
    pinned_engine: str = ""
    auto_fallback: bool = True
    # Engine updates: a new build is promoted only when its trial here is not slower than the
    # current build by more than this (percent, prefill or decode); "stable": the catalog's
    # pinned/minimum tags, "latest": the newest release.
    update_tolerance_pct: int = 5
    update_channel: str = "stable"
    # The engine pool: unload an engine nobody used for this long (0 = keep it until needed),
    # and what all loaded engines may hold together (0 = the GPU's memory, or the machine's RAM).
    engine_idle_minutes: int = 30
    engine_memory_mb: int = 0
    # Load the model chosen last as Strata starts (the app, and `strata chat` of that model): its
    # engine is launched while the rest of Strata loads, so the first message does not wait for it.
    warm_start: bool = True
    # While the chat's engine is idle, it reads the open conversation's next request ahead (system
    # prompt, tools, history) as the user types: that reply's first token comes sooner.
    read_ahead: bool = True
    context_size: int = 4096
    gpu_layers: str = "all"  # "all", "auto" or a number
    flash_attention: str = "auto"  # on | off | auto
    threads: int = 0  # 0 = engine default
    # Requests each model serves at once (llama-server's parallel slots, each with its share of the KV cache):
    # 0 = automatic, as many as fit in memory at the model's context, at most 4.
    parallel_slots: int = 0
    last_model: str = ""
    last_image_model: str = ""  # the Images page opens with it again
    # Speech to text: the whisper model ("" = the library's first) and the language spoken
    # ("" = the app's language, "auto" = the engine detects it, else a code such as "de").
    speech_model: str = ""
    speech_language: str = ""
    # The embedding model (a GGUF) that makes vectors of attached documents' passages; "" = full-text
    # search only (SQLite FTS5, which always works).
    embedding_model: str = ""
    # Networking: the local API for other apps, and llama.cpp RPC workers ("host:port").
    serve_port: int = 8765
    serve_lan: bool = False  # listen on every interface (needs an API key)
    # Apps may pull, copy and delete library models through the API (Ollama's /api/pull, /api/copy,
    # /api/delete: Open WebUI's model manager uses them).
    serve_model_routes: bool = True
    # The Network page's Activity view keeps request bodies (redacted: keys and images replaced).
    serve_capture_bodies: bool = False
    # A local API request that waits this long for a slot or an engine gets 503 with Retry-After.
    api_wait_seconds: int = 60
    rpc_workers: list[str] = field(default_factory=list)
    rpc_enabled: bool = False  # launch the engine with --rpc over rpc_workers
    first_run_done: bool = False

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["version"] = SETTINGS_VERSION
        return data

    def validate(self) -> list[Text]:
        """Problems a user should fix, as sentences (empty when fine)."""
        problems: list[Text] = []
        if self.theme not in THEMES:
            problems.append(T(QT_TRANSLATE_NOOP("Core", "Unknown theme '{theme}'."), theme=self.theme))
        if self.language not in LANGUAGES:
            problems.append(T(QT_TRANSLATE_NOOP("Core", "Unknown language '{language}'."), language=self.language))
        if self.hub_endpoint and not self.hub_endpoint.startswith(("http://", "https://")):
            problems.append(T(QT_TRANSLATE_NOOP("Core", "hub endpoint must start with http:// or https://")))
        if not self.github_api_url.startswith(("http://", "https://")):
            problems.append(T(QT_TRANSLATE_NOOP("Core", "github api url must start with http:// or https://")))
        if self.github_download_url and not self.github_download_url.startswith(("http://", "https://")):
            problems.append(T(QT_TRANSLATE_NOOP("Core", "github download url must start with http:// or https://")))
        if self.flash_attention not in ("on", "off", "auto"):
            problems.append(T(QT_TRANSLATE_NOOP("Core", "flash attention must be on, off or auto")))
        if self.gpu_layers not in ("all", "auto") and not (
                self.gpu_layers.isascii() and self.gpu_layers.isdigit() and int(self.gpu_layers) <= MAX_GPU_LAYERS):
            problems.append(T(QT_TRANSLATE_NOOP("Core", "GPU layers must be 'all', 'auto' or a number up to {most}"),
                                  most=MAX_GPU_LAYERS))
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if not low <= value <= high:
                problems.append(T(QT_TRANSLATE_NOOP("Core", "{name} must be between {low} and {high} (it is {value})"),
                                  name=name.replace("_", " "), low=low, high=high, value=value))
        for worker in self.rpc_workers:
            _host, sep, port = worker.rpartition(":")
            if not sep or not (port.isascii() and port.isdigit()) or not 0 < int(port) <= MAX_PORT:
                problems.append(T(QT_TRANSLATE_NOOP("Core", "RPC worker '{worker}' must be host:port with a port between 1 "
                                                               "and {most}"), worker=worker, most=MAX_PORT))
        if self.update_channel not in ("stable", "latest"):
            problems.append(T(QT_TRANSLATE_NOOP("Core", "update channel must be stable or latest")))
        return problems


def _coerce(settings: Settings, raw: dict[str, Any]) -> list[str]:
    """Copy known keys of ``raw`` into ``settings``; return the keys that had a wrong type."""
    bad = []
    for f in dataclasses.fields(Settings):
        if f.name not in raw:
            continue
        value = raw[f.name]
        default = getattr(settings, f.name)
        ok = isinstance(value, type(default)) and not (
            isinstance(default, int) and isinstance(value, bool) and not isinstance(default, bool)
        )
        if isinstance(default, list):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if ok:
            setattr(settings, f.name, value)
        else:
            bad.append(f.name)
    return bad


def _moved(notice: Text, moved: Path | None) -> Text:
    """``notice``, followed by where the unreadable file went when it was moved aside."""
    if moved is None:
        return notice
    return joined([notice, T(QT_TRANSLATE_NOOP("Core", "It was moved to {name}."), name=moved.name)])


def not_saved(problems: list[Text]) -> Text:
    """The error message for settings that failed :meth:`Settings.validate` (each problem translated)."""
    return T(QT_TRANSLATE_NOOP("Core", "Settings not saved: {problems}"), problems=joined(problems))


class SettingsStore:
    """Loads and saves :class:`Settings` at one path.

    Args:
        path: The settings file (``settings.json`` in the user config folder).
        clock: Wall clock for naming moved-aside files (injected for tests).
    """

    def __init__(self, path: Path, clock: Any = time.time) -> None:
        self.path = path
        self._clock = clock

    def load(self) -> tuple[Settings, str | None]:
        """Read the settings; never raises.

        Returns:
            The settings, and a notice for the user when the file was unusable (else None).
        """
        settings = Settings()
        try:
            raw = read_state(self.path, dict)
        except OSError as exc:  # unreadable, not damaged: left where it is
            log.warning("settings file %s cannot be read (%s); using defaults", self.path, exc)
            return settings, T(QT_TRANSLATE_NOOP("Core", "Your settings file could not be read ({reason}), so "
                                                         "defaults are used."), reason=exc.strerror or exc)
        except UnusableStateFile as exc:
            moved = self._move_aside()
            log.warning("settings file %s unusable (%s); using defaults", self.path, exc.reason)
            return settings, _moved(T(QT_TRANSLATE_NOOP("Core", "Your settings file could not be read ({reason}), so "
                                                                "defaults are used."), reason=exc.reason), moved)
        if raw is None:
            return settings, None
        version = raw.get("version", SETTINGS_VERSION)
        if not isinstance(version, int) or version > SETTINGS_VERSION:
            moved = self._move_aside()
            if moved:
                return settings, T(QT_TRANSLATE_NOOP("Core", "Your settings were written by a newer Strata (version "
                                                             "{version}); defaults are used. The file was kept as "
                                                             "{name}."), version=version, name=moved.name)
            return settings, T(QT_TRANSLATE_NOOP("Core", "Your settings were written by a newer Strata (version "
                                                         "{version}); defaults are used. The file was kept as is."),
                               version=version)
        if version < 2 and raw.get("parallel_slots") == 1:
            # Version 1 saved its only default, one request at a time: automatic is the default now.
            raw["parallel_slots"] = 0
        bad = _coerce(settings, raw)
        if settings.hub_endpoint.rstrip("/") == LEGACY_HUB_ENDPOINT:
            # Older Strata saved the hub's address even when the user never chose it, which hid
            # HF_ENDPOINT; only an address the user typed should win over the environment.
            settings.hub_endpoint = ""
        problems = settings.validate()
        if problems:
            # Invalid values fall back one by one to defaults rather than losing everything.
            defaults = Settings()
            for f in dataclasses.fields(Settings):
                probe = dataclasses.replace(defaults, **{f.name: getattr(settings, f.name)})
                if probe.validate():
                    bad.append(f.name)
                    setattr(settings, f.name, getattr(defaults, f.name))
        if bad:
            # The next save rewrites the file without the bad values: keep the file as it was.
            kept = self._keep_copy()
            reset = T(QT_TRANSLATE_NOOP("Core", "Some settings had invalid values and were reset to their defaults: "
                                                "{names}."), names=", ".join(sorted(set(bad))))
            if kept:
                return settings, joined([reset, T(QT_TRANSLATE_NOOP("Core", "The file as it was is kept as {name}."),
                                                  name=kept.name)])
            return settings, reset
        return settings, None

    def save(self, settings: Settings) -> None:
        """Write atomically. Raises SettingsError with a hint when the folder is not writable."""
        problems = settings.validate()
        if problems:
            raise SettingsError(not_saved(problems))
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(settings.to_json(), fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise SettingsError(
                T(QT_TRANSLATE_NOOP("Core", "Could not save settings to {path}: {reason}"), path=self.path,
                  reason=exc.strerror or exc),
                hint=QT_TRANSLATE_NOOP("Core", "Check that the folder exists, is writable and the disk is not full."),
            ) from exc

    def _keep_copy(self) -> Path | None:
        target = self.path.with_name(f"{self.path.name}.invalid-{int(self._clock())}")
        try:
            shutil.copy2(self.path, target)
            return target
        except OSError:
            log.exception("could not keep a copy of the settings file")
            return None

    def _move_aside(self) -> Path | None:
        return keep_aside(self.path, self._clock)


@dataclass(frozen=True)
class SettingsChange:
    """Which settings changed (their new values are in ``settings``)."""

    keys: frozenset[str]
    settings: Settings
    persisted: bool  # False for session-only overrides (command-line flags)




class SettingsService:
    """The only writer of settings: validates, saves atomically, and tells subscribers what changed.

    ``current`` is one live :class:`Settings` object that every service reads; nobody assigns to its
    fields except this class. :meth:`update` persists; :meth:`override` changes the running
    session only (``strata chat --ctx-size``), and is never written to the file.

    Args:
        store: Where settings are saved.
        settings: The loaded settings.
        notice: A one-time message about an unusable settings file, or None.
    """

    def __init__(self, store: SettingsStore, settings: Settings | None = None, notice: str | None = None) -> None:
        self.store = store
        self.notice = notice
        self._current = settings if settings is not None else Settings()
        # A deep copy: list fields (model_dirs, rpc_workers) must not be shared with ``current``.
        self._persisted = copy.deepcopy(self._current)
        self.events: Listeners[SettingsChange] = Listeners()

    @classmethod
    def load(cls, store: SettingsStore) -> SettingsService:
        """Read the settings file (never raises; see :meth:`SettingsStore.load`)."""
        settings, notice = store.load()
        if notice:
            log.warning("%s", notice)
        return cls(store, settings, notice)

    @property
    def current(self) -> Settings:
        return self._current

    def _check(self, changes: dict[str, Any]) -> Settings:
        names = {f.name for f in dataclasses.fields(Settings)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise SettingsError(T(QT_TRANSLATE_NOOP("Core", "Unknown setting: {names}"), names=", ".join(unknown)))
        candidate = dataclasses.replace(copy.deepcopy(self._persisted), **copy.deepcopy(changes))
        problems = candidate.validate()
        if problems:
            raise SettingsError(not_saved(problems))
        return candidate

    def update(self, **changes: Any) -> frozenset[str]:
        """Change, validate and save settings; returns the keys whose value changed.

        Nothing changes (in memory or on disk) when validation or saving fails.

        Raises:
            SettingsError: an unknown key, an invalid value, or the file could not be written.
        """
        candidate = self._check(changes)
        changed = frozenset(k for k, v in changes.items() if getattr(self._current, k) != v)
        if not changed and candidate == self._persisted:
            return changed
        self.store.save(candidate)
        self._persisted = candidate
        for key, value in changes.items():
            setattr(self._current, key, copy.deepcopy(value))
        self._emit(changed, persisted=True)
        return changed

    def override(self, **changes: Any) -> frozenset[str]:
        """Change settings for this session only (not saved; later saves keep the file's values)."""
        self._check(changes)
        changed = frozenset(k for k, v in changes.items() if getattr(self._current, k) != v)
        for key, value in changes.items():
            setattr(self._current, key, copy.deepcopy(value))
        self._emit(changed, persisted=False)
        return changed

    def _emit(self, keys: frozenset[str], *, persisted: bool) -> None:
        if not keys:
            return
        self.events.emit(SettingsChange(keys, self._current, persisted))
