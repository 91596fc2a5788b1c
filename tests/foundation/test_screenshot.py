"""A picture of the real window under Xvfb: every page is there and the image is not blank."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tests.support.xvfb import xcb_env, xvfb_display

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def _distinct_colours(path: Path) -> int:
    img = QImage(str(path))
    assert not img.isNull()
    seen = set()
    for y in range(0, img.height(), 7):
        for x in range(0, img.width(), 7):
            seen.add(img.pixel(x, y))
    return len(seen)


@pytest.mark.xvfb
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_main_window_screenshot(tmp_path: Path, theme: str) -> None:
    with xvfb_display() as display:
        res = subprocess.run([sys.executable, "-m", "tests.support.screenshot", str(tmp_path), theme],
                             capture_output=True, text=True, timeout=120, env=xcb_env(display),
                             cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout.strip().splitlines()[-1])
    assert data["pages"] == ["Chat", "Images", "Models", "Engines", "GPU", "Dashboard", "Network", "Settings",
                             "About"]
    assert len(data["files"]) == len(data["pages"])
    for f in map(Path, data["files"]):
        img = QImage(str(f))
        assert img.width() >= 800 and img.height() >= 500
        assert _distinct_colours(f) > 20, f"{f.name} looks blank"
    if os.environ.get("STRATA_KEEP_SCREENSHOTS", "1") == "1":
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for f in data["files"]:
            shutil.copy(f, ARTIFACTS / Path(f).name)
