"""The slow path found and named: a ROCm prefill far below the compute limit, and the tuning table
that explains it.

hipBLASLt ignores a whole tuning table whose revision or architecture does not match, and the dense
projections of prefill then take its untuned kernels while everything seems to work. After a
ROCm prefill long enough to be compute-bound, a share of the compute limit below
:data:`SLOW_PREFILL_SHARE` together with a table that was expected but is missing or was rejected
is that case: say which check failed and what fixes it.
"""

from __future__ import annotations

from pathlib import Path

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text
from strata_gui.core.engines.catalog import EngineCatalog
from strata_gui.core.engines.records import InstalledEngine
from strata_gui.core.engines.tuning import check_tuning_table
from strata_gui.core.runtime.client import percent_text

SLOW_PREFILL_SHARE = 0.3  # tuned hipBLASLt GEMMs reach well over half of the matrix peak on long prompts
MIN_SLOW_PATH_PROMPT = 512  # shorter prompts are not bound by the big GEMMs

# Which check rejected a table, as the message names it.
_CHECKS = {
    "revision": QT_TRANSLATE_NOOP("Core", "its hipBLASLt revision"),
    "gfx": QT_TRANSLATE_NOOP("Core", "its gfx target"),
    "header": QT_TRANSLATE_NOOP("Core", "its header"),
    "row": QT_TRANSLATE_NOOP("Core", "a row"),
    "read": QT_TRANSLATE_NOOP("Core", "reading it"),
}
_FIXES = {
    "revision": QT_TRANSLATE_NOOP("Core", "Update the engine, or fetch the table made for the hipBLASLt revision "
                                          "this engine ships (Engines page, or strata engines install)."),
    "gfx": QT_TRANSLATE_NOOP("Core", "Fetch the table made for this GPU's gfx target (Engines page, or strata "
                                     "engines install)."),
    "header": QT_TRANSLATE_NOOP("Core", "The table is damaged: install the engine again to fetch it anew."),
    "row": QT_TRANSLATE_NOOP("Core", "The table is damaged: install the engine again to fetch it anew."),
    "read": QT_TRANSLATE_NOOP("Core", "Check the engine's folder, then install the engine again."),
}


def slow_path_finding(engine: InstalledEngine, gpu_gfx: str | None, catalog: EngineCatalog,
                      share: float | None, prompt_tokens: int) -> Text | None:
    """Why a ROCm prefill ran at ``share`` of the compute limit, when a tuning table explains it.

    Returns None when the prefill is fast enough, too short to tell, not on ROCm, or when the
    table was used (then the cause is elsewhere and nothing is claimed).
    """
    if engine.backend != "rocm" or prompt_tokens < MIN_SLOW_PATH_PROMPT or share is None \
            or share >= SLOW_PREFILL_SHARE:
        return None
    percent = percent_text(share)
    if engine.tuning is not None:
        check = check_tuning_table(Path(engine.tuning.path), table_gfx=engine.tuning.gfx, gpu_gfx=gpu_gfx,
                                   engine_revision=engine.hipblaslt_revision)
        if check.ok:
            return None
        failed = check.failed or "read"
        return T(QT_TRANSLATE_NOOP("Core", "Prefill reached only {percent} % of this GPU's compute limit: hipBLASLt's "
                                           "tuning table was rejected on {check} ({reason}), so the dense projections "
                                           "take the untuned slow path. {fix}"),
                 percent=percent, check=T(_CHECKS[failed]), reason=check.reason, fix=T(_FIXES[failed]))
    revision = engine.hipblaslt_revision
    if gpu_gfx and revision and catalog.tuning_for(gpu_gfx, revision) is not None:
        return T(QT_TRANSLATE_NOOP("Core", "Prefill reached only {percent} % of this GPU's compute limit: a hipBLASLt "
                                           "tuning table for {gfx} and revision {revision} is published but not "
                                           "installed, so the dense projections take the untuned slow path. Install "
                                           "the engine again to fetch it."),
                 percent=percent, gfx=gpu_gfx, revision=revision)
    others = [t.revision for t in catalog.tuning_tables if gpu_gfx and t.gfx.lower() == gpu_gfx.lower()]
    if others:
        return T(QT_TRANSLATE_NOOP("Core", "Prefill reached only {percent} % of this GPU's compute limit: the hipBLASLt "
                                           "tuning table for {gfx} is made for revision {published}, and this engine "
                                           "ships {revision}, so hipBLASLt would ignore it (revision check) and the "
                                           "dense projections take the untuned slow path. Update the engine to a "
                                           "build with that revision."),
                 percent=percent, gfx=gpu_gfx, published=others[0], revision=revision or "an unknown revision")
    return None
