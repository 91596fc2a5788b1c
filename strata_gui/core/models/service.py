"""ModelService: the one facade the Models page and ``strata models`` use."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

from strata_gui.core.errors import HubError, ModelError
from strata_gui.core.gpu.model import GpuInfo
from strata_gui.core.models.downloads import DownloadJob, DownloadQueue, HubCacheDownloader
from strata_gui.core.models.fit import (
    MIB,
    FitEstimate,
    MemoryTarget,
    ModelShape,
    QuantChoice,
    default_pick,
    estimate_fit,
)
from strata_gui.core.models.gguf_meta import GGUFMetadata, read_local
from strata_gui.core.models.hub import HubClient, ModelDetail, QuantEntry, SearchPage
from strata_gui.core.models.hub_config import HubTokens, SavedHubToken, SecretStore, hf_home, resolve_hub
from strata_gui.core.models.library import LibraryEntry, ModelLibrary
from strata_gui.core.progress import ProgressCallback
from strata_gui.core.settings import Settings

log = logging.getLogger(__name__)

OFFLINE_HINT = "Turn off offline mode in Settings to search and download; the library still works."


@dataclass(frozen=True)
class QuantFit:
    """A quant entry with its fit estimate (``estimate`` None when the header could not be read)."""

    entry: QuantEntry
    estimate: FitEstimate | None
    is_default: bool = False


@dataclass(frozen=True)
class FitReport:
    """Every quant of a repo judged against one memory target."""

    target: MemoryTarget
    n_ctx: int
    fits: tuple[QuantFit, ...]
    architecture: str = ""
    trained_context: int = 0
    note: str = ""

    @property
    def default(self) -> QuantFit | None:
        return next((f for f in self.fits if f.is_default), None)


class ModelService:
    """Hub search/detail, fit verdicts, downloads and the local library behind one object.

    Args:
        client: Shared async HTTP client (the app owns and closes it).
        endpoint: Hub base URL (:func:`~strata_gui.core.models.hub_config.resolve_hub`; mirrors welcome).
        cache_dir: The hub cache (Settings.hf_cache_dir or huggingface_hub's default).
        queue_file: Where unfinished downloads are remembered (e.g. data_dir/downloads.json).
        token_store: The access token: resolved at each request, saved in Strata by :meth:`save_token`.
        model_dirs: Folders the user added (Settings.model_dirs).
        memory_target: Returns the GPU memory to judge fits against (GPU detection or Settings).
        ram_bytes: Total system RAM.
        offline: Settings.offline: the hub is never contacted.
        context_size: Context to judge fits at (Settings.context_size).
        disk_free: Free bytes of a folder (injected for tests).
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        endpoint: str,
        cache_dir: Path,
        queue_file: Path,
        token_store: HubTokens,
        model_dirs: list[Path],
        memory_target: Callable[[], MemoryTarget],
        ram_bytes: int,
        offline: bool = False,
        context_size: int = 4096,
        disk_free: Callable[[Path], int] | None = None,
    ) -> None:
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-models")
        self.tokens = token_store
        self.hub = HubClient(client, endpoint, token_store.get, self._executor)
        self.downloader = HubCacheDownloader(client, cache_dir, endpoint, self.hub.auth_headers,
                                             disk_free=disk_free, executor=self._executor)
        self.queue = DownloadQueue(queue_file)
        self.library = ModelLibrary(cache_dir, list(model_dirs))
        self.memory_target = memory_target
        self.ram_bytes = ram_bytes
        self.offline = offline
        self.context_size = context_size
        self._detail_cache: dict[str, ModelDetail] = {}

    @property
    def endpoint(self) -> str:
        return self.hub.endpoint

    @property
    def cache_dir(self) -> Path:
        return self.downloader.cache_dir

    def _online(self) -> None:
        if self.offline:
            raise HubError("Strata is in offline mode.", hint=OFFLINE_HINT)

    async def search(self, text: str = "", sort: str = "downloads", next_url: str | None = None) -> SearchPage:
        self._online()
        return await self.hub.search(text, sort, next_url=next_url)

    async def detail(self, repo_id: str) -> ModelDetail:
        self._online()
        detail = await self.hub.detail(repo_id)
        self._detail_cache[repo_id] = detail
        return detail

    async def fit_report(self, detail: ModelDetail, n_ctx: int | None = None,
                         target: MemoryTarget | None = None) -> FitReport:
        """Judge every quant of ``detail``. One remote header read serves all quants: the layer
        and head layout is the same in every quantisation, only the weights differ."""
        self._online()
        target = target or self.memory_target()
        ctx = n_ctx or self.context_size
        if not detail.quants:
            return FitReport(target, ctx, (), note="This repository has no GGUF files.")
        source = min(detail.quants, key=lambda q: q.size)
        try:
            meta = await self.hub.header(detail.repo_id, detail.commit, source.first.path)
        except ModelError as exc:
            fits = tuple(QuantFit(q, None) for q in detail.quants)
            return FitReport(target, ctx, fits, note=f"Could not read the model header: {exc.message}")
        choices = [
            QuantChoice(q.label, q.size, estimate_fit(ModelShape.from_metadata(meta, q.size), target, self.ram_bytes, ctx))
            for q in detail.quants
        ]
        pick = default_pick(choices)
        fits = tuple(QuantFit(q, c.estimate, c is pick) for q, c in zip(detail.quants, choices, strict=True))
        return FitReport(target, min(ctx, meta.context_length or ctx), fits, meta.architecture, meta.context_length or 0)

    # -- downloads
    def enqueue(self, detail: ModelDetail, quant: QuantEntry) -> DownloadJob:
        return self.queue.add(DownloadJob.for_quant(detail.repo_id, detail.commit, quant))

    def pending_downloads(self) -> list[DownloadJob]:
        return self.queue.jobs()

    async def download(self, job: DownloadJob, on_progress: ProgressCallback) -> list[Path]:
        """Run one queued job to the end. Task cancel = pause (resumable, also after a restart)."""
        self._online()
        self.queue.add(job)
        self.queue.set_state(job.job_id, "downloading")
        try:
            paths = await self.downloader.download(job, on_progress)
        except asyncio.CancelledError:
            if self.queue.get(job.job_id) is not None:
                self.queue.set_state(job.job_id, "paused")
            raise
        except ModelError as exc:
            self.queue.set_state(job.job_id, "failed", exc.message)
            raise
        except Exception as exc:
            self.queue.set_state(job.job_id, "failed", str(exc))
            raise
        self.queue.remove(job.job_id)
        return paths

    def cancel_download(self, job: DownloadJob) -> None:
        """Forget a job and delete its partial files (the task must be cancelled first)."""
        self.queue.remove(job.job_id)
        self.downloader.discard_partial(job)

    def save_token(self, token: str) -> None:
        """Keep ``token`` in Strata; it wins over ``HF_TOKEN`` and the hub's token file from now on."""
        self.tokens.set(token)

    # -- library
    async def scan_library(self) -> list[LibraryEntry]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.library.scan)

    async def open_file(self, path: Path) -> LibraryEntry:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.library.open_file, path)

    async def inspect(self, path: Path) -> GGUFMetadata:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, read_local, path)

    async def delete(self, entry: LibraryEntry) -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.library.delete, entry)

    def set_model_dirs(self, dirs: list[Path]) -> None:
        self.library.folders = list(dirs)

    def fit_for_local(self, entry: LibraryEntry, meta: GGUFMetadata, n_ctx: int | None = None) -> FitEstimate:
        shape = ModelShape.from_metadata(meta, entry.size)
        return estimate_fit(shape, self.memory_target(), self.ram_bytes, n_ctx or self.context_size)

    async def aclose(self) -> None:
        """Stop the worker threads (waits for a running scan). Safe to call twice."""
        self._executor.shutdown(wait=True, cancel_futures=True)



def default_hub_cache(environ: Mapping[str, str]) -> Path:
    """huggingface_hub's cache folder for this environment (HF_HUB_CACHE, else HF_HOME/hub)."""
    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"]).expanduser()
    return hf_home(environ) / "hub"


def build_model_service(
    settings: Settings,
    data_dir: Path,
    client: httpx.AsyncClient,
    environ: Mapping[str, str],
    memory_target: Callable[[], MemoryTarget] | None = None,
    *,
    secrets: SecretStore,
) -> ModelService:
    """Wire a ModelService from Settings the way the app and the CLI both need it.

    Args:
        settings: hub_endpoint ("" = ``HF_ENDPOINT`` or the hub), hf_cache_dir, model_dirs, offline,
            context_size and the memory fallback/budget (used until a detected GPU's figures are
            passed as ``memory_target``).
        data_dir: Strata's data folder (the download queue lives there).
        client: Shared async HTTP client.
        environ: Environment (HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_TOKEN, HF_TOKEN_PATH ...).
        memory_target: The GPU memory to judge fits against.
        secrets: The user-only key store, where the token saved in Strata lives.
    """
    import psutil

    cache = Path(settings.hf_cache_dir).expanduser() if settings.hf_cache_dir else default_hub_cache(environ)
    saved = SavedHubToken(secrets)
    hub = resolve_hub(settings, environ, saved)
    log.info("%s", hub.describe())

    def from_settings() -> MemoryTarget:
        return MemoryTarget.from_settings(settings.fallback_gpu_memory_mb, settings.memory_budget_mb)

    return ModelService(
        client=client,
        endpoint=hub.endpoint,
        cache_dir=cache,
        queue_file=data_dir / "downloads.json",
        token_store=HubTokens(saved, environ),
        model_dirs=[Path(d).expanduser() for d in settings.model_dirs],
        memory_target=memory_target or from_settings,
        ram_bytes=int(psutil.virtual_memory().total),
        offline=settings.offline,
        context_size=settings.context_size or 4096,
    )


def memory_target_for(gpu: GpuInfo | None, settings: Settings) -> MemoryTarget:
    """The memory target for a detected GPU (``GpuReport.primary``), capped by the user budget;
    Settings' fallback figure when no GPU or no memory size was detected."""
    budget = max(0, settings.memory_budget_mb) * MIB
    if gpu is None or (gpu.vram_total is None and gpu.shared_total is None):
        return MemoryTarget.from_settings(settings.fallback_gpu_memory_mb, settings.memory_budget_mb)
    return MemoryTarget(
        name=gpu.name,
        vram_bytes=gpu.vram_total or 0,
        shared_bytes=gpu.shared_total or 0,
        is_apu=gpu.integrated,
        budget_bytes=budget,
    )
