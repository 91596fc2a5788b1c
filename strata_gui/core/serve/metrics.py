"""``/metrics``: the local API in Prometheus' text format.

Why ``prometheus_client``: the maintained reference library of the format (escaping, histogram
buckets with ``le`` and ``+Inf``, ``_count``/``_sum``, HELP and TYPE lines); writing the format by
hand is the hand-written protocol code the project avoids. Each server has a registry of its own
(never the library's global one), fed by the :class:`~strata_gui.core.serve.activity.Activity`
entries as requests end; what changes without a request (loaded models, their memory, the queue)
is read when Prometheus scrapes, by a collector.

Series, per model and API (``model``, ``api`` labels):

- ``strata_requests_total`` (also by ``status``), ``strata_request_duration_seconds``,
  ``strata_time_to_first_token_seconds``, ``strata_queue_wait_seconds``,
  ``strata_prompt_tokens`` and ``strata_output_tokens`` (histograms of tokens per request);
- ``strata_requests_in_flight``, ``strata_queue_depth`` (requests waiting for an engine now);
- ``strata_loaded_models``, ``strata_model_memory_bytes`` and ``strata_model_gpu_memory_bytes``
  (``model``, ``engine`` labels).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from strata_gui.core.serve.activity import ActivityEntry
from strata_gui.core.serve.router import LoadedModel

CONTENT_TYPE = CONTENT_TYPE_LATEST
_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_TOKENS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)
_LABELS = ("model", "api")


class _Live(Collector):
    """What is true at scrape time: requests running and waiting, models loaded and their memory."""

    def __init__(self, loaded: Callable[[], Sequence[LoadedModel]], in_flight: Callable[[], int],
                 waiting: Callable[[], int]) -> None:
        self._loaded, self._in_flight, self._waiting = loaded, in_flight, waiting

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("strata_requests_in_flight", "Model requests being answered now.",
                                value=self._in_flight())
        yield GaugeMetricFamily("strata_queue_depth", "Requests waiting for an engine or a slot now.",
                                value=self._waiting())
        loaded = list(self._loaded())
        yield GaugeMetricFamily("strata_loaded_models", "Models held by running engines.", value=len(loaded))
        memory = GaugeMetricFamily("strata_model_memory_bytes", "Memory a loaded model holds (weights and context).",
                                   labels=["model", "engine"])
        gpu = GaugeMetricFamily("strata_model_gpu_memory_bytes", "The part of it in GPU memory.",
                                labels=["model", "engine"])
        for m in loaded:
            memory.add_metric([m.model.id, m.engine], m.memory_bytes)
            gpu.add_metric([m.model.id, m.engine], m.gpu_memory_bytes)
        yield memory
        yield gpu


class ServerMetrics:
    """The Prometheus series of one server.

    Args:
        loaded: The models running engines hold (the router's ``loaded``).
        in_flight: Model requests running now.
        waiting: Requests waiting for an engine now.
    """

    def __init__(self, loaded: Callable[[], Sequence[LoadedModel]], in_flight: Callable[[], int],
                 waiting: Callable[[], int]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.requests = Counter("strata_requests", "Model requests answered.", [*_LABELS, "status"], registry=r)
        self.duration = Histogram("strata_request_duration_seconds", "From a request's arrival to its last byte.",
                                  _LABELS, registry=r, buckets=_SECONDS)
        self.ttft = Histogram("strata_time_to_first_token_seconds", "Time to the first generated token.",
                              _LABELS, registry=r, buckets=_SECONDS)
        self.wait = Histogram("strata_queue_wait_seconds", "Time waiting for an engine or a slot.",
                              _LABELS, registry=r, buckets=_SECONDS)
        self.prompt_tokens = Histogram("strata_prompt_tokens", "Prompt tokens per request.", _LABELS, registry=r,
                                       buckets=_TOKENS)
        self.output_tokens = Histogram("strata_output_tokens", "Generated tokens per request.", _LABELS, registry=r,
                                       buckets=_TOKENS)
        r.register(_Live(loaded, in_flight, waiting))

    def observe(self, entry: ActivityEntry) -> None:
        """Count one finished request."""
        labels = (entry.model or "none", entry.api)
        self.requests.labels(*labels, str(entry.status)).inc()
        self.duration.labels(*labels).observe(entry.duration_s)
        if entry.ttft_s is not None:
            self.ttft.labels(*labels).observe(entry.ttft_s)
        if entry.wait_s is not None:
            self.wait.labels(*labels).observe(entry.wait_s)
        if entry.prompt_tokens is not None:
            self.prompt_tokens.labels(*labels).observe(entry.prompt_tokens)
        if entry.output_tokens is not None:
            self.output_tokens.labels(*labels).observe(entry.output_tokens)

    def exposition(self) -> bytes:
        """The text Prometheus scrapes."""
        return bytes(generate_latest(self.registry))
