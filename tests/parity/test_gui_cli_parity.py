"""One core, two faces: on every captured machine the composed GUI and the `strata` CLI give the
same engine plan, choose the same engine for the same reason, and give the same fit verdicts.

Real parts: the real CPU and Vulkan llama-server builds registered as local engines (the backend is
told from the build, no --backend), a "ROCm" build that sees no ROCm device (the real Vulkan build
registered as ROCm: its probe finds no ROCm device, like a ROCm build on a machine whose driver
cannot run it), the loopback hub serving real GGUF files, captured GPU trees and Windows outputs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose, startup
from strata_gui.cli import main
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.ui.bridge import AsyncBridge
from tests.gpu.conftest import DATA, LINUX_CASES, WINDOWS_CASES, windows_snapshot_data
from tests.support.engines import TestEngines

MACHINES = [f"linux/{c}" for c in LINUX_CASES] + [f"windows/{c}" for c in WINDOWS_CASES]


@pytest.fixture
def machine(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Replay a captured machine for the GUI and the CLI alike (the environment both read)."""
    kind, case = str(request.param).split("/")
    monkeypatch.delenv("STRATA_SYSFS_ROOT", raising=False)
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    if kind == "linux":
        monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / case))
    else:
        snap = tmp_path / f"{case}.json"
        snap.write_text(json.dumps(windows_snapshot_data(case)))
        monkeypatch.setenv("STRATA_GPU_SNAPSHOT", str(snap))
    return str(request.param)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    capsys.readouterr()
    rc = main([*args, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


@pytest.fixture
def engines_installed(test_engines: TestEngines, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """CPU, Vulkan and a ROCm build that cannot see a ROCm device, added with `strata engines add-local`."""
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")  # llvmpipe is this machine's Vulkan device
    rocm = tmp_path / "rocm-build"
    shutil.copytree(test_engines.vulkan_dir, rocm, symlinks=True)
    ids = {}
    for name, folder, extra in (("cpu", test_engines.cpu_dir, ()), ("vulkan", test_engines.vulkan_dir, ()),
                                ("rocm", rocm, ("--backend", "rocm"))):
        _rc, data = cli(capsys, "engines", "add-local", str(folder), *extra)
        ids[name] = data["id"]
        assert data["backend"] == name  # told from the build when not given
    return ids


def gui(qtbot: QtBot, qapp: Any, loop: asyncio.AbstractEventLoop) -> Iterator[AppUi]:
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                choose_model=lambda: None, save_path=lambda _n: None))
    try:
        yield ui
    finally:
        ui.window.close()
        loop.run_until_complete(bridge.shutdown())
        loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


@pytest.mark.engine
@pytest.mark.parametrize("machine", MACHINES, indirect=True)
def test_gui_and_cli_choose_the_same_engine_for_the_same_reason(
        machine: str, engines_installed: dict[str, str], test_model: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str]) -> None:
    rc, cli_plan = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert rc == 0
    # The ROCm build that sees no ROCm device is never chosen, by either face.
    rocm = next(e for e in cli_plan["engines"] if e["engine"] == engines_installed["rocm"])
    assert not rocm["included"] and rocm["probe"] == "no_device" and "sees no ROCm device" in rocm["reason"]
    assert cli_plan["chosen"] == engines_installed["vulkan"]  # llvmpipe: Vulkan before CPU
    # `engines list` (a fresh run) shows the verdicts the resolve run saved.
    _rc, listed = cli(capsys, "engines", "list")
    assert {e["id"]: (e["probe"] or {}).get("verdict") for e in listed} == {
        engines_installed["cpu"]: "works", engines_installed["vulkan"]: "works",
        engines_installed["rocm"]: "no_device"}

    for ui in gui(qtbot, qapp, qasync_loop):
        ui.services.chat.set_model(test_model)
        qasync_loop.run_until_complete(startup(ui))
        resolution = ui.services.resolver.resolve(test_model)
        assert resolution.to_json()["order"] == cli_plan["order"]
        assert resolution.to_json()["reason"] == cli_plan["reason"]
        assert resolution.gpu == cli_plan["gpu"]
        assert [s.id for s in ui.services.chat.plan] == cli_plan["order"]
        # What a person reads: the status bar and the chat header name the engine that will run.
        chosen = resolution.chosen
        assert chosen is not None
        assert chosen.label in ui.window.statusBar().currentMessage()
        ui.pages.chat.on_shown()
        assert chosen.label in ui.pages.chat.engine_state.text()


@pytest.mark.parametrize("machine", MACHINES, indirect=True)
def test_gui_and_cli_give_the_same_fit_verdicts(
        machine: str, hub_repos: list[Any], qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.hub_server import running_hub

    with running_hub(hub_repos) as hub:
        build_services().settings_service.update(hub_endpoint=hub.url)
        rc, info = cli(capsys, "models", "info", "strata/test-llama-GGUF")
        assert rc == 0
        for ui in gui(qtbot, qapp, qasync_loop):
            services = ui.services
            qasync_loop.run_until_complete(services.detect_gpus())
            detail = qasync_loop.run_until_complete(services.models.detail("strata/test-llama-GGUF"))
            report = qasync_loop.run_until_complete(services.models.fit_report(detail))
    fit = info["fit"]
    assert fit["target"]["name"] == report.target.name
    assert fit["target"]["usable_bytes"] == report.target.usable_bytes
    gui_verdicts = {f.entry.label: (f.estimate.describe() if f.estimate else None, f.is_default)
                    for f in report.fits}
    cli_verdicts = {f["label"]: (f["verdict"], f["default"]) for f in fit["quants"]}
    assert cli_verdicts == gui_verdicts and len(gui_verdicts) == 3
    if "no-gpu" not in machine and "nvidia" not in machine and "wine" not in machine:  # Wine: its host's card
        assert report.target.usable_bytes > 0  # judged against the detected GPU, not "0.0 GB usable"


def test_two_chosen_gpus_are_one_split_fit_target_in_gui_and_cli(
        hub_repos: list[Any], qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The laptop's 780M iGPU + RX 7600, both chosen on the GPU page: fits are judged across both."""
    from tests.support.hub_server import running_hub

    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "laptop-780m-rx7600"))
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    with running_hub(hub_repos) as hub:
        build_services().settings_service.update(hub_endpoint=hub.url, devices=["card0", "card1"])
        rc, info = cli(capsys, "models", "info", "strata/test-llama-GGUF")
        assert rc == 0
        for ui in gui(qtbot, qapp, qasync_loop):
            qasync_loop.run_until_complete(ui.services.detect_gpus())
            target = ui.services.fit_target()
    assert len(target.devices) == 2 and target.name == "AMD Radeon 780M + AMD Radeon RX 7600 series"
    assert info["fit"]["target"]["name"] == target.name
    assert info["fit"]["target"]["usable_bytes"] == target.usable_bytes


def test_two_discrete_gpus_default_and_split_in_gui_and_cli(
        hub_repos: list[Any], qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """7900 XTX + RX 7600 + iGPU: the 7900 XTX by default (the 7600 and the iGPU left out with why);
    both discrete cards chosen: one split fit target, and `engines resolve` says both devices."""
    from tests.support.hub_server import running_hub

    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "rx7900xtx-rx7600-igpu"))
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    _rc, gpu = cli(capsys, "gpu")
    picks = {p["key"]: p for p in gpu["devices"]}
    assert "has more memory" in picks["card1"]["reason"] and picks["card2"]["integrated"]
    with running_hub(hub_repos) as hub:
        build_services().settings_service.update(hub_endpoint=hub.url)
        for ui in gui(qtbot, qapp, qasync_loop):
            qasync_loop.run_until_complete(ui.services.detect_gpus())
            chosen = [p.key for p in ui.services.resolver.gpu_picks() if p.chosen]
            assert chosen == ["card0"]
            assert ui.services.fit_target().name == "AMD Radeon RX 7900 XTX"
        assert [k for k, p in picks.items() if p["chosen"]] == ["card0"]  # the CLI agrees
        build_services().settings_service.update(devices=["card0", "card1"])
        rc, info = cli(capsys, "models", "info", "strata/test-llama-GGUF")
        assert rc == 0
        for ui in gui(qtbot, qapp, qasync_loop):
            qasync_loop.run_until_complete(ui.services.detect_gpus())
            target = ui.services.fit_target()
    assert target.name == "AMD Radeon RX 7900 XTX + AMD Radeon RX 7600 series" and len(target.devices) == 2
    assert info["fit"]["target"] == {"name": target.name, "usable_bytes": target.usable_bytes}
