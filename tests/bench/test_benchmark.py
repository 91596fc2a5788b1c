"""The backend shoot-out on real engines: CPU build vs Vulkan build on Mesa llvmpipe."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import StrataError
from strata_gui.core.base.progress import Progress
from strata_gui.core.bench.choice import recommend
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.workload import BenchConfig, Benchmark
from strata_gui.core.pool import EnginePool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.supervisor import ServerSettings, ServerSupervisor
from tests.support.engines import TestEngines

SMALL = BenchConfig(prefill_tokens=64, gen_tokens=12, reps=2)


def _engines(e: TestEngines) -> tuple[EngineSpec, EngineSpec]:
    vk_env = {k: v for k, v in e.vulkan_env().items() if k in ("LD_LIBRARY_PATH", "GGML_VK_VISIBLE_DEVICES")}
    cpu = EngineSpec("cpu-test", "CPU", "cpu", e.cpu_server)
    vulkan = EngineSpec("vulkan-test", "Vulkan", "vulkan", e.vulkan_server, vk_env)
    return cpu, vulkan


async def _run(db: Path, engines: list[EngineSpec], model: Path, progress: list[Progress],
               config: BenchConfig = SMALL):
    async with httpx.AsyncClient() as http:
        store = MetricsStore(db)

        def factory(engine: EngineSpec, m: Path, settings: ServerSettings) -> ServerSupervisor:
            return ServerSupervisor(engine, m, settings, http=http, ready_timeout=120)

        try:
            return await Benchmark(http, EnginePool(factory), store).run(model, engines, gpu="llvmpipe", config=config,
                                                              on_progress=progress.append)
        finally:
            store.close()


@pytest.mark.engine
@pytest.mark.vulkan
def test_shootout_ranks_engines_by_measured_speed_and_drives_the_default(
    test_engines: TestEngines, test_model: Path, tmp_path: Path
) -> None:
    db = tmp_path / "strata.sqlite3"
    cpu, vulkan = _engines(test_engines)
    progress: list[Progress] = []
    results = asyncio.run(_run(db, [vulkan, cpu], test_model, progress))
    assert [r.engine for r in results] == ["vulkan-test", "cpu-test"]
    for r in results:
        assert r.ok, r.error
        assert len(r.prefill_tps) == 2 and len(r.decode_tps) == 2
    # Progress went from 0 to all steps, in order.
    assert progress[-1].done == progress[-1].total == 2 * (1 + 1 + 2)
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    rec = recommend(results)
    measured = {r.engine: r.decode_median for r in results}
    assert rec.engine == max(measured, key=lambda k: measured[k] or 0)  # consistent with the measurements
    assert [r.engine for r in rec.ranking] == sorted(measured, key=lambda k: -(measured[k] or 0))
    # Results persist across a restart, and the measured choice is stored as the model's default.
    store = MetricsStore(db)
    try:
        saved = store.bench_results(model=test_model.name, gpu="llvmpipe")
        assert {r.engine for r in saved} == {"vulkan-test", "cpu-test"}
        assert {r.engine: r.decode_tps for r in saved} == {r.engine: r.decode_tps for r in results}
        store.set_choice("file:test", "llvmpipe", rec.engine or "", "measured", test_model.name)
    finally:
        store.close()
    store = MetricsStore(db)
    try:
        choice = store.choice("file:test", "llvmpipe")
        assert choice is not None and choice.engine == rec.engine and choice.source == "measured"
    finally:
        store.close()


@pytest.mark.engine
def test_an_engine_that_cannot_start_is_reported_and_the_rest_still_measured(
    test_engines: TestEngines, test_model: Path, tmp_path: Path
) -> None:
    # A "ROCm" build whose shared libraries are missing: the Vulkan binary copied alone.
    broken_dir = tmp_path / "rocm-broken"
    broken_dir.mkdir()
    shutil.copy2(test_engines.vulkan_server, broken_dir / "llama-server")
    broken = EngineSpec("rocm-broken", "ROCm", "rocm", broken_dir / "llama-server")
    cpu, _ = _engines(test_engines)
    results = asyncio.run(_run(tmp_path / "db.sqlite3", [broken, cpu], test_model, []))
    assert results[0].error and not results[0].ok
    assert results[1].ok
    rec = recommend(results)
    assert rec.engine == "cpu-test"
    assert any("rocm-broken could not be measured" in w for w in rec.warnings)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(StrataError):
        BenchConfig(prefill_tokens=0).validate()


@pytest.mark.engine
def test_cancel_stops_the_engine_and_saves_nothing_unfinished(
    test_engines: TestEngines, test_model: Path, tmp_path: Path
) -> None:
    cpu, _ = _engines(test_engines)
    db = tmp_path / "db.sqlite3"

    async def main() -> None:
        progress: list[Progress] = []
        task = asyncio.ensure_future(_run(db, [cpu], test_model, progress,
                                          BenchConfig(prefill_tokens=64, gen_tokens=2000, reps=50)))
        while not any("repetition" in p.message for p in progress):
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    store = MetricsStore(db)
    try:
        assert store.bench_results() == []
    finally:
        store.close()


@pytest.mark.engine
def test_cli_bench_prints_json_and_saves(test_engines: TestEngines, test_model: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from strata_gui.cli import main

    rc = main(["bench", "--model", str(test_model), "--engines", "none", "--engine", str(test_engines.cpu_dir),
               "--prefill", "32", "--gen", "8", "--reps", "2", "--depth", "0", "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recommended"] == f"local-cpu-{test_engines.cpu_dir.name}"  # a one-off local engine
    [res] = data["results"]
    assert res["prefill_tokens"] == 32 and len(res["decode_tps"]) == 2 and res["decode_median"] > 0
    # Saved in the user's database: a second CLI run on a missing model fails clearly instead.
    assert main(["bench", "--model", str(test_model.with_name("nope.gguf"))]) == 1
    assert "Model file not found" in capsys.readouterr().err
