"""Devices on the captured 7900 XTX + Raphael iGPU machine, GUI and CLI alike.

The "ROCm build" stands in for AMD hardware this machine lacks: asked ``--list-devices`` it prints
the ROCm device list of that machine (tests/data/engines/list-devices, sources in its README);
otherwise it executes the real CPU llama-server, so the launch is a real process whose environment
is recorded from inside it. Done when (issue 13): the plan and the launch environment name only the
7900 XTX, the GPU page says why the iGPU is left out, and choosing the iGPU changes both.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import startup
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from tests.gpu.conftest import linux_tree
from tests.parity.test_gui_cli_parity import cli, gui
from tests.support.engines import TestEngines

LISTS = Path(__file__).resolve().parents[1] / "data" / "engines" / "list-devices"


def stand_in_rocm_build(folder: Path, engines: TestEngines, record: Path) -> Path:
    folder.mkdir()
    script = folder / "llama-server"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = "--list-devices" ] && exec cat '
        f"'{LISTS / 'rocm-rx7900xtx-raphael.txt'}'; done\n"
        'case "$*" in *--version*) ;; *) echo "ROCR_VISIBLE_DEVICES=${ROCR_VISIBLE_DEVICES-unset} '
        f'HIP_VISIBLE_DEVICES=${{HIP_VISIBLE_DEVICES-unset}}" >> \'{record}\' ;; esac\n'
        f"LD_LIBRARY_PATH='{engines.cpu_dir}' exec '{engines.cpu_server}' \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def xtx_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(linux_tree("rx7900xtx")))
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"):
        monkeypatch.delenv(var, raising=False)


def proc_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.engine
def test_only_the_7900_xtx_runs_until_the_user_picks_the_igpu(
        xtx_machine: None, test_engines: TestEngines, test_model: Path, tmp_path: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str]) -> None:
    record = tmp_path / "launches.txt"
    build = stand_in_rocm_build(tmp_path / "rocm-gfx110X", test_engines, record)
    rc, added = cli(capsys, "engines", "add-local", str(build), "--backend", "rocm")
    assert rc == 0 and added["probe"]["verdict"] == "works"

    # CLI: the plan names only the 7900 XTX, and says why the iGPU is out.
    rc, plan = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert rc == 0 and plan["chosen"] == added["id"]
    chosen = plan["devices"][added["id"]]
    assert chosen["devices"] == ["ROCm0"]
    assert chosen["env"] == {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"}
    igpu = next(g for g in plan["gpus"] if g["key"] == "card1")
    assert not igpu["chosen"] and igpu["reason"].startswith("integrated GPU left out")
    # ... and the real launch got exactly that environment.
    rc, reply = cli(capsys, "chat", "-m", str(test_model), "--ctx-size", "512", "--max-tokens", "2", "Hi")
    assert rc == 0 and reply["engine"]["chosen"] == added["id"]
    assert record.read_text().splitlines()[-1] == "ROCR_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=0"
    # --device for one run: the iGPU (ROCr hides the 7900 XTX; HIP numbers the iGPU 0).
    rc, plan = cli(capsys, "engines", "resolve", "--model", str(test_model), "--device", "card1")
    assert plan["devices"][added["id"]]["devices"] == ["ROCm1"]
    rc, _reply = cli(capsys, "chat", "-m", str(test_model), "--ctx-size", "512", "--max-tokens", "2",
                     "--device", "card1", "Hi")
    assert rc == 0 and record.read_text().splitlines()[-1] == "ROCR_VISIBLE_DEVICES=1 HIP_VISIBLE_DEVICES=0"
    assert build_services().settings_service.current.devices == []  # a flag is never saved

    asyncio.set_event_loop(qasync_loop)  # the CLI's asyncio.run left no current loop for the bridge
    for ui in gui(qtbot, qapp, qasync_loop):
        ui.services.chat.set_model(test_model)
        qasync_loop.run_until_complete(startup(ui))
        page = ui.pages.gpu
        page.on_shown()
        if page.detection_handle is not None:
            qasync_loop.run_until_complete(page.detection_handle.wait())
        assert page.report is not None
        # The GPU page: the 7900 XTX ticked; the iGPU not, and the page says why.
        assert page.device_checks["card0"].isChecked() and not page.device_checks["card1"].isChecked()
        assert page.device_reasons["card1"].text().startswith("integrated GPU left out")
        assert "AMD Radeon RX 7900 XTX is faster" in page.device_reasons["card1"].text()
        rc, cli_default = cli(capsys, "engines", "resolve", "--model", str(test_model))
        assert ui.services.resolver.resolve(test_model).to_json()["devices"] == cli_default["devices"]
        # The user picks the iGPU alone.
        page.device_checks["card1"].setChecked(True)
        page.device_checks["card0"].setChecked(False)
        assert ui.services.settings.current.devices == ["card1"]
        assert page.device_reasons["card1"].text() == "you chose it"
        spec = ui.services.resolver.resolve(test_model).chosen
        assert spec is not None and spec.devices == ("ROCm1",)
        # The chat's real engine process runs with the iGPU only.
        qasync_loop.run_until_complete(ui.services.chat.ensure_engine())
        sup = ui.services.chat.supervisor
        assert sup is not None and sup.pid is not None
        env = proc_environ(sup.pid)
        assert (env["ROCR_VISIBLE_DEVICES"], env["HIP_VISIBLE_DEVICES"]) == ("1", "0")
        qasync_loop.run_until_complete(ui.services.chat.stop_engine())
        # "Let Strata choose" goes back to the 7900 XTX.
        page.devices_auto.click()
        assert ui.services.settings.current.devices == []
        assert page.device_checks["card0"].isChecked()

    # The CLI reads the same saved choice as the GUI (after "Let Strata choose": the 7900 XTX again).
    rc, plan = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert plan["devices"][added["id"]]["devices"] == ["ROCm0"]


@pytest.mark.engine
def test_the_chosen_vulkan_device_reaches_the_real_vulkan_engine(
        test_engines: TestEngines, test_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real Vulkan build on Mesa llvmpipe, probed for real. llvmpipe is made visible twice
    (``STRATA_VK_VISIBLE_DEVICES=0,0``) so the build lists two devices, Vulkan0 and Vulkan1, on this
    one-GPU machine; choosing Vulkan1 must narrow what the engine process gets."""
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(linux_tree("no-gpu")))
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0,0")
    monkeypatch.delenv("GGML_VK_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("LLAMA_ARG_LOG_VERBOSITY", "4")  # the engine then logs the devices it uses

    async def launch(devices: list[str]) -> tuple[dict[str, str], str, str]:
        app = build_app_services(build_services())
        try:
            await app.engines.add_local(test_engines.vulkan_dir)
            app.settings.override(devices=devices, context_size=512)
            app.chat.set_model(test_model, remember=False)
            resolution = await app.prepare()
            assert resolution.chosen is not None and resolution.chosen.backend == "vulkan"
            await app.chat.ensure_engine()
            sup = app.chat.supervisor
            assert sup is not None and sup.pid is not None
            env = proc_environ(sup.pid)
            log = "\n".join(sup.log_tail())
            await app.chat.stop_engine()
            return env, log, resolution.chosen.device_reason
        finally:
            await app.aclose()

    env, log, reason = asyncio.run(launch(["Vulkan1"]))
    assert env["GGML_VK_VISIBLE_DEVICES"] == "0"  # Vulkan1 is the second entry of "0,0": physical 0
    assert "using device Vulkan0" in log and "Vulkan1" not in log
    assert reason.startswith("you chose Vulkan1 (llvmpipe")
    # Both devices: the model is spread by layer, in proportion to free memory, and the real
    # engine puts weights on each device.
    env, log, reason = asyncio.run(launch(["Vulkan0", "Vulkan1"]))
    assert env["GGML_VK_VISIBLE_DEVICES"] == "0,0"
    assert (env["LLAMA_ARG_SPLIT_MODE"], env["LLAMA_ARG_TENSOR_SPLIT"]) == ("layer", "2048,2048")
    assert "Vulkan0 model buffer size" in log and "Vulkan1 model buffer size" in log
    assert "layers split over 2 devices" in reason
    env, log, reason = asyncio.run(launch([]))
    assert env["GGML_VK_VISIBLE_DEVICES"] == "0,0" and "using device Vulkan1" in log
    assert reason.startswith("every Vulkan device this build lists")
