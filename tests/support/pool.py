"""An engine pool over real processes for tests that build services by hand (the app builds its
own in ``build_app_services``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import httpx

from strata_gui.core.chat.service import ChatService
from strata_gui.core.models.library import SOURCE_OPENED, LibraryEntry, describe_model
from strata_gui.core.pool import EnginePool, MemoryPolicy
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EngineKind
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.runtime.supervisor import ServerSupervisor
from strata_gui.core.serve.library_router import LibraryRouter


def launcher(http: httpx.AsyncClient, environ: Mapping[str, str] | None = None, *,
             ready_timeout: float | None = None, log_dir: Path | None = None
             ) -> Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]:
    """Real engine servers, as the app launches them."""
    env = dict(os.environ if environ is None else environ)

    def make(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        log_file = log_dir / f"{engine.kind.binary}-{engine.id}.log" if log_dir is not None else None
        return ServerSupervisor(engine, model, settings, http=http, environ=env, log_file=log_file,
                                ready_timeout=ready_timeout or engine.kind.load_timeout)

    return make


def real_pool(http: httpx.AsyncClient, environ: Mapping[str, str] | None = None, *,
              memory: MemoryPolicy | None = None, idle_timeout: float | None = None,
              ready_timeout: float | None = None, log_dir: Path | None = None) -> EnginePool:
    """A pool that starts real engines (call ``aclose`` when done)."""
    return EnginePool(launcher(http, environ, ready_timeout=ready_timeout, log_dir=log_dir), memory=memory,
                      idle_timeout=lambda: idle_timeout)


def library_router(chat: ChatService, models: Sequence[Path] = ()) -> LibraryRouter:
    """The local API's router over the chat's pool: ``models`` (else the chat's model) are the
    library, run on the chat's plan with the chat's launch settings (so the API shares its engine)."""

    async def library() -> list[LibraryEntry]:
        paths = list(models) or ([chat.model] if chat.model is not None else [])
        return [describe_model(p, SOURCE_OPENED) for p in paths]

    def plans(_model: Path, kind: EngineKind) -> list[EngineSpec]:
        return [dataclasses.replace(spec, kind=kind) for spec in chat.plan]

    return LibraryRouter(chat.pool, library, plans, lambda _model, _kind: chat.launch_settings(),
                         wait_limit=lambda: float(chat.settings.api_wait_seconds))
