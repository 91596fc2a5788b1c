"""`strata models search --images | info | pull` for image repos against the loopback hub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import ModelError
from strata_gui.core.config.services import build_services
from tests.models.test_hub_images import ALONE_REPO, FLUX_REPO, SD_REPO, image_repos


@pytest.fixture
def hub_repos(tmp_path: Path) -> list[Any]:
    return image_repos(tmp_path / "image-files")


@pytest.fixture
def cli(hub: Any) -> Any:
    build_services().settings_service.update(hub_endpoint=hub.url)  # saved, as the Settings page does
    return lambda *argv: run_command(list(argv))


def test_search_info_pull_an_image_repo(cli: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli("models", "search", "--images", "--json") == 0
    assert [h["repo_id"] for h in json.loads(capsys.readouterr().out)] == [FLUX_REPO, SD_REPO, ALONE_REPO]
    assert cli("models", "search", "--json") == 0
    assert json.loads(capsys.readouterr().out) == []  # no GGUF text repos on this hub

    assert cli("models", "info", FLUX_REPO) == 0
    out = capsys.readouterr().out
    assert "image model, FLUX" in out and "at 1024x1024" in out
    assert "+ text_encoders/clip_l.safetensors" in out and "+ ae.safetensors" in out
    assert cli("models", "info", FLUX_REPO, "--json") == 0
    info = json.loads(capsys.readouterr().out)
    fp8 = info["image_fit"]["variants"][0]
    assert info["kind"] == "image" and fp8["name"] == "flux1-test-fp8.safetensors"
    assert fp8["verdict"] in ("gpu", "cpu") and fp8["missing"] == [] and len(fp8["companions"]) == 3

    assert cli("models", "pull", FLUX_REPO, "flux1-test-fp8.safetensors", "--json") == 0
    pulled = json.loads(capsys.readouterr().out)
    assert pulled["kind"] == "image" and len(pulled["files"]) == 4 and pulled["size"] == fp8["total_size"]
    assert Path(pulled["files"][0]).read_bytes() == (tmp_path / "image-files" / "flux-fp8.safetensors").read_bytes()
    assert cli("models", "list", "--json") == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert (entry["kind"], entry["image_family"], entry["image_missing"]) == ("image", "FLUX", [])
    assert len(entry["companions"]) == 3


def test_pull_names_the_missing_parts(cli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("models", "info", ALONE_REPO) == 0
    assert "missing VAE: get it from black-forest-labs/FLUX.1-schnell" in capsys.readouterr().out
    with pytest.raises(ModelError) as err:
        cli("models", "pull", ALONE_REPO)
    assert "needs parts this repository does not have" in err.value.message
    assert "comfyanonymous/flux_text_encoders" in (err.value.hint or "")
