"""A ChatService over real engines, a real SQLite store and a real HTTP client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from strata_gui.core.chat.service import ChatEvent, ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime.engine import EngineSpec
from tests.support.poll import until  # noqa: F401 (the chat tests' import of it)
from tests.support.pool import real_pool
from tests.support.settings import settings_service

T = TypeVar("T")


def run_with_service(
    plan: list[EngineSpec], model: Path, body: Callable[[ChatService, list[ChatEvent]], Awaitable[T]],
    **settings: Any,
) -> T:
    """Build a service, run ``body(service, events)`` on a fresh loop, always stop the engine."""

    async def main() -> T:
        paths = AppPaths.from_environment()
        paths.ensure()
        s = settings_service(context_size=settings.pop("context_size", 1024), **settings)
        # As the app's client: kept-alive connections expire before llama-server's 5 s close them.
        async with httpx.AsyncClient(trust_env=False, limits=httpx.Limits(keepalive_expiry=2.0)) as http:
            pool = real_pool(http)
            svc = ChatService(ConversationStore(paths.database_file).open(), pool, http, s)
            svc.set_plan(plan)
            svc.set_model(model)
            events: list[ChatEvent] = []
            svc.events.subscribe(events.append)
            try:
                return await body(svc, events)
            finally:
                await svc.aclose()
                await pool.aclose()

    return asyncio.run(main())
