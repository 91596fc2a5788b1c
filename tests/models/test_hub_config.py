"""HF_ENDPOINT and HF_TOKEN work in Strata as in every hub tool; what the user sets in Strata wins."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import HubError
from strata_gui.core.config.services import Services, build_services
from strata_gui.core.config.settings import Settings, SettingsStore
from strata_gui.core.models.hub_config import DEFAULT_ENDPOINT, SavedHubToken, resolve_hub
from strata_gui.core.models.hub_errors import HubAuthError
from strata_gui.core.models.service import build_model_service
from strata_gui.core.remote.secrets import FileSecretStore

NOTHING_LISTENS = "http://127.0.0.1:9"


def _cli(services: Services, *argv: str) -> int:
    """`strata ARGV` through the CLI's entry point, in the environment ``services`` was built from."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(services.environ)
    try:
        return run_command(list(argv))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _services(**env: str) -> Services:
    return build_services({**os.environ, **env})


def _save_token_in_strata(services: Services, token: str) -> None:
    """What the Models page's "Save token" does: ModelService.save_token on the app's wiring."""
    async def go() -> None:
        async with httpx.AsyncClient() as client:
            svc = build_model_service(services.settings, services.paths.data_dir, client, services.environ,
                                      secrets=FileSecretStore(services.paths.config_dir / "secrets.json"))
            try:
                svc.save_token(token)
            finally:
                await svc.aclose()

    asyncio.run(go())


def test_search_reaches_a_mirror_named_only_by_hf_endpoint(hub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    services = _services(HF_ENDPOINT=hub.url + "/")
    assert services.settings.hub_endpoint == ""  # nothing set in Strata
    assert _cli(services, "models", "search", "llama", "--json") == 0
    hits = json.loads(capsys.readouterr().out)
    assert "strata/test-llama-GGUF" in [h["repo_id"] for h in hits]


def test_the_endpoint_set_in_settings_wins_over_hf_endpoint(hub: Any, capsys: pytest.CaptureFixture[str]) -> None:
    services = _services(HF_ENDPOINT=NOTHING_LISTENS)
    services.settings_service.update(hub_endpoint=hub.url)
    assert _cli(services, "models", "search", "llama", "--json") == 0
    assert "strata/test-llama-GGUF" in [h["repo_id"] for h in json.loads(capsys.readouterr().out)]

    # Cleared again, the environment's mirror is used (and nothing listens there).
    services = _services(HF_ENDPOINT=NOTHING_LISTENS)
    services.settings_service.update(hub_endpoint="")
    with pytest.raises(HubError, match=r"127\.0\.0\.1"):
        _cli(services, "models", "search", "llama")


def test_a_gated_repo_downloads_with_hf_token_from_the_environment(
        hub: Any, capsys: pytest.CaptureFixture[str], test_model: Path) -> None:
    without = _services(HF_ENDPOINT=hub.url)
    with pytest.raises(HubAuthError):
        _cli(without, "models", "pull", "strata/gated-llama-GGUF", "--json")

    services = _services(HF_ENDPOINT=hub.url, HF_TOKEN=hub.state.token + "\n")
    assert _cli(services, "models", "pull", "strata/gated-llama-GGUF", "--json") == 0
    pulled = json.loads(capsys.readouterr().out)
    assert Path(pulled["files"][0]).read_bytes() == test_model.read_bytes()


def test_the_token_saved_in_strata_wins_over_hf_token(hub: Any, capsys: pytest.CaptureFixture[str],
                                                      test_model: Path) -> None:
    services = _services(HF_ENDPOINT=hub.url, HF_TOKEN="hf_someone_elses_token")
    with pytest.raises(HubAuthError):
        _cli(services, "models", "pull", "strata/gated-llama-GGUF", "--json")
    _save_token_in_strata(services, hub.state.token)
    assert _cli(services, "models", "pull", "strata/gated-llama-GGUF", "--json") == 0
    assert Path(json.loads(capsys.readouterr().out)["files"][0]).read_bytes() == test_model.read_bytes()


def test_token_order_follows_huggingface_hub(tmp_path: Path) -> None:
    saved = SavedHubToken(FileSecretStore(tmp_path / "secrets.json"))
    home = tmp_path / "hf"
    home.mkdir()
    (home / "token").write_text("hf_from_file\n")
    env = {"HF_HOME": str(home)}
    settings = Settings()

    assert (resolve_hub(settings, env, saved).token, resolve_hub(settings, env, saved).token_source) == \
        ("hf_from_file", "token file")
    assert resolve_hub(settings, {**env, "HUGGING_FACE_HUB_TOKEN": "hf_old"}, saved).token == "hf_old"
    assert resolve_hub(settings, {**env, "HF_TOKEN": "hf_env", "HUGGING_FACE_HUB_TOKEN": "hf_old"}, saved).token \
        == "hf_env"
    # HF_TOKEN_PATH moves the file ($VARS and ~ expanded as huggingface_hub does).
    (tmp_path / "elsewhere").write_text("hf_moved")
    moved = {**env, "BASE": str(tmp_path), "HF_TOKEN_PATH": "$BASE/elsewhere"}
    assert resolve_hub(settings, moved, saved).token == "hf_moved"
    # HF_HUB_DISABLE_IMPLICIT_TOKEN: neither the environment's nor the file's token is sent ...
    off = {**env, "HF_TOKEN": "hf_env", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "yes"}
    assert resolve_hub(settings, off, saved).token is None
    assert resolve_hub(settings, {**off, "HF_HUB_DISABLE_IMPLICIT_TOKEN": "0"}, saved).token == "hf_env"
    # ... but the token saved in Strata is an explicit choice, and it wins over everything.
    saved.set("  hf_saved\n")
    assert resolve_hub(settings, off, saved).token == "hf_saved"
    assert resolve_hub(settings, {**env, "HF_TOKEN": "hf_env"}, saved).token_source == "strata"
    saved.clear()
    assert resolve_hub(settings, env, saved).token == "hf_from_file"
    assert "hf_" not in resolve_hub(settings, {**env, "HF_TOKEN": "hf_env"}, saved).describe()


def test_endpoint_order_and_old_settings_files(tmp_path: Path) -> None:
    assert resolve_hub(Settings(), {}).endpoint == DEFAULT_ENDPOINT
    assert resolve_hub(Settings(), {}).source == "default"
    mirror = {"HF_ENDPOINT": "https://hf-mirror.example/"}
    assert (resolve_hub(Settings(), mirror).endpoint, resolve_hub(Settings(), mirror).source) == \
        ("https://hf-mirror.example", "HF_ENDPOINT")
    mine = Settings(hub_endpoint="http://10.0.0.5:8080")
    assert (resolve_hub(mine, mirror).endpoint, resolve_hub(mine, mirror).source) == ("http://10.0.0.5:8080", "settings")

    # A file saved by an older Strata holds the hub's address as a value: it loads as "not set",
    # so HF_ENDPOINT takes effect; a mirror the user chose stays.
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"version": 1, "hub_endpoint": "https://huggingface.co"}))
    loaded, notice = SettingsStore(path).load()
    assert notice is None and loaded.hub_endpoint == ""
    path.write_text(json.dumps({"version": 1, "hub_endpoint": "https://hf-mirror.example"}))
    assert SettingsStore(path).load()[0].hub_endpoint == "https://hf-mirror.example"
    assert Settings(hub_endpoint="").validate() == []
    assert Settings(hub_endpoint="hf-mirror.example").validate()


# huggingface_hub's own answers for an environment. It reads the environment once, when imported,
# so each environment gets a fresh interpreter.
_HF_ANSWERS = (
    "import json; import huggingface_hub.constants as c; from huggingface_hub.utils import build_hf_headers; "
    "auth = build_hf_headers().get('authorization'); "
    "print(json.dumps({'endpoint': c.ENDPOINT, 'cache': c.HF_HUB_CACHE, "
    "'token': auth.removeprefix('Bearer ') if auth else None}))"
)


def test_the_rules_give_what_huggingface_hub_gives(tmp_path: Path) -> None:
    """Strata's endpoint, token and cache rules (its own code: the app does not ship huggingface_hub)
    answer as huggingface_hub itself does for the same environment."""
    import subprocess
    import sys

    from strata_gui.core.models.hub_config import hub_cache_dir

    home = tmp_path / "home"
    (home / "token").parent.mkdir(parents=True)
    (home / "token").write_text("hf_from_file\n")
    (tmp_path / "xdg" / "huggingface").mkdir(parents=True)
    (tmp_path / "xdg" / "huggingface" / "token").write_text("hf_xdg")
    (tmp_path / "elsewhere").write_text(" hf_moved\r\n")
    cases: list[dict[str, str]] = [
        {"XDG_CACHE_HOME": str(tmp_path / "xdg")},
        {"HF_HOME": str(home)},
        {"BASE": str(tmp_path), "HF_HOME": "$BASE/home", "HF_TOKEN_PATH": "${BASE}/elsewhere",
         "HF_HUB_CACHE": "~/hub-cache"},
        {"HF_HOME": str(home), "HF_ENDPOINT": "https://hf-mirror.example/", "HF_TOKEN": " hf_env\n",
         "HUGGING_FACE_HUB_TOKEN": "hf_old", "HUGGINGFACE_HUB_CACHE": str(tmp_path / "legacy")},
        {"HF_HOME": str(home), "HUGGING_FACE_HUB_TOKEN": "hf_old"},
        {"HF_HOME": str(home), "HF_TOKEN": "hf_env", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "yes"},
    ]
    for env in cases:
        run = subprocess.run([sys.executable, "-c", _HF_ANSWERS], capture_output=True, text=True, check=True,
                             env={"PATH": os.environ["PATH"], "HOME": str(Path.home()), **env})
        theirs = json.loads(run.stdout)
        ours = resolve_hub(Settings(), env)
        assert (ours.endpoint, ours.token, hub_cache_dir(env)) == \
            (theirs["endpoint"], theirs["token"], Path(theirs["cache"])), env
    assert resolve_hub(Settings(), cases[2]).token == "hf_moved"  # the cases do differ
