"""The core container: every long-lived service, built once by :func:`build_app_services`.

Both faces use it: ``app.py`` (the GUI) and every ``strata`` command build exactly this, so they
make the same decisions. Each decision has one owner inside: which engine runs belongs to the
:class:`~strata_gui.core.engines.resolver.EngineResolver`; what a setting is, to the
:class:`~strata_gui.core.settings.SettingsService`; the GPU facts, to the GPU service. This module
only connects them; it holds no policy of its own.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from strata_gui.core.bench.store import ImageRun, MetricsStore
from strata_gui.core.blocking import run_blocking
from strata_gui.core.chat.service import ChatEvent, ChatService, MessageUpdated, default_supervisor_factory
from strata_gui.core.chat.store import COMPLETE, ConversationStore
from strata_gui.core.engines.catalog import load_catalog
from strata_gui.core.engines.resolver import EngineResolver, Resolution
from strata_gui.core.engines.service import EngineService, create_engine_service
from strata_gui.core.errors import StrataError
from strata_gui.core.gpu.model import GpuInfo, GpuReport
from strata_gui.core.gpu.service import GpuService, build_gpu_service
from strata_gui.core.models.fit import MemoryTarget
from strata_gui.core.models.load_options import LoadOptionsService
from strata_gui.core.models.targets import memory_target_for_gpus
from strata_gui.core.progress import Progress, ProgressCallback, format_bytes, no_progress
from strata_gui.core.remote.secrets import FileSecretStore, default_protector
from strata_gui.core.remote.service import RemoteService
from strata_gui.core.resources import kernels_dir
from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.runtime.supervisor import SupervisorFactory
from strata_gui.core.services import Services
from strata_gui.core.settings import Settings, SettingsChange, SettingsService
from strata_gui.core.transfer import TlsContext, loopback_client, network_client

if TYPE_CHECKING:  # built on first use (see AppServices): their modules load then, not at start-up
    from strata_gui.core.bench.service import DashboardService, ImageBenchmarkRunner
    from strata_gui.core.gpu.history import GpuTelemetry
    from strata_gui.core.images.service import ImageRecord, ImageService
    from strata_gui.core.models.service import ModelService
    from strata_gui.core.serve.service import ServeService

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


@dataclass(frozen=True)
class LaterParts:
    """What the services built on first use are made from (shared with the ones built at once)."""

    environ: dict[str, str]
    job: WindowsJob  # one job object: every engine dies with the app on Windows
    secrets: FileSecretStore
    supervisors: SupervisorFactory


class AppServices:
    """Every service, built once. ``base`` holds paths, settings and the environment.

    What the chat needs is built by :func:`build_app_services`; the services only other pages and
    commands use (models, telemetry, dashboard, serve, images) are built, and their modules
    imported, the first time they are read: the window is usable before they exist, and the GUI
    warms them in the background right after (:meth:`warm_up`). Callers read them as plain
    attributes either way.
    """

    def __init__(self, base: Services, http: httpx.AsyncClient, local_http: httpx.AsyncClient, *,
                 gpu: GpuService, engines: EngineService, resolver: EngineResolver, metrics: MetricsStore,
                 chat_store: ConversationStore, chat: ChatService, remote: RemoteService, rpc: RpcPool,
                 fit_target: FitTarget, load_options: LoadOptionsService, later: LaterParts,
                 gpu_error: StrataError | None = None, tls: TlsContext | None = None) -> None:
        self.base = base
        self.http = http  # the network: GitHub, the hub (honours proxy settings)
        self.local_http = local_http  # loopback engines (never through a proxy)
        self.gpu = gpu
        self.engines = engines
        self.resolver = resolver  # the only owner of "which engine runs, and why"
        self.metrics = metrics
        self.chat_store = chat_store
        self.chat = chat
        self.remote = remote  # remote OpenAI-compatible engines (keys in the user-only key store)
        self.rpc = rpc  # llama.cpp RPC workers for the chat's engine, and lending this machine
        self.fit_target = fit_target
        self.load_options = load_options  # per-model load options: the chat launch, bench, the panel's fit
        self.gpu_error = gpu_error  # why the configured GPU source could not be used
        self.tls = tls  # the clients' TLS context, loaded on first use
        self._later = later

    # -- built on first use ---------------------------------------------------------------------------
    @cached_property
    def telemetry(self) -> GpuTelemetry:
        """The one GPU sampler: the GPU page and the dashboard share it."""
        from strata_gui.core.gpu.history import GpuTelemetry

        return GpuTelemetry(self.gpu)

    @cached_property
    def models(self) -> ModelService:
        """The hub, downloads and the model library."""
        from strata_gui.core.models.service import build_model_service

        return build_model_service(self.base.settings, self.base.paths.data_dir, self.http, self._later.environ,
                                   memory_target=self.fit_target, secrets=self._later.secrets)

    @cached_property
    def dashboard(self) -> DashboardService:
        """Throughput history and benchmarks."""
        from strata_gui.core.bench.service import DashboardService
        from strata_gui.core.bench.workload import Benchmark

        bench = Benchmark(self.local_http, self._later.supervisors, self.metrics,
                          launch_settings=self.load_options.server_settings)
        dashboard = DashboardService(self.metrics, bench, self.local_http, resolver=self.resolver)
        dashboard.image_benchmark = image_benchmark_runner(lambda: self.images)
        dashboard.add_choice_listener(self.refresh_chat_plan)
        return dashboard

    @cached_property
    def serve(self) -> ServeService:
        """"Serve to other apps": the local API in front of the chat's engine (until the engine pool's router)."""
        from strata_gui.core.serve.chat_router import ChatRouter
        from strata_gui.core.serve.service import ServeService, dashboard_recorder

        return ServeService(self.settings, self._later.secrets, ChatRouter(self.chat),
                            dashboard_recorder(self.dashboard))

    @cached_property
    def images(self) -> ImageService:
        """Image generation (sd-server engines from the resolver's image plan) and the gallery."""
        from strata_gui.core.images.gallery import Gallery
        from strata_gui.core.images.service import ImageService

        paths = self.base.paths
        return ImageService(self.resolver.image_plan, self.local_http, Gallery(paths.data_dir / "images"),
                            environ=self._later.environ, recorder=image_recorder(self.metrics),
                            log_dir=paths.log_dir, job=self._later.job)

    LATER = ("telemetry", "models", "dashboard", "serve", "images")
    # The modules those need beyond what the chat loaded (importing them is most of their cost).
    LATER_MODULES = ("strata_gui.core.gpu.history", "strata_gui.core.models.service", "strata_gui.core.bench.service",
                     "strata_gui.core.bench.workload", "strata_gui.core.serve.service",
                     "strata_gui.core.serve.chat_router",
                     "strata_gui.core.images.gallery", "strata_gui.core.images.service")

    def built(self, name: str) -> bool:
        """Whether the service built on first use called ``name`` exists yet (nothing is built)."""
        return name in self.__dict__

    async def warm_up(self) -> None:
        """Build the services not built yet without stalling the event loop: their modules are
        imported on a worker thread (the loop keeps the GIL's turns), then each is built on the
        loop, one per turn. Start-up calls this once the window is usable, so opening a page or the
        first reply (which records to the dashboard) does not pay for it."""

        def import_later() -> None:
            for module in self.LATER_MODULES:
                importlib.import_module(module)

        await run_blocking(import_later, name="strata-warm-up")
        for name in self.LATER:
            getattr(self, name)
            await asyncio.sleep(0)

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
        try:  # services never built have nothing to stop
            if self.built("telemetry"):
                await run_blocking(self.telemetry.close, name="strata-telemetry-close")
            if self.built("serve"):
                await self.serve.stop()
            if self.built("images"):
                await self.images.aclose()
            await self.chat.aclose()
            await self.rpc.aclose()
        finally:
            try:
                if self.built("models"):
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


def image_benchmark_runner(images: Callable[[], ImageService]) -> ImageBenchmarkRunner:
    """"Benchmark this model" for image models: the image service's benchmark with the dashboards'
    progress type (the bench layer cannot import the images layer)."""

    async def run(model: Path, reps: int, on_progress: ProgressCallback, settings: Mapping[str, Any]) -> list[object]:
        def show(done: int, total: int, message: str) -> None:
            on_progress(Progress(done, total, message))

        from strata_gui.core.images.params import ImageRequest

        request = ImageRequest(**{"prompt": "a lighthouse on a cliff at dusk", "seed": 42, **settings})
        return list(await images().benchmark(model, request, reps=reps, on_progress=show))

    return run


def total_ram() -> int:
    """The machine's RAM (psutil loads on the first fit judged, not at start-up)."""
    import psutil

    return int(psutil.virtual_memory().total)


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
    chat_store = ConversationStore(paths.database_file if keep_conversations else Path(":memory:")).open()
    supervisors = default_supervisor_factory(local, env, job=job)
    load_options = LoadOptionsService(paths.data_dir / "load_options.json", base.settings_service, fit_target,
                                      total_ram)
    chat = ChatService(chat_store, rpc.wrap(supervisors), local, base.settings_service,
                       plan_provider=resolver.plan_for, depth_advisor=resolver, crash_handler=RpcCrashPolicy(rpc, fit_target),
                       launch_settings=load_options.server_settings)
    load_options.subscribe(lambda model: chat.options_changed() if model == chat.model else None)
    remote = RemoteService(paths.config_dir / "remote_engines.json", secrets, client)
    app = AppServices(base, client, local, gpu=gpu, engines=engines, resolver=resolver, metrics=metrics,
                      chat_store=chat_store, chat=chat, remote=remote, rpc=rpc, fit_target=fit_target,
                      load_options=load_options, later=LaterParts(env, job, secrets, supervisors),
                      gpu_error=gpu_error, tls=tls)
    chat.subscribe(app._record_reply)
    base.settings_service.subscribe(app._settings_changed)
    app.refresh_chat_plan()
    return app
