"""The benchmark carries each engine's share of the memory limit: `strata bench --json` on the real
CPU engine, and the dashboard's table and decode chart showing the same figures (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.cli import main
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.models.bandwidth import read_token_bytes
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.gpu.conftest import DATA
from tests.support.engines import TestEngines


@pytest.mark.engine
def test_bench_json_and_the_dashboard_show_the_share_of_the_memory_limit(
        test_engines: TestEngines, test_model: Path, qtbot: QtBot, qapp: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "no-gpu"))
    capsys.readouterr()
    rc = main(["bench", "--model", str(test_model), "--engines", "none", "--engine", str(test_engines.cpu_dir),
               "--prefill", "32", "--gen", "8", "--reps", "1", "--depth", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    (result,) = out["results"]
    limit = result["limit"]
    assert limit["device_kind"] == "cpu" and limit["depth"] == 32 + 8 // 2  # prefill, then half the reply
    assert limit["bytes_per_token"] == read_token_bytes(test_model).per_token(36)
    assert limit["share"] == pytest.approx(result["decode_median"] / limit["ceiling_tps"], abs=1e-4)  # 4 decimals

    app = build_app_services(build_services())
    page = DashboardPage(app.dashboard, AsyncBridge(), models=lambda: [test_model])
    qtbot.addWidget(page)
    app.gpu.detect()  # results are kept per GPU (here: none)
    results, rec = app.dashboard.saved_results(test_model)
    assert len(results) == 1
    page.show_results(results, rec, (), [limit])
    expected = f"{round(limit['share'] * 100)} % of {limit['ceiling_tps']:,.0f} tok/s"
    assert page.results_table.item(0, 5).text() == expected
    assert page.decode_bars.values["Memory limit"] == [pytest.approx(limit["ceiling_tps"])]
    page.stop()
    app.metrics.close()
