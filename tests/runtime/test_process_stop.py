"""Stopping a process never hangs: not when something it started outside its tree keeps its output
open, and not when psutil cannot see its tree (denied on a locked-down Windows account)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from strata_gui.core.runtime import process as process_module
from strata_gui.core.runtime.outcome import OutcomeKind, Phase
from strata_gui.core.runtime.process import ManagedProcess

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses sh and POSIX signals")

# Starts a helper that outlives it and inherits its output: `sh -c 'sleep &'` leaves the sleep orphaned
# (outside the process tree) with the same stdout. With `keep`, the helper stays its own child instead.
SCRIPT = textwrap.dedent('''
    import subprocess, sys, time
    if sys.argv[1] == "orphan":
        subprocess.run(["sh", "-c", "sleep 120 & echo helper $!"], check=True)
    else:
        child = subprocess.Popen(["sleep", "120"])
        print("helper", child.pid, flush=True)
    print("ready", flush=True)
    time.sleep(120)
''')


def _stop_with_helper(tmp_path: Path, how: str) -> tuple[ManagedProcess, list[str]]:
    script = tmp_path / "engine.py"
    script.write_text(SCRIPT)
    lines: list[str] = []
    helpers: list[int] = []

    async def scenario() -> ManagedProcess:
        proc = ManagedProcess([sys.executable, str(script), how], subject="CPU engine")
        proc.lines.subscribe(lines.append)
        await proc.start()
        for _ in range(500):
            if "ready" in lines:
                break
            await asyncio.sleep(0.02)
        helpers.extend(int(line.split()[1]) for line in lines if line.startswith("helper "))
        assert "ready" in lines and helpers, lines
        # Without a bound the first case waits for the helper (120 s), the second forever.
        await asyncio.wait_for(proc.stop(timeout=2.0), 30)
        return proc

    try:
        return asyncio.run(scenario()), lines
    finally:
        for pid in helpers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_stop_returns_when_a_helper_outside_the_tree_holds_the_output(tmp_path: Path) -> None:
    proc, _ = _stop_with_helper(tmp_path, "orphan")
    assert proc.outcome is not None
    assert (proc.outcome.kind, proc.outcome.phase) == (OutcomeKind.STOPPED, Phase.STOPPING)
    assert proc.returncode is not None


def test_stop_ends_the_process_when_psutil_cannot_see_its_tree(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_module, "_tree", lambda _pid: [])  # as psutil.AccessDenied leaves it
    proc, _ = _stop_with_helper(tmp_path, "keep")
    assert proc.outcome is not None
    assert (proc.outcome.kind, proc.outcome.phase) == (OutcomeKind.STOPPED, Phase.STOPPING)
    assert proc.returncode is not None
