"""An engine pool over real processes for tests that build services by hand (the app builds its
own in ``build_app_services``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from strata_gui.core.pool import EnginePool, MemoryPolicy
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.runtime.supervisor import ServerSupervisor


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
