"""Starts a private Xvfb display for screenshot tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def xvfb_display(width: int = 1280, height: int = 800) -> Iterator[str]:
    """Yield a ``:N`` DISPLAY served by a fresh Xvfb; stops it afterwards."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise FileNotFoundError("Xvfb is not installed (apt-get install xvfb)")
    for number in range(90, 140):
        if Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists():
            continue
        proc = subprocess.Popen([exe, f":{number}", "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if Path(f"/tmp/.X11-unix/X{number}").exists():
                break
            time.sleep(0.05)
        if proc.poll() is not None:
            continue
        try:
            yield f":{number}"
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return
    raise RuntimeError("no free X display number")


def xcb_env(display: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DISPLAY"] = display
    env["QT_QPA_PLATFORM"] = "xcb"
    return env
