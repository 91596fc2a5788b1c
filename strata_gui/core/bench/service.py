"""The dashboards' facade: request history, engine counters, the benchmark and exports."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from strata_gui.core.bench.choice import Recommendation, recommend
from strata_gui.core.bench.prometheus import ServerCounters, parse_prometheus
from strata_gui.core.bench.store import BenchResult, EngineChoice, MetricsStore, RequestRecord
from strata_gui.core.bench.workload import BenchConfig, Benchmark
from strata_gui.core.errors import StorageError
from strata_gui.core.events import emit
from strata_gui.core.progress import ProgressCallback, no_progress
from strata_gui.core.runtime.engine import EngineSpec

REQUEST_COLUMNS = ("at", "model", "engine", "backend", "source", "prompt_tokens", "cached_tokens",
                   "output_tokens", "prefill_tps", "decode_tps", "ttft_s")


class DashboardService:
    """Everything the Dashboard page and `strata bench` need, Qt-free.

    Args:
        store: Request history, benchmark results and per-model engine choices.
        benchmark: Runs the shoot-out.
        http: Client for polling the engine's ``/metrics``.
        engines: Returns the installed engines that work here (for "benchmark all").
        gpu_label: Returns the name results are saved under (e.g. "gfx1100 · RX 7900 XTX", or "CPU").
        tuning_active: Whether an engine launches with a validated hipBLASLt table (None: n/a).
        clock: Wall clock.
    """

    def __init__(
        self,
        store: MetricsStore,
        benchmark: Benchmark,
        http: httpx.AsyncClient,
        *,
        engines: Callable[[], list[EngineSpec]],
        gpu_label: Callable[[], str],
        tuning_active: Callable[[EngineSpec], bool | None] = lambda _e: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._benchmark = benchmark
        self._http = http
        self._engines = engines
        self._gpu_label = gpu_label
        self._tuning_active = tuning_active
        self._clock = clock
        self._listeners: list[Callable[[RequestRecord], None]] = []

    # -- request history --------------------------------------------------------------------------
    def add_listener(self, fn: Callable[[RequestRecord], None]) -> None:
        """``fn(record)`` after every recorded request (the dashboard appends a point)."""
        self._listeners.append(fn)

    def record(self, *, model: str, engine: str, backend: str, source: str = "chat",
               prompt_tokens: int | None = None, cached_tokens: int | None = None,
               output_tokens: int | None = None, prefill_tps: float | None = None,
               decode_tps: float | None = None, ttft_s: float | None = None) -> RequestRecord:
        rec = self.store.record_request(RequestRecord(
            at=self._clock(), model=model, engine=engine, backend=backend, source=source,
            prompt_tokens=prompt_tokens, cached_tokens=cached_tokens, output_tokens=output_tokens,
            prefill_tps=prefill_tps, decode_tps=decode_tps, ttft_s=ttft_s))
        emit(self._listeners, rec)
        return rec

    async def server_counters(self, base_url: str | None, headers: dict[str, str] | None = None
                              ) -> ServerCounters | None:
        """The engine's ``/metrics`` totals, or None when no engine runs or metrics are off."""
        if not base_url:
            return None
        try:
            resp = await self._http.get(base_url + "/metrics", timeout=3.0, headers=headers or {})
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            return None
        return ServerCounters.from_metrics(parse_prometheus(resp.text))

    # -- benchmark ----------------------------------------------------------------------------------
    def installed_engines(self) -> list[EngineSpec]:
        return self._engines()

    def gpu_label(self) -> str:
        return self._gpu_label()

    async def run_benchmark(self, model: Path, engines: Sequence[EngineSpec] | None = None,
                            config: BenchConfig | None = None,
                            on_progress: ProgressCallback = no_progress) -> tuple[list[BenchResult], Recommendation]:
        chosen = list(engines) if engines is not None else self._engines()
        results = await self._benchmark.run(model, chosen, gpu=self._gpu_label(), config=config,
                                            on_progress=on_progress, tuning_active=self._tuning_active)
        rec = recommend(results)
        current = self.store.choice(model.name)
        # The measurement drives the default unless the user fixed one themselves.
        if rec.engine and (current is None or current.source == "measured"):
            self.store.set_choice(model.name, rec.engine, "measured")
        return results, rec

    def saved_results(self, model: str) -> tuple[list[BenchResult], Recommendation]:
        results = self.store.bench_results(model=model, gpu=self._gpu_label())
        return results, recommend(results)

    def default_engine(self, model: str) -> EngineChoice | None:
        return self.store.choice(model)

    def pin_engine(self, model: str, engine: str) -> EngineChoice:
        """The user confirmed an engine for this model: benchmarks no longer change it."""
        return self.store.set_choice(model, engine, "user")

    def automatic_engine(self, model: str) -> EngineChoice | None:
        """Let measurements decide again (uses the latest saved benchmark, if any)."""
        self.store.clear_choice(model)
        rec = recommend(self.store.bench_results(model=model, gpu=self._gpu_label()))
        if rec.engine:
            return self.store.set_choice(model, rec.engine, "measured")
        return None

    # -- export ------------------------------------------------------------------------------------
    def requests_csv(self, records: Sequence[RequestRecord]) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(REQUEST_COLUMNS)
        for r in records:
            row = r.to_json()
            writer.writerow([row[c] if row[c] is not None else "" for c in REQUEST_COLUMNS])
        return buf.getvalue()

    def export(self, path: Path, records: Sequence[RequestRecord], benches: Sequence[BenchResult]) -> None:
        """Write ``.csv`` (requests) or ``.json`` (requests + benchmarks) to ``path``."""
        try:
            if path.suffix.lower() == ".csv":
                path.write_text(self.requests_csv(records), encoding="utf-8")
            else:
                data = {"requests": [r.to_json() for r in records], "benchmarks": [b.to_json() for b in benches]}
                path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"Could not write {path}: {exc.strerror or exc}",
                               hint="Choose another folder or free some disk space.") from exc
