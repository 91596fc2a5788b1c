"""Parsing llama-server's ``/metrics`` (Prometheus text format) into numbers the dashboard shows."""

from __future__ import annotations

from dataclasses import dataclass


def parse_prometheus(text: str) -> dict[str, float]:
    """``name{labels} value`` lines → {name: value} (labels dropped, comments skipped)."""
    out: dict[str, float] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name_part, _, rest = line.partition(" ")
        if not rest:
            continue
        name = name_part.split("{", 1)[0]
        try:
            out[name] = float(rest.split()[0])
        except ValueError:
            continue
    return out


MIN_DECODE_S = 0.001


@dataclass(frozen=True)
class ServerCounters:
    """Server-side totals since the engine started."""

    prompt_tokens: float | None
    prompt_seconds: float | None
    predicted_tokens: float | None
    predicted_seconds: float | None
    requests_processing: float | None
    requests_deferred: float | None

    @classmethod
    def from_metrics(cls, m: dict[str, float]) -> ServerCounters:
        def get(name: str) -> float | None:
            return m.get(f"llamacpp:{name}")

        return cls(get("prompt_tokens_total"), get("prompt_seconds_total"), get("tokens_predicted_total"),
                   get("tokens_predicted_seconds_total"), get("requests_processing"), get("requests_deferred"))

    @property
    def prefill_tps(self) -> float | None:
        if self.prompt_tokens and self.prompt_seconds:
            return self.prompt_tokens / self.prompt_seconds
        return None

    @property
    def decode_tps(self) -> float | None:
        """None below 1 ms of decoding: llama-server counts each reply's first token (made by the
        prefill) with 0.001 ms, so one-token replies alone read as a million tokens a second."""
        if self.predicted_tokens and self.predicted_seconds and self.predicted_seconds >= MIN_DECODE_S:
            return self.predicted_tokens / self.predicted_seconds
        return None
