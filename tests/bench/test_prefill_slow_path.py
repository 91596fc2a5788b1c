"""The slow path found and named (issue 43): a ROCm build for the 7900 XTX whose hipBLASLt tuning table
was made for another revision is rejected at launch; after a benchmark whose prefill reaches a small
share of the GPU's compute limit, both faces say which check failed and what fixes it.

The 7900 XTX is the captured tree and the prefill is measured by the real engine on this machine's
CPU (no AMD GPU can exist here); the table check, the ceiling, the benchmark's limits and both faces
are Strata's real code.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.cli import main
from strata_gui.commands.bench import _print_limits
from strata_gui.core.app_services import build_app_services
from strata_gui.core.base import from_json
from strata_gui.core.bench.choice import recommend
from strata_gui.core.bench.store import BenchResult
from strata_gui.core.config.services import build_services
from strata_gui.core.engines.records import InstalledEngine, TuningRef
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.engines.test_archive_tuning_launch import HEADER, ROW
from tests.gpu.conftest import DATA
from tests.support.engines import TestEngines

pytestmark = pytest.mark.engine
ENGINE = "lemonade-rocm-gfx110X-b1011"


def _rocm_build_with_a_table_for_another_revision(engines_dir: Path) -> None:
    folder = engines_dir / ENGINE
    folder.mkdir(parents=True)
    table = folder / "hipblaslt-gfx1100.csv"
    table.write_text("\n".join(["Git Version: 0badc0de", HEADER, ROW]) + "\n", encoding="utf-8")
    InstalledEngine(ENGINE, "rocm", folder, folder / "llama-server", "b1011", source="lemonade", family="gfx110X",
                    gfx_targets=("gfx1100",), hipblaslt_revision="d5f81531",
                    tuning=TuningRef(str(table), "gfx1100", "0badc0de")).write_manifest()


def test_a_rejected_table_is_named_after_a_slow_rocm_benchmark(
        test_engines: TestEngines, test_model: Path, qtbot: QtBot, qapp: Any, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "no-gpu"))
    capsys.readouterr()
    assert main(["bench", "--model", str(test_model), "--engines", "none", "--engine", str(test_engines.cpu_dir),
                 "--prefill", "512", "--gen", "4", "--reps", "1", "--depth", "0", "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)["results"][0]
    assert measured["prefill_median"] > 0

    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(DATA / "linux" / "rx7900xtx"))
    app = build_app_services(build_services())
    try:
        app.gpu.detect()
        _rocm_build_with_a_table_for_another_revision(app.engines.engines_dir)
        spec = next(s for s in app.resolver.installed_specs() if s.id == ENGINE)
        result = BenchResult(test_model.name, ENGINE, "rocm", app.dashboard.gpu_label(), 512, 4, 1,
                             [measured["prefill_median"]], [measured["decode_median"]], tuning_active=False)
        (limit,) = asyncio.run(app.dashboard.benchmark_limits(test_model, [result], [spec]))
        assert limit is not None
        prefill = limit["prefill"]
        assert prefill["device"] == "AMD Radeon RX 7900 XTX" and prefill["tflops"] == 122.9
        assert prefill["share"] < 0.3
        finding = from_json(prefill["slow_path"])
        assert "rejected on its hipBLASLt revision" in finding and "0badc0de" in finding
        assert "Update the engine, or fetch the table made for the hipBLASLt revision" in finding
        # The command line says it under the table.
        _print_limits(ENGINE, 0, limit)
        assert f"warning: {finding}" in capsys.readouterr().out
        # The dashboard says it with the recommendation's warnings.
        page = DashboardPage(app.dashboard, AsyncBridge(), models=lambda: [test_model])
        qtbot.addWidget(page)
        page.show_results([result], recommend([result]), (), [limit])
        assert finding in page.warnings_label.text()
        assert page.results_table.item(0, 4).text().startswith(f"{prefill['share'] * 100:.1f} % of")
        page.stop()
    finally:
        asyncio.run(app.aclose())
