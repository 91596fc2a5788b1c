"""Run a command with one folder read-only, as a read-only disk or a locked-down profile would have it.

Tests run as root on the CI machines, and root writes through file permissions, so the folder is
made read-only the way a read-only disk is: a read-only bind mount, in a private user and mount
namespace (``unshare -rm``), which needs no privileges and leaves the rest of the machine alone.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

_SCRIPT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'


def run_read_only(folder: Path, argv: Sequence[str], env: Mapping[str, str],
                  timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``argv`` run with ``folder`` read-only; skips the test where namespaces are not allowed."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", _SCRIPT, str(folder), "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"this machine does not allow a private read-only mount: {probe.stderr.strip()}")
    return subprocess.run(["unshare", "-rm", "sh", "-c", _SCRIPT, str(folder), *argv], capture_output=True,
                          text=True, timeout=timeout, env=dict(env))
