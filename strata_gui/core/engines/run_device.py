"""Where the chosen engine really runs: a GPU, or the processor (a CPU build, or Vulkan on a
software driver such as Mesa's llvmpipe).

The fit, the decode ceiling and every "runs on" line follow this answer, not the GPU that was
detected: a 7900 XTX whose ROCm build failed its check and whose only working engine is Vulkan
on llvmpipe runs models from system RAM on the CPU, and must be told so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.engines.devices import GpuPick
from strata_gui.core.engines.probe import BACKEND_DEVICE_PREFIX, Device, is_software_device
from strata_gui.core.runtime.engine import Backend, EngineSpec

_GENERIC = {"amd", "ati", "radeon", "graphics", "gpu", "tm", "r", "series", "radv", "pro", "rx"}


@dataclass(frozen=True)
class RunDevice:
    """Where the first engine of a plan runs, and what that means for people.

    Attributes:
        on_cpu: The model runs on the processor from system RAM.
        engine: The chosen engine's label ("Vulkan b7612"); empty when none is installed.
        engine_devices: What the engine itself reports for the devices it uses (its
            ``--list-devices`` lines: ``Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits)``).
        gpus: Names of the detected GPUs chosen for models (the GPU page's pick).
        why: Why it runs on the CPU (empty on a GPU).
        fix: What would put it on the GPU (empty on a GPU or when nothing would).
        differs: The engine's devices are not the chosen GPU (llvmpipe, or another card).
        usable_gpus: Keys of the detected GPUs the engine's last check listed: the ones it can be
            given (none for a CPU build or Vulkan on llvmpipe); None when it was not checked yet.
    """

    on_cpu: bool
    engine: str = ""
    engine_devices: tuple[str, ...] = field(default=())
    gpus: tuple[str, ...] = field(default=())
    why: str = ""
    fix: str = ""
    differs: bool = False
    usable_gpus: tuple[str, ...] | None = None

    @property
    def device_name(self) -> str:
        """The device a model's speed is bound by: "the CPU" or the GPU(s)."""
        if self.on_cpu:
            return T(QT_TRANSLATE_NOOP("Core", "the CPU"))
        return " + ".join(self.gpus) or T(QT_TRANSLATE_NOOP("Core", "the GPU"))

    def describe(self) -> str:
        """One phrase: "runs on the CPU: no GPU engine works here yet" / "runs on Radeon RX 7900 XTX"."""
        if self.on_cpu:
            if self.why:
                return T(QT_TRANSLATE_NOOP("Core", "runs on the CPU: {why}"), why=self.why)
            return T(QT_TRANSLATE_NOOP("Core", "runs on the CPU"))
        return T(QT_TRANSLATE_NOOP("Core", "runs on {device}"), device=self.device_name)

    def to_json(self) -> dict[str, Any]:
        return {"on_cpu": self.on_cpu, "engine": self.engine, "engine_devices": list(self.engine_devices),
                "gpus": list(self.gpus), "why": self.why, "fix": self.fix, "differs": self.differs,
                "usable_gpus": list(self.usable_gpus) if self.usable_gpus is not None else None,
                "describe": self.describe()}


def _model_words(name: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in _GENERIC}


def same_device(gpu_name: str, description: str) -> bool:
    """Whether an engine's device description names the detected GPU (its model words all appear)."""
    words = _model_words(gpu_name.split("(", maxsplit=1)[0]) or _model_words(gpu_name)
    described = _model_words(description)
    return bool(words) and words <= described


def run_device(chosen: EngineSpec | None, probe_devices: Sequence[Device], picks: Sequence[GpuPick],
               left_out_gpu_engines: Sequence[str] = (), *, gpu_engine_behind: bool = False,
               os_name: str = "linux") -> RunDevice:
    """Judge where ``chosen`` runs (pure).

    Args:
        chosen: The plan's first engine (None: no engine installed; the GPU is assumed, as the
            engine the guide installs is the one for the GPU).
        probe_devices: The devices the engine's last ``--list-devices`` printed.
        picks: The detected GPUs and whether models run on them.
        left_out_gpu_engines: Labels of installed GPU engines that will not run (failed checks).
        gpu_engine_behind: A GPU engine is in the plan after ``chosen`` (chosen by the user or a pin).
        os_name: "linux" or "windows" (what to install differs).
    """
    gpus = tuple(p.name for p in picks if p.chosen)
    if chosen is None:
        return RunDevice(False, gpus=gpus)
    prefix = BACKEND_DEVICE_PREFIX.get(str(chosen.backend))
    mine = [d for d in probe_devices if prefix is not None and d.kind == prefix]
    used = [d for d in mine if d.name in chosen.devices] or mine
    shown = tuple(f"{d.name}: {d.description}" for d in used)
    software = bool(used) and all(is_software_device(d) for d in used)
    if chosen.backend is Backend.CPU or software:
        if software:
            renderer = used[0].description.split(" (")[0]
            detail: str = T(QT_TRANSLATE_NOOP("Core", "{backend} sees only {renderer}, a software driver on the processor"),
                       backend=chosen.backend.label, renderer=renderer)
        else:
            detail = ""
        why: str = ""
        if gpus and gpu_engine_behind and not software:
            why = ""  # chosen over a GPU engine on purpose: the plan's reason says by whom
        elif gpus and left_out_gpu_engines:
            why = T(QT_TRANSLATE_NOOP("Core", "no GPU engine works here yet ({engines}: check failed)"),
                    engines=", ".join(left_out_gpu_engines))
        elif gpus and software:
            why = T(QT_TRANSLATE_NOOP("Core", "no GPU engine works here yet"))
        elif gpus:
            why = T(QT_TRANSLATE_NOOP("Core", "no GPU engine is installed"))
        else:
            why = T(QT_TRANSLATE_NOOP("Core", "no GPU was found"))
        if detail:
            why = T(QT_TRANSLATE_NOOP("Core", "{why}; {detail}"), why=why, detail=detail) if why else detail
        fix = ""
        if gpus:
            fix = (T(QT_TRANSLATE_NOOP("Core", "Install or update the AMD Adrenalin driver, then check the engines "
                                               "again (Engines page)."))
                   if os_name == "windows" else
                   T(QT_TRANSLATE_NOOP("Core", "Install Mesa's RADV Vulkan driver (package mesa-vulkan-drivers) or a "
                                               "ROCm build that supports your GPU, then check the engines again "
                                               "(Engines page).")))
        return RunDevice(True, chosen.label, shown, gpus, why, fix, differs=bool(gpus))
    differs = bool(gpus) and bool(used) and not any(same_device(g, d.description) for g in gpus for d in used)
    return RunDevice(False, chosen.label, shown, gpus, differs=differs)
