"""Generating images through the composed core with the real CPU sd-server and a real model file."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil
import pytest

from strata_gui.core.base.errors import ImageError
from strata_gui.core.images import ImageNotice, ImageProgress, ImageRequest, read_settings
from strata_gui.core.images.png import image_size
from tests.images.conftest import CRASH_DURING_LOAD, MISSING_LIBRARY, fake_rocm_engine, image_core

pytestmark = pytest.mark.engine

TINY = ImageRequest("a red fox in the snow", negative_prompt="blurry", width=64, height=64, steps=2,
                    cfg_scale=5.0, sampler="euler", seed=1234)


def test_generate_saves_png_with_parameters_and_reports_each_step(sd_dir: Path, image_model: Path) -> None:
    events: list[object] = []

    async def scenario() -> tuple[object, list[object]]:
        async with image_core([(sd_dir, "cpu", "sd")]) as app:
            app.images.events.subscribe(events.append)
            result = await app.images.generate(image_model, TINY)
            runs = app.metrics.image_runs(model=image_model.name)
            return result, runs

    result, runs = asyncio.run(scenario())
    (img,) = result.images  # type: ignore[attr-defined]
    assert img.path.exists() and img.path.suffix == ".png"
    assert image_size(img.path.read_bytes()) == (64, 64)
    settings = read_settings(img.path)
    assert settings.request.prompt == "a red fox in the snow"
    assert settings.request.negative_prompt == "blurry"
    assert (settings.request.steps, settings.request.seed, settings.request.sampler) == (2, 1234, "euler")
    assert settings.request.size == "64x64" and settings.model == image_model.name
    steps = [(e.step, e.steps) for e in events if isinstance(e, ImageProgress) and e.phase == "sampling"]
    assert steps == [(1, 2), (2, 2)]
    assert any(isinstance(e, ImageProgress) and e.phase == "loading" for e in events)
    (run,) = runs  # type: ignore[misc]
    assert run.engine == result.engine.id and run.steps == 2 and run.seconds_per_image > 0  # type: ignore[attr-defined]
    assert run.seconds_per_step is not None and run.seconds_per_step > 0  # type: ignore[attr-defined]


def _run_with_events(sd_dir: Path, image_model: Path, engines: list[tuple[Path, str | None, str]],
                     request: ImageRequest = TINY) -> tuple[object, list[object], dict[str, str]]:
    events: list[object] = []

    async def scenario() -> tuple[object, dict[str, str]]:
        async with image_core(engines) as app:
            app.images.events.subscribe(events.append)
            result = await app.images.generate(image_model, request)
            return result, app.images.given_up()

    result, given_up = asyncio.run(scenario())
    return result, events, given_up


def test_rocm_build_missing_a_library_falls_back_to_cpu_and_says_so(tmp_path: Path, sd_dir: Path,
                                                                    image_model: Path) -> None:
    rocm = fake_rocm_engine(tmp_path / "sd-rocm", MISSING_LIBRARY)
    result, events, given_up = _run_with_events(sd_dir, image_model, [(sd_dir, "cpu", "sd"), (rocm, None, "rocm")])
    notices = [e for e in events if isinstance(e, ImageNotice)]
    assert len(notices) == 1
    assert "libamdhip64.so.7" in notices[0].message and "CPU" in notices[0].next_engine
    assert notices[0].failed_engine.startswith("ROCm")
    assert str(result.engine.backend) == "cpu"  # type: ignore[attr-defined]
    assert result.notices == (notices[0].message,)  # type: ignore[attr-defined]
    assert read_settings(result.images[0].path).request.seed == 1234  # type: ignore[attr-defined]
    assert [k for k in given_up if "rocm" in k]


def test_rocm_build_crashing_while_loading_falls_back(tmp_path: Path, sd_dir: Path, image_model: Path) -> None:
    rocm = fake_rocm_engine(tmp_path / "sd-rocm", CRASH_DURING_LOAD)
    result, events, _ = _run_with_events(sd_dir, image_model, [(sd_dir, "cpu", "sd"), (rocm, None, "rocm")])
    (notice,) = [e for e in events if isinstance(e, ImageNotice)]
    assert "crashed while loading" in notice.message and "SIGSEGV" in notice.message
    assert result.images and str(result.engine.backend) == "cpu"  # type: ignore[attr-defined]


def test_killing_sd_server_mid_job_finishes_the_job_on_the_next_engine(sd_dir: Path, image_model: Path) -> None:
    events: list[object] = []
    killed: list[int] = []

    async def scenario() -> tuple[object, str]:
        async with image_core([(sd_dir, "cpu", "sd-a"), (sd_dir, "cpu", "sd-b")]) as app:
            first = app.images.plan(image_model)[0].id

            def on_event(e: object) -> None:
                events.append(e)
                engine = app.images.loaded_engine
                if (isinstance(e, ImageProgress) and e.phase == "sampling" and not killed and engine is not None
                        and engine.pid is not None):
                    killed.append(engine.pid)
                    os.kill(engine.pid, signal.SIGKILL)  # as a user would with a task manager

            app.images.events.subscribe(on_event)
            request = ImageRequest("a lighthouse", width=64, height=64, steps=3, sampler="euler", seed=7)
            result = await app.images.generate(image_model, request)
            return result, first

    result, first = asyncio.run(scenario())
    assert killed
    (notice,) = [e for e in events if isinstance(e, ImageNotice)]
    assert "SIGKILL" in notice.message and "sending the job again" in notice.message
    assert result.engine.id != first  # type: ignore[attr-defined]
    (img,) = result.images  # type: ignore[attr-defined]
    assert read_settings(img.path).request.seed == 7


def test_cancel_mid_job_frees_the_engine_and_the_next_job_runs(sd_dir: Path, image_model: Path) -> None:
    async def scenario() -> tuple[bool, object, object]:
        async with image_core([(sd_dir, "cpu", "sd")]) as app:
            started = asyncio.Event()

            def on_event(e: object) -> None:
                if isinstance(e, ImageProgress) and e.phase == "sampling":
                    started.set()

            app.images.events.subscribe(on_event)
            slow = ImageRequest("a slow one", width=64, height=64, steps=50, sampler="euler", seed=3)
            task = asyncio.create_task(app.images.generate(image_model, slow))
            await asyncio.wait_for(started.wait(), 120)
            pid = app.images.loaded_engine.pid if app.images.loaded_engine else None
            task.cancel()
            cancelled = False
            try:
                await task
            except asyncio.CancelledError:
                cancelled = True
            freed = app.images.engine is None and pid is not None and not psutil.pid_exists(pid)
            result = await app.images.generate(image_model, TINY)
            return cancelled and freed, result, len(app.images.gallery.images())

    ok, result, count = asyncio.run(scenario())
    assert ok
    assert len(result.images) == 1  # type: ignore[attr-defined]
    assert count == 1  # the cancelled job left nothing in the gallery


def test_a_text_model_is_a_bad_model_not_an_engine_fault(sd_dir: Path, test_model: Path) -> None:
    events: list[object] = []

    async def scenario() -> tuple[str, dict[str, str]]:
        async with image_core([(sd_dir, "cpu", "sd-a"), (sd_dir, "cpu", "sd-b")]) as app:
            app.images.events.subscribe(events.append)
            try:
                await app.images.generate(test_model, TINY)
            except ImageError as exc:
                return exc.message, app.images.given_up()
            return "", {}

    message, given_up = asyncio.run(scenario())
    assert "is not an image model stable-diffusion.cpp can load" in message
    assert given_up == {} and not [e for e in events if isinstance(e, ImageNotice)]  # no engine blamed


def test_a_batch_saves_each_image_with_its_own_seed_and_reports_which_image(sd_dir: Path, image_model: Path) -> None:
    events: list[object] = []

    async def scenario() -> object:
        async with image_core([(sd_dir, "cpu", "sd")]) as app:
            app.images.events.subscribe(events.append)
            return await app.images.generate(image_model, ImageRequest("two boats", width=64, height=64, steps=1,
                                                                       sampler="euler", seed=500, count=2))

    result = asyncio.run(scenario())
    assert [read_settings(i.path).request.seed for i in result.images] == [500, 501]  # type: ignore[attr-defined]
    sampling = [(e.image, e.images, e.step) for e in events if isinstance(e, ImageProgress) and e.phase == "sampling"]
    assert sampling == [(1, 2, 1), (2, 2, 1)]
    fractions = [e.fraction for e in events if isinstance(e, ImageProgress) and e.phase == "sampling"]
    assert fractions == [0.5, 1.0]


def test_a_size_the_engine_rounds_up_is_said_and_kept_with_the_image(sd_dir: Path, image_model: Path) -> None:
    import dataclasses

    odd = dataclasses.replace(TINY, width=64, height=72)  # a multiple of 8 that this model rounds up
    result, events, _ = _run_with_events(sd_dir, image_model, [(sd_dir, "cpu", "sd")], odd)
    (img,) = result.images  # type: ignore[attr-defined]
    made = image_size(img.path.read_bytes())
    assert made != (64, 72)  # the pinned sd-server rounds this model's sides up to a multiple of 64
    notes = [e.message for e in events if isinstance(e, ImageNotice)]
    assert any(f"made {made[0]}×{made[1]} instead of 64×72" in n for n in notes), notes
    assert read_settings(img.path).request.size == f"{made[0]}x{made[1]}"  # "again" makes what was seen
    assert any("instead of 64×72" in n for n in result.notices)  # type: ignore[attr-defined]
