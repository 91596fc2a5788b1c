"""Starts a private Xvfb display for screenshot tests."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def xvfb_display(width: int = 1280, height: int = 800) -> Iterator[str]:
    """Yield a ``:N`` DISPLAY served by a fresh Xvfb; stops it afterwards.

    Xvfb picks the display number itself (``-displayfd``) and writes it once it listens: tests run
    in parallel (pytest-xdist workers) never race for a number, and nothing polls for the socket.
    """
    exe = shutil.which("Xvfb")
    if exe is None:
        raise FileNotFoundError("Xvfb is not installed (apt-get install xvfb)")
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen([exe, "-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x24",
                                 "-nolisten", "tcp"], pass_fds=(write_end,),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(write_end)
    try:
        number = _read_display_number(read_end, proc, timeout=30)
        yield f":{number}"
    finally:
        os.close(read_end)
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _read_display_number(fd: int, proc: subprocess.Popen[bytes], timeout: float) -> int:
    """The display number Xvfb writes (a line) once it listens; raises if it exits or takes too long."""
    got = b""
    deadline = time.monotonic() + timeout
    while not got.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("Xvfb did not say which display it serves")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 64)
            if not chunk:  # its end closed without a number: it exited
                raise RuntimeError(f"Xvfb exited ({proc.wait()}) before serving a display")
            got += chunk
    return int(got.strip())


def xcb_env(display: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DISPLAY"] = display
    env["QT_QPA_PLATFORM"] = "xcb"
    return env
