"""BF16 on the quant picker, GUI and CLI alike: on the captured RX 6600 (gfx1032, RDNA2: no BF16
matrix instructions) a BF16 file is marked slow and the default pick is F16; on the captured
7900 XTX (gfx1100) it is marked fast."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.core.config.services import build_services
from tests.gpu.conftest import linux_tree
from tests.parity.test_gui_cli_parity import cli, gui
from tests.support.hub_server import HubRepo, running_hub

REPO = "strata/full-precision-llama-GGUF"


@pytest.mark.parametrize(("machine", "speed", "default"), [("rx6600", "slow", "F16"), ("rx7900xtx", "fast", "BF16")])
def test_bf16_is_marked_for_this_gpu_and_avoided_where_slow(
        machine: str, speed: str, default: str, test_model: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(linux_tree(machine)))
    repo = HubRepo(REPO, {"README.md": b"# full precision\n", "llama-BF16.gguf": test_model,
                          "llama-F16.gguf": test_model})
    with running_hub([repo]) as hub:
        build_services().settings_service.update(hub_endpoint=hub.url)
        rc, info = cli(capsys, "models", "info", REPO)
        assert rc == 0
        quants = {q["label"]: q for q in info["fit"]["quants"]}
        assert quants["BF16"]["bf16"] == speed and quants["F16"]["bf16"] is None
        assert quants[default]["default"]
        asyncio.set_event_loop(qasync_loop)  # the CLI's asyncio.run left no current loop for the bridge
        for ui in gui(qtbot, qapp, qasync_loop):
            qasync_loop.run_until_complete(ui.services.detect_gpus())
            page = ui.pages.models
            page.show_detail(REPO)
            assert page.detail_handle is not None
            qasync_loop.run_until_complete(page.detail_handle.wait())
            rows = {page.quant_table.item(r, 0).text().split()[0]: page.quant_table.item(r, 2).text()
                    for r in range(page.quant_table.rowCount())}
            assert rows["BF16"].endswith(f"BF16: {speed} on this GPU")
            assert "BF16" not in rows["F16"]
            recommended = [page.quant_table.item(r, 0).text() for r in range(page.quant_table.rowCount())
                           if "recommended" in page.quant_table.item(r, 0).text()]
            assert recommended and recommended[0].startswith(default)
