"""ModelService: the one facade the Models page and ``strata models`` use."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx

from strata_gui.core.base import texts
from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import HubError, ModelError
from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.config.settings import Settings
from strata_gui.core.models.download_manager import DownloadManager
from strata_gui.core.models.downloads import (
    DownloadJob,
    DownloadQueue,
    DownloadStateError,
    HubCacheDownloader,
)
from strata_gui.core.models.fit import (
    FitEstimate,
    MemoryTarget,
    ModelShape,
    QuantChoice,
    default_pick,
    estimate_fit,
)
from strata_gui.core.models.gguf_meta import GGUFMetadata, read_header
from strata_gui.core.models.hub import HubClient, ModelDetail, SearchPage
from strata_gui.core.models.hub_config import (
    HubTokens,
    SavedHubToken,
    SecretStore,
    hub_cache_dir,
    resolve_hub,
)
from strata_gui.core.models.hub_files import QuantEntry
from strata_gui.core.models.hub_images import (
    ImageVariantFit,
    native_resolution,
    pick_image_default,
    plan_companions,
)
from strata_gui.core.models.image_models import ImageFit, estimate_bytes_fit, estimate_image_fit, image_parts
from strata_gui.core.models.library import LibraryEntry, ModelLibrary
from strata_gui.core.models.speech_models import SPEECH_OVERHEAD_BYTES
from strata_gui.core.runtime.kinds import TEXT, EngineKind

T = TypeVar("T")
log = logging.getLogger(__name__)

_NO_HEADER = QT_TRANSLATE_NOOP("Core", "Could not read the model header: {reason}")
OFFLINE_HINT = QT_TRANSLATE_NOOP("Core", "Turn off offline mode in Settings to search and download; the "
                                        "library still works.")


@dataclass(frozen=True)
class QuantFit:
    """A quant entry with its fit estimate (``estimate`` None when the header could not be read)."""

    entry: QuantEntry
    estimate: FitEstimate | None
    is_default: bool = False
    bf16: str | None = None  # BF16 files only: "fast" / "slow" / "unsupported" on this GPU (None: unknown)

    def bf16_note(self) -> str:
        """``"BF16: slow on this GPU"`` for a BF16 file whose speed here is known, else ""."""
        return f"BF16: {self.bf16} on this GPU" if self.bf16 else ""


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


@dataclass(frozen=True)
class ImageReport:
    """Every model file of an image repo, with what downloads with it and its fit verdict."""

    target: MemoryTarget
    family: str
    width: int
    height: int
    fits: tuple[ImageVariantFit, ...]
    note: str = ""

    @property
    def default(self) -> ImageVariantFit | None:
        return next((f for f in self.fits if f.is_default), None)

    def to_json(self) -> dict[str, Any]:
        return {"target": {"name": self.target.name, "usable_bytes": self.target.usable_bytes},
                "family": self.family or None, "resolution": [self.width, self.height], "note": self.note or None,
                "variants": [f.to_json() for f in self.fits]}


class ModelService:
    """Hub search/detail, fit verdicts, downloads and the local library behind one object.

    ``downloads`` is the :class:`DownloadManager` (the download queue's one owner): pages and
    commands enqueue, pause, resume and cancel through it and subscribe to its events.

    Args:
        client: Shared async HTTP client (the app owns and closes it).
        endpoint: Hub base URL (:func:`~strata_gui.core.models.hub_config.resolve_hub`; mirrors welcome).
        cache_dir: The hub cache (Settings.hf_cache_dir, else the environment's: hub_config.hub_cache_dir).
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
        model_files: Sequence[Path] = (),
        save_model_files: Callable[[list[Path]], None] | None = None,
    ) -> None:
        self.tokens = token_store
        self.hub = HubClient(client, endpoint, token_store.get)
        self.downloader = HubCacheDownloader(client, cache_dir, endpoint, self.hub.auth_headers, disk_free=disk_free)
        self.queue = DownloadQueue(queue_file)
        self.downloads = DownloadManager(self.queue, self.downloader, token_store, check_online=self._online)
        self._blocking: set[asyncio.Task[Any]] = set()
        self.library = ModelLibrary(cache_dir, list(model_dirs), model_files, save_model_files)
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
            raise HubError(QT_TRANSLATE_NOOP("Core", "Strata is in offline mode."), hint=OFFLINE_HINT)

    async def search(self, text: str = "", sort: str = "downloads", next_url: str | None = None,
                     kind: EngineKind = TEXT) -> SearchPage:
        """One page of hub repos with models of ``kind`` (GGUF chat models, text-to-image models ...)."""
        self._online()
        return await self.hub.search(text, sort, next_url=next_url, kind=kind)

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
            return FitReport(target, ctx, (),
                             note=QT_TRANSLATE_NOOP("Core", "This repository has no GGUF files."))
        source = min(detail.quants, key=lambda q: q.size)
        try:
            meta = await self.hub.header(detail.repo_id, detail.commit, source.first.path)
        except ModelError as exc:
            fits = tuple(QuantFit(q, None, bf16=_bf16(q, target)) for q in detail.quants)
            return FitReport(target, ctx, fits, note=texts.T(_NO_HEADER, reason=exc.message))
        choices = [
            QuantChoice(q.label, q.size, estimate_fit(ModelShape.from_metadata(meta, q.size), target, self.ram_bytes, ctx))
            for q in detail.quants
        ]
        pick = default_pick(choices, bf16=target.bf16)
        fits = tuple(QuantFit(q, c.estimate, c is pick, _bf16(q, target))
                     for q, c in zip(detail.quants, choices, strict=True))
        return FitReport(target, min(ctx, meta.context_length or ctx), fits, meta.architecture, meta.context_length or 0)

    async def choose_quant(self, detail: ModelDetail, wanted: str = "") -> QuantEntry:
        """The quant ``wanted`` names (its label in any case, its file name or path), or, with none
        named, the best that fits this computer (the fit report's pick, else the smallest): what
        ``strata models pull`` and Ollama's ``/api/pull`` download.

        Raises:
            ModelError: The repo has no GGUF files, or no quant of that name.
        """
        if not detail.quants:
            raise ModelError(texts.T(QT_TRANSLATE_NOOP("Core", "{repo} has no GGUF files."), repo=detail.repo_id),
                             hint=QT_TRANSLATE_NOOP("Core", "Pick a repository whose name ends in -GGUF."))
        wanted = wanted.strip()
        if wanted:
            matches = [q for q in detail.quants
                       if q.label.upper() == wanted.upper() or wanted in (q.name, q.first.path)]
            if not matches:
                raise ModelError(texts.T(QT_TRANSLATE_NOOP("Core", "{repo} has no quant '{quant}'."),
                                         repo=detail.repo_id, quant=wanted),
                                 hint=texts.T(QT_TRANSLATE_NOOP("Core", "Available: {labels}"),
                                              labels=", ".join(q.label for q in detail.quants)))
            return matches[0]
        report = await self.fit_report(detail)
        return report.default.entry if report.default else min(detail.quants, key=lambda q: q.size)

    async def image_report(self, detail: ModelDetail, target: MemoryTarget | None = None) -> ImageReport:
        """Judge every model file of an image repo at its family's native size.

        One header read (the smallest file) tells the family and which parts the files hold;
        each verdict counts the file plus the companions that download with it.
        """
        self._online()
        target = target or self.memory_target()
        if not detail.images:
            return ImageReport(target, "", 0, 0, (),
                               note=QT_TRANSLATE_NOOP("Core", "This repository has no single-file image "
                                                              "model."))
        source = detail.images[0].first
        label = source.path.rsplit("/", 1)[-1]
        try:
            names = await self.hub.tensor_names(detail.repo_id, detail.commit, source.path)
        except ModelError as exc:
            fits = tuple(ImageVariantFit(q, (), (), None) for q in detail.images)
            return ImageReport(target, "", 0, 0, fits, note=texts.T(_NO_HEADER, reason=exc.message))
        parts = image_parts(names)
        if parts is None:
            fits = tuple(ImageVariantFit(q, (), (), None) for q in detail.images)
            return ImageReport(target, "", 0, 0, fits,
                               note=texts.T(QT_TRANSLATE_NOOP("Core", "{file} is not an image model "
                                                                      "stable-diffusion.cpp recognises."),
                                            file=label))
        width, height = native_resolution(parts.family)
        fits_list = []
        for q in detail.images:
            companions, missing = plan_companions(parts.family, parts.text_encoder, parts.vae, q.first, detail.files)
            size = q.size + sum(c.size for c in companions)
            fit = estimate_image_fit(size, target, self.ram_bytes, width, height)
            if missing:  # their size is unknown here: the verdict may be too kind
                fit = replace(fit, message=texts.T(QT_TRANSLATE_NOOP("Core", "{fit}, not counting the "
                                                                             "missing parts"),
                                                   fit=fit.message))
            fits_list.append(ImageVariantFit(q, companions, missing, fit))
        pick = pick_image_default([f for f in fits_list if not f.missing]) if any(
            not f.missing for f in fits_list) else None
        if pick is not None:
            complete = [f for f in fits_list if not f.missing]
            fits_list[fits_list.index(complete[pick])] = replace(complete[pick], is_default=True)
        return ImageReport(target, parts.family, width, height, tuple(fits_list))

    def speech_report(self, detail: ModelDetail, target: MemoryTarget | None = None) -> ImageReport:
        """Judge every whisper model file of a speech repo by its size plus whisper.cpp's buffers
        (no header read: a whisper model's memory is its file and a small, fixed overhead). The
        recommended one is ``base`` (English-only when there is one), else the smallest."""
        target = target or self.memory_target()
        fits = [ImageVariantFit(q, (), (), estimate_bytes_fit(q.size + SPEECH_OVERHEAD_BYTES, target, self.ram_bytes))
                for q in detail.images]
        if not fits:
            return ImageReport(target, "whisper", 0, 0, (),
                               note=QT_TRANSLATE_NOOP("Core", "This repository has no whisper model (ggml-*.bin)."))
        labels = [f.entry.label for f in fits]
        pick = next((labels.index(x) for x in ("base.en", "base") if x in labels), 0)
        fits[pick] = replace(fits[pick], is_default=True)
        return ImageReport(target, "whisper", 0, 0, tuple(fits))

    def speech_fit(self, entry: LibraryEntry) -> ImageFit:
        """Where a local speech model runs (its size plus whisper.cpp's buffers)."""
        return estimate_bytes_fit(entry.size + SPEECH_OVERHEAD_BYTES, self.memory_target(), self.ram_bytes)

    def enqueue_image(self, detail: ModelDetail, variant: ImageVariantFit) -> DownloadJob:
        """Queue an image model file with its companions as one job: they land in the same
        snapshot folder, where the library pairs them (the model file stays ``files[0]``)."""
        extra = f" + {len(variant.companions)} parts" if variant.companions else ""
        job = DownloadJob(detail.repo_id, detail.commit, variant.entry.label, variant.entry.name + extra,
                          list(variant.files))
        return self.downloads.add(job)

    # -- downloads (thin wrappers over ``self.downloads`` for ``strata models pull`` and old callers)
    def enqueue(self, detail: ModelDetail, quant: QuantEntry) -> DownloadJob:
        return self.downloads.enqueue(detail, quant)

    def pending_downloads(self) -> list[DownloadJob]:
        return self.downloads.jobs()

    async def download(self, job: DownloadJob, on_progress: ProgressCallback) -> list[Path]:
        """Queue ``job`` (again, if paused or failed) and wait until it is done.

        Cancelling this call pauses the job (resumable, also after a restart) and returns once
        the partial file is closed.
        """
        queued = self.downloads.add(job)
        try:
            return await self.downloads.wait(queued.job_id, on_progress)
        except asyncio.CancelledError:
            with contextlib.suppress(DownloadStateError):  # it finished or failed meanwhile
                self.downloads.pause(queued.job_id)
            await self.downloads.wait_stopped(queued.job_id)
            raise

    def cancel_download(self, job: DownloadJob) -> None:
        """Forget a job and delete its partial files (a running one is stopped first)."""
        if self.downloads.get(job.job_id) is None:
            self.downloader.discard_partial(job)
        else:
            self.downloads.cancel(job.job_id)

    def save_token(self, token: str) -> None:
        """Keep ``token`` in Strata; it wins over ``HF_TOKEN`` and the hub's token file from now on."""
        self.tokens.set(token)

    # -- library
    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        # Shielded and remembered, so aclose() can wait for a scan whose caller was cancelled
        # (its thread cannot be stopped) instead of leaving the thread behind.
        task = asyncio.ensure_future(run_blocking(fn, *args, name="strata-models"))
        self._blocking.add(task)
        task.add_done_callback(self._blocking.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: never "unhandled"
        return await asyncio.shield(task)

    async def scan_library(self) -> list[LibraryEntry]:
        return await self._off_loop(self.library.scan)

    async def usable_models(self, kind: EngineKind = TEXT) -> list[Path]:
        """The library's models of one kind that can run (chat, image or embedding models)."""
        return [e.path for e in await self.scan_library() if e.kind == kind and not e.broken]

    async def open_file(self, path: Path, *, keep: bool = False) -> LibraryEntry:
        """Add a single model file to the library (``keep``: across restarts, see :meth:`ModelLibrary.open_file`)."""
        entry = await self._off_loop(self.library.open_file, path)
        if keep:  # saved on the loop: settings announce their changes there
            self.library.keep(path)
        return entry

    async def inspect(self, path: Path) -> GGUFMetadata:
        return await self._off_loop(read_header, path)

    async def delete(self, entry: LibraryEntry) -> int:
        freed = await self._off_loop(self.library.delete, entry)
        self.library.forget(entry.path)
        return freed

    def set_model_dirs(self, dirs: list[Path]) -> None:
        self.library.folders = list(dirs)

    def image_fit(self, entry: LibraryEntry) -> ImageFit:
        """Where an image model runs (GPU, system memory, too large), from all its files' size and
        the same memory target text models are judged against."""
        return estimate_image_fit(entry.size, self.memory_target(), self.ram_bytes)

    def fit_for_local(self, entry: LibraryEntry, meta: GGUFMetadata, n_ctx: int | None = None) -> FitEstimate:
        shape = ModelShape.from_metadata(meta, entry.size)
        return estimate_fit(shape, self.memory_target(), self.ram_bytes, n_ctx or self.context_size)

    async def aclose(self) -> None:
        """Pause the running download and wait for it, and for a running scan. Safe to call twice."""
        await self.downloads.aclose()
        if self._blocking:
            await asyncio.wait(list(self._blocking))



def build_model_service(
    settings: Settings,
    data_dir: Path,
    client: httpx.AsyncClient,
    environ: Mapping[str, str],
    memory_target: Callable[[], MemoryTarget] | None = None,
    *,
    secrets: SecretStore,
    save_model_files: Callable[[list[Path]], None] | None = None,
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
        save_model_files: Saves the single files the user added (Settings.model_files).
    """
    import psutil

    cache = Path(settings.hf_cache_dir).expanduser() if settings.hf_cache_dir else hub_cache_dir(environ)
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
        model_files=[Path(f).expanduser() for f in settings.model_files],
        save_model_files=save_model_files,
    )


def _bf16(quant: QuantEntry, target: MemoryTarget) -> str | None:
    return target.bf16 if quant.label.upper() == "BF16" else None

