"""Image engines from (a loopback) GitHub: plan, install, probe, and the fallback at generation time.

The archives are built from the real CPU sd-server/sd-cli and named as stable-diffusion.cpp's
releases name them; the "ROCm" build is an sd-server that cannot find its HIP runtime.
"""

from __future__ import annotations

import json
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import EngineError
from strata_gui.core.config.services import build_services
from tests.images.conftest import MISSING_LIBRARY
from tests.support.github_server import GitHubServer, github_server

REPO = "leejet/stable-diffusion.cpp"
TAG = "master-929-3f8527a"
CPU_ASSET = "sd-master-3f8527a-bin-Linux-Ubuntu-24.04-x86_64.zip"
ROCM_ASSET = "sd-master-3f8527a-bin-Linux-Ubuntu-24.04-x86_64-rocm-7.14.0.zip"


def _add(zf: zipfile.ZipFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 8, 19, 12, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data, compresslevel=1)


def pack_sd_cpu_zip(sd_dir: Path, out: Path) -> Path:
    """The CPU build as upstream's Linux zip (``zip -j``: the binaries at the top)."""
    with zipfile.ZipFile(out, "w") as zf:
        for name in ("sd-server", "sd-cli"):
            _add(zf, name, (sd_dir / name).read_bytes(), 0o755)
        _add(zf, "stable-diffusion.cpp.txt", b"MIT License\n")
    return out


def pack_sd_fake_rocm_zip(out: Path) -> Path:
    """A "ROCm" build whose sd-server starts (``--version``) but cannot load its HIP runtime."""
    script = ("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'stable-diffusion.cpp version master-929-3f8527a';"
              " exit 0; fi\n" + MISSING_LIBRARY)
    with zipfile.ZipFile(out, "w") as zf:
        _add(zf, "build/bin/sd-server", script.encode(), 0o755)
        _add(zf, "build/bin/libggml-hip.so", b"placeholder: the test build has no HIP backend\n")
    return out


@pytest.fixture
def published(tmp_path: Path, sd_dir: Path) -> Iterator[GitHubServer]:
    with github_server() as gh:
        gh.add_release(REPO, TAG, [pack_sd_cpu_zip(sd_dir, tmp_path / CPU_ASSET),
                                   pack_sd_fake_rocm_zip(tmp_path / ROCM_ASSET)],
                       published_at="2026-08-19T12:00:00Z")
        yield gh


def test_plan_lists_image_builds_only_for_images(published: GitHubServer, capsys: pytest.CaptureFixture[str]) -> None:
    build_services().settings_service.update(github_api_url=published.api_base)
    assert run_command(["engines", "plan", "--images", "--gfx", "gfx1100", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    included = [(c["backend"], c["asset"], c["kind"]) for c in plan["candidates"] if c["included"]]
    assert included == [("rocm", ROCM_ASSET, "image"), ("cpu", CPU_ASSET, "image")]
    rocm = next(c for c in plan["candidates"] if c["backend"] == "rocm")
    assert rocm["tag"] == TAG and "gfx1100" in rocm["gfx_targets"]


@pytest.mark.engine
def test_install_then_generate_falls_back_from_rocm_to_cpu(published: GitHubServer, image_model: Path,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_services().settings_service.update(github_api_url=published.api_base, gfx_override="gfx1100")
    # Image setup installs the ROCm build and, because sd-server cannot list its devices, a fallback.
    assert run_command(["engines", "install", "--images", "--json"]) == 0
    installed = json.loads(capsys.readouterr().out)
    assert installed["chosen"] == f"sdcpp-rocm-gfx110X-{TAG}"
    assert run_command(["engines", "list", "--json"]) == 0
    engines = {e["id"]: e for e in json.loads(capsys.readouterr().out)}
    assert {e["backend"] for e in engines.values()} == {"rocm", "cpu"}
    assert all(e["kind"] == "image" and e["probe"]["verdict"] == "works" for e in engines.values())

    with pytest.raises(EngineError, match="is an image engine; the pin chooses the chat engine"):
        run_command(["engines", "pin", installed["chosen"]])
    assert run_command(["engines", "resolve", "--images", "--model", str(image_model), "--json"]) == 0
    order = json.loads(capsys.readouterr().out)["order"]
    assert [engines[i]["backend"] for i in order] == ["rocm", "cpu"]

    out = tmp_path / "fox.png"
    code = run_command(["image", "a fox", "-m", str(image_model), "-o", str(out), "--steps", "1",
                        "--size", "64x64", "--seed", "9", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and out.exists()
    assert data["backend"] == "cpu" and data["engine"] in engines
    (notice,) = data["notices"]
    assert "ROCm" in notice and "libamdhip64.so.7" in notice and "Switching to CPU" in notice
