"""Generating images through the composed core with the real CPU sd-server and a real model file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from strata_gui.core.images import ImageProgress, ImageRequest, read_settings
from strata_gui.core.images.png import image_size
from tests.images.conftest import image_core

TINY = ImageRequest("a red fox in the snow", negative_prompt="blurry", width=64, height=64, steps=2,
                    cfg_scale=5.0, sampler="euler", seed=1234)


def test_generate_saves_png_with_parameters_and_reports_each_step(sd_dir: Path, image_model: Path) -> None:
    events: list[object] = []

    async def scenario() -> tuple[object, list[object]]:
        async with image_core([(sd_dir, "cpu", "sd")]) as app:
            app.images.subscribe(events.append)
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
