"""The backend shoot-out: the same fixed workload through each engine, measured on this machine.

For every engine: start llama-server on the model, warm up, then two passes on the same server.

Depth 0: R repetitions of a prefill of P tokens (prompt cache off, so every repetition really
prefills) followed by a generation of exactly G tokens (end-of-sequence ignored).

Depth N (like llama-bench's ``-d N``; skipped when N is 0): before each of the R repetitions the
N filler tokens are sent alone with the prompt cache on and one token generated (timings
discarded): the first time this fills the context, afterwards it re-reads only the filler's last
token and drops the previous repetition's workload from the cache. Then the same N filler tokens
followed by the same P workload tokens as at depth 0 are sent, prompt cache on, and G tokens
generated: the server reuses the N cached tokens, so the prefill measured is the P tokens appended
after N, and the decode measured is G tokens generated after N + P. A repetition in which the
server re-read more than the workload (the filler fell out of the cache) is an error, not a result.

The server's own ``timings`` give prefill and decode tokens/s, so client overhead does not distort
the comparison. The context is sized to N + P + G plus a margin, for both passes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.base.errors import ServerError, StrataError
from strata_gui.core.base.progress import Progress, ProgressCallback, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.bench.store import BenchResult, MetricsStore
from strata_gui.core.pool import EnginePool, Lease, PoolEvent, Waiting
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.engine_http import EngineHttp
from strata_gui.core.runtime.launch import ServerSettings

log = logging.getLogger(__name__)

# Plain English text; tokenized by the engine itself so any vocabulary works.
_SEED_TEXT = (
    "Strata measures how fast each engine reads a prompt and writes an answer on this machine. "
    "The quick brown fox jumps over the lazy dog while the river runs past the old stone mill. "
)


@dataclass(frozen=True)
class BenchConfig:
    """The fixed workload. Defaults follow common practice (llama-bench pp512/tg128)."""

    prefill_tokens: int = 512
    gen_tokens: int = 128
    reps: int = 3
    warmup: bool = True
    depth: int = 0  # the long depth measured after depth 0 (0: depth 0 only); people get DEFAULT_DEPTH

    def validate(self) -> None:
        if self.prefill_tokens < 1 or self.gen_tokens < 1 or self.reps < 1:
            raise StrataError(QT_TRANSLATE_NOOP("Core", "Benchmark sizes must be at least 1."))
        if self.depth < 0:
            raise StrataError(QT_TRANSLATE_NOOP("Core", "The benchmark depth cannot be negative."),
                              hint=QT_TRANSLATE_NOOP("Core", "Use 0 to measure at depth 0 only."))

    @property
    def depths(self) -> tuple[int, ...]:
        """The depths measured, in order."""
        return (0, self.depth) if self.depth > 0 else (0,)


DEFAULT_DEPTH = 8192  # like the published long-depth runs (llama-bench -d 8192)


def fit_depth(config: BenchConfig, trained_context: int | None) -> tuple[BenchConfig, str]:
    """``config`` with its long depth cut to what the model can hold, and what was changed ("" when nothing).

    The engine refuses (HTTP 400) a prompt longer than the context, and a model's context stops at
    what it was trained on: a depth of 8,192 on a 4,096-token model failed half the benchmark.
    The depth is cut to whole 256-token steps below the trained context minus the workload.
    """
    if not config.depth or not trained_context:
        return config, ""
    room = trained_context - config.prefill_tokens - config.gen_tokens - 64
    if config.depth <= room:
        return config, ""
    depth = max(0, room // 256 * 256)
    fitted = dataclasses.replace(config, depth=depth)
    if depth == 0:
        return fitted, T(QT_TRANSLATE_NOOP("Core", "Measured at depth 0 only: {asked:,} tokens of context are more "
                                                   "than the model was trained on ({trained:,}) with the workload "
                                                   "on top."), asked=config.depth, trained=trained_context)
    return fitted, T(QT_TRANSLATE_NOOP("Core", "Measured at depth {depth:,} instead of {asked:,}: the model was trained "
                                               "on {trained:,} tokens of context, and the workload needs room on top."),
                     depth=depth, asked=config.depth, trained=trained_context)


class _Steps:
    """The benchmark's progress: steps done out of every engine's steps, reported as each ends."""

    def __init__(self, total: int, per_engine: int, on_progress: ProgressCallback) -> None:
        self.done = 0
        self.total = total
        self._per_engine = per_engine
        self._remaining = 0  # steps of the current engine not done yet (skipped when it fails)
        self._on_progress = on_progress

    def say(self, message: str) -> None:
        self._on_progress(Progress(self.done, self.total, message))

    def start_engine(self) -> None:
        self._remaining = self._per_engine

    def step(self, message: str) -> None:
        self.done += 1
        self._remaining -= 1
        self.say(message)

    def skip_engine(self, message: str) -> None:
        """The current engine failed: its steps left count as done."""
        self.done += self._remaining
        self.say(message)


class Benchmark:
    """Runs :class:`BenchConfig` through engines and saves each :class:`BenchResult`.

    The engines come from the engine pool: an engine of the model loaded with other settings (the
    chat's) is unloaded first (after the reply it is answering), so the machine holds one copy of
    the model, and the benchmark's engine is unloaded when it is done (the chat reloads its own on
    the next message).

    Args:
        http: Async HTTP client for the engine's API.
        pool: Where engines are borrowed.
        store: Where results are saved (per model, engine, GPU).
        launch_settings: The model's load options (KV-cache types, batch, threads ...): the
            benchmark measures the model as it will run; the context is sized to the workload.
    """

    USER = "benchmark"

    def __init__(self, http: httpx.AsyncClient, pool: EnginePool, store: MetricsStore,
                 launch_settings: Callable[[Path], ServerSettings] | None = None) -> None:
        self._launch_settings = launch_settings
        self._http = http
        self._pool = pool
        self._store = store

    async def run(
        self,
        model: Path,
        engines: Sequence[EngineSpec],
        *,
        gpu: str,
        config: BenchConfig | None = None,
        on_progress: ProgressCallback = no_progress,
        model_key: str = "",
        use_draft: bool = True,
        save: bool = True,
    ) -> list[BenchResult]:
        """Benchmark every engine in turn at each of ``config.depths``: one result per engine and
        depth, in that order. An engine that fails gets results with ``error`` set (from the depth it
        failed at on).

        Cancelling stops the running engine and saves nothing for the unfinished engine.

        Args:
            use_draft: False measures without the model's draft model (the speed-up's baseline).
            save: False keeps the results out of the store (a baseline is not the model's result).
        """
        cfg = config or BenchConfig()
        cfg.validate()
        if not engines:
            raise StrataError(QT_TRANSLATE_NOOP("Core", "No engine to benchmark."),
                              hint=QT_TRANSLATE_NOOP("Core", "Install an engine on the Engines page first."))
        # load, warm-up, the depth-0 repetitions, then per long depth the fill and its repetitions
        per_engine = 1 + (1 if cfg.warmup else 0) + cfg.reps + (len(cfg.depths) - 1) * (1 + cfg.reps)
        steps = _Steps(per_engine * len(engines), per_engine, on_progress)
        steps.say("Preparing benchmark")

        def waiting(event: PoolEvent) -> None:
            # The chat (or the local API) holds the model with other settings: say what we wait for.
            if isinstance(event, Waiting) and event.user == self.USER:
                steps.say(event.reason)

        results: list[BenchResult] = []
        unsubscribe = self._pool.events.subscribe(waiting)
        try:
            for engine in engines:
                per_depth = await self._bench_engine(model, engine, cfg, steps, gpu=gpu, model_key=model_key,
                                                     use_draft=use_draft)
                results.extend(self._store.save_bench(r) if save else r for r in per_depth)
        finally:
            unsubscribe()
        return results

    async def _bench_engine(self, model: Path, engine: EngineSpec, cfg: BenchConfig, steps: _Steps, *,
                            gpu: str, model_key: str, use_draft: bool) -> list[BenchResult]:
        """One engine's results, one per depth; those from the depth it failed at on carry the error."""
        name = engine.label or engine.backend.label
        per_depth = [BenchResult(model=model.name, engine=engine.id, backend=engine.backend, gpu=gpu,
                                 prefill_tokens=cfg.prefill_tokens, gen_tokens=cfg.gen_tokens, reps=cfg.reps,
                                 tuning_active=engine.tuning_active, model_key=model_key, depth=d)
                     for d in cfg.depths]
        settings = dataclasses.replace(self.launch_settings(model),
                                       ctx_size=max(cfg.depths) + cfg.prefill_tokens + cfg.gen_tokens + 64,
                                       parallel=1, jinja=False, metrics=False, port=0, api_key="")
        if not use_draft:
            settings = dataclasses.replace(settings, draft_model="")
        steps.start_engine()
        current = per_depth[0]
        lease: Lease | None = None
        try:
            steps.say(f"{name}: loading the model")
            lease = await self._pool.acquire(engine, model, settings, user=self.USER, exclusive=True)
            base = EngineHttp(self._http, lease.base_url, lease.api_key)
            steps.step(f"{name}: loaded")
            prompt = await self._prompt_tokens(base, cfg.prefill_tokens)
            if cfg.warmup:
                await self._complete(base, prompt[: min(32, len(prompt))], 8)
                steps.step(f"{name}: warmed up")
            for result in per_depth:
                current = result
                await self._measure_depth(base, name, result, prompt[: cfg.prefill_tokens], cfg, steps)
            lease.succeeded()
        except StrataError as exc:
            log.warning("benchmark of %s failed: %s", engine.id, exc)
            for result in per_depth:
                if result is current or result.depth > current.depth:
                    result.error = exc.message
                    result.prefill_tps.clear()
                    result.decode_tps.clear()
            steps.skip_engine(f"{name}: failed — {exc.message}")
        finally:
            if lease is not None:
                lease.release()
                # Unloaded once measured (unless another user shares it): the chat gets its
                # memory back and reloads its own engine at its next message.
                await self._pool.unload(lease.engine, "the benchmark is done", wait=False)
        return per_depth

    async def _measure_depth(self, base: EngineHttp, name: str, result: BenchResult, work: list[int],
                             cfg: BenchConfig, steps: _Steps) -> None:
        """The repetitions of the workload at ``result.depth``, appended to ``result``."""
        at = f" at depth {result.depth}" if result.depth else ""
        filler = await self._prompt_tokens(base, result.depth) if result.depth else []
        for rep in range(cfg.reps):
            if filler:
                # The cache now holds exactly the filler (the first time it is read in full,
                # afterwards only its last token): the workload is measured after it.
                await self._complete(base, filler, 1, cache=True)
                if rep == 0:
                    steps.step(f"{name}: context filled to depth {result.depth}")
            timings = await self._complete(base, filler + work, cfg.gen_tokens, cache=bool(filler))
            pre, dec = timings.get("prompt_per_second"), timings.get("predicted_per_second")
            if not isinstance(pre, int | float) or not isinstance(dec, int | float):
                raise ServerError(T(QT_TRANSLATE_NOOP("Core", "{engine} engine returned no "
                                                              "timings."), engine=name))
            read = timings.get("prompt_n")
            if filler and isinstance(read, int) and read > len(work) + 8:
                raise ServerError(T(QT_TRANSLATE_NOOP(
                    "Core", "{engine} re-read {read} prompt tokens instead of {expected}: the filled "
                            "context was not kept, so depth {depth} was not measured."),
                    engine=name, read=read, expected=len(work), depth=result.depth))
            result.prefill_tps.append(float(pre))
            result.decode_tps.append(float(dec))
            steps.step(f"{name}: repetition {rep + 1} of {cfg.reps}{at}")

    def launch_settings(self, model: Path) -> ServerSettings:
        """How ``model`` is launched (its load options), before the workload sizes the context."""
        return self._launch_settings(model) if self._launch_settings else ServerSettings()

    async def _prompt_tokens(self, base: EngineHttp, n: int) -> list[int]:
        data = await self._post(base, "/tokenize", {"content": _SEED_TEXT * 4})
        tokens = data.get("tokens")
        if not isinstance(tokens, list) or not tokens:
            raise ServerError(QT_TRANSLATE_NOOP("Core", "The engine could not tokenize the benchmark prompt."))
        ids = [int(t) for t in tokens if isinstance(t, int)]
        return (ids * (n // len(ids) + 1))[:n]

    async def _complete(self, base: EngineHttp, prompt: list[int], n_predict: int, *, cache: bool = False) -> dict[str, Any]:
        data = await self._post(base, "/completion", {
            "prompt": prompt, "n_predict": n_predict, "cache_prompt": cache, "ignore_eos": True,
            "temperature": 0.0, "seed": 1,
        })
        timings = data.get("timings")
        if not isinstance(timings, dict):
            raise ServerError(QT_TRANSLATE_NOOP("Core", "The engine returned no timings for the benchmark request."))
        return timings

    async def _post(self, base: EngineHttp, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = await base.post(path, json=body, timeout=httpx.Timeout(10.0, read=600.0))
        except ServerError as exc:
            cause = exc.__cause__ or exc  # the connection's error, as httpx named it
            raise ServerError(T(QT_TRANSLATE_NOOP("Core", "The engine stopped answering during the benchmark ({reason})."),
                                reason=type(cause).__name__),
                              details=exc.details) from exc
        if resp.status_code != 200:
            raise ServerError(T(QT_TRANSLATE_NOOP("Core", "The engine refused the benchmark request (HTTP {status})."),
                                status=resp.status_code),
                              details=resp.text[:2000])
        try:
            data = resp.json()
        except ValueError as exc:
            raise ServerError(QT_TRANSLATE_NOOP("Core", "The engine sent an unreadable answer."), details=resp.text[:2000]) from exc
        if not isinstance(data, dict):
            raise ServerError(QT_TRANSLATE_NOOP("Core", "The engine sent an unexpected answer."))
        return data
