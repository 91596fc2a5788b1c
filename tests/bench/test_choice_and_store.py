"""Engine choice rules, tuning warnings, history aggregates and Prometheus parsing."""

from __future__ import annotations

from pathlib import Path

from strata_gui.core.bench.choice import recommend
from strata_gui.core.bench.prometheus import ServerCounters, parse_prometheus
from strata_gui.core.bench.store import BenchResult, MetricsStore, RequestRecord


def _res(engine: str, backend: str, pre: list[float], dec: list[float], tuning: bool | None = None) -> BenchResult:
    return BenchResult(model="m.gguf", engine=engine, backend=backend, gpu="gfx1100", prefill_tokens=512,
                       gen_tokens=128, reps=len(pre), prefill_tps=pre, decode_tps=dec, tuning_active=tuning)


def test_decode_decides_and_prefill_breaks_near_ties() -> None:
    rocm = _res("rocm", "rocm", [2500, 2600, 2550], [80, 81, 79])
    vk = _res("vulkan", "vulkan", [1200, 1250, 1190], [95, 96, 94])
    rec = recommend([rocm, vk])
    assert rec.engine == "vulkan" and "1.19×" in rec.reason
    # Within 5 % on decode: the faster prefill wins.
    vk_close = _res("vulkan", "vulkan", [1200, 1250, 1190], [82, 82, 82])
    rec = recommend([vk_close, rocm])
    assert rec.engine == "rocm" and "prefills faster" in rec.reason


def test_untuned_rocm_prefill_far_below_vulkan_is_called_out() -> None:
    rocm = _res("rocm-b1000", "rocm", [400, 410, 405], [90, 90, 90], tuning=False)
    vk = _res("vulkan", "vulkan", [1500, 1490, 1510], [85, 85, 85])
    rec = recommend([rocm, vk])
    assert any("untuned path" in w and "tuning table" in w for w in rec.warnings)
    rocm_tuned = _res("rocm-b1000", "rocm", [400, 410, 405], [90, 90, 90], tuning=True)
    assert not any("untuned" in w for w in recommend([rocm_tuned, vk]).warnings)


def test_no_working_engine_gives_no_recommendation() -> None:
    failed = _res("rocm", "rocm", [], [])
    failed.error = "exited with code 1"
    rec = recommend([failed])
    assert rec.engine is None and "exited with code 1" in rec.warnings[0]


def test_request_history_persists_filters_and_aggregates(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    store = MetricsStore(db, clock=lambda: 1000.0)
    for i in range(10):
        store.record_request(RequestRecord(at=1000.0 + i, model="a.gguf" if i % 2 else "b.gguf",
                                           engine="cpu", prefill_tps=100.0 * (i + 1), decode_tps=10.0 * (i + 1),
                                           ttft_s=0.01 * (i + 1), prompt_tokens=20, output_tokens=30))
    store.close()
    store = MetricsStore(db)
    try:
        recs = store.requests(model="a.gguf")
        assert [r.at for r in recs] == [1001.0, 1003.0, 1005.0, 1007.0, 1009.0]
        agg = store.aggregate(recs)
        assert agg.count == 5
        assert agg.decode_median == 60.0 and agg.decode_p90 == 100.0
        assert store.distinct("model") == ["a.gguf", "b.gguf"]
        assert len(store.requests(since=1005.0)) == 5
    finally:
        store.close()


def test_prometheus_counters() -> None:
    text = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1024
llamacpp:prompt_seconds_total 0.5
llamacpp:tokens_predicted_total 300
llamacpp:tokens_predicted_seconds_total 2
llamacpp:requests_processing 1
llamacpp:requests_deferred{slot="0"} 0
garbage line
"""
    c = ServerCounters.from_metrics(parse_prometheus(text))
    assert c.prefill_tps == 2048 and c.decode_tps == 150 and c.requests_processing == 1
    assert c.requests_deferred == 0


def test_counters_of_one_token_replies_give_no_decode_speed() -> None:
    """llama-server counts a reply's first token (made by the prefill) with 0.001 ms of decoding:
    after only one-token replies (stopped at once) the dashboard read "1 generated at 1,000,000.0 tok/s"."""
    text = "llamacpp:tokens_predicted_total 1\nllamacpp:tokens_predicted_seconds_total 1e-06\n" \
           "llamacpp:prompt_tokens_total 29\nllamacpp:prompt_seconds_total 0.005281\n"
    c = ServerCounters.from_metrics(parse_prometheus(text))
    assert c.decode_tps is None and c.prefill_tps is not None and round(c.prefill_tps) == 5491


def test_results_saved_before_depths_existed_read_as_depth_zero(tmp_path: Path) -> None:
    import json
    import sqlite3

    from strata_gui.core.bench import store as store_module

    db = tmp_path / "old.sqlite3"
    # A database as the previous release left it: metrics schema 2, one benchmark row.
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for version in (1, 2):
        con.executescript(store_module._MIGRATIONS[version])
    con.execute("INSERT INTO schema_version VALUES ('metrics', 2)")
    con.execute("INSERT INTO bench_results (at, model, engine, backend, gpu, prefill_tokens, gen_tokens, reps,"
                " prefill_tps_json, decode_tps_json, model_key) VALUES (1, 'm.gguf', 'vk', 'vulkan', 'gfx1151',"
                " 512, 128, 1, ?, ?, 'sha:1')", (json.dumps([900.0]), json.dumps([40.0])))
    con.commit()
    con.close()
    store = MetricsStore(db)
    try:
        [old] = store.bench_results(model_key="sha:1")
        assert old.depth == 0 and old.decode_median == 40.0
        store.save_bench(BenchResult("m.gguf", "vk", "vulkan", "gfx1151", 512, 128, 1, [300.0], [30.0],
                                     model_key="sha:1", depth=8192))
        store.save_bench(BenchResult("m.gguf", "rocm", "rocm", "gfx1151", 512, 128, 1, [800.0], [35.0],
                                     model_key="sha:1"))
        store.save_bench(BenchResult("m.gguf", "rocm", "rocm", "gfx1151", 512, 128, 1, [500.0], [38.0],
                                     model_key="sha:1", depth=8192))
        # The latest result per engine *and depth*: the old depth-0 row still counts.
        assert sorted((r.engine, r.depth) for r in store.bench_results(model_key="sha:1")) == [
            ("rocm", 0), ("rocm", 8192), ("vk", 0), ("vk", 8192)]
        profile = store.depth_profile("sha:1", "gfx1151")
        assert [e for e, _ in profile.ranking_at(0)] == ["vk", "rocm"]
        assert [e for e, _ in profile.ranking_at(8192)] == ["rocm", "vk"]
        rec = recommend(store.bench_results(model_key="sha:1"))
        assert rec.engine == "vk"  # the default is chosen at depth 0
        assert "At 8,192 depth rocm decodes fastest (38.0 vs 30.0 tokens/s for vk)" in rec.depth_note
        assert "Crossover at about" in rec.depth_note
    finally:
        store.close()


def test_requests_saved_before_the_share_column_read_as_unknown(tmp_path: Path) -> None:
    import sqlite3

    from strata_gui.core.bench import store as store_module

    db = tmp_path / "old.sqlite3"
    # A database as the previous release left it: metrics schema 4, one request.
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    for version in (1, 2, 3, 4):
        con.executescript(store_module._MIGRATIONS[version])
    con.execute("INSERT INTO schema_version VALUES ('metrics', 4)")
    con.execute("INSERT INTO metrics_requests (at, model, engine, decode_tps) VALUES (1, 'm.gguf', 'cpu', 42.0)")
    con.commit()
    con.close()
    store = MetricsStore(db)
    try:
        store.record_request(RequestRecord(at=2, model="m.gguf", engine="cpu", decode_tps=50.0, limit_share=0.7))
        old, new = store.requests()
        assert (old.decode_tps, old.limit_share) == (42.0, None)
        assert (new.decode_tps, new.limit_share) == (50.0, 0.7)
        assert store.aggregate([old, new]).share_median == 0.7
    finally:
        store.close()
