"""The real app start-up (`strata --self-test`) shows the language from Settings or the system locale."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from strata_gui.core.config.services import build_services


def _self_test(**env: str) -> str:
    full = dict(os.environ, QT_QPA_PLATFORM="offscreen", **env)
    for var in ("LANGUAGE", "LC_MESSAGES"):
        full.pop(var, None)
    res = subprocess.run([sys.executable, "-m", "strata_gui", "--self-test"], capture_output=True,
                         text=True, timeout=120, env=full)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


@pytest.mark.parametrize(("setting", "locale", "chinese"), [
    ("zh_CN", "C.UTF-8", True),  # the Settings choice wins over an English system
    ("system", "zh_CN.UTF-8", True),  # "Follow system" on a Chinese desktop
    ("en", "zh_CN.UTF-8", False),  # English chosen on a Chinese desktop
])
def test_startup_language(setting: str, locale: str, chinese: bool) -> None:
    settings_file = build_services().paths.settings_file
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    settings_file.write_text(json.dumps({"language": setting}))
    out = _self_test(LC_ALL=locale, LANG=locale)
    titles = ("聊天", "模型", "引擎", "仪表盘", "设置", "关于") if chinese else \
        ("Chat", "Models", "Engines", "Dashboard", "Settings", "About")
    for title in titles:
        assert f"visited {title}" in out, out
