"""Which GPUs an engine runs on: Strata's detected GPUs matched to the engine's own device list.

Two steps, both pure (tested on captured sysfs trees and captured ``--list-devices`` text):

1. :func:`pick_gpus` decides, engine-agnostic, which detected GPUs models run on, with a reason
   for each GPU in or out (the GPU page shows these). Default: the discrete AMD GPU with the most
   memory; an iGPU is left out when a discrete GPU exists, unless the user picks it
   (``Settings.devices``; ``--device`` on the command line).
2. :func:`choose_devices` maps that pick onto one engine's devices (``ROCm0``, ``Vulkan1``: the
   names its ``--list-devices`` printed) and turns it into launch variables:
   ROCm ``ROCR_VISIBLE_DEVICES`` + ``HIP_VISIBLE_DEVICES`` (Linux) or ``HIP_VISIBLE_DEVICES``
   (Windows); Vulkan ``GGML_VK_VISIBLE_DEVICES`` when the physical index is known, else
   llama-server's own ``--device`` through its ``LLAMA_ARG_DEVICE`` variable (builds without
   ``--device`` ignore an unknown variable, where an unknown flag would stop them).

The engine resolver calls both; nothing else decides devices.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.engines.probe import BACKEND_DEVICE_PREFIX, Device
from strata_gui.core.gpu.model import GpuInfo, GpuReport, format_mem

# Variables through which the user (or a wrapper script) already chose devices: Strata then
# leaves the choice to them instead of stacking a second filter on top.
ROCM_VISIBILITY = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
VK_VISIBILITY = "GGML_VK_VISIBLE_DEVICES"
DEVICE_ARG_ENV = "LLAMA_ARG_DEVICE"  # llama-server's --device, as a variable
# llama-server's --split-mode / --tensor-split / --main-gpu, as variables (set for two or more devices).
SPLIT_ENV = ("LLAMA_ARG_SPLIT_MODE", "LLAMA_ARG_TENSOR_SPLIT", "LLAMA_ARG_MAIN_GPU")
_GENERIC_WORDS = {"amd", "ati", "radeon", "graphics", "gpu", "tm", "r", "series", "radv", "pro"}
_MIB = 1 << 20


@dataclass(frozen=True)
class GpuPick:
    """One detected GPU: used for models or not, and why (what the GPU page and ``strata gpu`` show)."""

    key: str
    name: str
    chosen: bool
    reason: str
    integrated: bool = False
    amd: bool = True  # only AMD GPUs can be chosen for models

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "name": self.name, "chosen": self.chosen, "reason": self.reason,
                "integrated": self.integrated, "amd": self.amd}


@dataclass(frozen=True)
class DeviceChoice:
    """The devices one engine is launched with.

    Attributes:
        devices: The engine's device names (``ROCm0``); empty: the engine's own default.
        env: Launch variables that make the engine see/use exactly those devices.
        reason: Why these (shown with the engine's plan).
        matched: Engine device name → the detected GPU's key it is.
    """

    devices: tuple[str, ...]
    env: dict[str, str]
    reason: str
    matched: dict[str, str] = field(default_factory=dict)


def _wants(gpu: GpuInfo, entry: str) -> bool:
    e = entry.strip().lower()
    if not e:
        return False
    return e in (gpu.key.lower(), (gpu.pci_bus or "").lower()) or (len(e) >= 3 and e in gpu.name.lower())


def pick_gpus(report: GpuReport | None, wanted: Sequence[str]) -> list[GpuPick]:
    """Which detected GPUs run models, each with its reason (pure).

    Args:
        report: The detected GPUs (None: nothing detected yet → empty list).
        wanted: The user's choice: GPU keys (``card1``), PCI buses, or part of a name (``7900``);
            empty means "choose for me". Engine device names (``Vulkan0``) are ignored here.
    """
    if report is None:
        return []
    amd = report.amd_gpus
    chosen_by_user = [g for g in amd if any(_wants(g, w) for w in wanted)]
    out: list[GpuPick] = []
    if chosen_by_user:
        names = ", ".join(g.name for g in chosen_by_user)
        for g in report.gpus:
            if g in chosen_by_user:
                out.append(GpuPick(g.key, g.name, True, T(QT_TRANSLATE_NOOP("Core", "you chose it")), g.integrated))
            elif not g.is_amd:
                out.append(GpuPick(g.key, g.name, False, _not_amd(g), g.integrated, amd=False))
            else:
                out.append(GpuPick(g.key, g.name, False, T(QT_TRANSLATE_NOOP("Core", "left out: you chose {names}"), names=names),
                                   g.integrated))
        return out
    discrete = sorted((g for g in amd if not g.integrated), key=lambda g: g.vram_total or 0, reverse=True)
    best = discrete[0] if discrete else max(amd, key=lambda g: g.model_memory or 0, default=None)
    for g in report.gpus:
        if not g.is_amd:
            out.append(GpuPick(g.key, g.name, False, _not_amd(g), g.integrated, amd=False))
        elif g is best and not g.integrated:
            why = (T(QT_TRANSLATE_NOOP("Core", "the discrete AMD GPU with the most memory")) if len(discrete) > 1
                   else T(QT_TRANSLATE_NOOP("Core", "the discrete AMD GPU")))
            out.append(GpuPick(g.key, g.name, True, why, False))
        elif g is best:
            out.append(GpuPick(g.key, g.name, True, T(QT_TRANSLATE_NOOP("Core", "the only kind of AMD GPU here (integrated)")), True))
        elif g.integrated and best is not None and not best.integrated:
            out.append(GpuPick(
                g.key, g.name, False,
                T(QT_TRANSLATE_NOOP("Core", "integrated GPU left out: {best} is faster and has its own memory, and "
                                          "ROCm builds that see an iGPU may pick it or crash; choose it to use it"),
                  best=best.name), True))
        else:
            mem = format_mem(best.vram_total or 0) if best is not None else "?"
            out.append(GpuPick(g.key, g.name, False,
                               T(QT_TRANSLATE_NOOP("Core", "left out: {best} has more memory ({mem}); choose both to use both"),
                                 best=best.name if best else T(QT_TRANSLATE_NOOP("Core", "another GPU")), mem=mem), g.integrated))
    return out


def _not_amd(gpu: GpuInfo) -> str:
    return T(QT_TRANSLATE_NOOP("Core", "not an AMD GPU ({vendor})"), vendor=gpu.vendor)


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and w not in _GENERIC_WORDS}


def _score(device: Device, gpu: GpuInfo) -> int:
    """How sure we are that ``device`` is ``gpu`` (0: not at all)."""
    score = 0
    name_words, dev_words = _words(gpu.name), _words(device.description)
    if name_words and name_words <= dev_words:
        score += 4  # every distinctive word of the name ("rx 7900 xtx") is in the engine's name
    elif name_words & dev_words:
        score += 2  # a code name ("raphael" in "RADV RAPHAEL_MENDOCINO")
    total = device.total_mib * _MIB
    for mem in (gpu.vram_total, gpu.model_memory, gpu.shared_total):
        if mem and abs(total - mem) <= max(mem * 0.03, 64 * _MIB):
            score += 3
            break
    # ROCm and Vulkan call an APU "AMD Radeon Graphics" without a model number.
    generic = not _words(device.description.split("(")[0])
    if generic and gpu.integrated:
        score += 1
    elif generic and not gpu.integrated:
        score -= 1
    return max(score, 0)


def match_devices(gpus: Sequence[GpuInfo], devices: Sequence[Device]) -> dict[str, GpuInfo]:
    """Engine device name → the detected GPU it is (best matches first; devices that are no detected
    GPU, such as Mesa's llvmpipe, are left out)."""
    pairs = sorted(((_score(d, g), -i, -j, d, g) for i, d in enumerate(devices) for j, g in enumerate(gpus)),
                   key=lambda t: (t[0], t[1], t[2]), reverse=True)
    out: dict[str, GpuInfo] = {}
    used: set[str] = set()
    for score, _i, _j, d, g in pairs:
        if score >= 3 and d.name not in out and g.key not in used:
            out[d.name] = g
            used.add(g.key)
    return out


def _index(name: str) -> int:
    return int(name.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") or 0)


def device_env(backend: str, devices: Sequence[str], launch_env: Mapping[str, str], os_name: str) -> dict[str, str]:
    """Launch variables that restrict ``backend`` to ``devices`` (names from its ``--list-devices``
    run under ``launch_env``)."""
    idx = [_index(d) for d in devices]
    if backend == "rocm":
        if os_name == "linux":
            # ROCr filters first and HIP numbers what is left from 0, so HIP_VISIBLE_DEVICES must
            # count 0..n-1: repeating the ROCr indices would hide a chosen second GPU.
            return {"ROCR_VISIBLE_DEVICES": ",".join(map(str, idx)),
                    "HIP_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(idx)))}
        return {"HIP_VISIBLE_DEVICES": ",".join(map(str, idx))}
    if backend == "vulkan":
        listed = [p.strip() for p in launch_env.get(VK_VISIBILITY, "").replace(" ", ",").split(",") if p.strip()]
        if listed and all(i < len(listed) for i in idx):
            # VulkanK is the K-th entry of the list the probe ran with: that entry is its physical index.
            return {VK_VISIBILITY: ",".join(listed[i] for i in idx)}
        # llama.cpp's default Vulkan list skips CPU devices and duplicates, so VulkanK need not be
        # physical device K: name the device instead, exactly as this build listed it.
        return {DEVICE_ARG_ENV: ",".join(devices)}
    return {}


def choose_devices(backend: str, devices: Sequence[Device], report: GpuReport | None, wanted: Sequence[str],
                   launch_env: Mapping[str, str], os_name: str) -> DeviceChoice:
    """The devices ``backend``'s engine runs on, its launch variables and the reason (pure).

    Args:
        backend: "rocm", "vulkan" or "cpu".
        devices: Every device the engine's last probe listed.
        report: The detected GPUs (None: not detected).
        wanted: ``Settings.devices``: GPU keys, PCI buses, name parts, or engine device names.
        launch_env: The environment the engine is probed and launched with.
        os_name: "linux" or "windows".
    """
    prefix = BACKEND_DEVICE_PREFIX.get(backend)
    if prefix is None:
        return DeviceChoice((), {}, "")
    mine = [d for d in devices if d.kind == prefix]
    if not mine:
        return DeviceChoice((), {}, "")
    wanted = [w for w in wanted if w.strip()]
    # A ROCm list set by the user (or a wrapper script) stays theirs; a Vulkan list is narrowed
    # through (device_env), which keeps within it.
    preset = [v for v in ROCM_VISIBILITY if v in launch_env] if backend == "rocm" else []
    if preset:
        return DeviceChoice((), {}, f"devices as your environment sets them ({', '.join(preset)})")
    matched = match_devices(report.gpus if report is not None else [], mine)
    by_key = {g.key: name for name, g in matched.items()}
    named = [d.name for d in mine if any(w.strip().lower() == d.name.lower() for w in wanted)]
    picks = pick_gpus(report, wanted)
    chosen_keys = [p.key for p in picks if p.chosen]
    if named:
        chosen = named
        reason = "you chose " + ", ".join(f"{d.name} ({d.description})" for d in mine if d.name in named)
    elif chosen_keys and any(k in by_key for k in chosen_keys):
        chosen = [by_key[k] for k in chosen_keys if k in by_key]
        why = {p.key: p.reason for p in picks}
        reason = "; ".join(f"{n} is {matched[n].name}: {why[matched[n].key]}" for n in chosen)
        left = [f"{n} ({matched[n].name})" for n in matched if n not in chosen]
        if left:
            reason += "; left out: " + ", ".join(left)
        missing = [p.name for p in picks if p.chosen and p.key not in by_key]
        if missing:
            reason += f"; this build does not list {', '.join(missing)}"
    else:
        note = " (your choice is not among them)" if wanted else ""
        return DeviceChoice((), {}, f"every {prefix} device this build lists{note}: "
                            + ", ".join(f"{d.name} {d.description}" for d in mine),
                            {n: g.key for n, g in matched.items()})
    order = [d.name for d in mine if d.name in chosen]
    env = device_env(backend, order, launch_env, os_name)
    if len(order) > 1:
        split, how = split_env([d for d in mine if d.name in order])
        env.update(split)
        reason += "; " + how
    return DeviceChoice(tuple(order), env, reason, {n: g.key for n, g in matched.items()})


def split_env(devices: Sequence[Device]) -> tuple[dict[str, str], str]:
    """Spread the model over ``devices`` by layer, in proportion to each one's free memory; the one
    with the most free memory holds the intermediate results (``--main-gpu``)."""
    free = [max(d.free_mib, 1) for d in devices]
    main = free.index(max(free))
    shares = ", ".join(f"{d.name} {f:,} MiB free" for d, f in zip(devices, free, strict=True))
    return ({"LLAMA_ARG_SPLIT_MODE": "layer", "LLAMA_ARG_TENSOR_SPLIT": ",".join(map(str, free)),
             "LLAMA_ARG_MAIN_GPU": str(main)},
            f"layers split over {len(devices)} devices by free memory ({shares})")

