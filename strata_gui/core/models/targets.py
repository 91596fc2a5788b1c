"""The memory a model must fit in, from the detected GPUs or Settings' fallback figure.

Apart from the model service so the chat's launch (the load options' fit) needs neither the hub
client nor the download manager at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from strata_gui.core.config.settings import Settings
from strata_gui.core.gpu.model import GpuInfo
from strata_gui.core.models.fit import MIB, MemoryTarget


def memory_target_for_gpus(gpus: Sequence[GpuInfo], settings: Settings) -> MemoryTarget:
    """The memory target for the GPUs models run on: one GPU as :func:`memory_target_for`; two or
    more as one target whose layers are split over them (the engine resolver launches it so)."""
    targets = [memory_target_for(g, settings) for g in gpus]
    if len(targets) < 2:
        return targets[0] if targets else memory_target_for(None, settings)
    budget = max(0, settings.memory_budget_mb) * MIB
    devices = tuple(replace(t, budget_bytes=0).usable_bytes for t in targets)
    return MemoryTarget(name=" + ".join(t.name for t in targets), vram_bytes=sum(devices), budget_bytes=budget,
                        bf16=min((t.bf16 for t in targets if t.bf16), key=_bf16_rank, default=None),
                        devices=devices)


_BF16_ORDER = ("unsupported", "slow", "fast")


def _bf16_rank(value: str) -> int:
    """The slowest GPU decides how BF16 runs when a model is spread over several."""
    return _BF16_ORDER.index(value) if value in _BF16_ORDER else len(_BF16_ORDER)


def memory_target_for(gpu: GpuInfo | None, settings: Settings) -> MemoryTarget:
    """The memory target for a detected GPU (``GpuReport.primary``), capped by the user budget;
    Settings' fallback figure when no GPU or no memory size was detected."""
    budget = max(0, settings.memory_budget_mb) * MIB
    if gpu is None or (gpu.vram_total is None and gpu.shared_total is None):
        return MemoryTarget.from_settings(settings.fallback_gpu_memory_mb, settings.memory_budget_mb)
    return MemoryTarget(
        name=gpu.name,
        vram_bytes=gpu.vram_total or 0,
        shared_bytes=gpu.shared_total or 0,
        is_apu=gpu.integrated,
        budget_bytes=budget,
        bf16=gpu.bf16,
    )
