"""``/metrics``: the local API in Prometheus' text format (version 0.0.4).

Written here rather than with ``prometheus_client``: that library formats every sample on every
scrape (escaping, float formatting) at ~15 µs a line, so a server with 20 models used through
three APIs (some 4,500 lines) took 55-80 ms a scrape on this project's reference machine, against
a goal of 20 ms (bench/metrics_scrape.py). The format is small (a HELP and a TYPE line per family,
one ``name{labels} value`` line per sample, histograms as cumulative ``_bucket`` lines with ``le``
and ``+Inf``, ``_sum``, ``_count``), and here each (model, API) series keeps its text until a
request changes it, so a scrape re-renders only the series used since the last one. The tests
read every scrape with ``prometheus_client``'s own parser.

Series, per model and API (``model``, ``api`` labels):

- ``strata_requests_total`` (also by ``status``), ``strata_request_duration_seconds``,
  ``strata_time_to_first_token_seconds``, ``strata_queue_wait_seconds``,
  ``strata_prompt_tokens`` and ``strata_output_tokens`` (histograms of tokens per request);
- ``strata_requests_in_flight``, ``strata_queue_depth`` (requests waiting for an engine now);
- ``strata_loaded_models``, ``strata_model_memory_bytes`` and ``strata_model_gpu_memory_bytes``
  (``model``, ``engine`` labels), read at scrape time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from strata_gui.core.serve.activity import ActivityEntry
from strata_gui.core.serve.router import LoadedModel

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TOKENS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)


@dataclass(frozen=True)
class Family:
    """One metric family: its name, help text and type."""

    name: str
    help: str
    kind: str  # "counter", "gauge" or "histogram"

    def head(self) -> str:
        text = self.help.replace("\\", "\\\\").replace("\n", "\\n")
        return f"# HELP {self.name} {text}\n# TYPE {self.name} {self.kind}\n"


REQUESTS = Family("strata_requests_total", "Model requests answered.", "counter")
HISTOGRAMS = (  # (family, buckets, the entry's field)
    (Family("strata_request_duration_seconds", "From a request's arrival to its last byte.", "histogram"),
     SECONDS, "duration_s"),
    (Family("strata_time_to_first_token_seconds", "Time to the first generated token.", "histogram"),
     SECONDS, "ttft_s"),
    (Family("strata_queue_wait_seconds", "Time waiting for an engine or a slot.", "histogram"), SECONDS, "wait_s"),
    (Family("strata_prompt_tokens", "Prompt tokens per request.", "histogram"), TOKENS, "prompt_tokens"),
    (Family("strata_output_tokens", "Generated tokens per request.", "histogram"), TOKENS, "output_tokens"),
)
IN_FLIGHT = Family("strata_requests_in_flight", "Model requests being answered now.", "gauge")
QUEUE = Family("strata_queue_depth", "Requests waiting for an engine or a slot now.", "gauge")
LOADED = Family("strata_loaded_models", "Models held by running engines.", "gauge")
MEMORY = Family("strata_model_memory_bytes", "Memory a loaded model holds (weights and context).", "gauge")
GPU_MEMORY = Family("strata_model_gpu_memory_bytes", "The part of it in GPU memory.", "gauge")


def label_value(value: str) -> str:
    """A label value as the format quotes it (backslash, double quote and line feed escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class Histogram:
    """Counts per bucket (not cumulative: summed when written), their sum and number."""

    __slots__ = ("bounds", "counts", "n", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out = []
        running = 0
        for le, count in zip([*map(number, self.bounds), "+Inf"], self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{{labels},le="{le}"}} {running}\n')
        out.append(f"{name}_sum{{{labels}}} {number(self.total)}\n{name}_count{{{labels}}} {self.n}\n")
        return out


class Series:
    """Everything counted for one (model, API): its text kept until a request changes it."""

    __slots__ = ("_text", "histograms", "labels", "statuses")

    def __init__(self, model: str, api: str) -> None:
        self.labels = f"model={label_value(model)},api={label_value(api)}"
        self.statuses: dict[int, int] = {}
        self.histograms = [Histogram(buckets) for _family, buckets, _field in HISTOGRAMS]
        self._text: list[str] | None = None

    def observe(self, entry: ActivityEntry) -> None:
        self.statuses[entry.status] = self.statuses.get(entry.status, 0) + 1
        for histogram, (_family, _buckets, field) in zip(self.histograms, HISTOGRAMS, strict=True):
            value = getattr(entry, field)
            if value is not None:
                histogram.observe(value)
        self._text = None

    def text(self) -> list[str]:
        """One text per family, in :data:`HISTOGRAMS` order after the request counts."""
        if self._text is None:
            counts = "".join(f'{REQUESTS.name}{{{self.labels},status="{status}"}} {n}\n'
                             for status, n in sorted(self.statuses.items()))
            self._text = [counts] + ["".join(h.lines(family.name, self.labels))
                                     for h, (family, _b, _f) in zip(self.histograms, HISTOGRAMS, strict=True)]
        return self._text


class ServerMetrics:
    """The Prometheus series of one server.

    Args:
        loaded: The models running engines hold (the router's ``loaded``).
        in_flight: Model requests running now.
        waiting: Requests waiting for an engine now.
    """

    def __init__(self, loaded: Callable[[], Sequence[LoadedModel]], in_flight: Callable[[], int],
                 waiting: Callable[[], int]) -> None:
        self._loaded, self._in_flight, self._waiting = loaded, in_flight, waiting
        self.series: dict[tuple[str, str], Series] = {}

    def observe(self, entry: ActivityEntry) -> None:
        """Count one finished request."""
        key = (entry.model or "none", entry.api)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = Series(*key)
        series.observe(entry)

    def exposition(self) -> bytes:
        """The text Prometheus scrapes."""
        texts = [s.text() for s in self.series.values()]
        parts = [REQUESTS.head(), *(t[0] for t in texts)]
        for i, (family, _buckets, _field) in enumerate(HISTOGRAMS, start=1):
            parts.append(family.head())
            parts.extend(t[i] for t in texts)
        parts += [IN_FLIGHT.head(), f"{IN_FLIGHT.name} {self._in_flight()}\n",
                  QUEUE.head(), f"{QUEUE.name} {self._waiting()}\n"]
        parts += self._loaded_lines()
        return "".join(parts).encode()

    def _loaded_lines(self) -> list[str]:
        loaded = list(self._loaded())
        out = [LOADED.head(), f"{LOADED.name} {len(loaded)}\n", MEMORY.head()]
        labels = [f"model={label_value(m.model.id)},engine={label_value(m.engine)}" for m in loaded]
        out += [f"{MEMORY.name}{{{lab}}} {m.memory_bytes}\n" for lab, m in zip(labels, loaded, strict=True)]
        out.append(GPU_MEMORY.head())
        out += [f"{GPU_MEMORY.name}{{{lab}}} {m.gpu_memory_bytes}\n" for lab, m in zip(labels, loaded, strict=True)]
        return out
