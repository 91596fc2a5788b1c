"""Small statistics helpers (median, percentile, spread) used by dashboards and benchmarks."""

from __future__ import annotations

import math
from collections.abc import Sequence


def _median(values: Sequence[float]) -> float:
    # statistics.median's rule, without importing statistics (with fractions and decimal: ~3 ms of
    # start-up, as the metrics store needs this module before the window is usable).
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def median(values: Sequence[float]) -> float | None:
    return _median(values) if values else None


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (``pct`` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def spread(values: Sequence[float]) -> float | None:
    """Half the min–max range as a share of the median (0.05 = ±5 %); None for < 2 values."""
    if len(values) < 2:
        return None
    mid = _median(values)
    if not mid:
        return None
    return (max(values) - min(values)) / 2 / mid
