"""The benchmark shows what the model's draft model gains: the same workload with and without it,
on the real CPU llama-server (the CLI and the Dashboard page)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import httpx
import pytest
from pytestqt.qtbot import QtBot

from strata_gui.cli import main
from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.pool import EnginePool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.supervisor import ServerSettings, ServerSupervisor
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.support import gguf_model
from tests.support.engines import TestEngines
from tests.support.fixed_engines import FixedEngines


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Path:
    """A draft with the test model's vocabulary and weights (its drafts are accepted)."""
    os.environ.setdefault("STRATA_TEST_LLAMA_SRC", str(test_engines.llama_src))
    return gguf_model.write_model(tmp_path_factory.mktemp("draft") / "draft-twin.gguf")


@pytest.mark.engine
def test_cli_bench_reports_the_draft_speedup(test_engines: TestEngines, test_model: Path, twin: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "--model", str(test_model), "--engines", "none", "--engine", str(test_engines.cpu_dir),
            "--prefill", "32", "--gen", "32", "--reps", "1", "--depth", "0"]
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["draft_speedup"] == []  # no draft model: nothing to compare
    assert main([*args, "--model-draft", str(twin), "--draft-max", "4", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["draft_speedup"]
    assert row["decode_with_draft"] > 0 and row["decode_without_draft"] > 0
    assert row["speedup"] == pytest.approx(row["decode_with_draft"] / row["decode_without_draft"])
    assert main([*args, "--model-draft", str(twin)]) == 0
    assert "draft model on local-cpu-bin: decode" in capsys.readouterr().out


@pytest.mark.engine
def test_dashboard_shows_the_draft_speedup(qtbot: QtBot, tmp_path: Path, test_engines: TestEngines,
                                           test_model: Path, twin: Path,
                                           qasync_loop: asyncio.AbstractEventLoop) -> None:
    http = httpx.AsyncClient()
    store = MetricsStore(tmp_path / "strata.sqlite3")

    def factory(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        return ServerSupervisor(engine, model, settings, http=http, ready_timeout=120)

    cpu = EngineSpec("cpu-b11434", "CPU", "cpu", test_engines.cpu_server)
    bench = Benchmark(http, EnginePool(factory), store, launch_settings=lambda _m: ServerSettings(draft_model=str(twin)))
    service = DashboardService(store, bench, http, resolver=FixedEngines([cpu]))
    try:
        page = DashboardPage(service, AsyncBridge(), models=lambda: [test_model])
        qtbot.addWidget(page)
        page.refresh_choices()
        page.tabs.setCurrentIndex(page.tabs.count() - 1)  # the Benchmark tab, as the user opens it
        page.prefill_spin.setValue(32)
        page.gen_spin.setValue(16)
        page.reps_spin.setValue(1)
        page.depth_spin.setValue(0)
        page.run_button.click()
        handle = page.bench_task
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        assert handle.error is None, handle.error
        assert page.draft_label.isVisibleTo(page)
        assert "Draft model on cpu-b11434: decode" in page.draft_label.text()
    finally:
        qasync_loop.run_until_complete(http.aclose())
        store.close()
