"""Guards against Qt bindings that leak references to None/True (PySide6 6.12.0 on Python 3.11
aborts the process after a few thousand calls: `Fatal Python error: none_dealloc`)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from PySide6.QtCore import QObject, QPointF, Signal

class Emitter(QObject):
    number = Signal(int)
    plain = Signal()

p = QPointF()
e = Emitter()
e.number.connect(lambda n: None)
none0, true0 = sys.getrefcount(None), sys.getrefcount(True)
for _ in range(2000):
    p.setX(1.0)
    e.number.emit(1)
    e.plain.emit()
print(sys.getrefcount(None) - none0, sys.getrefcount(True) - true0)
"""


def test_void_calls_and_signal_emits_keep_refcounts() -> None:
    res = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    none_drift, true_drift = (int(x) for x in res.stdout.split())
    # A few references may come and go; thousands lost means a broken binding.
    assert abs(none_drift) < 100 and abs(true_drift) < 100, res.stdout
