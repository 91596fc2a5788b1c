"""Throughput history, the backend shoot-out benchmark, and the measured engine choice."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.bench.choice import Recommendation
    from strata_gui.core.bench.process_stats import ProcessSampler
    from strata_gui.core.bench.prometheus import ServerCounters
    from strata_gui.core.bench.service import DashboardService, DraftSpeedup, ImageEngineStats
    from strata_gui.core.bench.stats import spread
    from strata_gui.core.bench.store import BenchResult, RequestRecord
    from strata_gui.core.bench.update_survey import UpdateCandidate, UpdateSurvey
    from strata_gui.core.bench.updates import EngineUpdater, TrialOutcome, UpdateOffer
    from strata_gui.core.bench.workload import DEFAULT_DEPTH, BenchConfig

__all__ = [
    "DEFAULT_DEPTH",
    "BenchConfig",
    "BenchResult",
    "DashboardService",
    "DraftSpeedup",
    "EngineUpdater",
    "ImageEngineStats",
    "ProcessSampler",
    "Recommendation",
    "RequestRecord",
    "ServerCounters",
    "TrialOutcome",
    "UpdateCandidate",
    "UpdateOffer",
    "UpdateSurvey",
    "spread",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "choice": ["Recommendation"],
    "process_stats": ["ProcessSampler"],
    "prometheus": ["ServerCounters"],
    "service": ["DashboardService", "DraftSpeedup", "ImageEngineStats"],
    "stats": ["spread"],
    "store": ["BenchResult", "RequestRecord"],
    "update_survey": ["UpdateCandidate", "UpdateSurvey"],
    "updates": ["EngineUpdater", "TrialOutcome", "UpdateOffer"],
    "workload": ["DEFAULT_DEPTH", "BenchConfig"],
})
