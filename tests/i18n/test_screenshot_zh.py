"""The real window in Simplified Chinese under Xvfb: every page is in Chinese and rendered (CJK font)."""

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

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "screenshots"


def _distinct_colours(path: Path) -> int:
    img = QImage(str(path))
    assert not img.isNull()
    return len({img.pixel(x, y) for y in range(0, img.height(), 7) for x in range(0, img.width(), 7)})


@pytest.mark.xvfb
def test_main_window_screenshot_in_chinese(tmp_path: Path) -> None:
    with xvfb_display() as display:
        res = subprocess.run([sys.executable, "-m", "tests.support.screenshot", str(tmp_path), "light", "zh_CN"],
                             capture_output=True, text=True, timeout=120, env=xcb_env(display), cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout.strip().splitlines()[-1])
    assert {"聊天", "模型", "引擎", "GPU", "仪表盘", "设置", "关于"} <= set(data["pages"])
    assert not {"Chat", "Models", "Engines", "Dashboard", "Settings", "About"} & set(data["pages"])
    assert len(data["files"]) == len(data["pages"])
    for f in map(Path, data["files"]):
        assert f.name.endswith("-zh_CN-light.png")
        img = QImage(str(f))
        assert img.width() >= 800 and img.height() >= 500
        assert _distinct_colours(f) > 20, f"{f.name} looks blank"
    if os.environ.get("STRATA_KEEP_SCREENSHOTS", "1") == "1":
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for f in data["files"]:
            shutil.copy(f, ARTIFACTS / Path(f).name)
