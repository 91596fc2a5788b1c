"""The engine pool: the one owner of every running engine, and the one fallback loop."""

from typing import TYPE_CHECKING

from strata_gui.core.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.pool.memory import FitTarget, PoolMemory
    from strata_gui.core.pool.pool import (
        CrashAdvisor,
        EngineKey,
        EnginePool,
        EngineStateChanged,
        EngineUnloaded,
        FailedOver,
        Launcher,
        Lease,
        MemoryPolicy,
        PooledEngine,
        PoolEvent,
        Waiting,
        memory_group,
    )
    from strata_gui.core.pool.runner import Ran, acquire_along_plan, engine_fault, run_along_plan

__all__ = [
    "CrashAdvisor",
    "EngineKey",
    "EnginePool",
    "EngineStateChanged",
    "EngineUnloaded",
    "FailedOver",
    "FitTarget",
    "Launcher",
    "Lease",
    "MemoryPolicy",
    "PoolEvent",
    "PoolMemory",
    "PooledEngine",
    "Ran",
    "Waiting",
    "acquire_along_plan",
    "engine_fault",
    "memory_group",
    "run_along_plan",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "memory": ["FitTarget", "PoolMemory"],
    "pool": ["CrashAdvisor", "EngineKey", "EnginePool", "EngineStateChanged", "EngineUnloaded", "FailedOver",
             "Launcher", "Lease", "MemoryPolicy", "PooledEngine", "PoolEvent", "Waiting", "memory_group"],
    "runner": ["Ran", "acquire_along_plan", "engine_fault", "run_along_plan"],
})
