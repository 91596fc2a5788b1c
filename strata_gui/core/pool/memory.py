"""What the engine pool knows about memory: how much an engine will hold, and how much may be held.

An engine's estimate is the fit's: for kinds whose memory grows with the context, the weights plus
the KV cache and compute buffers at the launch's context and cache types (plus a projector or
draft model loaded beside it); for the others, the model files' size. The budget is the memory of
the device group the engine loads into: the GPU models run on (the resolver's device choice,
VRAM plus GTT on an APU, with the active RPC workers' memory), or the machine's RAM for engines on
the processor; Settings' ``engine_memory_mb`` caps both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.config.settings import Settings
from strata_gui.core.engines.devices import GpuPick
from strata_gui.core.engines.run_device import RunDevice
from strata_gui.core.gpu.model import GpuReport
from strata_gui.core.models.fit import MIB, RAM_RESERVE, MemoryTarget, ModelShape
from strata_gui.core.models.load_options import model_bytes
from strata_gui.core.models.targets import memory_target_for_gpus
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerSettings

log = logging.getLogger(__name__)


class GpuReports(Protocol):
    @property
    def last_report(self) -> GpuReport | None: ...


class GpuPicks(Protocol):
    """Which GPUs models run on (the engine resolver's device choice), and whether the chosen
    engine really runs on them or on the processor."""

    def gpu_picks(self) -> list[GpuPick]: ...

    def run_on(self) -> RunDevice: ...


class FitTarget:
    """The memory a model must fit in: the device the chosen engine really uses. System RAM when
    it runs on the processor (a CPU build, Vulkan on llvmpipe); else the GPUs models run on (the
    resolver's device choice; two or more are one split target), else Settings' fallback, plus
    the active RPC workers' memory (``extend``).

    Args:
        ram: The machine's RAM in bytes (the target when models run on the CPU); None: not
            judged against RAM (the GPU target is kept).
    """

    def __init__(self, gpu: GpuReports, settings: Settings, picks: GpuPicks,
                 extend: Callable[[MemoryTarget], MemoryTarget] = lambda target: target,
                 ram: Callable[[], int] | None = None) -> None:
        self._gpu, self._settings, self._picks, self._extend, self._ram = gpu, settings, picks, extend, ram

    def __call__(self) -> MemoryTarget:
        where = self._picks.run_on()
        if where.on_cpu and self._ram is not None:
            budget = max(0, self._settings.memory_budget_mb) * MIB
            return MemoryTarget(name=T(QT_TRANSLATE_NOOP("Core", "system RAM — {where}"), where=where.describe()),
                                vram_bytes=max(0, self._ram() - RAM_RESERVE), budget_bytes=budget, on_cpu=True)
        report = self._gpu.last_report
        chosen = {p.key for p in self._picks.gpu_picks() if p.chosen}
        gpus = [g for g in report.gpus if g.key in chosen] if report is not None else []
        if not gpus and report is not None and report.primary is not None:
            gpus = [report.primary]
        return self._extend(memory_target_for_gpus(gpus, self._settings))


class PoolMemory:
    """The app's :class:`~strata_gui.core.pool.pool.MemoryPolicy`.

    Args:
        shape: Reads a GGUF's shape (cached per file version).
        target: The GPU memory models run in (:class:`FitTarget`).
        ram: The machine's RAM in bytes.
        settings: The live settings (``engine_memory_mb``).
    """

    def __init__(self, shape: Callable[[Path], ModelShape], target: Callable[[], MemoryTarget],
                 ram: Callable[[], int], settings: Callable[[], Settings]) -> None:
        self._shape, self._target, self._ram, self._settings = shape, target, ram, settings

    def estimate(self, engine: EngineSpec, model: Path, settings: ServerSettings) -> int:
        extra = sum(_file_bytes(Path(p)) for p in (settings.mmproj, settings.draft_model) if p)
        if not engine.kind.kv_cache:
            files = [Path(a) for a in settings.model_args if Path(a).is_file()] or [model]
            return sum(_file_bytes(f) for f in files) + extra
        shape = self._shape(model)
        ctx = (settings.ctx_size or shape.trained_context) * max(1, settings.parallel)  # the slots' shared cache
        ubatch = settings.ubatch_size or 512
        return (shape.weights_bytes + shape.kv_bytes(ctx, settings.cache_type_k, settings.cache_type_v)
                + shape.compute_bytes(ctx, ubatch) + extra)

    def budget(self, group: str) -> int:
        cap = max(0, self._settings().engine_memory_mb) * MIB
        if cap:
            return cap
        if group == "ram":
            return max(0, self._ram() - RAM_RESERVE)
        return self._target().usable_bytes


def _file_bytes(path: Path) -> int:
    try:
        return model_bytes(path) if path.suffix == ".gguf" else path.stat().st_size
    except OSError:
        return 0
