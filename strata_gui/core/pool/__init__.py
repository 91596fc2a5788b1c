"""The engine pool: the one owner of every running engine, its one scheduler, and the one fallback loop."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.pool.engine import EngineKey, PooledEngine, Priority, memory_group, priority_of
    from strata_gui.core.pool.events import (
        EngineStateChanged,
        EngineUnloaded,
        FailedOver,
        ModelActivity,
        PoolActivity,
        PoolEvent,
        Waiting,
        WaitingRequest,
    )
    from strata_gui.core.pool.memory import FitTarget, PoolMemory
    from strata_gui.core.pool.pool import CrashAdvisor, EnginePool, Launcher, Lease, MemoryPolicy
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
    "ModelActivity",
    "PoolActivity",
    "PoolEvent",
    "PoolMemory",
    "PooledEngine",
    "Priority",
    "Ran",
    "Waiting",
    "WaitingRequest",
    "acquire_along_plan",
    "engine_fault",
    "memory_group",
    "priority_of",
    "run_along_plan",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "engine": ["EngineKey", "PooledEngine", "Priority", "memory_group", "priority_of"],
    "events": ["EngineStateChanged", "EngineUnloaded", "FailedOver", "ModelActivity", "PoolActivity", "PoolEvent",
               "Waiting", "WaitingRequest"],
    "memory": ["FitTarget", "PoolMemory"],
    "pool": ["CrashAdvisor", "EnginePool", "Launcher", "Lease", "MemoryPolicy"],
    "runner": ["Ran", "acquire_along_plan", "engine_fault", "run_along_plan"],
})
