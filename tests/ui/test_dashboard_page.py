"""The Dashboard page with real parts: SQLite history, a real benchmark on the CPU engine, charts."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from pytestqt.qtbot import QtBot

from strata_gui.core.bench.process_stats import RingSeries
from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import MetricsStore, RequestRecord
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.pool import EnginePool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.supervisor import ServerSettings, ServerSupervisor
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.support.engines import TestEngines
from tests.support.fixed_engines import FixedEngines


class Telemetry:
    """GPU history as the GPU sampler keeps it (ring buffers of captured values)."""

    def __init__(self) -> None:
        self.series = {k: RingSeries(60) for k in ("load", "vram", "temp", "power", "clock")}
        self.running = False

    def start(self, owner: object = None) -> None:
        self.running = True

    def stop(self, owner: object = None) -> None:
        self.running = False

    def history(self) -> dict[str, dict[str, list[tuple[float, float | None]]]]:
        return {"Radeon RX 7900 XTX (gfx1100)": {k: s.points() for k, s in self.series.items()}}


def _dashboard(tmp_path: Path, qasync_loop: asyncio.AbstractEventLoop, server: Path) -> Iterator[DashboardService]:
    http = httpx.AsyncClient()
    store = MetricsStore(tmp_path / "strata.sqlite3")

    def factory(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        return ServerSupervisor(engine, model, settings, http=http, ready_timeout=120)

    cpu = EngineSpec("cpu-b11434", "CPU", "cpu", server)
    service = DashboardService(store, Benchmark(http, EnginePool(factory), store), http, resolver=FixedEngines([cpu]),
                               clock=iter(range(1_800_000_000, 1_900_000_000)).__next__)
    yield service
    qasync_loop.run_until_complete(http.aclose())
    store.close()


@pytest.fixture
def env(tmp_path: Path, qasync_loop: asyncio.AbstractEventLoop) -> Iterator[DashboardService]:
    """The dashboard over real SQLite; its CPU engine is named but never started (history, charts)."""
    yield from _dashboard(tmp_path, qasync_loop, tmp_path / "cpu" / "llama-server")


@pytest.fixture
def engine_env(tmp_path: Path, qasync_loop: asyncio.AbstractEventLoop,
               test_engines: TestEngines) -> Iterator[DashboardService]:
    """The same dashboard on the real CPU engine (benchmarks, requests)."""
    yield from _dashboard(tmp_path, qasync_loop, test_engines.cpu_server)


def test_requests_appear_filtered_with_aggregates_and_export(qtbot: QtBot, env: DashboardService,
                                                            tmp_path: Path) -> None:
    saved: list[str] = []
    target = tmp_path / "export.csv"
    page = DashboardPage(env, AsyncBridge(), save_path=lambda name: (saved.append(name), str(target))[1])
    qtbot.addWidget(page)
    page.reload_history()
    assert page.empty_label.isVisibleTo(page)
    for i in range(6):
        env.record(model="a.gguf" if i % 2 else "b.gguf", engine="cpu", backend="cpu",
                   prefill_tps=1000.0 + i, decode_tps=50.0 + i, ttft_s=0.02, prompt_tokens=10, output_tokens=20)
    # Live: new requests are plotted as they arrive, prefill and decode as separate series.
    assert page.throughput_chart.values("Prefill") == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0, 1005.0]
    assert page.throughput_chart.values("Decode") == [50.0, 51.0, 52.0, 53.0, 54.0, 55.0]
    assert "6 requests" in page.aggregates.text()
    page.filters.model.setCurrentIndex(page.filters.model.findData("a.gguf"))
    assert page.throughput_chart.values("Decode") == [51.0, 53.0, 55.0]
    assert "3 requests" in page.aggregates.text() and "decode median 53.0 tok/s" in page.aggregates.text()
    page.export_csv.click()
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [float(r["decode_tps"]) for r in rows] == [51.0, 53.0, 55.0]
    # History survives a restart: a new page on the same database shows it.
    page2 = DashboardPage(env, AsyncBridge())
    qtbot.addWidget(page2)
    page2.reload_history()
    assert len(page2.throughput_chart.values("Prefill")) == 6


def test_each_replys_share_of_the_memory_limit_is_charted_over_time(qtbot: QtBot, env: DashboardService,
                                                                   tmp_path: Path) -> None:
    target = tmp_path / "export.csv"
    page = DashboardPage(env, AsyncBridge(), save_path=lambda _name: str(target))
    qtbot.addWidget(page)
    page.show()
    page.reload_history()
    env.record(model="a.gguf", engine="remote", backend="remote", decode_tps=40.0)  # no limit known
    assert page.throughput_chart.isVisible() and not page.share_chart.isVisible()
    assert "memory limit" not in page.aggregates.text()
    for share, prefill in ((0.62, 0.3), (0.71, None), (0.8, 0.4)):
        env.record(model="a.gguf", engine="cpu", backend="cpu", decode_tps=50.0, limit_share=share,
                   prefill_tps=300.0, prefill_share=prefill)
    assert page.share_chart.isVisible()
    assert page.share_chart.values("Decode of the memory limit") == pytest.approx([62.0, 71.0, 80.0])
    # The prefill beside it, against the compute limit (a short prompt has none).
    assert page.share_chart.values("Prefill of the compute limit") == pytest.approx([30.0, 40.0])
    assert "prefill median 35 % of the compute limit" in page.aggregates.text()
    # Both charts span the same time, the request without a share included.
    assert page.share_chart.x_axis.min() == page.throughput_chart.x_axis.min()
    assert page.share_chart.x_axis.max() == page.throughput_chart.x_axis.max()
    assert "decode median 71 % of the memory limit" in page.aggregates.text()
    page.export_csv.click()
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert [r["limit_share"] for r in rows] == ["", "0.62", "0.71", "0.8"]
    # Kept: after a restart the chart shows the same points.
    again = DashboardPage(env, AsyncBridge())
    qtbot.addWidget(again)
    again.show()
    again.reload_history()
    assert again.share_chart.values("Decode of the memory limit") == pytest.approx([62.0, 71.0, 80.0])
    assert again.share_chart.values("Prefill of the compute limit") == pytest.approx([30.0, 40.0])
    again.filters.engine.setCurrentIndex(again.filters.engine.findData("remote"))
    assert not again.share_chart.isVisible()


def test_requests_are_counted_per_model_and_api(qtbot: QtBot, env: DashboardService) -> None:
    page = DashboardPage(env, AsyncBridge())
    qtbot.addWidget(page)
    page.reload_history()
    for model in ("a.gguf", "a.gguf", "b.gguf"):
        env.record(model=model, engine="cpu", backend="cpu", decode_tps=50.0)
    assert not page.sources_table.isVisibleTo(page)  # the chat alone needs no table
    for source, model in (("api-openai", "a.gguf"), ("api-ollama", "b.gguf"), ("api-ollama", "b.gguf"),
                          ("api-anthropic", "a.gguf"), ("api", "b.gguf")):  # "api": recorded by older versions
        env.record(model=model, engine="cpu", backend="cpu", source=source, decode_tps=50.0)
    table = page.sources_table
    assert table.isVisibleTo(page)
    header = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert header == ["Model", "Chat", "OpenAI API", "Ollama API", "Anthropic API"]
    rows = {table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, 5)] for r in range(table.rowCount())}
    assert rows == {"a.gguf": ["2", "1", "0", "1"], "b.gguf": ["1", "1", "2", "0"]}


def test_gpu_and_engine_charts_append_only_new_samples(qtbot: QtBot, env: DashboardService) -> None:
    tele = Telemetry()
    page = DashboardPage(env, AsyncBridge(), telemetry=tele)
    qtbot.addWidget(page)
    t0 = 1_800_000_000.0
    for i in range(5):
        tele.series["load"].append(t0 + i, 10.0 * i)
        tele.series["temp"].append(t0 + i, None)  # missing sensor: a gap, never a zero
    page.tick()
    charts = page.gpu_charts["Radeon RX 7900 XTX (gfx1100)"]
    assert charts["load"].values("Load %") == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert charts["temp"].values("Temperature (°C)") == []
    tele.series["load"].append(t0 + 5, 55.0)
    page.tick()
    assert charts["load"].values("Load %") == [0.0, 10.0, 20.0, 30.0, 40.0, 55.0]
    assert not page.no_gpu_label.isVisibleTo(page)
    for _ in range(3):
        qtbot.wait(10)
    page.stop()


@pytest.mark.engine
def test_benchmark_from_the_page_sets_the_default_engine(
    qtbot: QtBot, engine_env: DashboardService, test_model: Path, qasync_loop: asyncio.AbstractEventLoop
) -> None:
    env = engine_env
    page = DashboardPage(env, AsyncBridge(), models=lambda: [test_model])
    qtbot.addWidget(page)
    page.refresh_choices()
    assert page.current_model() == test_model
    assert [s.id for s in page.selected_engines()] == ["cpu-b11434"]
    page.prefill_spin.setValue(64)
    page.gen_spin.setValue(16)
    page.reps_spin.setValue(2)
    page.depth_spin.setValue(0)
    assert page.run_button.isEnabled()
    page.run_button.click()
    handle = page.bench_task
    assert handle is not None and not page.run_button.isEnabled()
    qasync_loop.run_until_complete(handle.wait())
    assert handle.error is None, handle.error
    assert page.results_table.rowCount() == 1
    assert page.results_table.item(0, 7).text() == "ok"
    # No ceilings wired into this service: neither share is known.
    assert page.results_table.item(0, 4).text() == page.results_table.item(0, 6).text() == "—"
    # Engines by the names people read (the id stays in the saved results and the export).
    assert page.results_table.item(0, 0).text() == "CPU"
    assert page.decode_bars.categories == ["CPU"] and page.decode_bars.values["Decode"][0] > 0
    assert page.recommendation_label.text().startswith("Fastest here: CPU. CPU is the only engine that ran")
    assert page.choice_label.text() == "Default engine: CPU (automatic, from the benchmark)."
    page.use_button.click()
    assert "chosen by you" in page.choice_label.text()
    assert env.default_engine(test_model).source == "user"  # type: ignore[union-attr]
    page.auto_button.click()
    assert "automatic" in page.choice_label.text()
    # JSON export carries the benchmark too.
    out = Path(env.store.path).with_name("stats.json")
    env.export(out, [], env.store.bench_results())
    assert json.loads(out.read_text())["benchmarks"][0]["engine"] == "cpu-b11434"


@pytest.mark.engine
def test_requests_answered_and_waiting_now_are_counted(qtbot: QtBot, engine_env: DashboardService, test_engines: TestEngines,
                                                       test_model: Path, qasync_loop: asyncio.AbstractEventLoop) -> None:
    """The chat holds the model's only slot and a program asks for it too: the dashboard counts one
    request answered and one waiting, per model in its tooltip; then none waiting."""
    env = engine_env
    http = httpx.AsyncClient()

    def factory(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        return ServerSupervisor(engine, model, settings, http=http, ready_timeout=120)

    pool = EnginePool(factory)
    page = DashboardPage(env, AsyncBridge(), pool=pool)
    qtbot.addWidget(page)
    page.show()
    assert not page.requests_now.isVisibleTo(page)  # nothing loaded, nothing waiting
    cpu = EngineSpec("cpu-b11434", "CPU", "cpu", test_engines.cpu_server)
    settings = ServerSettings(ctx_size=512, parallel=1)

    async def scenario() -> None:
        chat = await pool.acquire(cpu, test_model, settings, user="chat")
        program = asyncio.get_running_loop().create_task(pool.acquire(cpu, test_model, settings, user="api"))
        try:
            await _until(lambda: page.requests_now.text() == "Requests now: 1 active · 1 waiting")
            assert page.requests_now.isVisibleTo(page)
            assert page.requests_now.toolTip() == f"{test_model.name}: 1 of 1 in use, 1 waiting"
        finally:
            chat.release()
        (await program).release()
        await _until(lambda: page.requests_now.text() == "Requests now: 0 active · 0 waiting")
        await pool.unload_model(test_model, cpu.kind)
        await _until(lambda: not page.requests_now.isVisibleTo(page))  # nothing loaded any more

    try:
        qasync_loop.run_until_complete(scenario())
    finally:
        qasync_loop.run_until_complete(pool.aclose())
        qasync_loop.run_until_complete(http.aclose())


async def _until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def test_all_keeps_a_remote_engines_rates_out_of_this_machines_medians(qtbot: QtBot, env: DashboardService) -> None:
    """Issue 48: "All" mixed a remote engine's rates into the local medians."""
    page = DashboardPage(env, AsyncBridge())
    qtbot.addWidget(page)
    page.show()
    page.reload_history()
    for decode in (10.0, 12.0, 14.0):
        env.record(model="a.gguf", engine="cpu", backend="cpu", decode_tps=decode)
    env.record(model="lab", engine="lab · Model-70B", backend="remote", decode_tps=900.0)
    text = page.aggregates.text()
    assert "decode median 12.0 tok/s" in text and "3 requests" in text
    assert "1 request to remote engines not in these medians" in text
    # The remote engine chosen alone gets its own figures.
    page.filters.engine.setCurrentIndex(page.filters.engine.findData("lab · Model-70B"))
    assert "decode median 900.0 tok/s" in page.aggregates.text()
    assert "remote engines not in" not in page.aggregates.text()


def test_a_line_is_not_drawn_across_a_gap(qtbot: QtBot, env: DashboardService) -> None:
    """Issue 48: two requests hours apart (the app closed overnight) were joined by one line."""
    page = DashboardPage(env, AsyncBridge())
    qtbot.addWidget(page)
    page.show()
    page.reload_history()
    start = 1_800_000_000.0
    for at in (start, start + 60, start + 120, start + 8 * 3600, start + 8 * 3600 + 60):
        env.store.record_request(RequestRecord(at=at, model="a.gguf", engine="cpu", backend="cpu", decode_tps=10.0,
                                               prefill_tps=100.0))
    page.reload_history()
    chart = page.throughput_chart
    assert chart.values("Decode") == [10.0] * 5  # every point kept ...
    assert chart.segment_count("Decode") == 2  # ... drawn as two lines, broken at the night
    # The engine's 1 Hz samples break where sampling stopped (the page hidden).
    engine = page.engine_chart
    for t in (start, start + 1, start + 2, start + 60, start + 61):
        engine.append("CPU %", t, 5.0)
    assert engine.segment_count("CPU %") == 2
