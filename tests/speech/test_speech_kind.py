"""The speech kind as data: its descriptor, its release source in the shipped catalog (whisper.cpp
publishes Windows builds only), its command line, and its probe on the real build."""

from __future__ import annotations

import asyncio
from pathlib import Path

from strata_gui.core.engines import GpuTarget, load_catalog, plan_engines
from strata_gui.core.engines.probe import probe_image_engine
from strata_gui.core.engines.releases import parse_releases
from strata_gui.core.runtime import INSTALLABLE, KINDS, SPEECH, EngineSpec, kind_named
from strata_gui.core.runtime.kinds import WHISPER_INFERENCE
from strata_gui.core.runtime.launch import ServerSettings
from tests.support.engines import TestEngines

REPO = "ggml-org/whisper.cpp"


def release(tag: str, *assets: str, prerelease: bool = False) -> dict[str, object]:
    """A release as GitHub's API lists it (the asset names whisper.cpp's build.yml publishes)."""
    return {"tag_name": tag, "name": f"whisper.cpp {tag}", "draft": False, "prerelease": prerelease,
            "published_at": "2026-08-20T10:00:00Z",
            "assets": [{"name": a, "size": 9_000_000, "browser_download_url": f"https://github.com/{REPO}/releases/"
                        f"download/{tag}/{a}", "digest": None} for a in assets]}


def test_the_speech_kind_is_a_descriptor_with_builds_of_its_own() -> None:
    assert kind_named("speech") is SPEECH and SPEECH in KINDS and SPEECH in INSTALLABLE
    assert (SPEECH.binary, SPEECH.project, SPEECH.ready_path) == ("whisper-server", "whisper.cpp", "/health")
    assert SPEECH.serves(WHISPER_INFERENCE) and not SPEECH.lists_devices and SPEECH.probe_args == ("--help",)
    assert SPEECH.about_paths == ()  # nothing to ask once ready: its /health said it
    assert SPEECH.executable(Path("bin"), windows=True) == Path("bin/whisper-server.exe")


def test_the_catalog_plans_whisper_cpp_windows_builds_and_none_on_linux() -> None:
    catalog = load_catalog()
    [source] = [s for s in catalog.sources if s.kind is SPEECH]
    assert source.repo == REPO
    listing = [release("v1.8.6-rc1", "whisper-bin-x64.zip", prerelease=True),
               release("v1.8.5", "whisper-bin-Win32.zip", "whisper-bin-x64.zip", "whisper-blas-bin-x64.zip",
                       "whisper-cublas-12.4.0-bin-x64.zip", "whisper-v1.8.5-xcframework.zip")]
    releases = {REPO: parse_releases(listing, REPO)}
    gpu = [GpuTarget("Radeon RX 7900 XTX", 0x744C, "gfx1100")]
    plan = plan_engines(catalog, gpu, "windows", releases, kind=SPEECH)
    assert [(c.backend, c.asset.name if c.asset else None, c.tag) for c in plan.included] == [
        ("cpu", "whisper-bin-x64.zip", "v1.8.5")]  # no ROCm or Vulkan build is published: the processor's
    assert plan.included[0].kind is SPEECH and plan.included[0].required == ("whisper-server.exe",)
    assert plan_engines(catalog, gpu, "linux", releases, kind=SPEECH).included == []


def test_whisper_server_command_line(tmp_path: Path) -> None:
    engine = EngineSpec("speech-cpu", "CPU", "cpu", tmp_path / "whisper-server", {}, kind=SPEECH)
    cmd = SPEECH.command(engine, tmp_path / "ggml-base.en.bin", ServerSettings(threads=3), 8123)
    assert cmd == [str(tmp_path / "whisper-server"), "-m", str(tmp_path / "ggml-base.en.bin"), "--host", "127.0.0.1",
                   "--port", "8123", "-t", "3", "-ng"]
    vulkan = EngineSpec("speech-vk", "Vulkan", "vulkan", tmp_path / "whisper-server", {}, kind=SPEECH)
    assert "-ng" not in SPEECH.command(vulkan, tmp_path / "m.bin", ServerSettings(), 1)


def test_the_probe_runs_the_real_build_with_its_kind_s_arguments(test_engines: TestEngines, tmp_path: Path) -> None:
    result = asyncio.run(probe_image_engine(test_engines.whisper_server, "cpu", {}, args=SPEECH.probe_args))
    assert result.usable and result.version is None  # whisper-server prints its usage, no version
    missing = asyncio.run(probe_image_engine(tmp_path / "whisper-server", "cpu", {}, args=SPEECH.probe_args))
    assert not missing.usable
