"""A ChatService on the real CPU engine behind the local API, and a real dashboard store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from strata_gui.core.bench.service import DashboardService
from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.workload import Benchmark
from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.serve.records import ApiRequest, ServerLimits
from strata_gui.core.serve.router import (
    API_OPENAI,
    API_RESPONSES,
    KIND_EMBEDDING,
    KIND_TEXT,
    LLAMA_EMBEDDING_APIS,
    LLAMA_TEXT_APIS,
)
from strata_gui.core.serve.server import ApiServer
from strata_gui.core.serve.service import ServeService, dashboard_recorder
from tests.support.engine_router import EngineRouter, TestModel, served
from tests.support.engines import TestEngines, running_server
from tests.support.fixed_engines import FixedEngines
from tests.support.pool import library_router, real_pool
from tests.support.scripted_engine import ENGINE_KEY
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
            pool = real_pool(http)
            chat = ChatService(ConversationStore(paths.database_file).open(), pool, http, s)
            chat.set_plan(plan)
            if model is not None:
                chat.set_model(model)
            metrics = MetricsStore(paths.database_file)
            dashboard = DashboardService(metrics, Benchmark(http, pool, metrics), http,
                                         resolver=FixedEngines(plan))
            serve = ServeService(s, FileSecretStore(paths.config_dir / "secrets.json"), library_router(chat))
            serve.requests.subscribe(dashboard_recorder(dashboard))
            try:
                return await body(Env(serve, chat, dashboard, http))
            finally:
                await serve.stop()
                await chat.aclose()
                await pool.aclose()
                metrics.close()

    return asyncio.run(main())


# --------------------------------------------------------------------------- the API server over test routers

@dataclass
class Api:
    """A running ApiServer in a test: its address and what it recorded."""

    server: ApiServer
    router: EngineRouter
    http: httpx.AsyncClient
    recorded: list[ApiRequest]

    @property
    def base(self) -> str:
        """The server's root (Ollama and Anthropic clients); OpenAI clients add ``/v1``."""
        return f"http://127.0.0.1:{self.server.port}"


def run_api(router: EngineRouter, body: Callable[[Api], Awaitable[T]], *, api_key: str | None = None,
            limits: ServerLimits | None = None, loop: asyncio.AbstractEventLoop | None = None) -> T:
    """Start an ApiServer over ``router`` on a free port, run ``body``, stop everything."""

    async def main() -> T:
        recorded: list[ApiRequest] = []
        async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None)) as http:
            server = ApiServer(router, port=0, api_key=api_key, limits=limits)
            server.requests.subscribe(recorded.append)
            await server.start()
            try:
                return await body(Api(server, router, http, recorded))
            finally:
                await server.stop(1.0)
                await router.aclose()

    if loop is None:
        return asyncio.run(main())
    return loop.run_until_complete(main())


@pytest.fixture(scope="module")
def shared_engines(test_engines: TestEngines, test_model: Path) -> Iterator[dict[str, str]]:
    """Two real CPU llama-servers with their own key, shared by a module's tests: a chat engine and
    an embedding engine (the same llama GGUF, ``--embedding --pooling mean``)."""
    with running_server(test_engines.cpu_server, test_model, extra=["--api-key", ENGINE_KEY, "-t", "2"]) as chat, \
            running_server(test_engines.cpu_server, test_model,
                           extra=["--api-key", ENGINE_KEY, "--embedding", "--pooling", "mean", "-t", "1"]) as embed:
        yield {"chat": chat, "embed": embed}


CHAT_ID = "acme/Strata-Test-GGUF:F16"
EMBED_ID = "acme/Strata-Embed-GGUF"
SCRIPTED_ID = "scripted-thinker"
TRANSLATED_ID = "acme/Strata-Test-GGUF:F16-openai-only"


def shared_models(engines: dict[str, str], test_model: Path, *, scripted: str | None = None) -> list[TestModel]:
    """The chat and embedding engines as served models (plus the chat engine again without its own
    Messages API, and a scripted engine when given)."""
    models = [
        TestModel(served(CHAT_ID, KIND_TEXT, test_model), LLAMA_TEXT_APIS, base_url=engines["chat"], api_key=ENGINE_KEY),
        TestModel(served(EMBED_ID, KIND_EMBEDDING, test_model, capabilities=["embedding"]), LLAMA_EMBEDDING_APIS,
                  base_url=engines["embed"], api_key=ENGINE_KEY),
        TestModel(served(TRANSLATED_ID, KIND_TEXT, test_model), frozenset({API_OPENAI, API_RESPONSES}),
                  base_url=engines["chat"], api_key=ENGINE_KEY),
    ]
    if scripted is not None:
        models.append(TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({API_OPENAI}),
                                base_url=scripted, api_key=ENGINE_KEY))
    return models
