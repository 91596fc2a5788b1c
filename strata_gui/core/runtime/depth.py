"""How fast each engine decodes at each context depth, from benchmark measurements.

The benchmark measures every engine at depth 0 and at a long depth (8K by default). Between and
beyond the measured depths this module assumes decode speed changes linearly between the two
nearest measured depths and stays flat past the last one: the simplest reading of two points that
does not invent a curve. The *crossover* is the depth where the fastest engine changes under that
reading; at a measured depth the choice is exactly the measured winner.

The profile is pure data (no storage, no engines): the metrics store builds it, the engine
resolver asks it which engine is fastest at a conversation's depth, the chat asks it whether
another engine is clearly faster now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text

CLEARLY_FASTER = 0.10  # a switch (which costs a reload) is offered only for at least 10 % more decode speed


def depth_label(depth: int) -> str:
    """A depth as people write it: ``512``, ``8K``, ``5.3K``."""
    if depth < 1024:
        return str(depth)
    return f"{depth / 1024:.1f}".removesuffix(".0") + "K"


@dataclass(frozen=True)
class DepthPoint:
    """One engine's measured medians at one depth (tokens/s)."""

    engine: str
    depth: int
    decode_tps: float
    prefill_tps: float = 0.0


@dataclass(frozen=True)
class Crossover:
    """At ``depth`` the fastest engine changes from ``before`` to ``after``."""

    depth: int
    before: str
    after: str


class DepthProfile:
    """Measured decode speed per engine and depth, and what follows from it.

    Args:
        points: Measured medians; an engine counts only when measured at two depths or more.
    """

    def __init__(self, points: Iterable[DepthPoint]) -> None:
        by_engine: dict[str, dict[int, DepthPoint]] = {}
        for p in points:
            if p.decode_tps > 0:
                by_engine.setdefault(p.engine, {})[p.depth] = p
        self._points: dict[str, list[DepthPoint]] = {
            e: [pts[d] for d in sorted(pts)] for e, pts in by_engine.items() if len(pts) >= 2}

    @property
    def engines(self) -> list[str]:
        """Engines measured at two depths or more."""
        return sorted(self._points)

    @property
    def depths(self) -> list[int]:
        """Every measured depth, ascending."""
        return sorted({p.depth for pts in self._points.values() for p in pts})

    def usable(self, among: Iterable[str] | None = None) -> bool:
        """True when at least two of ``among`` (default: all) were measured at two depths."""
        return len(self._among(among)) >= 2

    def points(self, engine: str) -> list[DepthPoint]:
        return list(self._points.get(engine, []))

    def decode_at(self, engine: str, depth: float) -> float | None:
        """Decode tokens/s of ``engine`` at ``depth`` (measured, interpolated, or the nearest end)."""
        pts = self._points.get(engine)
        if not pts:
            return None
        if depth <= pts[0].depth:
            return pts[0].decode_tps
        for a, b in pairwise(pts):
            if depth <= b.depth:
                t = (depth - a.depth) / (b.depth - a.depth)
                return a.decode_tps + t * (b.decode_tps - a.decode_tps)
        return pts[-1].decode_tps

    def ranking_at(self, depth: int, among: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """``(engine, decode tokens/s)`` at ``depth``, fastest first."""
        speeds = [(e, self.decode_at(e, depth) or 0.0) for e in self._among(among)]
        return sorted(speeds, key=lambda t: (-t[1], t[0]))

    def nearest_measured(self, depth: int) -> int:
        """The measured depth closest to ``depth`` (the shallower one on a tie)."""
        return min(self.depths, key=lambda d: (abs(d - depth), d))

    def crossovers(self, among: Iterable[str] | None = None) -> list[Crossover]:
        """Depths where the fastest engine changes, shallowest first."""
        engines = self._among(among)
        if len(engines) < 2:
            return []
        depths = self.depths
        # Within a segment between measured depths every speed is linear, so the winner can only
        # change where two lines cross: test the winner just after each such candidate.
        candidates: set[float] = set(depths)
        for lo, hi in pairwise(depths):
            for i, a in enumerate(engines):
                for b in engines[i + 1:]:
                    fa0, fa1 = self.decode_at(a, lo) or 0.0, self.decode_at(a, hi) or 0.0
                    fb0, fb1 = self.decode_at(b, lo) or 0.0, self.decode_at(b, hi) or 0.0
                    slope = (fa1 - fa0) - (fb1 - fb0)
                    if slope != 0:
                        t = (fb0 - fa0) / slope
                        if 0 < t < 1:
                            candidates.add(lo + t * (hi - lo))
        out: list[Crossover] = []
        points = sorted(candidates)
        winner = self._winner(points[0], engines)
        for x in points[1:]:
            after = self._winner(x + 1e-6, engines)
            if after != winner:
                out.append(Crossover(round(x), winner, after))
                winner = after
        return out

    def clearly_faster_from(self, current: str, other: str, margin: float = CLEARLY_FASTER) -> int | None:
        """The shallowest depth from which ``other`` decodes at least ``margin`` faster than
        ``current`` (None: nowhere measured, or one of them was not measured)."""
        if current not in self._points or other not in self._points:
            return None
        depths = self.depths

        def gain(d: float) -> float:
            return (self.decode_at(other, d) or 0.0) - (1 + margin) * (self.decode_at(current, d) or 0.0)

        if gain(depths[0]) >= 0:
            return 0
        for lo, hi in pairwise(depths):
            g0, g1 = gain(lo), gain(hi)
            if g1 >= 0:
                return round(lo + (hi - lo) * (-g0) / (g1 - g0))
        return None

    def _winner(self, depth: float, engines: list[str]) -> str:
        return max(engines, key=lambda e: (self.decode_at(e, depth) or 0.0, e))

    def _among(self, among: Iterable[str] | None) -> list[str]:
        if among is None:
            return self.engines
        wanted = set(among)
        return [e for e in self.engines if e in wanted]



PREFILL_LEAD = 1.10  # Vulkan must prefill at least 10 % faster than ROCm for it to be said


def prefill_lead(prefill: Mapping[str, float], backend_of: Callable[[str], str | None]) -> Text | None:
    """"Vulkan prefills 2.4× as fast as ROCm here": said where the benchmark measured a Vulkan
    engine prefilling clearly faster than a ROCm one for this model on this GPU, which on an AMD
    GPU means ROCm's dense projections took a slow path (an untuned or rejected hipBLASLt table).

    Args:
        prefill: Prefill tokens/s per engine id, measured at the start of the context.
        backend_of: An engine id's backend ("rocm", "vulkan"; None when unknown).
    """
    best: dict[str, float] = {}
    for engine, tps in prefill.items():
        backend = backend_of(engine)
        if backend in ("rocm", "vulkan") and tps > best.get(backend, 0.0):
            best[backend] = tps
    vulkan, rocm = best.get("vulkan", 0.0), best.get("rocm", 0.0)
    if not vulkan or not rocm or vulkan < PREFILL_LEAD * rocm:
        return None
    return T(QT_TRANSLATE_NOOP("Core", "the benchmark measured Vulkan prefilling {times:.1f}× as fast as ROCm for "
                                       "this model here ({vulkan:,.0f} vs {rocm:,.0f} tokens/s): ROCm's prefill takes "
                                       "a slow path"), times=vulkan / rocm, vulkan=vulkan, rocm=rocm)
