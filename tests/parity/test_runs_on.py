"""The captured RX 7900 XTX machine whose ROCm build failed its check: the only working engine is
Vulkan on llvmpipe, the CPU. Every face says the model runs on the CPU from system RAM: the first-run
guide, the hub's quant table, Load options, the chat header, the GPU page, and `strata models info`,
`models inspect`, `gpu` and `engines resolve` (issue 27).

Real parts: the real CPU and Vulkan (llvmpipe) llama-server builds, a "ROCm" build that sees no
ROCm device (the parity suite's stand-in), the loopback hub, the captured sysfs tree.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, open_first_run, startup
from strata_gui.core.config.services import build_services
from tests.gpu.conftest import DATA
from tests.parity.test_gui_cli_parity import cli, engines_installed, gui  # noqa: F401  (fixture)

CPU_VERDICT = "fits in system RAM, runs on the CPU"


async def _until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
def xtx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "rx7900xtx"))


@pytest.mark.engine
def test_the_7900_xtx_without_a_working_gpu_engine_says_runs_on_the_cpu_everywhere(
        xtx: None, engines_installed: dict[str, str], test_model: Path, hub_repos: list[Any],  # noqa: F811
        qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.hub_server import running_hub

    # Widgets of earlier tests left to the cyclic collector are freed here, on the GUI thread: the
    # header reads below allocate on worker threads, where a collection would free them off it.
    gc.collect()
    # CLI: the plan, the GPU report and the fits.
    rc, plan = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert rc == 0 and plan["chosen"] == engines_installed["vulkan"]
    runs_on = plan["runs_on"]
    assert runs_on["on_cpu"] and runs_on["differs"]
    assert runs_on["why"].startswith("no GPU engine works here yet")
    assert "llvmpipe" in runs_on["why"] and "llvmpipe" in runs_on["engine_devices"][0]
    assert "mesa-vulkan-drivers" in runs_on["fix"]
    assert plan["reason"].endswith("; runs on the CPU: " + runs_on["why"])
    assert "on this GPU" not in plan["reason"]
    _rc, gpu = cli(capsys, "gpu")
    assert [d["name"] for d in gpu["devices"] if d["chosen"]] == ["AMD Radeon RX 7900 XTX"]  # what was ticked
    assert gpu["runs_on"] == runs_on  # ... and where the engine really runs
    rc, inspect = cli(capsys, "models", "inspect", str(test_model))
    assert rc == 0 and inspect["fit"]["verdict"] == CPU_VERDICT
    assert inspect["fit"]["target"].startswith("system RAM — runs on the CPU")
    limit = inspect["limit"]
    assert limit["device_kind"] == "cpu" and limit["device"] == "the CPU" and limit["ceiling_tps"] > 0
    assert limit["parts"][0]["source"].startswith("measured")
    assert limit["warnings"][0].startswith("Runs on the CPU: no GPU engine works here yet")

    with running_hub(hub_repos) as hub:
        build_services().settings_service.update(hub_endpoint=hub.url)
        rc, info = cli(capsys, "models", "info", "strata/test-llama-GGUF")
        assert rc == 0
        assert info["fit"]["target"]["name"] == "system RAM — runs on the CPU: " + runs_on["why"]
        assert {q["verdict"] for q in info["fit"]["quants"]} == {CPU_VERDICT}

        for ui in gui(qtbot, qapp, qasync_loop):
            services = ui.services
            services.chat.set_model(test_model)
            qasync_loop.run_until_complete(startup(ui))
            # The same answer as the CLI, from the same core.
            assert services.resolver.run_on().to_json() == runs_on
            assert services.fit_target().name == info["fit"]["target"]["name"]

            async def faces(ui: AppUi = ui) -> None:
                # The hub's quant table.
                models = ui.pages.models
                models.show_detail("strata/test-llama-GGUF")
                await _until(lambda: models.report is not None)
                table = models.quant_table
                assert {table.item(r, 2).text() for r in range(table.rowCount())} == {CPU_VERDICT}
                assert "runs on the CPU" in models.fit_note.text()
                # Load options.
                chat = ui.pages.chat
                chat.set_model(test_model)
                chat.load_options_toggle.click()
                panel = chat.load_options_panel
                assert panel is not None
                await _until(lambda: panel.estimate is not None)
                assert panel.verdict.text().startswith("Fits in system RAM — runs on the CPU")
                # The chat header: which engine, and that it runs on the CPU.
                chat.on_shown()
                assert "runs on the CPU: no GPU engine works here yet" in chat.engine_state.text()
                # The GPU page: the ticked 7900 XTX, and the engine's own device (llvmpipe).
                page = ui.pages.gpu
                page.show_device_choice()
                assert "llvmpipe" in page.engine_device.text()
                assert "Models run on the CPU" in page.engine_device.text()
                # The first-run guide's starter models.
                # (offline: the guide's engine plan would ask GitHub, which tests never reach)
                ui.services.settings.update(offline=True)
                guide = open_first_run(ui)
                assert guide.check_handle is not None
                await guide.check_handle.wait()
                guide._show_models()
                items = [guide.model_list.topLevelItem(i) for i in range(guide.model_list.topLevelItemCount())]
                verdicts = {item.text(2) for item in items if item is not None}
                assert "Fits in system RAM — runs on the CPU" in verdicts
                assert not any("GPU" in v for v in verdicts)
                assert "runs on the CPU" in guide.target_label.text()
                guide.close()

            qasync_loop.run_until_complete(faces())
