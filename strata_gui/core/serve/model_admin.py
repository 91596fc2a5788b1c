"""What Ollama's model routes change in the library: pull from the hub, delete, copy (a second name).

``/api/pull`` downloads through the same path as ``strata models pull`` and the Models page (the
model service's download manager: resumable, verified against the hub's sha256, into the hub
cache), so a model pulled by an app is in the library like any other. ``/api/copy`` gives a model
another name (:class:`~strata_gui.core.models.aliases.ModelAliases`); ``/api/delete`` removes a
name, or the model's files when it is the model's own id and the model is one the hub cache holds
(files the user opened or keeps in a folder are deleted on the Models page only: any client of the
API may call it).

These routes change what is on the disk, so Settings can turn them off
(``serve_model_routes``, the Network page, ``strata serve --no-model-routes``); the server asks
for the API key on them as on every route whenever it listens beyond this computer.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import ModelError
from strata_gui.core.base.progress import Progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.aliases import check_alias
from strata_gui.core.models.library import SOURCE_HUB, LibraryEntry
from strata_gui.core.models.service import ModelService
from strata_gui.core.serve.catalog import hub_name
from strata_gui.core.serve.library_router import LibraryRouter

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.1  # at most ~10 progress lines a second


class NotDeletableHere(ModelError):
    """The API may not delete this model's files (they are not in the hub cache)."""


@dataclass(frozen=True)
class PullStep:
    """One line of Ollama's pull progress (``{"status", "digest", "total", "completed"}``)."""

    status: str
    digest: str | None = None
    total: int | None = None
    completed: int | None = None


class ModelAdmin:
    """Pulls, deletes and names library models for the local API.

    Args:
        models: The model service (hub, download manager, library).
        router: The local API's router over the library (ids, aliases, loaded engines).
        enabled: Whether the user allows these routes now (read per request).
    """

    def __init__(self, models: ModelService, router: LibraryRouter, enabled: Callable[[], bool] = lambda: True) -> None:
        self.models = models
        self.router = router
        self._enabled = enabled
        self.off_for_this_run = False  # `strata serve --no-model-routes`

    @property
    def enabled(self) -> bool:
        return not self.off_for_this_run and self._enabled()

    async def pull(self, name: str, on_step: Callable[[PullStep], None]) -> Path:
        """Download the hub model ``name`` (``hf.co/org/repo:quant``) into the library.

        Returns:
            The model file (shard 1 of a split set).

        Raises:
            ModelError: Not a hub name, no such repo or quant (the hub's own errors included).
        """
        parsed = hub_name(name)
        if parsed is None:
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "'{name}' is not a Hugging Face model name."), name=name[:80]),
                             hint=QT_TRANSLATE_NOOP("Core", "Strata pulls GGUF models from the Hugging Face hub: "
                                                            "name one as hf.co/org/repo:Q4_K_M."))
        repo, quant_name = parsed
        on_step(PullStep("pulling manifest"))
        detail = await self.models.detail(repo)
        quant = await self.models.choose_quant(detail, quant_name)
        sha = quant.first.sha256 or ""
        digest = f"sha256:{sha}" if sha else None
        status = f"pulling {sha[:12] or quant.label}"

        last = [0.0]

        def progress(p: Progress) -> None:
            # The download reports every chunk (tens of thousands for a large file): a few lines a
            # second are enough for a progress bar, and a line per chunk slowed the download ~10 %.
            now = time.monotonic()
            if now - last[0] >= PROGRESS_INTERVAL_S:
                last[0] = now
                on_step(PullStep(status, digest, int(p.total or quant.size), int(p.done)))

        on_step(PullStep(status, digest, quant.size, 0))
        paths = await self.models.download(self.models.enqueue(detail, quant), progress)
        on_step(PullStep(status, digest, quant.size, quant.size))
        on_step(PullStep("verifying sha256 digest"))  # the download manager checked it on the way
        on_step(PullStep("writing manifest"))
        await self.router.refresh()
        log.info("pulled %s (%s) through the local API", repo, quant.label)
        return paths[0]

    async def delete(self, name: str) -> None:
        """Forget the name ``name``, or delete the model's files when ``name`` is its own id (the
        engine holding it is unloaded first).

        ``name`` is resolved once, as every route resolves it (``:latest`` added, a hub name): a
        client deleting ``bar:latest`` after copying a model to ``bar`` removes the name, never the
        file it stands for.

        Raises:
            UnknownModelError: No such model.
            NotDeletableHere: The model's files are outside the hub cache (opened, or in a folder).
            StorageError: The files could not be deleted.
        """
        await self.router.refresh()
        served = self.router.resolve(name)
        if self.router.aliases is not None and self.router.is_alias(served.id):
            self.router.aliases.remove(served.id)
        else:
            entry = self.router.entry(served.id)
            self._check_deletable(entry, served.id)
            await self.router.unload(served.id)
            await self.models.delete(entry)
            log.info("deleted %s through the local API", entry.path)
        await self.router.refresh()

    def _check_deletable(self, entry: LibraryEntry, name: str) -> None:
        """Refuse unless every file of ``entry`` is inside the hub cache (what Strata downloaded)."""
        cache = Path(os.path.abspath(self.models.cache_dir))
        inside = all(Path(os.path.abspath(f)).is_relative_to(cache) for f in entry.files)
        if entry.source != SOURCE_HUB or not inside:
            raise NotDeletableHere(
                T(QT_TRANSLATE_NOOP("Core", "'{name}' is a file on this computer that Strata did not download: "
                                            "the API deletes only models in the Hugging Face cache."),
                  name=name[:80]),
                hint=QT_TRANSLATE_NOOP("Core", "Delete it on Strata's Models page."))

    async def copy(self, source: str, destination: str) -> None:
        """Name the model ``source`` also ``destination`` (an existing other name is moved).

        Raises:
            UnknownModelError: No model ``source``.
            ModelError: ``destination`` cannot be a name, or is another model's own id.
        """
        if self.router.aliases is None:
            raise ModelError(QT_TRANSLATE_NOOP("Core", "This server cannot name models."))
        await self.router.refresh()
        entry = self.router.entry(source)
        check_alias(destination)
        taken = next((m for m in self.router.models() if m.id == destination), None)
        if taken is not None and not self.router.is_alias(destination):
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "'{name}' is already the name of a model."), name=destination),
                             hint=QT_TRANSLATE_NOOP("Core", "Choose another name, or delete that model first."))
        self.router.aliases.add(destination, entry.path)
        await self.router.refresh()

