"""The core container: every long-lived service, built once by :func:`build_app_services`.

Both faces use it: ``app.py`` (the GUI) and every ``strata`` command build exactly this, so they
make the same decisions. Each decision has one owner inside: which engine runs belongs to the
:class:`~strata_gui.core.engines.resolver.EngineResolver`; what a setting is, to the
:class:`~strata_gui.core.config.settings.SettingsService`; the GPU facts, to the GPU service. The engine pool
is the only owner of running engines. This module only connects them; it holds no policy of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import SpeechError, StorageError, StrataError
from strata_gui.core.base.progress import Progress, ProgressCallback, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, joined
from strata_gui.core.bench.store import ImageRun, MetricsStore
from strata_gui.core.chat.records import COMPLETE, FORMAT_FAILED, STOPPED
from strata_gui.core.chat.service import ChatEvent, ChatService, ChatTools, MessageUpdated
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.config.services import Services
from strata_gui.core.config.settings import SettingsService
from strata_gui.core.documents import DocumentService, DocumentStore, Embedder
from strata_gui.core.engines.catalog import load_catalog
from strata_gui.core.engines.resolver import EngineResolver, Resolution
from strata_gui.core.engines.service import EngineService, create_engine_service
from strata_gui.core.gpu.model import GpuInfo, GpuReport
from strata_gui.core.gpu.service import GpuService, build_gpu_service
from strata_gui.core.models.facts import ModelFacts
from strata_gui.core.models.load_options import LoadOptionsService
from strata_gui.core.net.transfer import loopback_client, network_client, tls_context
from strata_gui.core.platform.storage import DatabaseLockedError
from strata_gui.core.platform.warm import forget as warm_forget
from strata_gui.core.pool import EnginePool, EngineStateChanged, PoolEvent, memory_group
from strata_gui.core.pool.memory import FitTarget, PoolMemory
from strata_gui.core.remote.secrets import FileSecretStore, default_protector
from strata_gui.core.remote.service import RemoteService
from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EMBEDDING, TEXT, EngineKind
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.runtime.supervisor import ServerSupervisor

if TYPE_CHECKING:  # built on first use (see AppServices): their modules load then, not at start-up
    from strata_gui.core.bench.service import DashboardService, ImageBenchmarkRunner
    from strata_gui.core.bench.updates import EngineUpdater
    from strata_gui.core.engines.limits import DecodeLimits
    from strata_gui.core.gpu.history import GpuTelemetry
    from strata_gui.core.images.service import ImageRecord, ImageService
    from strata_gui.core.models.fit import FitEstimate
    from strata_gui.core.models.library import LibraryEntry
    from strata_gui.core.models.service import ModelService
    from strata_gui.core.serve.service import ServeService
    from strata_gui.core.speech.service import TranscriptionService
    from strata_gui.core.tools.approvals import ToolPolicy
    from strata_gui.core.tools.host import McpHost
    from strata_gui.core.tools.store import McpServerStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LaterParts:
    """What the services built on first use are made from (shared with the ones built at once)."""

    environ: dict[str, str]
    secrets: FileSecretStore


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
                 pool: EnginePool, fit_target: FitTarget, load_options: LoadOptionsService, later: LaterParts,
                 documents: DocumentService, gpu_error: StrataError | None = None) -> None:
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
        self.pool = pool  # the one owner of every running engine: chat, bench, API and images borrow
        self.fit_target = fit_target
        self.load_options = load_options  # per-model load options: the chat launch, bench, the panel's fit
        self.documents = documents  # documents attached to conversations: index, retrieval, citations
        self.gpu_error = gpu_error  # why the configured GPU source could not be used
        # What the user must be told about the database file at start-up (moved aside because it
        # was damaged, or in use by another program so nothing is saved this session).
        self.storage_notices: list[str] = []
        self._warm_saved: set[int] = set()  # engines whose launch was remembered (warm start)
        self._later = later

    # -- built on first use ---------------------------------------------------------------------------
    @cached_property
    def telemetry(self) -> GpuTelemetry:
        """The one GPU sampler: the GPU page and the dashboard share it."""
        from strata_gui.core.gpu.history import GpuTelemetry

        return GpuTelemetry(self.gpu)

    @cached_property
    def limits(self) -> DecodeLimits:
        """Decode ceilings: how close a reply comes to the memory bandwidth of the device it runs on."""
        from strata_gui.core.engines.limits import DecodeLimits
        from strata_gui.core.gpu.membw import CpuBandwidth

        def fit(model: Path) -> FitEstimate | None:
            return self.load_options.fit(self.load_options.shape_now(model), self.load_options.options(model))

        return DecodeLimits(self.resolver, CpuBandwidth(self.base.paths.cache_dir / "memory_bandwidth.json"), fit)

    @cached_property
    def models(self) -> ModelService:
        """The hub, downloads and the model library."""
        from strata_gui.core.models.service import build_model_service

        settings = self.base.settings_service

        def save_model_files(files: list[Path]) -> None:
            settings.update(model_files=[str(f) for f in files])

        return build_model_service(self.base.settings, self.base.paths.data_dir, self.http, self._later.environ,
                                   memory_target=self.fit_target, secrets=self._later.secrets,
                                   save_model_files=save_model_files)

    @cached_property
    def dashboard(self) -> DashboardService:
        """Throughput history and benchmarks."""
        from strata_gui.core.bench.service import DashboardService
        from strata_gui.core.bench.workload import Benchmark

        bench = Benchmark(self.local_http, self.pool, self.metrics, launch_settings=self.load_options.server_settings)
        dashboard = DashboardService(self.metrics, bench, self.local_http, resolver=self.resolver)
        dashboard.image_benchmark = image_benchmark_runner(lambda: self.images)
        dashboard.limits = self.limits
        return dashboard

    @cached_property
    def updater(self) -> EngineUpdater:
        """Engine updates: check, trial, promote or refuse, roll back, history."""
        from strata_gui.core.bench.updates import EngineUpdater

        async def models() -> list[Path]:
            return await self.models.usable_models()

        return EngineUpdater(self.engines, self.resolver, self.pool, self.local_http, self.metrics,
                             self.base.settings_service, launch_settings=self.load_options.server_settings,
                             models=models)

    def _remember_warm_start(self, event: PoolEvent) -> None:
        """The chat's engine is ready: remember its launch, so the next start launches it early
        (see :mod:`strata_gui.core.platform.warm`); one that failed to load is forgotten."""
        if not isinstance(event, EngineStateChanged) or event.engine.started_by != "chat" \
                or event.engine.spec.kind is not TEXT:
            return
        record = self.base.paths.warm_start_file
        entry = event.engine
        if event.state is ServerState.READY and entry.serial not in self._warm_saved:
            self._warm_saved.add(entry.serial)
            entry.server.remember_launch(record, entry.estimate if memory_group(entry.spec) == "ram" else 0)
        elif event.state in (ServerState.FAILED, ServerState.CRASHED) and event.engine.loaded_at is None:
            warm_forget(record)

    def _watch_updates(self, event: PoolEvent) -> None:
        # A failed load of a promoted build rolls it back; the updater is built only when one fails.
        if isinstance(event, EngineStateChanged) and event.state is ServerState.FAILED:
            self.updater.on_pool_event(event)

    @cached_property
    def serve(self) -> ServeService:
        """"Serve to other apps": every library model on demand (OpenAI, Ollama, Anthropic), a view
        over the engine pool, shared with the chat."""
        from strata_gui.core.models.aliases import ModelAliases
        from strata_gui.core.serve.autostart import autostart_for
        from strata_gui.core.serve.library_router import LibraryRouter
        from strata_gui.core.serve.model_admin import ModelAdmin
        from strata_gui.core.serve.service import ServeService, dashboard_recorder

        router = LibraryRouter(self.pool, self.served_library,
                               lambda model, kind: self.resolver.plan_for(model, kind=kind), self.launch_settings,
                               wait_limit=lambda: float(self.settings.current.api_wait_seconds),
                               aliases=ModelAliases(self.base.paths.config_dir / "model_aliases.json"))
        admin = ModelAdmin(self.models, router, enabled=lambda: self.settings.current.serve_model_routes)
        serve = ServeService(self.settings, self._later.secrets, router,
                             autostart=autostart_for(self._later.environ), http=self.local_http, admin=admin)
        serve.requests.subscribe(dashboard_recorder(self.dashboard))  # first: later listeners see it recorded
        return serve

    async def served_library(self) -> list[LibraryEntry]:
        """The models the local API offers: the library, and the chat's model wherever it lives."""
        if self.chat.model is not None:
            await self.models.open_file(self.chat.model)
        return await self.models.scan_library()

    def launch_settings(self, model: Path, kind: EngineKind) -> ServerSettings:
        """How the local API loads ``model`` as ``kind``: as the chat does for chat and embedding
        models (their load options and projector), as Images does for the kinds that load a model
        file whole (image models with the parts found beside them; a whisper file has none, and
        the speech service asks the same), so a request for a model another page has loaded shares
        its engine (blocking: reads headers)."""
        if kind.kv_cache:
            return self.load_options.launch_settings(model)
        from strata_gui.core.images.server import image_launch_settings

        return image_launch_settings(model)

    @cached_property
    def images(self) -> ImageService:
        """Image generation (sd-server engines from the resolver's image plan) and the gallery."""
        from strata_gui.core.images.gallery import Gallery
        from strata_gui.core.images.service import ImageService

        images = ImageService(self.resolver.image_plan, self.pool, self.local_http,
                              Gallery(self.base.paths.data_dir / "images"))
        images.records.subscribe(image_recorder(self.metrics))
        return images

    @cached_property
    def speech(self) -> TranscriptionService:
        """Speech to text (whisper-server engines from the resolver's plan for the speech kind),
        launched as the local API launches speech models, so both share the loaded engine."""
        from strata_gui.core.runtime.kinds import SPEECH
        from strata_gui.core.speech.service import TranscriptionService

        return TranscriptionService(lambda model: self.resolver.plan_for(model, kind=SPEECH),
                                    lambda model: self.launch_settings(model, SPEECH), self.pool, self.local_http)

    async def speech_model(self) -> Path:
        """The whisper model transcriptions use: the one chosen in Settings, else the library's first.

        Raises:
            SpeechError: no speech model in the library.
        """
        from strata_gui.core.runtime.kinds import SPEECH

        chosen = self.settings.current.speech_model
        if chosen:
            exists: bool = await run_blocking(Path(chosen).is_file, name="strata-speech-model")
            if exists:
                return Path(chosen)
        models = await self.models.usable_models(SPEECH)
        if not models:
            raise SpeechError(QT_TRANSLATE_NOOP("Core", "No speech model is in the library."),
                              hint=QT_TRANSLATE_NOOP("Core", "Download a whisper model (ggml-*.bin) on the Models "
                                                             "page (Speech models), or add the folder holding one."))
        return models[0]

    @cached_property
    def tool_servers(self) -> McpServerStore:
        """The user's MCP tool servers (``mcp_servers.json``; secret values in the key store)."""
        from strata_gui.core.tools.store import McpServerStore

        return McpServerStore(self.base.paths.config_dir / "mcp_servers.json", self._later.secrets)

    @cached_property
    def tools(self) -> McpHost:
        """The MCP host running the saved tool servers (started one by one on first use); it follows
        the store's changes. Not warmed up: nothing starts before the chat asks for tools."""
        from strata_gui.core.tools.host import McpHost

        store = self.tool_servers
        host = McpHost(store.servers(), log_dir=self.base.paths.log_dir)
        store.events.subscribe(lambda _e: host.set_servers(store.servers()))
        return host

    @cached_property
    def tool_policy(self) -> ToolPolicy:
        """Asks before every tool call unless the user chose "Always allow" (kept with the servers)."""
        from strata_gui.core.tools.approvals import ToolPolicy

        return ToolPolicy(self.tool_servers)

    def chat_tools(self) -> ChatTools | None:
        """The tools the chat offers its models: the enabled saved servers' (None when none is on).
        Nothing is started here; listing the tools starts them."""
        if not any(s.enabled for s in self.tools.servers):
            return None
        return ChatTools(self.tools, self.tool_policy)

    LATER = ("telemetry", "models", "dashboard", "serve", "images")
    # The modules those need beyond what the chat loaded (importing them is most of their cost).
    LATER_MODULES = ("strata_gui.core.gpu.history", "strata_gui.core.models.service", "strata_gui.core.bench.service",
                     "strata_gui.core.bench.workload", "strata_gui.core.serve.service",
                     "strata_gui.core.serve.library_router",
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
        return await self.gpu.detect_async()

    async def prepare(self, on_progress: ProgressCallback = no_progress, *, reprobe: bool = False) -> Resolution:
        """Detect GPUs, probe engines without a current verdict, and order the chat's plan.

        Returns the resolution for the chat's model (what the status bar and the CLI report).
        """
        await self.detect_gpus()
        await self.resolver.prepare(on_progress, reprobe=reprobe)
        return self.resolver.resolve(self.chat.model)

    # -- chat → dashboard ---------------------------------------------------------------------------
    def _record_reply(self, event: ChatEvent) -> None:
        if not isinstance(event, MessageUpdated):
            return
        msg = event.message
        s = msg.stats
        # a stopped reply ran at a speed too: leaving it out left the dashboard "empty" after chats
        # whose tokens its footer already counted
        measured = msg.status in (COMPLETE, STOPPED, FORMAT_FAILED)
        if msg.role != "assistant" or not measured or (s.decode_tps is None and s.prefill_tps is None):
            return
        model = self.chat.model.name if self.chat.model else "unknown"
        if s.backend == "remote":
            model = s.engine or "remote"
        limit = s.extra.get("limit")
        share = limit.get("share") if isinstance(limit, dict) else None
        prefill = s.extra.get("prefill_limit")
        prefill_share = prefill.get("share") if isinstance(prefill, dict) else None
        try:
            self.dashboard.record(model=model, engine=s.engine or "unknown", backend=s.backend or "",
                                  prompt_tokens=s.prompt_n, cached_tokens=s.cache_n, output_tokens=s.predicted_n,
                                  prefill_tps=s.prefill_tps, decode_tps=s.decode_tps, ttft_s=s.ttft_s,
                                  limit_share=float(share) if isinstance(share, (int, float)) else None,
                                  prefill_share=float(prefill_share) if isinstance(prefill_share, (int, float))
                                  else None)
        except StrataError as exc:
            # A warning, not a traceback: the CLI logs to stderr, in the middle of the reply.
            log.warning("could not record request statistics: %s", exc.message)

    async def use_engine_folder(self, folder: Path, on_progress: ProgressCallback = no_progress) -> EngineSpec:
        """The chat's "Engine folder…": check the build there, then put it first for this session
        (the resolver announces the change; the chat re-plans)."""
        return await self.resolver.use_folder(folder, on_progress)

    def kill_engines_now(self) -> None:
        """Blocking kill of every engine (exit paths where the loop no longer runs)."""
        self.base.warm.close()
        self.pool.kill_now()

    async def aclose(self) -> None:
        """Stop the engines, worker threads and network client; close databases. Safe twice."""
        try:  # services never built have nothing to stop
            if self.built("telemetry"):
                await run_blocking(self.telemetry.close, name="strata-telemetry-close")
            if self.built("serve"):
                await self.serve.stop()
            if self.built("images"):
                await self.images.aclose()
            if self.built("tools"):
                await self.tools.aclose()
            await self.chat.aclose()
            self.base.warm.close()  # an early engine nobody asked for
            await self.pool.aclose()
        finally:
            try:
                if self.built("models"):
                    await self.models.aclose()
            finally:
                await self.http.aclose()
                await self.local_http.aclose()
                self.chat_store.close()
                self.documents.store.close()
                self.metrics.close()


def image_recorder(metrics: MetricsStore) -> Callable[[ImageRecord], None]:
    """Keep each finished image batch in the metrics store, beside the text requests."""

    def record(rec: ImageRecord) -> None:
        try:
            metrics.record_image(ImageRun(rec.model, rec.engine, rec.backend, rec.width, rec.height, rec.steps,
                                          rec.images, rec.seconds_per_step, rec.seconds_per_image, rec.source,
                                          rec.at))
        except Exception:  # statistics must never cost the user the images
            log.warning("could not record image statistics", exc_info=True)

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
    """The machine's RAM, read on the first fit judged. Where the C library tells it (Linux,
    macOS: the same figure as psutil's, ``MemTotal``) psutil is not loaded for it: ~8 ms before the
    first token of a start."""
    if hasattr(os, "sysconf"):
        try:
            pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError):
            pages = size = -1
        if pages > 0 and size > 0:
            return int(pages * size)
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
    # One TLS context for both clients: each would load the CA bundle again.
    tls = tls_context()
    client = http or network_client(tls)
    local = loopback_client(tls)
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
    metrics, chat_db, storage_notices = _open_database(paths.database_file, keep_conversations)
    resolver = EngineResolver(engines, gpu, settings, metrics, settings_events=base.settings_service.events)
    rpc = RpcPool(base.settings_service, resolver.installed_specs, environ=env, log_dir=paths.log_dir, job=job)
    fit_target = FitTarget(gpu, settings, resolver, rpc.extend_target, ram=total_ram)
    load_options = LoadOptionsService(paths.data_dir / "load_options.json", base.settings_service, fit_target,
                                      total_ram, facts=ModelFacts(paths.model_facts_file))

    def launch(engine: EngineSpec, model: Path, launch: ServerSettings) -> ServerSupervisor:
        log_file = paths.log_dir / f"{engine.kind.binary}-{engine.id}.log"
        return ServerSupervisor(engine, model, launch, http=local, environ=env, job=job, log_file=log_file,
                                ready_timeout=engine.kind.load_timeout, warm=base.warm)

    def idle_timeout() -> float | None:
        minutes = base.settings.engine_idle_minutes
        return minutes * 60.0 if minutes > 0 else None

    pool = EnginePool(rpc.wrap(launch), memory=PoolMemory(load_options.shape_now, fit_target, total_ram,
                                                           lambda: base.settings),
                      idle_timeout=idle_timeout, advisor=rpc.advisor(fit_target))
    rpc.pool = pool
    secrets = FileSecretStore(paths.config_dir / "secrets.json", default_protector())
    secrets_notice = secrets.check()  # a damaged key store is moved aside and told once, never raised later
    if secrets_notice:
        storage_notices.append(secrets_notice)
    chat_store = _open_chat_store(chat_db, storage_notices)
    chat = ChatService(chat_store, pool, local, base.settings_service, plans=resolver,
                       launch_settings=load_options.server_settings, model_options=load_options.options,
                       template=load_options.template)
    remote = RemoteService(paths.config_dir / "remote_engines.json", secrets, client)
    documents = DocumentService(_open_document_store(chat_db if chat_store.path != Path(":memory:") else Path(":memory:"),
                                                     storage_notices),
                                document_embedder(pool, resolver, load_options, base.settings_service))
    chat.turns.documents = documents  # their passages go with each question
    app = AppServices(base, client, local, gpu=gpu, engines=engines, resolver=resolver, metrics=metrics,
                      chat_store=chat_store, chat=chat, remote=remote, rpc=rpc, pool=pool, fit_target=fit_target,
                      load_options=load_options, later=LaterParts(env, secrets), documents=documents,
                      gpu_error=gpu_error)
    app.storage_notices = storage_notices
    for notice in storage_notices:  # shown by the CLI and the window; info here, not twice on stderr
        log.info("%s", notice)
    chat.events.subscribe(app._record_reply)
    pool.events.subscribe(app._watch_updates)
    pool.events.subscribe(app._remember_warm_start)
    chat.tools = app.chat_tools
    # A lambda: the ceilings (and their CPU measurement) are built on the first finished reply, not here.
    chat.streamer.limits = lambda engine, model, stats: app.limits.reply_limits(  # noqa: PLW0108
        engine, model, stats)
    chat.first_tokens.prefetch = lambda model: app.limits.prefetch(model)  # noqa: PLW0108
    return app


_IN_USE_HINT = QT_TRANSLATE_NOOP("Core", "Another Strata, or a program that opened the file, is holding it; the file "
                                         "is not damaged. Close the other program and restart Strata to see and keep "
                                         "your history.")


def _open_database(path: Path, keep_conversations: bool) -> tuple[MetricsStore, Path, list[str]]:
    """The statistics store and where conversations go, never failing on the database file.

    A damaged file is moved aside by the store that meets it (its notice is returned). A file
    another program holds (locked) is not waited on twice: statistics and conversations then live
    in memory for this session, with a notice, so commands that need no history (``system``, a
    one-off ``chat``) and the app's start still work.
    """
    notices: list[str] = []
    chat_db = path if keep_conversations else Path(":memory:")
    try:
        metrics = MetricsStore(path)
    except DatabaseLockedError as exc:
        notices.append(joined([exc.message, QT_TRANSLATE_NOOP("Core", "Statistics and conversations are not saved "
                                                                      "this session."), _IN_USE_HINT]))
        return MetricsStore(Path(":memory:")), Path(":memory:"), notices
    except StorageError as exc:  # a read-only or vanished data folder: reading commands still work
        notices.append(joined([exc.message, QT_TRANSLATE_NOOP("Core", "Statistics and conversations are not saved "
                                                                      "this session."), exc.hint or ""]))
        return MetricsStore(Path(":memory:")), Path(":memory:"), notices
    if metrics.notice:
        notices.append(metrics.notice)
    return metrics, chat_db, notices


def document_embedder(pool: EnginePool, resolver: EngineResolver, load_options: LoadOptionsService,
                      settings: SettingsService) -> Callable[[], Embedder | None]:
    """The embedding model Settings names, borrowed from the pool as the local API borrows one
    (the resolver's embedding plan, the chat's load options; a chat model embeds with mean pooling)."""
    from strata_gui.core.documents import PoolEmbedder

    made: dict[str, Embedder] = {}

    def current() -> Embedder | None:
        name = settings.current.embedding_model
        if not name:
            return None
        if name not in made:
            model = Path(name)

            launched: list[ServerSettings] = []

            def launch(_spec: EngineSpec) -> ServerSettings:
                # Once per model: each batch asks, and reading the header and the load options
                # again per batch of 32 passages cost as much as the batch on a loaded CPU.
                if not launched:
                    from strata_gui.core.models.gguf_meta import read_header
                    from strata_gui.core.models.library import is_embedding_model

                    chosen = load_options.server_settings(model)
                    if not is_embedding_model(read_header(model)):
                        chosen = dataclasses.replace(chosen, extra_args=(*chosen.extra_args, "--pooling", "mean"))
                    launched.append(chosen)
                return launched[0]

            made.clear()
            made[name] = PoolEmbedder(pool, lambda: resolver.plan_for(model, kind=EMBEDDING), launch, model)
        return made[name]

    return current


def _open_document_store(path: Path, notices: list[str]) -> DocumentStore:
    """The document tables in the conversations' file (in memory when conversations are)."""
    try:
        store = DocumentStore(path).open()
    except StorageError as exc:
        notices.append(joined([exc.message, QT_TRANSLATE_NOOP("Core", "Attached documents are not kept this "
                                                                      "session."), exc.hint or ""]))
        return DocumentStore(Path(":memory:")).open()
    if store.notice:
        notices.append(store.notice)
    return store


def _open_chat_store(path: Path, notices: list[str]) -> ConversationStore:
    try:
        store = ConversationStore(path).open()
    except DatabaseLockedError as exc:
        notices.append(joined([exc.message, QT_TRANSLATE_NOOP("Core", "Conversations are not saved this session."),
                               _IN_USE_HINT]))
        return ConversationStore(Path(":memory:")).open()
    except StorageError as exc:
        notices.append(joined([exc.message, QT_TRANSLATE_NOOP("Core", "Conversations are not saved this session."),
                               exc.hint or ""]))
        return ConversationStore(Path(":memory:")).open()
    if store.notice:
        notices.append(store.notice)
    return store
