"""Time from process start to the first shown main window: Strata vs a minimal PySide6 window.

Both are started as fresh processes, interleaved, N times each; prints medians and the ratio
(goal: <= 1.3x). Also prints when the window is usable ("ready": every sidebar entry there, the
chat page built and painted; the other pages are built on their first visit), and when every
page would be built had the user visited them all ("built"). Run: .venv/bin/python bench/startup.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

MINIMAL = """
import sys, time
from PySide6.QtWidgets import QApplication, QMainWindow, QLabel
app = QApplication(sys.argv)
w = QMainWindow(); w.setCentralWidget(QLabel("hello")); w.resize(1180, 760); w.show()
app.processEvents()
print(f"shown-at {time.time():.6f}", flush=True)
"""


def _measure(cmd: list[str], env: dict[str, str], mark: str = "shown-at") -> float:
    return _measure_marks(cmd, env)[mark]


def _measure_marks(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    return {line.split()[0]: float(line.split()[1]) - t0 for line in out.splitlines() if line.endswith(tuple("0123456789"))
            and line.split()[0].endswith("-at")}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    env["STRATA_HOME"] = tempfile.mkdtemp(prefix="strata-bench-")
    # Users run from bytecode (pip compiles on install, PyInstaller bundles .pyc): a shell with
    # PYTHONDONTWRITEBYTECODE would make every run compile every module. Cache it outside the tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(env["STRATA_HOME"], "pycache")
    strata = [sys.executable, "-m", "strata_gui", "--exit-when-shown"]
    minimal = [sys.executable, "-c", MINIMAL]
    _measure(strata, env), _measure(minimal, env)  # warm the OS file cache
    a, b, ready, built = [], [], [], []
    for _ in range(n):
        marks = _measure_marks(strata, env)
        a.append(marks["shown-at"])
        ready.append(marks["ready-at"])
        built.append(marks.get("built-at", marks["ready-at"]))
        b.append(_measure(minimal, env))
    ma, mb, mr = statistics.median(a), statistics.median(b), statistics.median(ready)
    print(f"minimal PySide6 window: median {mb * 1000:.0f} ms  (n={n})")
    print(f"Strata main window:     median {ma * 1000:.0f} ms  (n={n})")
    print(f"ratio Strata/minimal:   {ma / mb:.2f}x  (goal <= 1.3x)")
    print(f"Strata all pages ready: median {mr * 1000:.0f} ms  ({mr / mb:.2f}x the minimal window; goal <= 400 ms)")
    mbuilt = statistics.median(built)
    print(f"every page built:       median {mbuilt * 1000:.0f} ms  (if all were visited at once)")


if __name__ == "__main__":
    main()
