"""The core container: every long-lived service, built once by :func:`build_app_services`.

Both faces use it: ``app.py`` (the GUI) and every ``strata`` command build exactly this, so they
make the same decisions. Each decision has one owner inside: which engine runs belongs to the
:class:`~strata_gui.core.engines.resolver.EngineResolver`; what a setting is, to the
:class:`~strata_gui.core.settings.SettingsService`; the GPU facts, to the GPU service. This module
only connects them; it holds no policy of its own.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.bench.service import DashboardService, ImageBenchmarkRunner
from strata_gui.core.bench.store import ImageRun, MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.blocking import run_blocking
from strata_gui.core.chat.service import ChatEvent, ChatService, MessageUpdated, default_supervisor_factory
from strata_gui.core.chat.store import COMPLETE, ConversationStore
from strata_gui.core.engines import EngineService, create_engine_service
from strata_gui.core.engines.catalog import load_catalog
from strata_gui.core.engines.resolver import EngineResolver, Resolution
from strata_gui.core.errors import StrataError
from strata_gui.core.gpu.history import GpuTelemetry
from strata_gui.core.gpu.model import GpuInfo, GpuReport
from strata_gui.core.gpu.service import GpuService, build_gpu_service
from strata_gui.core.images.gallery import Gallery
from strata_gui.core.images.params import ImageRequest
from strata_gui.core.images.service import ImageRecord, ImageService
from strata_gui.core.models.fit import MemoryTarget
from strata_gui.core.models.load_options import LoadOptionsService
from strata_gui.core.models.service import ModelService, build_model_service, memory_target_for_gpus
from strata_gui.core.progress import Progress, ProgressCallback, format_bytes, no_progress
from strata_gui.core.remote.secrets import FileSecretStore, default_protector
from strata_gui.core.remote.service import RemoteService
from strata_gui.core.resources import kernels_dir
from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.serve.service import ChatUpstream, ServeService, dashboard_recorder
from strata_gui.core.services import Services
from strata_gui.core.settings import Settings, SettingsChange, SettingsService
from strata_gui.core.transfer import TlsContext, loopback_client, network_client

log = logging.getLogger(__name__)


class FitTarget:
    """The memory a model must fit in: the GPUs models run on (the resolver's device choice; two or
    more are one split target), else Settings' fallback, plus the active RPC workers."""

    def __init__(self, gpu: GpuService, settings: Settings, rpc: RpcPool, resolver: EngineResolver) -> None:
        self._gpu, self._settings, self._rpc, self._resolver = gpu, settings, rpc, resolver

    def __call__(self) -> MemoryTarget:
        report = self._gpu.last_report
        chosen = {p.key for p in self._resolver.gpu_picks() if p.chosen}
        gpus = [g for g in report.gpus if g.key in chosen] if report is not None else []
        if not gpus and report is not None and report.primary is not None:
            gpus = [report.primary]
        return self._rpc.extend_target(memory_target_for_gpus(gpus, self._settings))


class RpcCrashPolicy:
    """A reply failed: ask the RPC pool whether a worker dropped, and say if the model still fits."""

    def __init__(self, rpc: RpcPool, fit_target: FitTarget) -> None:
        self._rpc, self._fit_target = rpc, fit_target

    async def __call__(self, outcome: Outcome | None, model: Path | None) -> str | None:
        notice = await self._rpc.after_crash(outcome, model)
        if notice and model is not None:
            notice += fit_after_drop(model, self._fit_target())
        return notice


@dataclass
class AppServices:
    """Every service, built once. ``base`` holds paths, settings and the environment."""

    base: Services
    http: httpx.AsyncClient  # the network: GitHub, the hub (honours proxy settings)
    local_http: httpx.AsyncClient  # loopback engines (never through a proxy)
    gpu: GpuService
    telemetry: GpuTelemetry  # the one GPU sampler: the GPU page and the dashboard share it
    engines: EngineService
    resolver: EngineResolver  # the only owner of "which engine runs, and why"
    models: ModelService
    metrics: MetricsStore
    dashboard: DashboardService
    chat_store: ConversationStore
    chat: ChatService
    remote: RemoteService  # remote OpenAI-compatible engines (keys in the user-only key store)
    serve: ServeService  # "Serve to other apps": the local API in front of the chat's engine
    rpc: RpcPool  # llama.cpp RPC workers for the chat's engine, and lending this machine
    fit_target: FitTarget
    load_options: LoadOptionsService  # per-model load options: the chat launch, bench, the panel's fit
    images: ImageService  # image generation (sd-server engines from the resolver's image plan) and the gallery
    gpu_error: StrataError | None = None  # why the configured GPU source could not be used
    tls: TlsContext | None = None  # the clients' TLS context, loaded on first use

    async def warm_network(self) -> None:
        """Load the CA bundle on a worker thread (it releases the GIL), so the first request made
        from the window does not stall it; start-up calls this once the window is usable."""
        if self.tls is None:
            return
        try:
            await run_blocking(self.tls.get, name="strata-tls")
        except Exception:  # the first request meets the same problem and reports it where it matters
            log.warning("could not load the TLS certificates ahead of the first request", exc_info=True)

    @property
    def settings(self) -> SettingsService:
        return self.base.settings_service

    def primary_gpu(self) -> GpuInfo | None:
        report = self.gpu.last_report
        return report.primary if report is not None else None

    async def detect_gpus(self) -> GpuReport:
        """The GPU report, detected off the loop the first time."""
        if self.gpu.last_report is not None:
            return self.gpu.last_report
        return await run_blocking(self.gpu.detect, name="strata-gpu-detect")

    async def prepare(self, on_progress: ProgressCallback = no_progress, *, reprobe: bool = False) -> Resolution:
        """Detect GPUs, probe engines without a current verdict, and order the chat's plan.

        Returns the resolution for the chat's model (what the status bar and the CLI report).
        """
        await self.detect_gpus()
        await self.resolver.prepare(on_progress, reprobe=reprobe)
        self.refresh_chat_plan()
        return self.resolver.resolve(self.chat.model)

    # -- chat → dashboard ---------------------------------------------------------------------------
    def _record_reply(self, event: ChatEvent) -> None:
        if not isinstance(event, MessageUpdated):
            return
        msg = event.message
        s = msg.stats
        if msg.role != "assistant" or msg.status != COMPLETE or (s.decode_tps is None and s.prefill_tps is None):
            return
        model = self.chat.model.name if self.chat.model else "unknown"
        if s.backend == "remote":
            model = s.engine or "remote"
        try:
            self.dashboard.record(model=model, engine=s.engine or "unknown", backend=s.backend or "",
                                  prompt_tokens=s.prompt_n, cached_tokens=s.cache_n, output_tokens=s.predicted_n,
                                  prefill_tps=s.prefill_tps, decode_tps=s.decode_tps, ttft_s=s.ttft_s)
        except StrataError:
            log.warning("could not record request statistics", exc_info=True)

    async def use_engine_folder(self, folder: Path, on_progress: ProgressCallback = no_progress) -> EngineSpec:
        """The chat's "Engine folder…": check the build there, then put it first for this session."""
        spec = await self.resolver.use_folder(folder, on_progress)
        self.refresh_chat_plan()
        return spec

    def _settings_changed(self, change: SettingsChange) -> None:
        if change.keys & {"pinned_engine", "gfx_override", "engines_dir", "devices", "ignore_driver_check"}:
            self.refresh_chat_plan()

    def refresh_chat_plan(self) -> None:
        """Re-resolve the chat's engines (after detection, installs, probes, a benchmark, a pin)."""
        self.chat.set_plan(self.resolver.plan_for(self.chat.model))

    async def aclose(self) -> None:
        """Stop the engine, worker threads and network client; close databases. Safe twice."""
        try:
            await run_blocking(self.telemetry.close, name="strata-telemetry-close")
            await self.serve.stop()
            await self.images.aclose()
            await self.chat.aclose()
            await self.rpc.aclose()
        finally:
            try:
                await self.models.aclose()
            finally:
                await self.http.aclose()
                await self.local_http.aclose()
                self.chat_store.close()
                self.metrics.close()


def model_bytes(model: Path) -> int:
    """Size on disk of a model, all shards of a split set included."""
    m = re.match(r"(.*)-(\d{5})-of-(\d{5})\.gguf$", model.name)
    files = sorted(model.parent.glob(f"{m.group(1)}-*-of-{m.group(3)}.gguf")) if m else [model]
    return sum(f.stat().st_size for f in files if f.is_file())


def fit_after_drop(model: Path, target: MemoryTarget) -> str:
    """" It no longer fits ..." when the model outgrows the GPU memory left (else "")."""
    try:
        needed = model_bytes(model)
    except OSError:
        return ""
    usable = target.usable_bytes
    if usable <= 0 or needed <= usable:
        return ""
    return (f" The model ({format_bytes(needed)}) no longer fits in the GPU memory left "
            f"({format_bytes(usable)}): part of it will run on the processor, which is slower.")


def image_recorder(metrics: MetricsStore) -> Callable[[ImageRecord], None]:
    """Keep each finished image batch in the metrics store, beside the text requests."""

    def record(rec: ImageRecord) -> None:
        metrics.record_image(ImageRun(rec.model, rec.engine, rec.backend, rec.width, rec.height, rec.steps,
                                      rec.images, rec.seconds_per_step, rec.seconds_per_image, rec.source, rec.at))

    return record


def image_benchmark_runner(images: ImageService) -> ImageBenchmarkRunner:
    """"Benchmark this model" for image models: the image service's benchmark with the dashboards'
    progress type (the bench layer cannot import the images layer)."""

    async def run(model: Path, reps: int, on_progress: ProgressCallback, settings: Mapping[str, Any]) -> list[object]:
        def show(done: int, total: int, message: str) -> None:
            on_progress(Progress(done, total, message))

        request = ImageRequest(**{"prompt": "a lighthouse on a cliff at dusk", "seed": 42, **settings})
        return list(await images.benchmark(model, request, reps=reps, on_progress=show))

    return run


def build_app_services(base: Services, http: httpx.AsyncClient | None = None, *,
                       keep_conversations: bool = True) -> AppServices:
    """Build the core from the base services (paths, settings, environment) and one HTTP client.

    Args:
        base: Paths, the settings service and the environment.
        http: The network client (tests pass one bound to loopback servers); made here if None.
        keep_conversations: False for one-off CLI prompts: conversations live in memory only.
    """
    settings, paths, env = base.settings, base.paths, dict(base.environ)
    # One TLS context for both clients, loaded on first use: each client loaded the CA bundle
    # when made (cProfile of start-up: 2 x load_verify_locations), and both transports (with the
    # httpcore import) are made on the first request, not before the window is usable.
    tls = TlsContext()
    # Big socket reads: engine and model downloads then run at the disk's pace, not httpcore's.
    client = http or network_client(tls, follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0))
    # llama-server drops idle keep-alive connections after 5 s: expire ours well before that.
    local = loopback_client(tls, trust_env=False, timeout=httpx.Timeout(30.0, read=None),
                            limits=httpx.Limits(keepalive_expiry=2.0))
    job = WindowsJob()  # one job object: every engine dies with the app on Windows
    catalog = load_catalog()
    gpu_error: StrataError | None = None
    try:
        gpu = build_gpu_service(kernels_dir(), environ=env, family_of=catalog.family_of,
                                gfx_override=settings.gfx_override or None)
    except StrataError as exc:  # a bad replay file: the app still starts, `strata gpu` reports it
        log.warning("GPU detection unavailable (%s); continuing without it", exc.message)
        gpu_error = exc
        gpu = build_gpu_service(kernels_dir(), environ={}, family_of=catalog.family_of)
    engines = create_engine_service(paths, base.settings_service, env, client, catalog=catalog,
                                    gpu_report=lambda: gpu.last_report)
    metrics = MetricsStore(paths.database_file)
    resolver = EngineResolver(engines, gpu, settings, metrics)
    rpc = RpcPool(base.settings_service, resolver.installed_specs, environ=env, log_dir=paths.log_dir, job=job)
    fit_target = FitTarget(gpu, settings, rpc, resolver)
    secrets = FileSecretStore(paths.config_dir / "secrets.json", default_protector())
    models = build_model_service(settings, paths.data_dir, client, env, memory_target=fit_target, secrets=secrets)
    chat_store = ConversationStore(paths.database_file if keep_conversations else Path(":memory:")).open()
    supervisors = default_supervisor_factory(local, env, job=job)
    load_options = LoadOptionsService(paths.data_dir / "load_options.json", base.settings_service, fit_target,
                                      models.ram_bytes)
    chat = ChatService(chat_store, rpc.wrap(supervisors), local, base.settings_service,
                       plan_provider=resolver.plan_for, depth_advisor=resolver, crash_handler=RpcCrashPolicy(rpc, fit_target),
                       launch_settings=load_options.server_settings)
    load_options.subscribe(lambda model: chat.options_changed() if model == chat.model else None)
    bench = Benchmark(local, supervisors, metrics, launch_settings=load_options.server_settings)
    dashboard = DashboardService(metrics, bench, local, resolver=resolver)
    remote = RemoteService(paths.config_dir / "remote_engines.json", secrets, client)
    serve = ServeService(base.settings_service, secrets, local, ChatUpstream(chat), dashboard_recorder(dashboard))
    images = ImageService(resolver.image_plan, local, Gallery(paths.data_dir / "images"), environ=env,
                          recorder=image_recorder(metrics), log_dir=paths.log_dir, job=job)
    dashboard.image_benchmark = image_benchmark_runner(images)
    app = AppServices(base, client, local, gpu, GpuTelemetry(gpu), engines, resolver, models, metrics, dashboard, chat_store, chat,
                      remote=remote, serve=serve, rpc=rpc, fit_target=fit_target, load_options=load_options,
                      images=images, gpu_error=gpu_error, tls=tls)
    chat.subscribe(app._record_reply)
    dashboard.add_choice_listener(app.refresh_chat_plan)
    base.settings_service.subscribe(app._settings_changed)
    app.refresh_chat_plan()
    return app
