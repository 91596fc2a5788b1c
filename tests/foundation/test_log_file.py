"""The log file on a full disk: one line says so, not a "--- Logging error ---" traceback per line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import logging, sys
from pathlib import Path
from strata_gui.core.platform.logging_setup import configure_logging
configure_logging(Path(sys.argv[1]), to_stderr=True)
for i in range(20):
    logging.getLogger("strata_gui.test").info("line %d", i)
print("still running")
"""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device that is always full)")
def test_a_full_disk_under_the_log_is_said_once(tmp_path: Path) -> None:
    log_file = tmp_path / "strata.log"
    log_file.symlink_to("/dev/full")  # every write fails with ENOSPC, as on a full disk
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(log_file)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "still running"
    assert "Logging error" not in res.stderr and "Traceback" not in res.stderr
    assert res.stderr.count("cannot be written (No space left on device)") == 1, res.stderr
