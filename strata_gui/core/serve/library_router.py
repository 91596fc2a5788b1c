"""Every library model on demand: the local API's :class:`ModelRouter` over the engine pool.

A request names a model; the router finds it in the library, asks the resolver for the engines of
the kind the request needs (chat, embedding or image: ROCm, Vulkan or CPU builds for this model on
this GPU) and borrows one from the engine pool for exactly as long as the request lasts. Everything
else is the pool's: a model that is loading is started once however many requests wait for it;
models run side by side while they fit and the least recently used idle one is unloaded when they
do not (never one in use); idle engines unload after Settings' time-out or the request's
``keep_alive``. The chat is one more user of the same pool: a request for the chat's model, with the
chat's launch settings, shares the chat's engine.

Why not llama-server's own router mode (``--models-dir``, ``/models/load``)? Every model it serves
runs on the one binary it was started as, so it cannot put one model on a ROCm build and another
on Vulkan, nor fall back to the next build when one fails on this GPU; and the chat, the benchmark
and images would keep owning engines of their own beside it. The pool keeps one owner for all of
them, and this router is only a view over it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ServerBusyError, UnknownModelError, WrongModelKindError
from strata_gui.core.models.aliases import ModelAliases
from strata_gui.core.models.library import LibraryEntry
from strata_gui.core.pool import EnginePool, PooledEngine, acquire_along_plan
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EMBEDDING, TEXT, EngineKind, kind_named
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.serve.catalog import assign_ids, find_served, served_model
from strata_gui.core.serve.router import LoadedModel, ServedModel, Upstream

log = logging.getLogger(__name__)

Library = Callable[[], Awaitable[Sequence[LibraryEntry]]]
"""The model library, scanned (the model service's ``scan_library``)."""
Plans = Callable[[Path, EngineKind], list[EngineSpec]]
"""The engines for a model and kind, best first (the resolver's ``plan_for``)."""
Launch = Callable[[Path, EngineKind], ServerSettings]
"""How a model of a kind is launched (blocking allowed: called off the loop)."""

USER = "api"


class LibraryRouter:
    """The local API's models and engines: the library, through the engine pool.

    Args:
        pool: Where engines are borrowed.
        library: The model library.
        plans: The resolver's engines for a model and kind.
        launch: Launch settings for a model and kind (the chat's load options for chat models).
        max_waiting: Requests that may wait for an engine at once; more are answered "busy" (503).
        wait_limit: Seconds a request may wait for a slot or an engine before it is answered "busy"
            (503 with Retry-After; read per request, so a settings change applies to the next one).
        clock: Monotonic clock (idle times).
        aliases: The user's other names for models (Ollama's ``/api/copy``), served beside their ids.
    """

    def __init__(self, pool: EnginePool, library: Library, plans: Plans, launch: Launch, *,
                 max_waiting: int = 32, wait_limit: Callable[[], float | None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic, aliases: ModelAliases | None = None) -> None:
        self.pool = pool
        self.aliases = aliases
        self._wait_limit = wait_limit
        self._library = library
        self._plans = plans
        self._launch = launch
        self.max_waiting = max_waiting
        self._clock = clock
        self._served: list[ServedModel] = []
        self._entries: dict[str, LibraryEntry] = {}
        self._waiting = 0

    # -- the catalogue ---------------------------------------------------------------------------------
    def models(self) -> Sequence[ServedModel]:
        return list(self._served)

    async def refresh(self) -> None:
        entries = [e for e in await self._library() if not e.broken]
        ids = assign_ids(entries)

        def describe() -> list[ServedModel]:
            out = []
            for entry, model_id in zip(entries, ids, strict=True):
                try:
                    modified = entry.path.stat().st_mtime
                except OSError:
                    continue
                out.append(served_model(entry, model_id, entry.kind.name, modified))
            return out

        served = await run_blocking(describe, name="strata-serve-catalogue")
        by_id = dict(zip(ids, entries, strict=True))
        aliases = await run_blocking(self.aliases.prune, name="strata-serve-aliases") if self.aliases else {}
        by_path = {m.path: m for m in served}
        for name, path in aliases.items():
            target = by_path.get(path)
            if target is not None and name not in by_id:
                served.append(dataclasses.replace(target, id=name))
                by_id[name] = by_id[target.id]
        self._served, self._entries = served, by_id

    def entry(self, model_id: str) -> LibraryEntry:
        """The library entry a served id (or alias) stands for.

        Raises:
            UnknownModelError: No such model.
        """
        return self._entries[self._find(model_id).id]

    def resolve(self, model_id: str) -> ServedModel:
        """The served model a client's name stands for (its id, ``:latest`` added, a hub name, the file name).

        Raises:
            UnknownModelError: No such model.
        """
        return self._find(model_id)

    def is_alias(self, model_id: str) -> bool:
        """Whether ``model_id`` is one of the user's other names, not a model's own id."""
        return self.aliases is not None and model_id in self.aliases.names()

    def _find(self, model_id: str) -> ServedModel:
        found = find_served(self._served, model_id)
        if found is not None:
            return found
        # A client may also name the file (with or without .gguf), as older Strata versions listed it.
        for m in self._served:
            if model_id in (m.path.name, m.path.stem):
                return m
        raise UnknownModelError(f"No model named '{model_id}' in this computer's library.",
                                hint="GET /v1/models (or /api/tags) lists the names to use.")

    # -- lending ------------------------------------------------------------------------------------------
    @staticmethod
    def _kind_for(served: ServedModel, asked: str | None) -> EngineKind:
        own = kind_named(served.kind)
        if asked is None or asked == own.name:
            return own
        wanted = kind_named(asked)
        # Any chat GGUF can embed (llama-server --embedding, mean pooling); nothing else converts.
        if wanted is EMBEDDING and own is TEXT:
            return EMBEDDING
        raise WrongModelKindError(f"'{served.id}' is a {own.label} model (kind '{own.name}'), not a "
                                  f"{wanted.label} model (kind '{wanted.name}'): this endpoint needs one.",
                                  hint=f"Name a {wanted.label} model (GET /v1/models lists each model's kind).")

    def _settings(self, served: ServedModel, kind: EngineKind) -> ServerSettings:
        settings = self._launch(served.path, kind)
        if kind is EMBEDDING and kind_named(served.kind) is TEXT:
            # A chat model has no pooling type of its own: llama-server's default ("none") is not
            # what /v1/embeddings answers with.
            settings = dataclasses.replace(settings, extra_args=(*settings.extra_args, "--pooling", "mean"))
        return settings

    @asynccontextmanager
    async def borrow(self, model_id: str, *, kind: str | None = None,
                     keep_alive: float | None = None) -> AsyncIterator[Upstream]:
        served = self._find(model_id)
        engine_kind = self._kind_for(served, kind)
        plan = self._plans(served.path, engine_kind)
        if not plan:
            raise UnknownModelError(f"No {engine_kind.label} engine is installed to run '{served.id}'.",
                                    hint="Install one on the Engines page (strata engines install --kind "
                                         f"{engine_kind.name}, or add-local DIR --kind {engine_kind.name}).")
        if self._waiting >= self.max_waiting:
            raise ServerBusyError(f"{self._waiting} requests are already waiting for an engine.",
                                  retry_after=5.0, hint="Send fewer requests at once.")
        settings = await run_blocking(self._settings, served, engine_kind, name="strata-serve-launch")
        self._waiting += 1
        try:
            lease = await acquire_along_plan(self.pool, plan, served.path, lambda _spec: settings, user=USER,
                                             keep_alive=keep_alive, wait_limit=self._wait_limit())
        finally:
            self._waiting -= 1
        try:
            yield Upstream(base_url=lease.base_url, api_key=lease.api_key, model=served, apis=engine_kind.apis,
                           engine=lease.spec.label, backend=str(lease.spec.backend))
            lease.succeeded()
        finally:
            lease.release()

    # -- what is loaded ------------------------------------------------------------------------------------
    def _served_for(self, engine: PooledEngine) -> ServedModel | None:
        for m in self._served:
            if m.path == engine.model:
                return m if m.kind == engine.kind.name else dataclasses.replace(m, kind=engine.kind.name)
        return None

    def loaded(self) -> Sequence[LoadedModel]:
        now = self._clock()
        out = []
        for engine in self.pool.engines():
            if not engine.ready:
                continue
            served = self._served_for(engine)
            if served is None:  # a model outside the library (opened in the chat from elsewhere)
                served = ServedModel(id=engine.model.stem, kind=engine.kind.name, path=engine.model,
                                     size_bytes=0, modified=0.0)
            memory = engine.memory_bytes()
            out.append(LoadedModel(model=served, memory_bytes=memory, busy=engine.leases,
                                   idle_s=0.0 if engine.busy else max(0.0, now - engine.last_used),
                                   expires_in_s=engine.expires_in(now), engine=engine.spec.label,
                                   gpu_memory_bytes=memory if engine.group == "gpu" else 0,
                                   context_length=engine.settings.ctx_size or None))
        return out

    async def unload(self, model_id: str) -> None:
        try:
            served = self._find(model_id)
        except UnknownModelError:
            return
        for engine in self.pool.engines():
            if engine.model == served.path and not await self.pool.unload(
                    engine, "unloaded by a client of the local API", wait=False):
                engine.keep_alive = 0  # in use: unloaded when its last request ends
