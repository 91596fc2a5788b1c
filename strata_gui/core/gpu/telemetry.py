"""Background telemetry: one sampling thread, a ring buffer of samples per GPU.

The UI never samples: it reads :meth:`TelemetrySampler.latest` / :meth:`history`, which only
take a lock and copy a few small objects.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Protocol

from strata_gui.core.base.events import Listeners
from strata_gui.core.gpu.model import GpuSample

log = logging.getLogger(__name__)


class TelemetrySource(Protocol):
    """Reads one sample per GPU key (blocking; runs on the sampler thread)."""

    def sample(self) -> dict[str, GpuSample]:
        """One reading per GPU; missing sensors are None."""


class TelemetrySampler:
    """Samples a :class:`TelemetrySource` every ``interval`` seconds on a daemon thread.

    Args:
        source: What to read.
        interval: Seconds between samples (1 Hz by default).
        history: Samples kept per GPU (ring buffer).

    Its :attr:`samples` listeners are called on the sampler thread after each sample with the
    readings per GPU (keep them cheap; the UI reads :meth:`latest` on a timer instead).
    """

    def __init__(
        self,
        source: TelemetrySource,
        interval: float = 1.0,
        history: int = 120,
    ) -> None:
        self.source = source
        self.interval = interval
        self._history_len = history
        self.samples: Listeners[dict[str, GpuSample]] = Listeners()
        self._buffers: dict[str, deque[GpuSample]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples_taken = 0
        self.last_error: str | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the sampling thread (no-op when already running)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="strata-gpu-telemetry", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop and join the thread."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def sample_once(self) -> dict[str, GpuSample]:
        """Take one sample now (on the caller's thread) and record it."""
        try:
            samples = self.source.sample()
        except Exception as exc:  # a flaky sensor must not kill the sampler
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("GPU telemetry sample failed: %s", self.last_error)
            return {}
        with self._lock:
            for key, s in samples.items():
                buf = self._buffers.get(key)
                if buf is None:
                    buf = self._buffers[key] = deque(maxlen=self._history_len)
                buf.append(s)
            self.samples_taken += 1
        self.samples.emit(samples)  # a broken listener is logged; it never ends the sampler thread
        return samples

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.interval)

    def latest(self) -> dict[str, GpuSample]:
        with self._lock:
            return {k: b[-1] for k, b in self._buffers.items() if b}

    def history(self, key: str) -> list[GpuSample]:
        with self._lock:
            return list(self._buffers.get(key, ()))
