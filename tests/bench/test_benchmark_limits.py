"""The benchmark carries each engine's share of the memory limit (decode) and of the compute limit
(prefill): `strata bench --json` on the real CPU engine, and the dashboard's table showing the same
figures, also after a restart (issues 27 and 43)."""

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
from strata_gui.core.models.compute import read_token_flops
from strata_gui.core.runtime import percent_text
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
               "--prefill", "256", "--gen", "8", "--reps", "1", "--depth", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    (result,) = out["results"]
    limit = result["limit"]
    assert limit["device_kind"] == "cpu" and limit["depth"] == 256 + 8 // 2  # prefill, then half the reply
    assert limit["bytes_per_token"] == read_token_bytes(test_model).per_token(260)
    assert limit["share"] == pytest.approx(result["decode_median"] / limit["ceiling_tps"], abs=1e-4)  # 4 decimals
    prefill = limit["prefill"]  # the prompt against the CPU's arithmetic
    assert prefill["device_kind"] == "cpu" and prefill["prompt_tokens"] == 256
    assert prefill["flops_per_token"] == round(read_token_flops(test_model).per_token(256))
    assert prefill["ceiling_tps"] == pytest.approx(prefill["tflops"] * 1e12 / prefill["flops_per_token"], rel=1e-3)
    assert prefill["share"] == pytest.approx(result["prefill_median"] / prefill["ceiling_tps"], rel=1e-3)
    assert "cores ×" in prefill["source"] and "FLOPs per cycle" in prefill["source"]

    app = build_app_services(build_services())
    page = DashboardPage(app.dashboard, AsyncBridge(), models=lambda: [test_model])
    qtbot.addWidget(page)
    app.gpu.detect()  # results are kept per GPU (here: none)
    results, rec = app.dashboard.saved_results(test_model)
    assert len(results) == 1
    page.show_results(results, rec, (), [limit])
    expected = f"{percent_text(limit['share'])} % of {limit['ceiling_tps']:,.0f} tok/s"  # "0.2 %" under 1 %
    assert page.results_table.item(0, 6).text() == expected
    assert page.results_table.item(0, 4).text() == f"{percent_text(prefill['share'])} % of {prefill['ceiling_tps']:,.0f} tok/s"
    # Only the measurement is drawn: a ceiling bar dwarfed a 14.5 tok/s decode.
    assert list(page.decode_bars.values) == ["Decode"] and list(page.prefill_bars.values) == ["Prefill"]
    # After a restart the saved run gets its shares back (they were "—").
    page._show_saved()
    qtbot.waitUntil(lambda: page.results_table.item(0, 6).text() != "—", timeout=30_000)
    assert page.results_table.item(0, 4).text().endswith("tok/s")
    page.stop()
    app.metrics.close()
