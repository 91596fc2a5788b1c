"""Python's cyclic garbage collector, run on the GUI thread only.

Left automatic, the collector runs in whichever thread happens to allocate when a threshold is
crossed: a worker reading a GGUF header, the telemetry sampler, an HTTP thread. A cycle holding a
Qt object (a widget and a lambda connected to its signal) collected there destroys the C++ object
on the wrong thread: "QObject::~QObject: Timers cannot be stopped from another thread", and at
worst a crash in the next event the GUI thread handles. So automatic collection stays off and this
pump does what it would do, on a timer of the GUI thread, with the same thresholds.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


def collect_due() -> int | None:
    """Collect the generation Python's own thresholds say is due (None when none is): what the
    automatic collector would have done by now."""
    c0, c1, c2 = gc.get_count()
    t0, t1, t2 = gc.get_threshold()
    if c0 < t0:
        return None
    generation = 2 if c2 >= t2 else 1 if c1 >= t1 else 0
    gc.collect(generation)
    return generation


class GcPump(QObject):
    """Turns automatic collection off and collects from the GUI thread every ``interval_ms``.

    :meth:`stop` (or the parent's destruction) turns automatic collection back on.
    """

    def __init__(self, parent: QObject | None = None, interval_ms: int = 500) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(collect_due)
        gc.disable()
        self._timer.start()
        self.destroyed.connect(gc.enable)

    def stop(self) -> None:
        self._timer.stop()
        gc.enable()
