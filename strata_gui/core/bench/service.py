"""The dashboards' facade: request history, engine counters, the benchmark and exports."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ServerError, StorageError, StrataError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.progress import ProgressCallback, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.bench.choice import Recommendation, recommend
from strata_gui.core.bench.prometheus import ServerCounters, parse_prometheus
from strata_gui.core.bench.stats import median
from strata_gui.core.bench.store import BenchResult, EngineChoice, ImageRun, MetricsStore, RequestRecord
from strata_gui.core.bench.workload import BenchConfig, Benchmark, fit_depth
from strata_gui.core.engines.limits import MIN_PREFILL_TOKENS, DecodeLimits
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.engine_http import EngineHttp

log = logging.getLogger(__name__)


async def trained_context(model: Path) -> int | None:
    """The context the model was trained on (``<arch>.context_length``), None when unreadable."""
    from strata_gui.core.models.gguf_meta import read_header

    try:
        return (await run_blocking(read_header, model)).context_length
    except (StrataError, OSError):
        return None


REQUEST_COLUMNS = ("at", "model", "engine", "backend", "source", "prompt_tokens", "cached_tokens",
                   "output_tokens", "prefill_tps", "decode_tps", "ttft_s", "limit_share")


@dataclass(frozen=True)
class DraftSpeedup:
    """Decode speed of one engine with and without the model's draft model."""

    engine: str
    backend: str
    decode_with: float
    decode_without: float

    @property
    def speedup(self) -> float | None:
        """``decode_with / decode_without`` (above 1: the draft helps)."""
        return self.decode_with / self.decode_without if self.decode_without > 0 else None

    def to_json(self) -> dict[str, object]:
        return {"engine": self.engine, "backend": self.backend, "decode_with_draft": self.decode_with,
                "decode_without_draft": self.decode_without, "speedup": self.speedup}


@dataclass(frozen=True)
class ImageEngineStats:
    """Image generation on one engine, from the recorded batches (the dashboards' image view).

    Attributes:
        engine, backend: Who made them.
        batches, images: How many jobs and images were recorded.
        seconds_per_image, seconds_per_step: Medians over those batches.
        last_at: When the latest one finished (epoch seconds).
    """

    engine: str
    backend: str
    batches: int
    images: int
    seconds_per_image: float | None
    seconds_per_step: float | None
    last_at: float

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


ImageBenchmarkRunner = Callable[[Path, int, ProgressCallback, Mapping[str, Any]], Awaitable[Sequence[object]]]
"""Runs "Benchmark this model" for an image model (the image service's benchmark, injected):
model, repetitions, progress, request settings (``ImageRequest`` fields; empty: its defaults)."""


class EngineSource(Protocol):
    """What the dashboards need of the engine resolver."""

    def installed_specs(self) -> list[EngineSpec]: ...

    def gpu_key(self) -> str: ...

    def model_key(self, model: Path) -> str | None: ...


class DashboardService:
    """Everything the Dashboard page and `strata bench` need, Qt-free.

    Args:
        store: Request history, benchmark results and per-model engine choices.
        benchmark: Runs the shoot-out.
        http: Client for polling the engine's ``/metrics``.
        resolver: The engine resolver: engines that work here (for "benchmark all"), the GPU results
            are saved under, and each model's identity (choices follow the model, not its file name).
        clock: Wall clock.
    """

    def __init__(
        self,
        store: MetricsStore,
        benchmark: Benchmark,
        http: httpx.AsyncClient,
        *,
        resolver: EngineSource,
        clock: Callable[[], float] = time.time,
        image_benchmark: ImageBenchmarkRunner | None = None,
    ) -> None:
        self.image_benchmark = image_benchmark
        self.store = store
        self._benchmark = benchmark
        self._http = http
        self._resolver = resolver
        self._clock = clock
        self.requests: Listeners[RequestRecord] = Listeners()
        # Decode ceilings (the share of the memory limit each run reached); None: not shown.
        self.limits: DecodeLimits | None = None

    async def benchmark_limits(self, model: Path, results: Sequence[BenchResult],
                               engines: Sequence[EngineSpec]) -> list[dict[str, Any] | None]:
        """Each run's ceilings and shares of them (None where unknown), in ``results`` order: decode
        against memory, and under ``"prefill"`` prefill against arithmetic."""
        limits = self.limits
        if limits is None:
            return [None] * len(results)
        by_id = {e.id: e for e in engines}
        return await run_blocking(lambda: [limits.benchmark_limit(model, by_id.get(r.engine), r.depth, r.prefill_tokens,
                                                                  r.gen_tokens, r.decode_median, r.prefill_median)
                                           for r in results],
                                  name="strata-bench-limits")

    # -- request history --------------------------------------------------------------------------
    def record(self, *, model: str, engine: str, backend: str, source: str = "chat",
               prompt_tokens: int | None = None, cached_tokens: int | None = None,
               output_tokens: int | None = None, prefill_tps: float | None = None,
               decode_tps: float | None = None, ttft_s: float | None = None,
               limit_share: float | None = None, prefill_share: float | None = None) -> RequestRecord:
        rec = self.store.record_request(RequestRecord(
            at=self._clock(), model=model, engine=engine, backend=backend, source=source,
            prompt_tokens=prompt_tokens, cached_tokens=cached_tokens, output_tokens=output_tokens,
            prefill_tps=prefill_tps, decode_tps=decode_tps, ttft_s=ttft_s, limit_share=limit_share,
            prefill_share=prefill_share))
        self.requests.emit(rec)
        return rec

    async def fill_prefill_shares(self, model_path: Callable[[str], Path | None]) -> int:
        """Give replies recorded before prefill shares were kept their share, where it can be
        computed: the model (by file name, ``model_path``) is still here, and this machine's
        device is the one they ran on (their engine's backend is not remote). Returns how many."""
        limits = self.limits
        if limits is None:
            return 0

        def fill() -> int:
            filled = 0
            for rec in self.store.missing_prefill_shares(MIN_PREFILL_TOKENS):
                path = model_path(rec.model)
                if path is None or rec.id is None:
                    continue
                data = limits.prefill_json(path, rec.prompt_tokens or 0, rec.cached_tokens or 0, None, rec.prefill_tps)
                share = data.get("share") if data else None
                if isinstance(share, (int, float)):
                    self.store.set_prefill_share(rec.id, float(share))
                    filled += 1
            return filled

        return await run_blocking(fill, name="strata-fill-prefill-shares")

    async def server_counters(self, base_url: str | None, headers: dict[str, str] | None = None
                              ) -> ServerCounters | None:
        """The engine's ``/metrics`` totals, or None when no engine runs or metrics are off."""
        if not base_url:
            return None
        try:
            resp = await EngineHttp(self._http, base_url).get("/metrics", timeout=3.0, headers=headers)
        except ServerError:
            return None
        if resp.status_code != 200:
            return None
        return ServerCounters.from_metrics(parse_prometheus(resp.text))

    # -- benchmark ----------------------------------------------------------------------------------
    def installed_engines(self) -> list[EngineSpec]:
        """Engines that work here, in the resolver's order (what "benchmark all" measures)."""
        return self._resolver.installed_specs()

    def gpu_label(self) -> str:
        return self._resolver.gpu_key()

    def engine_name(self, engine_id: str) -> str:
        """The name people read for an engine id ("Vulkan b7601"); the id when it does not work here now."""
        return next((s.label for s in self.installed_engines() if s.id == engine_id), engine_id)

    def _key(self, model: Path) -> str:
        key = self._resolver.model_key(model)
        if key is None:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Cannot read {model}."), model=model),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the model file still exists."))
        return key

    async def run_benchmark(self, model: Path, engines: Sequence[EngineSpec] | None = None,
                            config: BenchConfig | None = None,
                            on_progress: ProgressCallback = no_progress) -> tuple[list[BenchResult], Recommendation]:
        """Measure each engine on ``model``; the winner becomes the model's engine on this GPU
        unless the user chose one themselves."""
        chosen = list(engines) if engines is not None else self.installed_engines()
        key, gpu = self._key(model), self.gpu_label()
        config, depth_cut = fit_depth(config or BenchConfig(), await trained_context(model))
        if depth_cut:
            log.info("benchmark of %s: %s", model.name, depth_cut)
        results = await self._benchmark.run(model, chosen, gpu=gpu, config=config, on_progress=on_progress,
                                            model_key=key)
        rec = recommend(results, self.engine_name)
        if depth_cut:
            rec.warnings.insert(0, depth_cut)
        current = self.store.choice(key, gpu)
        if rec.engine and (current is None or current.source == "measured"):
            self.store.set_choice(key, gpu, rec.engine, "measured", model.name)
        return results, rec

    async def draft_speedups(self, model: Path, results: Sequence[BenchResult],
                             engines: Sequence[EngineSpec] | None = None, config: BenchConfig | None = None,
                             on_progress: ProgressCallback = no_progress) -> list[DraftSpeedup]:
        """What the model's draft model gains: ``results`` (measured with it) against the same
        workload without it (measured now, not saved), at depth 0 only. Empty when the model has no
        draft model."""
        if not self._benchmark.launch_settings(model).draft_model:
            return []
        results = [r for r in results if r.depth == 0]
        config = dataclasses.replace(config or BenchConfig(), depth=0)
        chosen = [e for e in (list(engines) if engines is not None else self.installed_engines())
                  if any(r.engine == e.id and r.ok for r in results)]
        if not chosen:
            return []
        baseline = await self._benchmark.run(model, chosen, gpu=self.gpu_label(), config=config,
                                             on_progress=on_progress, use_draft=False, save=False)
        without = {r.engine: r for r in baseline if r.ok}
        return [DraftSpeedup(r.engine, r.backend, r.decode_median or 0.0, without[r.engine].decode_median or 0.0)
                for r in results if r.ok and r.engine in without]

    def saved_results(self, model: Path) -> tuple[list[BenchResult], Recommendation]:
        key = self._resolver.model_key(model)
        results = self.store.bench_results(model_key=key, gpu=self.gpu_label()) if key else []
        return results, recommend(results, self.engine_name)

    def default_engine(self, model: Path) -> EngineChoice | None:
        """The engine measured or chosen for this model on this GPU, if any."""
        key = self._resolver.model_key(model)
        return self.store.choice(key, self.gpu_label()) if key else None

    def pin_engine(self, model: Path, engine: str) -> EngineChoice:
        """The user confirmed an engine for this model: benchmarks no longer change it."""
        choice = self.store.set_choice(self._key(model), self.gpu_label(), engine, "user", model.name)
        return choice

    def automatic_engine(self, model: Path) -> EngineChoice | None:
        """Let measurements decide again (uses the latest saved benchmark, if any)."""
        key, gpu = self._key(model), self.gpu_label()
        self.store.clear_choice(key, gpu)
        rec = recommend(self.store.bench_results(model_key=key, gpu=gpu))
        choice = self.store.set_choice(key, gpu, rec.engine, "measured", model.name) if rec.engine else None
        return choice

    # -- images ------------------------------------------------------------------------------------
    def image_stats(self, *, model: str | None = None, source: str | None = None,
                    since: float | None = None) -> list[ImageEngineStats]:
        """Seconds per image and per step for each engine, from the recorded image batches."""
        groups: dict[str, list[ImageRun]] = {}
        for run in self.store.image_runs(model=model, source=source, since=since):
            groups.setdefault(run.engine, []).append(run)
        out = []
        for engine, runs in groups.items():
            per_step = [r.seconds_per_step for r in runs if r.seconds_per_step is not None]
            out.append(ImageEngineStats(engine, runs[0].backend, len(runs), sum(r.images for r in runs),
                                        median([r.seconds_per_image for r in runs]),
                                        median(per_step) if per_step else None, max(r.at for r in runs)))
        return sorted(out, key=lambda s: (s.seconds_per_image is None, s.seconds_per_image or 0.0))

    async def run_image_benchmark(self, model: Path, reps: int = 2, on_progress: ProgressCallback = no_progress,
                                  settings: Mapping[str, Any] | None = None) -> list[ImageEngineStats]:
        """"Benchmark this model" for an image model: each image engine, then its measured figures.

        Raises:
            StorageError: no image benchmark is wired (a core built without images).
        """
        if self.image_benchmark is None:
            raise StorageError(QT_TRANSLATE_NOOP("Core", "Image benchmarks are not available in this build."))
        since = self._clock()
        await self.image_benchmark(model, reps, on_progress, dict(settings or {}))
        return self.image_stats(model=model.name, source="bench", since=since)

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
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not write {path}: {reason}"), path=path,
                                 reason=exc.strerror or exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Choose another folder or free some disk space.")) from exc
