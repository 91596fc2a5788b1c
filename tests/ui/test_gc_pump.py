"""Cyclic garbage is collected on the GUI thread only, however much a worker thread allocates."""

from __future__ import annotations

import gc
import threading

from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.ui.gc_pump import GcPump


def test_a_busy_worker_thread_never_runs_the_collector(qtbot: QtBot, qapp: QApplication) -> None:
    threads: set[int] = set()

    def note(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            threads.add(threading.get_ident())

    gc.enable()  # as the app has it before the pump starts
    pump = GcPump(qapp, interval_ms=20)
    gc.callbacks.append(note)
    try:
        def allocate() -> None:
            for _ in range(200):
                junk = [[] for _ in range(1000)]  # well past gen 0's threshold, many times over
                junk.append(junk)  # a cycle: only the collector frees it

        worker = threading.Thread(target=allocate)
        worker.start()
        worker.join()
        assert threads == set()  # the worker allocated 200,000 containers and never collected
        qtbot.waitUntil(lambda: bool(threads), timeout=2000)  # the pump collects them ...
        assert threads == {threading.get_ident()}  # ... on the GUI thread
    finally:
        gc.callbacks.remove(note)
        pump.stop()
        pump.deleteLater()
    assert gc.isenabled()
