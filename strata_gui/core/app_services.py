"""The full set of long-lived services for the GUI (and heavier CLI commands), wired together.

:func:`build_app_services` is the one place that decides how the GPU detector, the engine
fetcher, the model browser, the chat session and the dashboards are connected:

- the GPU report gives the engines their plan targets and the model browser its memory target;
- installed engines become the chat's fallback plan (ROCm → Vulkan → CPU, pinned first), with
  each engine's launch environment (tuning table, library path) from the engines package;
- a benchmark's measured (or the user's) choice for a model moves that engine to the front;
- every finished chat reply is recorded for the throughput dashboard.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import httpx

from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.chat.service import ChatEvent, ChatService, MessageUpdated, default_supervisor_factory
from strata_gui.core.chat.store import COMPLETE, ConversationStore
from strata_gui.core.engines import EngineService, GpuTarget, InstalledEngine, create_engine_service
from strata_gui.core.engines.catalog import load_catalog
from strata_gui.core.errors import StrataError
from strata_gui.core.gpu.model import GpuInfo
from strata_gui.core.gpu.service import GpuService, build_gpu_service
from strata_gui.core.models.fit import MemoryTarget
from strata_gui.core.models.service import ModelService, build_model_service, memory_target_for
from strata_gui.core.remote.secrets import FileSecretStore, default_protector
from strata_gui.core.remote.service import RemoteService
from strata_gui.core.resources import kernels_dir
from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.serve.service import ChatUpstream, ServeService, dashboard_recorder
from strata_gui.core.services import Services

log = logging.getLogger(__name__)


@dataclass
class AppServices:
    """Every service, built once. ``base`` holds paths and settings."""

    base: Services
    http: httpx.AsyncClient  # the network: GitHub, the hub (honours proxy settings)
    local_http: httpx.AsyncClient  # loopback engines (never through a proxy)
    gpu: GpuService
    engines: EngineService
    models: ModelService
    metrics: MetricsStore
    dashboard: DashboardService
    chat_store: ConversationStore
    chat: ChatService
    remote: RemoteService  # remote OpenAI-compatible engines (keys in the user-only key store)
    serve: ServeService  # "Serve to other apps": the local API in front of the chat's engine
    rpc: RpcPool  # llama.cpp RPC workers for the chat's engine, and lending this machine

    # -- GPU → engines --------------------------------------------------------------------------
    def primary_gpu(self) -> GpuInfo | None:
        report = self.gpu.last_report
        return report.primary if report is not None else None

    def gpu_targets(self) -> list[GpuTarget]:
        """AMD GPUs as the engine planner sees them (detected, else the gfx override setting)."""
        report = self.gpu.last_report
        if report is not None and report.amd_gpus:
            return [GpuTarget(g.name, g.device_id, g.gfx_target) for g in report.amd_gpus]
        return self.engines.gpus_from_settings()

    def gpu_label(self) -> str:
        report = self.gpu.last_report
        return report.label() if report is not None else (self.base.settings.gfx_override or "CPU")

    # -- engines → chat plan ----------------------------------------------------------------------
    def _spec(self, engine: InstalledEngine) -> EngineSpec:
        targets = self.gpu_targets()
        env, notices = self.engines.launch_env(engine, targets[0] if targets else None)
        for n in notices:
            log.info("engine %s: %s", engine.id, n)
        label = {"rocm": "ROCm", "vulkan": "Vulkan", "cpu": "CPU"}.get(engine.backend, engine.backend)
        backend = engine.backend if engine.backend in ("rocm", "vulkan", "cpu") else "local"
        # Only variables that differ from the app's environment travel with the spec.
        base = self.base.environ
        delta = {k: v for k, v in env.items() if base.get(k) != v}
        return EngineSpec(engine.id, f"{label} {engine.tag}".strip(), backend, engine.server_path,  # type: ignore[arg-type]
                          delta)

    def engine_specs(self) -> list[EngineSpec]:
        """Installed engines that did not fail their last probe, best first (pinned, then plan order)."""
        engines = self.engines.installed()
        order = {b: i for i, b in enumerate(self.engines.catalog.backend_order)}
        pinned = self.base.settings.pinned_engine
        usable = []
        for e in engines:
            probe = self.engines.last_probe(e.id)
            if probe is not None and not probe.usable:
                continue
            usable.append(e)
        usable.sort(key=lambda e: (e.id != pinned, order.get(e.backend, 9), -e.installed_at))
        return [self._spec(e) for e in usable]

    def plan_for_model(self, model: Path | None) -> list[EngineSpec]:
        """The chat plan for ``model``: a measured or user-chosen engine for it goes first."""
        specs = self.engine_specs()
        if model is None:
            return specs
        choice = self.dashboard.default_engine(model.name)
        if choice is not None:
            specs.sort(key=lambda s: s.id != choice.engine)
        return specs

    def tuning_active(self, spec: EngineSpec) -> bool | None:
        if spec.backend != "rocm":
            return None
        return "HIPBLASLT_TUNING_OVERRIDE_FILE" in spec.env

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

    def refresh_chat_plan(self) -> None:
        self.chat.set_plan(self.plan_for_model(self.chat.model))

    async def aclose(self) -> None:
        """Stop the engine, worker threads and network client; close databases. Safe twice."""
        try:
            await self.serve.stop()
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
    return (f" The model ({needed / 1e9:.1f} GB) no longer fits in the GPU memory left "
            f"({usable / 1e9:.1f} GB): part of it will run on the processor, which is slower.")


def build_app_services(base: Services, http: httpx.AsyncClient | None = None) -> AppServices:
    """Wire every service from the base services (paths, settings, environment)."""
    settings, paths, env = base.settings, base.paths, dict(base.environ)
    client = http or httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0))
    # llama-server drops idle keep-alive connections after 5 s: expire ours well before that.
    local = httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None),
                              limits=httpx.Limits(keepalive_expiry=2.0))
    job = WindowsJob()  # one job object: every engine dies with the app on Windows
    catalog = load_catalog()
    try:
        gpu = build_gpu_service(kernels_dir(), environ=env, family_of=catalog.family_of,
                                gfx_override=settings.gfx_override or None)
    except StrataError:
        log.exception("GPU detection unavailable; continuing without it")
        gpu = build_gpu_service(kernels_dir(), environ={}, family_of=catalog.family_of)
    engines = create_engine_service(paths, base.settings_service, env, client, catalog=catalog)
    holder: dict[str, AppServices] = {}

    def memory_target() -> MemoryTarget:
        app = holder.get("app")
        target = memory_target_for(app.primary_gpu() if app else None, settings)
        return app.rpc.extend_target(target) if app else target

    secrets = FileSecretStore(paths.config_dir / "secrets.json", default_protector())
    models = build_model_service(settings, paths.data_dir, client, env, memory_target=memory_target, secrets=secrets)
    metrics = MetricsStore(paths.database_file)
    chat_store = ConversationStore(paths.database_file).open()
    supervisors = default_supervisor_factory(local, env, job=job)
    rpc = RpcPool(base.settings_service, lambda: holder["app"].engine_specs(),  # noqa: PLW0108
                  environ=env, log_dir=paths.log_dir, job=job)
    async def after_crash(outcome: Outcome | None) -> str | None:
        # A dropped RPC worker: reload without it, and say whether the model still fits.
        notice = await rpc.after_crash(outcome)
        app = holder.get("app")
        if notice and app is not None and app.chat.model is not None:
            notice += fit_after_drop(app.chat.model, memory_target())
        return notice

    chat = ChatService(chat_store, rpc.wrap(supervisors), local, base.settings_service,
                       plan_provider=lambda model: holder["app"].plan_for_model(model),  # noqa: PLW0108
                       crash_handler=after_crash)
    dashboard = DashboardService(
        metrics, Benchmark(local, supervisors, metrics), local,
        # Late-bound: the AppServices these read from is created just below.
        engines=lambda: holder["app"].engine_specs(),  # noqa: PLW0108
        gpu_label=lambda: holder["app"].gpu_label(),  # noqa: PLW0108
        tuning_active=lambda spec: holder["app"].tuning_active(spec),  # noqa: PLW0108
    )
    remote = RemoteService(paths.config_dir / "remote_engines.json", secrets, client)
    serve = ServeService(base.settings_service, secrets, local, ChatUpstream(chat), dashboard_recorder(dashboard))
    app = AppServices(base, client, local, gpu, engines, models, metrics, dashboard, chat_store, chat,
                      remote=remote, serve=serve, rpc=rpc)
    holder["app"] = app
    chat.subscribe(app._record_reply)
    app.refresh_chat_plan()
    return app
