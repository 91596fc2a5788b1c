"""Settings survive restarts, and a broken settings file never stops the app from starting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.core.errors import SettingsError
from strata_gui.core.settings import SETTINGS_VERSION, Settings, SettingsStore


def test_missing_file_gives_defaults_without_notice(tmp_path: Path) -> None:
    settings, notice = SettingsStore(tmp_path / "settings.json").load()
    assert settings == Settings()
    assert notice is None


def test_saved_settings_come_back_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "settings.json"
    s = Settings(theme="dark", hub_endpoint="https://hf-mirror.example", model_dirs=["/models"])
    SettingsStore(path).save(s)
    data = json.loads(path.read_text())
    assert data["version"] == SETTINGS_VERSION
    loaded, notice = SettingsStore(path).load()
    assert notice is None
    assert loaded.theme == "dark"
    assert loaded.hub_endpoint == "https://hf-mirror.example"
    assert loaded.model_dirs == ["/models"]


def test_corrupt_file_is_moved_aside_and_user_told_once(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{ this is not json", encoding="utf-8")
    store = SettingsStore(path, clock=lambda: 1700000000)
    settings, notice = store.load()
    assert settings == Settings()
    assert notice is not None and "could not be read" in notice
    assert not path.exists()
    kept = tmp_path / "settings.json.corrupt-1700000000"
    assert kept.read_text() == "{ this is not json"  # nothing the user wrote is lost
    # Second start: nothing to tell any more.
    assert store.load()[1] is None


def test_binary_garbage_and_wrong_top_level_are_handled(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert SettingsStore(path).load()[1] is not None
    path.write_text("[1, 2, 3]")
    assert SettingsStore(path).load()[1] is not None


def test_newer_version_is_kept_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"version": SETTINGS_VERSION + 5, "theme": "dark"}))
    settings, notice = SettingsStore(path, clock=lambda: 42).load()
    assert settings.theme == "system"
    assert notice is not None and "newer Strata" in notice
    assert (tmp_path / "settings.json.corrupt-42").exists()


def test_invalid_values_are_reset_one_by_one(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"version": 1, "theme": "purple", "hub_endpoint": "ftp://x",
                                "context_size": "big", "offline": True}))
    settings, notice = SettingsStore(path).load()
    assert settings.offline is True  # the valid value survives
    assert settings.theme == "system" and settings.hub_endpoint == Settings().hub_endpoint
    assert settings.context_size == Settings().context_size
    assert notice is not None and "context_size" in notice and "theme" in notice


def test_invalid_settings_are_refused_on_save(tmp_path: Path) -> None:
    with pytest.raises(SettingsError):
        SettingsStore(tmp_path / "settings.json").save(Settings(github_api_url="not a url"))


def test_save_failure_keeps_previous_file(tmp_path: Path) -> None:
    # A directory where the temp file should go makes the write fail like a full/readonly disk.
    path = tmp_path / "settings.json"
    SettingsStore(path).save(Settings(theme="dark"))
    (tmp_path / "settings.json.tmp").mkdir()
    with pytest.raises(SettingsError) as info:
        SettingsStore(path).save(Settings(theme="light"))
    assert info.value.hint
    assert SettingsStore(path).load()[0].theme == "dark"
