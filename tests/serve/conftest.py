"""A ChatService on the real CPU engine behind the local API, and a real dashboard store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.chat.service import ChatService, default_supervisor_factory
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.serve.chat_router import ChatRouter
from strata_gui.core.serve.service import ServeService, dashboard_recorder
from tests.support.fixed_engines import FixedEngines
from tests.support.settings import settings_service

T = TypeVar("T")


@dataclass
class Env:
    serve: ServeService
    chat: ChatService
    dashboard: DashboardService
    http: httpx.AsyncClient


def run_serving(plan: list[EngineSpec], model: Path | None, body: Callable[[Env], Awaitable[T]],
                **settings: object) -> T:
    async def main() -> T:
        paths = AppPaths.from_environment()
        paths.ensure()
        s = settings_service(context_size=1024, serve_port=0, **settings)
        async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None)) as http:
            supervisors = default_supervisor_factory(http)
            chat = ChatService(ConversationStore(paths.database_file).open(), supervisors, http, s)
            chat.set_plan(plan)
            if model is not None:
                chat.set_model(model)
            metrics = MetricsStore(paths.database_file)
            dashboard = DashboardService(metrics, Benchmark(http, supervisors, metrics), http,
                                         resolver=FixedEngines(plan))
            serve = ServeService(s, FileSecretStore(paths.config_dir / "secrets.json"), http, ChatRouter(chat),
                                 dashboard_recorder(dashboard))
            try:
                return await body(Env(serve, chat, dashboard, http))
            finally:
                await serve.stop()
                await chat.aclose()
                metrics.close()

    return asyncio.run(main())
