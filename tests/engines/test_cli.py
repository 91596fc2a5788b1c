"""`strata engines ...` through the real argparse wiring, the fake GitHub and real builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.config.services import Services, build_services
from tests.engines.test_archive_tuning_launch import _table
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer

DATA = Path(__file__).parents[1] / "data" / "engines"


def _cli(services: Services, *argv: str) -> int:
    return run_command(["engines", *argv])


@pytest.fixture
def services(published: GitHubServer, monkeypatch: pytest.MonkeyPatch) -> Services:
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")
    svc = build_services()
    svc.settings_service.update(github_api_url=published.api_base)  # saved, as the Settings page does
    return svc


def test_plan_offline_from_release_files(services: Services, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted(DATA.glob("releases-*.json"))]
    args = ["plan", "--gfx", "gfx1103", "--os", "windows", "--json"]
    for f in files:
        args += ["--releases-json", f]
    assert _cli(services, *args) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["os"] == "windows"
    assert [c["asset"] for c in plan["candidates"] if c["included"]] == [
        "llama-b1011-windows-rocm-gfx110X-x64.zip", "llama-b7601-bin-win-vulkan-x64.zip",
        "llama-b7601-bin-win-cpu-x64.zip"]
    assert plan["candidates"][0]["reason"].startswith("gfx1103 → family gfx110X")
    assert _cli(services, "plan", "--gfx", "gfx1036", *[a for f in files for a in ("--releases-json", f)]) == 0
    assert "gfx1036: no ROCm build for this target → Vulkan" in capsys.readouterr().out


@pytest.mark.engine
def test_install_list_probe_check_tuning_remove(services: Services, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str], test_engines: TestEngines) -> None:
    assert _cli(services, "install", "--backend", "cpu", "--gfx", "gfx1100", "--json") == 0
    installed = json.loads(capsys.readouterr().out)
    assert installed["id"] == "upstream-cpu-all-b7601" and installed["probe"]["verdict"] == "works"
    assert _cli(services, "list") == 0
    listed = capsys.readouterr().out
    # A later run shows the verdict the install's probe saved (not "not probed").
    assert "upstream-cpu-all-b7601" in listed and "works: runs on the processor" in listed
    assert _cli(services, "probe", "--json") == 0
    assert json.loads(capsys.readouterr().out)["upstream-cpu-all-b7601"]["verdict"] == "works"
    assert _cli(services, "add-local", str(test_engines.cpu_dir), "--backend", "rocm", "--gfx", "gfx1100") == 1
    assert "sees no ROCm device" in capsys.readouterr().out
    table = _table(tmp_path)
    assert _cli(services, "check-tuning", str(table), "--engine", "local-rocm-bin", "--gfx", "gfx1151", "--json") == 1
    check = json.loads(capsys.readouterr().out)
    assert not check["ok"] and "revision is unknown" in check["reason"]
    assert _cli(services, "pin", "upstream-cpu-all-b7601") == 0
    assert services.settings_service.store.load()[0].pinned_engine == "upstream-cpu-all-b7601"
    assert _cli(services, "remove", "upstream-cpu-all-b7601") == 0
    assert _cli(services, "remove", "local-rocm-bin") == 0
    capsys.readouterr()
    # add-local tells the backend from the build itself.
    assert _cli(services, "add-local", str(test_engines.vulkan_dir), "--json") == 0
    added = json.loads(capsys.readouterr().out)
    assert added["backend"] == "vulkan" and added["probe"]["verdict"] == "works"
    assert _cli(services, "remove", added["id"]) == 0
    capsys.readouterr()
    assert _cli(services, "list", "--json") == 0
    assert json.loads(capsys.readouterr().out) == []
    assert services.settings_service.store.load()[0].pinned_engine == ""
