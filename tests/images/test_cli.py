"""`strata image` end to end: the real CLI entry, the composed core, the real sd-server and model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import ImageError
from strata_gui.core.images import read_settings
from strata_gui.core.images.png import image_size
from tests.images.conftest import MISSING_LIBRARY, fake_rocm_engine


@pytest.mark.engine
def test_strata_image_writes_the_png_and_reports_progress(sd_dir: Path, image_model: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "fox.png"
    code = run_command(["image", "a fox", "--model", str(image_model), "--engine", str(sd_dir), "--out", str(out),
                        "--steps", "2", "--size", "64x64", "--seed", "42", "--cfg", "6", "--sampler", "euler",
                        "--negative", "rain"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == str(out)
    assert image_size(out.read_bytes()) == (64, 64)
    req = read_settings(out).request
    assert (req.prompt, req.negative_prompt, req.seed, req.steps, req.cfg_scale, req.sampler) == \
        ("a fox", "rain", 42, 2, 6.0, "euler")
    assert "step 1/2" in captured.err and "step 2/2" in captured.err
    assert "engine: CPU (your build: bin): you chose this engine folder" in captured.err


@pytest.mark.engine
def test_json_and_settings_again_and_the_fallback_note(sd_dir: Path, image_model: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    first = tmp_path / "first.png"
    assert run_command(["image", "a boat", "-m", str(image_model), "-e", str(sd_dir), "-o", str(first),
                        "--steps", "1", "--size", "64x64", "--seed", "5"]) == 0
    capsys.readouterr()
    rocm = fake_rocm_engine(tmp_path / "rocm-sd", MISSING_LIBRARY)
    again = tmp_path / "again.png"
    # "Use these settings again" from the first PNG, with the seed changed; a broken ROCm build first.
    code = run_command(["image", "-m", str(image_model), "-e", str(rocm), "-e", str(sd_dir), "-o", str(again),
                        "--settings-from", str(first), "--seed", "6", "--json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 0 and data["out"] == [str(again)]
    assert data["request"]["prompt"] == "a boat" and data["request"]["seed"] == 6 and data["request"]["steps"] == 1
    assert data["backend"] == "cpu" and data["seconds_per_image"] > 0
    assert len(data["notices"]) == 1 and "libamdhip64.so.7" in data["notices"][0]
    assert "note: " in captured.err and "Switching to CPU" in captured.err
    assert read_settings(again).request.seed == 6


def test_bad_size_is_refused_before_any_engine_starts(image_model: Path) -> None:
    with pytest.raises(ImageError, match="not an image size"):
        run_command(["image", "x", "-m", str(image_model), "--size", "big"])
    with pytest.raises(ImageError, match="width 65"):
        run_command(["image", "x", "-m", str(image_model), "--size", "65x64"])
