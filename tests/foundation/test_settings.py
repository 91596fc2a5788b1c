"""Settings survive restarts, and a broken settings file never stops the app from starting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.core.base.errors import SettingsError
from strata_gui.core.config.settings import SETTINGS_VERSION, Settings, SettingsStore


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


def test_a_deeply_nested_file_is_moved_aside_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = '{"theme": ' + "[" * 200_000 + "]" * 200_000 + "}"
    path.write_text(text, encoding="utf-8")
    settings, notice = SettingsStore(path, clock=lambda: 1700000000).load()
    assert settings == Settings()
    assert notice is not None and "nested too deeply" in notice and "settings.json.corrupt-1700000000" in notice
    assert (tmp_path / "settings.json.corrupt-1700000000").read_text(encoding="utf-8") == text


@pytest.mark.parametrize(("key", "value"), [
    ("serve_port", 70000), ("serve_port", -1), ("serve_port", 10**30), ("context_size", 10**20),
    ("context_size", 1e20), ("parallel_slots", -5), ("parallel_slots", 257), ("threads", 10**9),
    ("engine_memory_mb", 2**70), ("gpu_layers", "99999999999999999999"), ("gpu_layers", "٣"),
    ("rpc_workers", ["host:99999999999999"]), ("rpc_workers", ["no-port"]),
])
def test_out_of_range_values_fall_back_alone_and_the_file_is_kept(tmp_path: Path, key: str, value: object) -> None:
    path = tmp_path / "settings.json"
    raw = {"version": SETTINGS_VERSION, "theme": "dark", key: value}
    path.write_text(json.dumps(raw), encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    settings, notice = SettingsStore(path, clock=lambda: 1700000000).load()
    assert getattr(settings, key) == getattr(Settings(), key)  # the default again
    assert settings.theme == "dark"  # the good values stay
    assert notice is not None and key in notice and "settings.json.invalid-1700000000" in notice
    assert (tmp_path / "settings.json.invalid-1700000000").read_text(encoding="utf-8") == before
    assert path.read_text(encoding="utf-8") == before  # untouched until the next save


def test_saving_an_out_of_range_value_is_refused_with_the_range(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"serve port must be between 0 and 65535 \(it is 70000\)"):
        SettingsStore(tmp_path / "settings.json").save(Settings(serve_port=70000))
    with pytest.raises(SettingsError, match="parallel slots must be between 0 and 256"):
        SettingsStore(tmp_path / "settings.json").save(Settings(parallel_slots=-5))
