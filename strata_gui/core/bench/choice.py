"""Turning benchmark results into the default engine for a model, with a plain explanation.

Decode speed decides (it is what a user feels during a chat) unless engines are within 5 % of
each other on decode, in which case prefill breaks the tie. A ROCm engine whose prefill is far
below the Vulkan engine's while its hipBLASLt tuning table is not active is called out: that is
the classic sign of the untuned slow path.

The default engine is chosen at depth 0 (an empty context, where every conversation starts);
results measured at a long depth add a note on which engine is fastest there and the crossover
depth (the engine resolver uses them to choose by the conversation's depth).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text, joined
from strata_gui.core.bench.store import BenchResult
from strata_gui.core.runtime.depth import DepthPoint, DepthProfile, depth_label, prefill_lead

TIE_MARGIN = 0.05
SLOW_PREFILL_RATIO = 0.5


@dataclass(frozen=True)
class Recommendation:
    """The measured winner and why, plus warnings worth acting on."""

    engine: str | None
    reason: str
    ranking: list[BenchResult]
    warnings: list[str]
    depth_note: str = ""  # the fastest engine at the long depth and the crossover, when measured


def _key(r: BenchResult) -> tuple[float, float]:
    return (r.decode_median or 0.0, r.prefill_median or 0.0)


def rank(results: list[BenchResult]) -> list[BenchResult]:
    """Working results, fastest first (decode, then prefill when decode is within 5 %)."""
    ok = sorted((r for r in results if r.ok), key=_key, reverse=True)
    # Stable pass: swap neighbours whose decode is a near tie but whose prefill disagrees.
    changed = True
    while changed:
        changed = False
        for i in range(len(ok) - 1):
            a, b = ok[i], ok[i + 1]
            da, db = a.decode_median or 0.0, b.decode_median or 0.0
            if da and abs(da - db) / da <= TIE_MARGIN and (b.prefill_median or 0) > (a.prefill_median or 0):
                ok[i], ok[i + 1] = b, a
                changed = True
    return ok


def recommend(results: list[BenchResult], name: Callable[[str], str] = lambda engine_id: engine_id) -> Recommendation:
    """The fastest engine of ``results`` at depth 0 and why; ``name`` turns engine ids into the names
    people read. Results at other depths only feed :attr:`Recommendation.depth_note`."""
    note = depth_note(results, name)
    failed = [r for r in results if not r.ok]
    results = [r for r in results if r.depth == 0]
    ranking = rank(results)
    warnings = _tuning_warnings(results, name)
    for r in failed:
        error = r.error or QT_TRANSLATE_NOOP("Core", "no result")
        if r.depth:
            warnings.append(T(QT_TRANSLATE_NOOP("Core", "{engine} could not be measured at depth {depth}: {error}"),
                              engine=name(r.engine), depth=r.depth, error=error))
        else:
            warnings.append(T(QT_TRANSLATE_NOOP("Core", "{engine} could not be measured: {error}"),
                              engine=name(r.engine), error=error))
    if not ranking:
        return Recommendation(None, QT_TRANSLATE_NOOP("Core", "No engine finished the benchmark."), ranking, warnings,
                              note)
    best = ranking[0]
    first = name(best.engine)
    reason: str
    if len(ranking) == 1:
        reason = T(QT_TRANSLATE_NOOP("Core", "{first} is the only engine that ran ({decode:.1f} tokens/s decode)."),
                   first=first, decode=best.decode_median)
    else:
        second = ranking[1]
        other = name(second.engine)
        bd, sd = best.decode_median or 0.0, second.decode_median or 0.0
        if sd and abs(bd - sd) / max(bd, sd) <= TIE_MARGIN:
            reason = T(QT_TRANSLATE_NOOP("Core", "{first} and {other} decode equally fast ({decode:.1f} vs "
                                                 "{other_decode:.1f} tokens/s); {first} prefills faster ({prefill:.0f} "
                                                 "vs {other_prefill:.0f} tokens/s)."),
                       first=first, other=other, decode=bd, other_decode=sd, prefill=best.prefill_median,
                       other_prefill=second.prefill_median)
        elif sd:
            reason = T(QT_TRANSLATE_NOOP("Core", "{first} decodes {times:.2f}× as fast as {other} ({decode:.1f} vs "
                                                 "{other_decode:.1f} tokens/s)."),
                       first=first, times=bd / sd, other=other, decode=bd, other_decode=sd)
        else:
            reason = T(QT_TRANSLATE_NOOP("Core", "{first} is fastest."), first=first)
    backends = {r.engine: str(r.backend) for r in ranking}
    lead = prefill_lead({r.engine: r.prefill_median or 0.0 for r in ranking}, backends.get)
    if lead is not None:  # the engine choice says it, as the chat header's "Why" does
        reason = joined([reason, T(QT_TRANSLATE_NOOP("Core", "Also: {lead}."), lead=lead)])
    return Recommendation(best.engine, reason, ranking, warnings, note)


def depth_note(results: list[BenchResult], name: Callable[[str], str] = lambda engine_id: engine_id) -> str:
    """The fastest engine at each long measured depth and where the fastest engine changes ("" when
    fewer than two engines were measured at two depths)."""
    profile = DepthProfile(DepthPoint(r.engine, r.depth, r.decode_median or 0.0, r.prefill_median or 0.0)
                           for r in results if r.ok)
    if not profile.usable():
        return ""
    parts: list[Text] = []
    for depth in profile.depths[1:]:
        ranking = profile.ranking_at(depth)
        (first, a), (second, b) = ranking[0], ranking[1]
        parts.append(T(QT_TRANSLATE_NOOP("Core", "At {depth} depth {first} decodes fastest ({decode:.1f} vs "
                                                 "{other_decode:.1f} tokens/s for {other})."),
                       depth=f"{depth:,}", first=name(first), decode=a, other_decode=b, other=name(second)))
    crossings = profile.crossovers()
    if crossings:
        parts += [T(QT_TRANSLATE_NOOP("Core", "Crossover at about {depth} tokens of context: {before} is faster "
                                              "below, {after} from there."),
                    depth=depth_label(c.depth), before=name(c.before), after=name(c.after)) for c in crossings]
    else:
        parts.append(T(QT_TRANSLATE_NOOP("Core", "{first} stays fastest at every measured depth."),
                       first=name(profile.ranking_at(0)[0][0])))
    return joined(parts)


def _tuning_warnings(results: list[BenchResult], name: Callable[[str], str]) -> list[str]:
    vulkan = [r for r in results if r.ok and r.backend == "vulkan"]
    out: list[str] = []
    if not vulkan:
        return out
    best_vk = max(vulkan, key=lambda r: r.prefill_median or 0)
    for r in results:
        if not r.ok or r.backend != "rocm" or r.tuning_active:
            continue
        if (r.prefill_median or 0) < SLOW_PREFILL_RATIO * (best_vk.prefill_median or 0):
            out.append(T(
                QT_TRANSLATE_NOOP("Core", "{engine} prefills at {prefill:.0f} tokens/s, far below Vulkan's "
                                          "{vulkan_prefill:.0f}, and no hipBLASLt tuning table is active: prefill is "
                                          "on the untuned path. Fetch the tuning table for this GPU on the Engines "
                                          "page (or update the engine so its hipBLASLt revision matches the table)."),
                engine=name(r.engine), prefill=r.prefill_median, vulkan_prefill=best_vk.prefill_median))
    return out
