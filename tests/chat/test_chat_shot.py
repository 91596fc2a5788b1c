"""Pictures of thinking, tool calls and a JSON reply in the real app under Xvfb (the README's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tests.support.xvfb import xcb_env, xvfb_display

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts" / "screenshots"


@pytest.mark.xvfb
def test_chat_feature_screenshots(tmp_path: Path) -> None:
    with xvfb_display(1280, 860) as display:
        res = subprocess.run([sys.executable, "-m", "tests.support.chat_shot", str(tmp_path), "light"],
                             capture_output=True, text=True, timeout=180, env=xcb_env(display), cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    files = [Path(line) for line in res.stdout.split()]
    assert [f.name for f in files] == ["chat-approval-light.png", "chat-tools-light.png", "chat-json-light.png"]
    for f in files:
        img = QImage(str(f))
        assert img.width() >= 1200 and img.height() >= 800
        colours = {img.pixel(x, y) for y in range(0, img.height(), 7) for x in range(0, img.width(), 7)}
        assert len(colours) > 20, f"{f.name} looks blank"
    if os.environ.get("STRATA_KEEP_SCREENSHOTS", "1") == "1":
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy(f, ARTIFACTS / f.name)
