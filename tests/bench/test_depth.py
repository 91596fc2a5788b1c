"""Depth-aware engine choice: the benchmark measures at depth 0 and at a long depth, and the engine
plan follows the depth a conversation is at, in the composed GUI and in the CLI alike.

Real parts: the real CPU and Vulkan llama-server builds (Vulkan on Mesa's llvmpipe) registered with
`strata engines add-local`, the generated GGUF, the user's SQLite database in tmp. The depths are
small (0 and 256) so the run stays short; the code path is the one an 8K run takes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose, startup
from strata_gui.cli import main
from strata_gui.core.app_services import build_app_services
from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import BenchResult, MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.chat.service import EngineSwitchOffer
from strata_gui.core.config.services import build_services
from strata_gui.core.pool import EnginePool
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.depth import DepthPoint, DepthProfile
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.supervisor import ServerSettings, ServerState, ServerSupervisor
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.support.engines import TestEngines
from tests.support.fixed_engines import FixedEngines

DEPTH = 256


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    capsys.readouterr()
    rc = main([*args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.fixture
def engines_added(test_engines: TestEngines, capsys: pytest.CaptureFixture[str],
                  monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The CPU and Vulkan builds, added as a user would (`strata engines add-local`)."""
    monkeypatch.setenv("STRATA_VK_VISIBLE_DEVICES", "0")  # llvmpipe is this machine's Vulkan device
    ids = {}
    for name, folder in (("cpu", test_engines.cpu_dir), ("vulkan", test_engines.vulkan_dir)):
        rc, data = cli(capsys, "engines", "add-local", str(folder))
        assert rc == 0 and data["backend"] == name
        ids[name] = data["id"]
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


def _fastest(results: list[dict[str, Any]], depth: int) -> str:
    at = [r for r in results if r["depth"] == depth]
    return str(max(at, key=lambda r: r["decode_median"])["engine"])


@pytest.mark.engine
@pytest.mark.vulkan
def test_bench_measures_both_depths_and_the_plan_follows_the_conversation_depth(
        engines_added: dict[str, str], test_model: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str]) -> None:
    rc, bench = cli(capsys, "bench", "--model", str(test_model), "--prefill", "32", "--gen", "8", "--reps", "1",
                    "--depth", str(DEPTH))
    assert rc == 0, bench
    results = bench["results"]
    # One result per engine and depth, each really measured.
    assert sorted((r["engine"], r["depth"]) for r in results) == sorted(
        (e, d) for e in engines_added.values() for d in (0, DEPTH))
    assert all(r["error"] is None and r["decode_median"] > 0 and r["prefill_tokens"] == 32 for r in results)
    assert f"At {DEPTH} depth" in bench["depth_note"]
    shallow, deep = _fastest(results, 0), _fastest(results, DEPTH)

    # The CLI: the engine measured fastest at the nearest measured depth, and why.
    plans = {}
    for depth in (0, 40, DEPTH, 4 * DEPTH):
        rc, plans[depth] = cli(capsys, "engines", "resolve", "--model", str(test_model), "--depth", str(depth))
        assert rc == 0
    assert plans[0]["chosen"] == shallow and plans[DEPTH]["chosen"] == deep
    assert plans[4 * DEPTH]["chosen"] == deep  # past the deepest measurement, that one holds
    assert plans[0]["reason"].startswith("measured fastest at 0 depth")
    assert plans[DEPTH]["reason"].startswith(f"measured fastest at {DEPTH} depth")
    crossovers = plans[DEPTH]["crossovers"]
    if shallow == deep:
        assert crossovers == [] and "crossover" not in plans[DEPTH]["reason"]
    else:  # the threshold is shown, and the choice changes there
        [c] = crossovers
        assert 0 < c["depth"] < DEPTH and (c["before"], c["after"]) == (shallow, deep)
        assert f"crossover at about {c['depth']} tokens" in plans[DEPTH]["reason"]
        rc, just_before = cli(capsys, "engines", "resolve", "--model", str(test_model), "--depth", str(c["depth"] - 1))
        rc, just_after = cli(capsys, "engines", "resolve", "--model", str(test_model), "--depth", str(c["depth"] + 1))
        assert (just_before["chosen"], just_after["chosen"]) == (shallow, deep)
    # Without a depth the plan is the depth-0 benchmark's choice, as before.
    rc, plain = cli(capsys, "engines", "resolve", "--model", str(test_model))
    assert plain["chosen"] == shallow and plain["depth"] is None

    asyncio.set_event_loop(qasync_loop)  # the app's loop again: each CLI run above (asyncio.run) unset it
    for ui in gui(qtbot, qapp, qasync_loop):
        qasync_loop.run_until_complete(ui.services.resolver.prepare())
        for depth, cli_plan in plans.items():
            gui_plan = ui.services.resolver.resolve(test_model, depth=depth).to_json()
            for field in ("chosen", "reason", "order", "crossovers"):
                assert gui_plan[field] == cli_plan[field], (depth, field)
        # The Dashboard shows the saved results at both depths.
        dash = ui.pages.dashboard
        dash.model_combo.addItem(test_model.name, str(test_model))
        dash.model_combo.setCurrentIndex(dash.model_combo.findData(str(test_model)))
        table = dash.results_table
        depths = sorted(table.item(row, 2).text() for row in range(table.rowCount()))
        assert depths == ["0", "0", str(DEPTH), str(DEPTH)]
        assert f"At {DEPTH} depth" in dash.recommendation_label.text()


@pytest.mark.engine
def test_dashboard_benchmark_runs_the_depth_pass(qtbot: QtBot, tmp_path: Path, test_engines: TestEngines,
                                                 test_model: Path, qasync_loop: asyncio.AbstractEventLoop) -> None:
    cpu = EngineSpec("cpu-test", "CPU", "cpu", test_engines.cpu_server)
    http = httpx.AsyncClient()
    store = MetricsStore(tmp_path / "db.sqlite3")

    def factory(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        return ServerSupervisor(engine, model, settings, http=http, ready_timeout=120)

    service = DashboardService(store, Benchmark(http, EnginePool(factory), store), http, resolver=FixedEngines([cpu]))
    bridge = AsyncBridge()
    page = DashboardPage(service, bridge, models=lambda: [test_model])
    qtbot.addWidget(page)
    try:
        page.refresh_choices()
        assert page.depth_spin.value() == 8192  # the default long depth, like the published runs
        page.prefill_spin.setValue(32)
        page.gen_spin.setValue(8)
        page.reps_spin.setValue(1)
        page.depth_spin.setValue(64)
        handle = page.start_benchmark()
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        table = page.results_table
        rows = [[table.item(r, c).text() for c in (0, 2, 7)] for r in range(table.rowCount())]
        assert rows == [["CPU", "0", "ok"], ["CPU", "64", "ok"]]
        saved = store.bench_results(model_key=service._key(test_model))
        assert sorted(r.depth for r in saved) == [0, 64]
    finally:
        page.stop()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(http.aclose())
        store.close()


def test_depth_profile_crossover_and_clear_gain() -> None:
    # Shaped like the published Strix Halo runs: Vulkan ahead at short depth, ROCm at 8K (51 vs 32).
    profile = DepthProfile([DepthPoint("vulkan", 0, 60.0), DepthPoint("vulkan", 8192, 32.0),
                            DepthPoint("rocm", 0, 50.0), DepthPoint("rocm", 8192, 51.0),
                            DepthPoint("cpu", 0, 9.0)])  # one depth only: takes no part
    assert profile.engines == ["rocm", "vulkan"]
    assert [e for e, _ in profile.ranking_at(0)] == ["vulkan", "rocm"]
    assert [e for e, _ in profile.ranking_at(8192)] == ["rocm", "vulkan"]
    [c] = profile.crossovers()
    # 60 - 28x = 50 + x at x = 10/29 of the way: about 2825 tokens.
    assert (c.before, c.after) == ("vulkan", "rocm") and c.depth == round(8192 * 10 / 29)
    # ROCm is at least 10 % faster from where 50 + x >= 1.1 * (60 - 28x).
    start = profile.clearly_faster_from("vulkan", "rocm")
    assert start is not None and c.depth < start < 8192
    assert (profile.decode_at("rocm", start) or 0) >= 1.1 * (profile.decode_at("vulkan", start) or 0) - 0.01
    assert profile.clearly_faster_from("rocm", "vulkan") == 0  # Vulkan is 20 % faster at depth 0


@pytest.mark.engine
@pytest.mark.vulkan
def test_chat_offers_the_engine_that_is_clearly_faster_once_the_conversation_is_deep_enough(
        engines_added: dict[str, str], test_model: Path, qtbot: QtBot, qapp: Any,
        qasync_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str]) -> None:
    cpu, vulkan = engines_added["cpu"], engines_added["vulkan"]
    for ui in gui(qtbot, qapp, qasync_loop):
        services, page = ui.services, ui.pages.chat
        services.chat.set_model(test_model)
        qasync_loop.run_until_complete(startup(ui))
        # Measurements as a benchmark at depths 0 and 64 would save them (written to the real store,
        # with the engines' real ids): CPU faster in an empty context, Vulkan faster at 64 tokens.
        key, gpu = services.resolver.model_key(test_model), services.resolver.gpu_key()
        assert key is not None
        for engine, backend, speeds in ((cpu, "cpu", (100.0, 40.0)), (vulkan, "vulkan", (50.0, 60.0))):
            for depth, decode in zip((0, 64), speeds, strict=True):
                services.metrics.save_bench(BenchResult(test_model.name, engine, backend, gpu, 32, 8, 1, [500.0],
                                                        [decode], model_key=key, depth=depth))
        services.metrics.set_choice(key, gpu, cpu, "measured", test_model.name)
        assert services.chat.plan[0].id == cpu
        offers: list[EngineSwitchOffer] = []
        services.chat.events.subscribe(lambda e, seen=offers: seen.append(e) if isinstance(e, EngineSwitchOffer) else None)

        page.on_shown()
        conv_id = page.new_conversation()
        services.chat.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=4, seed=5))
        qasync_loop.run_until_complete(page.send_text("hi").wait())
        shallow = services.chat.context_used(conv_id)
        assert 0 < shallow < 46 and services.chat.engine is not None and services.chat.engine.id == cpu
        assert offers == [] and not page.notice.action_button.isVisibleTo(page)  # CPU is still faster here

        words = " ".join(f"word{i}" for i in range(60))
        qasync_loop.run_until_complete(page.send_text(words).wait())
        depth = services.chat.context_used(conv_id)
        assert depth > 64
        # Past the crossover (46 tokens: 100 - 60t = 50 + 10t) and past 10 % (51 tokens): offered once.
        [offer] = offers
        assert offer.engine.id == vulkan and offer.depth == depth
        assert page.notice.isVisibleTo(page) and page.notice.action_button.isVisibleTo(page)
        text = page.notice.text.text()
        assert "60.0 vs 40.0 tokens/s" in text and "from about 51 tokens" in text and "reloads the model" in text
        assert offer.engine.label in page.notice.action_button.text()

        gui_plan = services.resolver.resolve(test_model, depth=depth).to_json()

        # Accepting re-plans at this depth and reloads the model on Vulkan.
        page.notice.action_button.click()
        handle = page.engine_handle
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        assert handle.error is None, handle.error
        assert services.chat.plan[0].id == vulkan and services.chat.engine is not None
        assert services.chat.engine.id == vulkan and services.chat.engine_state is ServerState.READY
        assert not page.notice.isVisibleTo(page)
        qasync_loop.run_until_complete(page.send_text("and now?").wait())
        last = services.chat.store.messages(conv_id)[-1]
        assert last.status == COMPLETE and last.stats.backend == "vulkan"
        assert len(offers) == 1  # Vulkan is the fastest here: nothing more to offer

    # The CLI gives the same choice at this depth, for the same reason, with the crossover.
    rc, plan = cli(capsys, "engines", "resolve", "--model", str(test_model), "--depth", str(depth))
    assert rc == 0 and plan["chosen"] == vulkan
    assert plan["crossovers"] == [{"depth": 46, "before": cpu, "after": vulkan}]
    assert plan["reason"] == gui_plan["reason"] and plan["order"] == gui_plan["order"]
    assert "measured fastest at 64 depth" in plan["reason"] and "crossover at about 46 tokens" in plan["reason"]


def test_a_depth_beyond_the_trained_context_is_cut_to_fit_and_said() -> None:
    from strata_gui.core.bench import BenchConfig
    from strata_gui.core.bench.workload import fit_depth

    cfg = BenchConfig(prefill_tokens=512, gen_tokens=128, reps=1, depth=8192)
    fitted, note = fit_depth(cfg, 4096)
    assert fitted.depth == 3328 and fitted.depth + 512 + 128 + 64 <= 4096
    assert "3,328 instead of 8,192" in note and "4,096" in note
    assert fit_depth(cfg, 32768) == (cfg, "")  # fits: unchanged
    assert fit_depth(cfg, None) == (cfg, "")  # unknown: the engine decides
    assert fit_depth(cfg, 600)[0].depth == 0 and "depth 0 only" in fit_depth(cfg, 600)[1]


@pytest.mark.engine
def test_the_default_depth_on_a_short_context_model_measures_instead_of_failing(
        test_engines: TestEngines, test_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _added = cli(capsys, "engines", "add-local", str(test_engines.cpu_dir))
    assert rc == 0
    # the test model was trained on 4,096 tokens; the default depth is 8,192
    rc, bench = cli(capsys, "bench", "--model", str(test_model), "--prefill", "32", "--gen", "8", "--reps", "1")
    assert rc == 0, bench
    depths = sorted(r["depth"] for r in bench["results"])
    assert depths == [0, 3840] and all(r["error"] is None for r in bench["results"]), bench["results"]
    assert any("instead of 8,192" in w for w in bench["warnings"])
