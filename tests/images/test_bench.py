""""Benchmark this model" for an image model, through the dashboards' service and `strata bench --images`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.config.services import build_services
from tests.images.conftest import MISSING_LIBRARY, fake_rocm_engine


@pytest.mark.engine
def test_bench_images_measures_each_engine_and_keeps_no_images(sd_dir: Path, image_model: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    rocm = fake_rocm_engine(tmp_path / "rocm-sd", MISSING_LIBRARY)
    code = run_command(["bench", "--images", "--model", str(image_model), "--engine", str(rocm), "--engine",
                        str(sd_dir), "--reps", "1", "--size", "64x64", "--steps", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    (cpu,) = data["engines"]  # the broken ROCm build measured nothing
    assert cpu["backend"] == "cpu" and cpu["batches"] == 1 and cpu["images"] == 1
    assert cpu["seconds_per_image"] > 0 and cpu["seconds_per_step"] > 0
    paths = build_services().paths
    assert not (paths.data_dir / "images").exists() or not any((paths.data_dir / "images").iterdir())
