"""Making images: the engine plan, fallback, progress, the gallery, metrics.

:class:`ImageService` is the one place the GUI's Images page and ``strata image`` ask. It takes
the image engines in the resolver's order (ROCm → Vulkan → CPU, failed probes left out) and runs
each job through the engine pool's fallback loop: the pool keeps the ``sd-server`` with the model
loaded between jobs, and when an engine cannot load the model or dies during a job (a ROCm build
missing a library, a crash, out of memory) the listeners hear an :class:`ImageNotice`, the next
engine starts and the same job is sent again. Engines that failed are skipped for the rest of the
session. Cancel (cancelling the ``generate`` task) frees the engine: sd-server cannot stop a
running generation, so the process is stopped and the next job starts a new one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ImageError, ServerError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.images.gallery import Gallery, GalleryImage
from strata_gui.core.images.params import ImageRequest
from strata_gui.core.images.png import image_size
from strata_gui.core.images.server import (
    SdJobs,
    image_launch_settings,
    parse_image_start,
    parse_load,
    parse_step,
)
from strata_gui.core.platform.files import NotRegularFileError, check_regular
from strata_gui.core.pool import (
    EnginePool,
    EngineStateChanged,
    FailedOver,
    Lease,
    PooledEngine,
    PoolEvent,
    run_along_plan,
)
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import IMAGE
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, ProcessEnded, describe_outcome

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageProgress:
    """Where the running job is.

    Attributes:
        engine: The engine's label.
        phase: "loading" (the model loads), "sampling" (``step`` of ``steps`` of image ``image``
            of ``images``) or "saving".
        image, images: 1-based image of the batch, batch size.
        step, steps: Sampling step done, steps per image.
        seconds_per_step: sd.cpp's running average for this image (None before the first step).
        fraction: Of the whole batch, 0..1 (loading counts as 0).
    """

    engine: str
    phase: str
    image: int = 0
    images: int = 0
    step: int = 0
    steps: int = 0
    seconds_per_step: float | None = None
    fraction: float = 0.0

    def message(self) -> str:
        if self.phase == "loading":
            return f"Loading the model on {self.engine}…"
        if self.phase == "saving":
            return "Saving…"
        rate = f" · {self.seconds_per_step:.2f} s/step" if self.seconds_per_step else ""
        return f"Image {self.image}/{self.images} · step {self.step}/{self.steps}{rate}"


@dataclass(frozen=True)
class ImageNotice:
    """Something the user must be told: an engine failed and the next one takes over."""

    message: str
    outcome: Outcome | None = None
    failed_engine: str = ""
    next_engine: str = ""


@dataclass(frozen=True)
class ImageRecord:
    """One finished batch, as the metrics store keeps it (seconds per step and per image, per engine)."""

    model: str
    engine: str
    backend: str
    width: int
    height: int
    steps: int
    images: int
    seconds_per_step: float | None
    seconds_per_image: float
    source: str = "images"
    at: float = 0.0


@dataclass(frozen=True)
class ImageResult:
    """What a ``generate`` made.

    Attributes:
        images: The saved gallery entries, in seed order.
        engine: The engine that made them.
        seconds: Wall time of the job on that engine (model loading excluded).
        load_seconds: Time spent starting engines and loading the model for this job (0: it was loaded).
        seconds_per_step: sd.cpp's average step time of the last image.
        notices: The fallbacks that happened on the way.
    """

    images: tuple[GalleryImage, ...]
    engine: EngineSpec
    seconds: float
    load_seconds: float = 0.0
    seconds_per_step: float | None = None
    notices: tuple[str, ...] = field(default=())

    @property
    def seconds_per_image(self) -> float:
        return self.seconds / max(len(self.images), 1)

    def to_json(self) -> dict[str, Any]:
        return {"images": [i.to_json() for i in self.images], "engine": self.engine.id,
                "engine_label": self.engine.label, "backend": str(self.engine.backend), "seconds": self.seconds,
                "load_seconds": self.load_seconds, "seconds_per_step": self.seconds_per_step,
                "seconds_per_image": self.seconds_per_image, "notices": list(self.notices)}


@dataclass(frozen=True)
class ImageBenchEntry:
    """One engine's result in "Benchmark this model" (medians over the timed runs)."""

    engine: str
    label: str
    backend: str
    seconds_per_image: float | None
    seconds_per_step: float | None
    images: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.seconds_per_image is not None

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "label": self.label, "backend": self.backend,
                "seconds_per_image": self.seconds_per_image, "seconds_per_step": self.seconds_per_step,
                "images": self.images, "error": self.error or None}


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


ImageEvent = ImageProgress | ImageNotice
PlanProvider = Callable[[Path], Sequence[EngineSpec]]


class ImageService:
    """Generates images with stable-diffusion.cpp engines borrowed from the engine pool; one job at
    a time.

    Args:
        plan: Image engines for a model, best first (the resolver's ``image_plan``).
        pool: Where engines are borrowed (the model stays loaded between jobs, shared with the
            local API's image requests).
        http: Loopback HTTP client (no proxy).
        gallery: Where images are saved.
        threads: CPU threads for sd.cpp (None: its default, the physical cores).
        clock: Monotonic clock (seconds).
    """

    USER = "images"

    def __init__(self, plan: PlanProvider, pool: EnginePool, http: httpx.AsyncClient, gallery: Gallery, *,
                 threads: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._plan = plan
        self.pool = pool
        self._http = http
        self.gallery = gallery
        self.threads = threads
        self._clock = clock
        self.events: Listeners[ImageEvent] = Listeners()
        self.records: Listeners[ImageRecord] = Listeners()  # one per finished batch (the metrics store)
        self._lock = asyncio.Lock()
        self._failed: dict[str, str] = {}  # engine id → why it was given up on (this session)
        self._job_model: Path | None = None  # the model of the running job (its engine's lines are read)
        self._watching: tuple[PooledEngine, Callable[[], None]] | None = None
        self._batch = (1, 1)
        self._image = 1  # the image of the batch sd.cpp is sampling (from its log)
        self._last_spp: float | None = None
        self.busy = False
        self._unsubscribe = pool.events.subscribe(self._on_pool_event)

    # -- observation -----------------------------------------------------------------------------
    @property
    def loaded_engine(self) -> PooledEngine | None:
        """The pool's image engine with a model loaded, if any (its pid, its server's log)."""
        return next((e for e in self.pool.engines(kind=IMAGE) if e.ready), None)

    @property
    def engine(self) -> EngineSpec | None:
        """The engine whose ``sd-server`` is running (model loaded), if any."""
        loaded = self.loaded_engine
        return loaded.spec if loaded is not None else None

    @property
    def loaded_model(self) -> Path | None:
        loaded = self.loaded_engine
        return loaded.model if loaded is not None else None

    def plan(self, model: Path) -> list[EngineSpec]:
        """The engines a job for ``model`` would try, in order (engines that failed this session left out)."""
        return [s for s in self._plan(model) if s.id not in self._failed]

    def given_up(self) -> dict[str, str]:
        """Engines left out for this session, each with why."""
        return dict(self._failed)

    def forget_failures(self) -> None:
        """Try every engine again (after an engine was reinstalled or a driver updated)."""
        self._failed.clear()

    # -- work -----------------------------------------------------------------------------------
    async def generate(self, model: Path, request: ImageRequest, *, source: str = "images",
                       engines: Sequence[EngineSpec] | None = None, keep: bool = True) -> ImageResult:
        """Make ``request.count`` images with ``model`` and save them in the gallery.

        Cancel the awaiting task to cancel: a queued job is withdrawn, a running one stops the
        engine (freeing it; the next job starts it again).

        Args:
            source: What the metrics record calls it ("images", "bench", "cli").
            engines: Try exactly these engines, in this order (the benchmark); default: the plan.
            keep: False: the images are not saved in the gallery (``images`` is then empty).

        Raises:
            ImageError: bad settings, no image engine, the model is not an image model sd.cpp
                knows, or every engine failed.
        """
        request = request.validate().with_seed()
        async with self._lock:
            self.busy = True
            try:
                return await self._generate(model, request, source, engines, keep)
            finally:
                self.busy = False
                self._job_model = None
                self._unwatch()

    async def benchmark(self, model: Path, request: ImageRequest | None = None, *, reps: int = 2,
                        engines: Sequence[EngineSpec] | None = None,
                        on_progress: Callable[[int, int, str], None] | None = None) -> list[ImageBenchEntry]:
        """"Benchmark this model": the same request ``reps`` times on each engine (after one warm-up
        job that loads the model), recorded in the metrics store as ``source="bench"``.

        Engines that fail are reported with why; nothing is saved in the gallery.
        """
        req = (request or ImageRequest("a lighthouse on a cliff at dusk", width=512, height=512, steps=20,
                                       seed=42)).validate().with_seed()
        chosen = list(engines) if engines is not None else self.plan(model)
        out: list[ImageBenchEntry] = []
        total = len(chosen) * (reps + 1)
        done = 0
        for spec in chosen:
            times: list[float] = []
            steps: list[float] = []
            error = ""
            for rep in range(reps + 1):
                if on_progress is not None:
                    on_progress(done, total, f"{spec.label}: {'loading, warm-up' if rep == 0 else f'run {rep}/{reps}'}")
                try:
                    res = await self.generate(model, req, source="bench" if rep else "bench-warmup",
                                              engines=[spec], keep=False)
                except ImageError as exc:
                    error = exc.message
                    break
                finally:
                    done += 1
                if rep:
                    times.append(res.seconds_per_image)
                    if res.seconds_per_step:
                        steps.append(res.seconds_per_step)
            out.append(ImageBenchEntry(spec.id, spec.label, str(spec.backend), _median(times), _median(steps),
                                       len(times) * req.count, error))
        await self.unload()
        return out

    async def _generate(self, model: Path, request: ImageRequest, source: str,
                        engines: Sequence[EngineSpec] | None = None, keep: bool = True) -> ImageResult:
        plan = list(engines) if engines is not None else self.plan(model)
        if not plan:
            given = "; ".join(f"{k}: {v}" for k, v in self._failed.items())
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "No image engine can run here. ({reasons})"),
                               reasons=given)
                             if given else QT_TRANSLATE_NOOP("Core", "No image engine can run here."),
                             hint=QT_TRANSLATE_NOOP("Core", "Install an image engine: strata engines install "
                                                            "--images (or the Engines page)."))
        settings = await run_blocking(_launch_settings, model, self.threads, name="strata-image-model")
        notices: list[str] = []
        started = self._clock()
        waited = 0.0  # time spent on jobs that failed (not loading)
        self._job_model = model

        def failed_over(event: FailedOver) -> None:
            self._failed[event.failed.id] = event.reason
            message = (T(QT_TRANSLATE_NOOP("Core", "{reason} Switching to {engine} and sending the job again."),
                         reason=event.reason, engine=event.next.label) if event.during_job else
                       T(QT_TRANSLATE_NOOP("Core", "{reason} Switching to {engine}."), reason=event.reason,
                         engine=event.next.label))
            notices.append(message)
            self.events.emit(ImageNotice(message, None, event.failed.label, event.next.label))

        async def job(lease: Lease) -> ImageResult:
            nonlocal waited
            t0 = self._clock()
            load_seconds = t0 - started - waited
            try:
                return await self._run_job(lease, model, request, source, load_seconds, notices, keep)
            except ServerError:
                waited += self._clock() - t0
                raise

        try:
            ran = await run_along_plan(self.pool, plan, model, lambda _spec: settings, job, user=self.USER,
                                       may_fall_back=_image_fallback, activity="making the image",
                                       on_failover=failed_over)
        except ProcessEnded as exc:
            outcome = exc.outcome
            if outcome.kind is OutcomeKind.BAD_MODEL and outcome.exit_code is not None:
                raise ImageError(T(QT_TRANSLATE_NOOP("Core", "{model} is not an image model "
                                                             "stable-diffusion.cpp can load."),
                                   model=model.name),
                                 hint=QT_TRANSLATE_NOOP("Core", "Choose a Stable Diffusion model (GGUF or "
                                                                "safetensors)."),
                                 details=outcome.details()) from exc
            if outcome.kind is OutcomeKind.STOPPED:
                raise ImageError(QT_TRANSLATE_NOOP("Core", "The image engine was stopped.")) from exc
            why = describe_outcome(outcome, activity="making the image")
            self._failed[plan[-1].id] = why
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "No image engine could make the image. {reason}"),
                               reason=why),
                             hint=QT_TRANSLATE_NOOP("Core", "See the engine log; try a smaller size or "
                                                            "another model."),
                             details=outcome.details()) from exc
        return ran.value

    async def _run_job(self, lease: Lease, model: Path, request: ImageRequest, source: str,
                       load_seconds: float, notices: list[str], keep: bool = True) -> ImageResult:
        self._watch(lease.engine)
        jobs = SdJobs(self._http, lease.server)
        samplers = jobs.samplers
        if samplers and request.sampler not in samplers:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "The sampler '{sampler}' is not one this engine "
                                                         "knows."),
                               sampler=request.sampler),
                             hint=T(QT_TRANSLATE_NOOP("Core", "Choose one of: {samplers}"),
                                    samplers=", ".join(samplers)))
        self._batch = (request.count, request.steps)
        self._image = 1
        self._last_spp = None
        t0 = self._clock()
        job_id = await jobs.submit(request)
        try:
            result = await jobs.wait(job_id)
        except asyncio.CancelledError:
            # Withdraw a queued job; a generating one can only be stopped with its engine.
            if not await asyncio.shield(jobs.cancel_queued(job_id)):
                await asyncio.shield(self.pool.discard(lease.engine, "the image was cancelled"))
            raise
        seconds = self._clock() - t0
        engine = lease.spec
        if len(result.images) != request.count:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "The engine made {made} of {count} images."),
                               made=len(result.images), count=request.count),
                             details="\n".join(lease.server.log_tail()))
        self.events.emit(ImageProgress(engine.label, "saving", request.count, request.count,
                                       request.steps, request.steps, self._last_spp, 1.0))
        made = _made_size(result.images[0]) if result.images else None
        if made is not None and made != (request.width, request.height):
            # the engine rounds a side up to what the model takes (64 for some): say so, and keep the
            # size it really made with the image, so "Use these settings again" makes the same picture
            message = (f"{engine.label} made {made[0]}×{made[1]} instead of {request.width}×{request.height}: this "
                       f"model takes sizes in larger steps. Pick {made[0]}×{made[1]} to get exactly what you see.")
            log.info("image size adjusted by the engine: %s", message)
            notices.append(message)
            self.events.emit(ImageNotice(message, None, engine.label, ""))
            request = dataclasses.replace(request, width=made[0], height=made[1])
        per_image = seconds / request.count
        saved = tuple(self.gallery.save(png, request, seed=request.seed + n, model=model.name,
                                        engine=engine.label, seconds=per_image)
                      for n, png in enumerate(result.images)) if keep else ()
        spp = self._last_spp
        if self.records:
            self.records.emit(ImageRecord(model.name, engine.id, str(engine.backend), request.width, request.height,
                                          request.steps, request.count, spp, per_image, source))
        return ImageResult(saved, engine, seconds, max(0.0, load_seconds), spp, tuple(notices))

    # -- the engine's log (progress) ------------------------------------------------------------------
    def _on_pool_event(self, event: PoolEvent) -> None:
        if not isinstance(event, EngineStateChanged) or event.engine.kind != IMAGE:
            return
        if event.engine.model != self._job_model:
            return
        if event.state is ServerState.STARTING:
            self._watch(event.engine)  # its loading lines arrive before the job has a lease
            self.events.emit(ImageProgress(event.engine.spec.label, "loading"))

    def _watch(self, engine: PooledEngine) -> None:
        if self._watching is not None and self._watching[0] is engine:
            return
        self._unwatch()
        self._watching = (engine, engine.server.lines.subscribe(functools.partial(self._on_line, engine.spec.label)))

    def _unwatch(self) -> None:
        if self._watching is not None:
            self._watching[1]()
            self._watching = None

    def _on_line(self, label: str, line: str) -> None:
        step = parse_step(line)
        if step is not None:
            images, _steps = self._batch
            image = self._image
            self._last_spp = step.seconds_per_step
            done = (image - 1) * step.steps + step.step
            self.events.emit(ImageProgress(label, "sampling", image, images, step.step, step.steps,
                                           step.seconds_per_step, done / max(images * step.steps, 1)))
            return
        start = parse_image_start(line)
        if start is not None:
            self._image = start[0]
            return
        loaded = parse_load(line)
        if loaded is not None:
            self.events.emit(ImageProgress(label, "loading", step=loaded[0], steps=loaded[1]))

    async def unload(self) -> None:
        """Unload the image engines (frees the model's memory), once their jobs are done."""
        for engine in self.pool.engines(kind=IMAGE):
            await self.pool.unload(engine, "unloaded from Images")

    async def aclose(self) -> None:
        """Let go of the pool's events (the pool stops the engines). Safe twice."""
        self._unwatch()
        self._unsubscribe()


def _launch_settings(model: Path, threads: int | None) -> ServerSettings:
    """sd-server's launch settings for ``model`` (blocking: reads the model's header)."""
    try:
        check_regular(model)  # a FIFO would make sd-server (and the header read) wait forever
    except NotRegularFileError as exc:
        raise ImageError(T(QT_TRANSLATE_NOOP("Core", "The model file {path} cannot be used: {reason}"),
                           path=str(model), reason=exc.message), hint=exc.hint) from exc
    except OSError as exc:
        raise ImageError(T(QT_TRANSLATE_NOOP("Core", "The model file {path} does not exist."),
                           path=str(model)),
                         hint=QT_TRANSLATE_NOOP("Core", "Choose another image model.")) from exc
    return image_launch_settings(model, threads)


def _image_fallback(outcome: Outcome) -> bool:
    """Image jobs move on after any ending but a model sd.cpp cannot read or a stop (Cancel)."""
    bad_model = outcome.kind is OutcomeKind.BAD_MODEL and outcome.exit_code is not None
    return not bad_model and outcome.kind is not OutcomeKind.STOPPED


def _made_size(png: bytes) -> tuple[int, int] | None:
    """The size of an image the engine sent (None when its header cannot be read)."""
    try:
        return image_size(png)
    except ImageError:
        return None
