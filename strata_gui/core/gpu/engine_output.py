"""Learn what an engine sees: ``llama-server --list-devices`` and the ROCm start-up lines.

Used to resolve a GPU the id table does not know ("gfx target unknown"): the ROCm runtime
names the gfx target of every device it can drive.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from strata_gui.core.gpu.ids import normalise_gfx
from strata_gui.core.gpu.model import FamilyResolver, GpuInfo, apply_family

_LIST_RE = re.compile(r"^\s*([A-Za-z]+)(\d+):\s*(.+?)\s*\((\d+) MiB,\s*(\d+) MiB free\)\s*$")
_ROCM_RE = re.compile(r"^\s*Device\s+(\d+):\s*(.+?),\s*(gfx[0-9a-f]+(?::[\w+-]+)*)\s*\(0x[0-9a-f]+\)(.*)$",
                      re.IGNORECASE)
_VRAM_RE = re.compile(r"VRAM:\s*(\d+)\s*MiB")
MIB = 1024 * 1024


@dataclass(frozen=True)
class EngineDevice:
    """One line of ``--list-devices``: ``ROCm0: AMD Radeon RX 7900 XTX (24560 MiB, 24000 MiB free)``."""

    backend: str
    index: int
    name: str
    total_mib: int
    free_mib: int


@dataclass(frozen=True)
class RocmDevice:
    """One ROCm start-up line: ``Device 0: AMD Radeon RX 6700 XT, gfx1031 (0x1031), ... VRAM: 12272 MiB``."""

    index: int
    name: str
    gfx: str
    vram_mib: int | None


def parse_list_devices(text: str) -> list[EngineDevice]:
    devices = []
    for line in text.splitlines():
        match = _LIST_RE.match(line)
        if match:
            backend, index, name, total, free = match.groups()
            devices.append(EngineDevice(backend, int(index), name, int(total), int(free)))
    return devices


def parse_rocm_startup(text: str) -> list[RocmDevice]:
    devices = []
    for line in text.splitlines():
        match = _ROCM_RE.match(line)
        if not match:
            continue
        index, name, gfx, rest = match.groups()
        base = normalise_gfx(gfx)
        if base is None:
            continue
        vram = _VRAM_RE.search(rest)
        devices.append(RocmDevice(int(index), name.strip(), base, int(vram.group(1)) if vram else None))
    return devices


def _close(a_bytes: int | None, b_mib: int | None) -> bool:
    if a_bytes is None or b_mib is None:
        return False
    return abs(a_bytes / MIB - b_mib) <= 0.05 * max(b_mib, 1)


def resolve_unknown_targets(
    gpus: list[GpuInfo],
    engine_output: str,
    family_of: FamilyResolver | None = None,
) -> list[GpuInfo]:
    """Fill in the gfx target of AMD GPUs marked unknown from an engine's own output.

    Matching, most specific first: the same name, then memory within 5 %, then the only
    unknown GPU against the only engine device. GPUs already known are returned unchanged.

    Returns:
        New GpuInfo objects (the input is not modified).
    """
    rocm = parse_rocm_startup(engine_output)
    result = [dataclasses.replace(g, sources=dict(g.sources)) for g in gpus]
    unknown = [g for g in result if g.is_amd and g.gfx_target is None]
    left = list(rocm)
    for gpu in unknown:
        pick = next((d for d in left if d.name == gpu.name or d.name.endswith(gpu.name)), None)
        if pick is None:
            pick = next((d for d in left if _close(gpu.vram_total, d.vram_mib)), None)
        if pick is None and len(unknown) == 1 and len(left) == 1:
            pick = left[0]
        if pick is None:
            continue
        left.remove(pick)
        gpu.gfx_target = pick.gfx
        gpu.sources["gfx_target"] = f"engine ROCm start-up line (Device {pick.index}: {pick.name})"
        if gpu.sources.get("name", "").startswith("generic"):
            gpu.name = pick.name
            gpu.sources["name"] = "engine ROCm start-up line"
        apply_family(gpu, family_of)
    return result
