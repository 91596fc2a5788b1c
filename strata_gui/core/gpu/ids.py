"""The PCI-ID → gfx target table (``kernels/amd-gpu-ids.json``), loaded and validated.

The table is data so it can be corrected without code changes. It goes stale: a device it does
not know is still listed by the detectors (marked "gfx target unknown") and can be resolved
from an engine's own answer (see :mod:`strata_gui.core.gpu.engine_output`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from strata_gui.core.base.errors import GpuDetectionError

AMD_VENDOR_ID = 0x1002
TABLE_FILE_NAME = "amd-gpu-ids.json"
_GFX_RE = re.compile(r"^gfx[0-9]{2,3}[0-9a-f]{1,2}$")
_VERSION_RE = re.compile(r"^\d+(\.\d+){1,3}$")


@dataclass(frozen=True)
class IdMatch:
    """What the table says about one (device id, revision).

    Attributes:
        gfx: The gfx target, e.g. ``gfx1100``.
        name: Marketing name, as precise as the revision allows.
        integrated: True for APU/iGPU parts that share system memory.
        by_revision: True when the revision picked the answer (recorded as a fact source).
    """

    gfx: str
    name: str
    integrated: bool
    by_revision: bool


BF16_SPEEDS = ("fast", "slow", "unsupported")
_TRADEMARKS = re.compile(r"\((?:TM|R)\)|\bAMD\b|\bGraphics\b(?!\s*\()", re.IGNORECASE)


@dataclass(frozen=True)
class BandwidthRow:
    """Peak memory bandwidth of one product, from its spec sheet.

    Attributes:
        name: Product name as it appears in GPU names (``Radeon RX 7900 XTX``).
        gbps: Peak bandwidth in GB/s (10^9 bytes per second).
        source: Where the figure comes from.
        system_memory: For an APU: the system memory the figure assumes (``LPDDR5X-8000, 256-bit``);
            empty for a card with its own VRAM.
    """

    name: str
    gbps: float
    source: str
    system_memory: str = ""


@dataclass(frozen=True)
class ComputeRow:
    """Peak matrix throughput of one product, from its spec sheet (dense, no sparsity).

    Attributes:
        name: Product name as it appears in GPU names.
        rates: TFLOPS (TOPS for ``int8``) per compute type: ``fp16``, ``bf16``, ``int8``, ``fp32``;
            a type the product has no figure for is absent.
        source: Where the figures come from.
    """

    name: str
    rates: dict[str, float]
    source: str


def _name_variants(name: str) -> list[str]:
    """``Radeon RX 6700 XT / 6750 XT / 6700`` → each product spelled out in full."""
    clean = " ".join(_TRADEMARKS.sub(" ", name).split())
    parts = [p.strip() for p in clean.split(" / ")]
    first = parts[0]
    # The model number is the first word with a digit: the brand before it is shared.
    words = first.split()
    brand = next((i for i, w in enumerate(words) if any(c.isdigit() for c in w)), 0)
    prefix = " ".join(words[:brand])
    return [first] + [f"{prefix} {p}".strip() for p in parts[1:]]


@dataclass(frozen=True)
class _Entry:
    gfx: str
    name: str
    integrated: bool
    revisions: dict[int, tuple[str | None, str | None]]


@dataclass(frozen=True)
class WindowsDriverRequirement:
    """The oldest AMD Windows driver whose HIP runtime the ROCm engines work with."""

    min_version: str
    min_release: str
    hip_runtime_dlls: tuple[str, ...]


@dataclass(frozen=True)
class GpuIdTable:
    """Validated contents of ``amd-gpu-ids.json``."""

    devices: dict[int, _Entry]
    other_vendors: dict[int, str]
    windows_driver: WindowsDriverRequirement
    source: str = ""
    bf16: dict[str, str] = field(default_factory=dict)  # gfx → "fast" | "slow" | "unsupported"
    bandwidth: tuple[BandwidthRow, ...] = ()
    compute: tuple[ComputeRow, ...] = ()

    def bandwidth_for(self, gpu_name: str) -> BandwidthRow | None:
        """The spec-sheet bandwidth of the product ``gpu_name`` names (the longest row name in it).

        A name covering several products (``Radeon RX 6700 XT / 6750 XT / 6700``) gets a figure
        only when all of them share it; None when the table does not know the product.
        """
        return _row_for(self.bandwidth, gpu_name, lambda r: r.gbps)

    def compute_for(self, gpu_name: str) -> ComputeRow | None:
        """The spec-sheet matrix rates of the product ``gpu_name`` names (as :meth:`bandwidth_for`:
        an ambiguous name gets figures only when every product it may be shares them)."""
        return _row_for(self.compute, gpu_name, lambda r: tuple(sorted(r.rates.items())))

    def bf16_speed(self, gfx: str) -> str | None:
        """How this gfx target runs BF16 models: "fast", "slow", "unsupported" (None: not in the table)."""
        return self.bf16.get(gfx.lower())

    def lookup(self, device_id: int, revision: int | None) -> IdMatch | None:
        """Return what the table knows about an AMD device, honouring revision overrides."""
        entry = self.devices.get(device_id)
        if entry is None:
            return None
        if revision is not None and revision in entry.revisions:
            gfx, name = entry.revisions[revision]
            return IdMatch(gfx or entry.gfx, name or entry.name, entry.integrated, by_revision=True)
        return IdMatch(entry.gfx, entry.name, entry.integrated, by_revision=False)

    def vendor_name(self, vendor_id: int) -> str:
        if vendor_id == AMD_VENDOR_ID:
            return "AMD"
        return self.other_vendors.get(vendor_id, f"vendor 0x{vendor_id:04x}")


def _hex(value: Any, where: str) -> int:
    if not isinstance(value, str) or not value.lower().startswith("0x"):
        raise ValueError(f"{where}: expected a hex string like '0x744C', got {value!r}")
    return int(value, 16)


def _gfx(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _GFX_RE.match(value):
        raise ValueError(f"{where}: expected a gfx target like 'gfx1100', got {value!r}")
    return value


def parse_gpu_table(data: Any) -> GpuIdTable:
    """Validate the decoded JSON of the table.

    Raises:
        GpuDetectionError: The table is malformed (names the offending entry).
    """
    try:
        if not isinstance(data, dict) or data.get("schema") != 1:
            raise ValueError("expected an object with \"schema\": 1")
        devices: dict[int, _Entry] = {}
        for i, raw in enumerate(data.get("devices", [])):
            dev_id, entry = _parse_device(raw, f"devices[{i}]", devices)
            devices[dev_id] = entry
        others = {_hex(k, "other_vendors"): str(v) for k, v in dict(data.get("other_vendors", {})).items()}
        requirement = _parse_windows_driver(data.get("windows_driver"))
        bf16 = {gfx_key.lower(): _parse_bf16(gfx_key, row) for gfx_key, row in dict(data.get("bf16", {})).items()}
        bandwidth = [_parse_bandwidth(row, f"bandwidth[{i}]") for i, row in enumerate(data.get("bandwidth", []))]
        compute = [_parse_compute(row, f"compute[{i}]") for i, row in enumerate(data.get("compute", []))]
    except (ValueError, TypeError) as exc:
        raise GpuDetectionError(
            f"The GPU id table is invalid: {exc}",
            hint="Reinstall Strata; the file kernels/amd-gpu-ids.json was edited or damaged.",
        ) from exc
    return GpuIdTable(
        devices=devices,
        other_vendors=others,
        windows_driver=requirement,
        source=str(data.get("source", "")),
        bf16=bf16,
        bandwidth=tuple(bandwidth),
        compute=tuple(compute),
    )


def _parse_device(raw: Any, where: str, seen: Container[int]) -> tuple[int, _Entry]:
    """One AMD device: its PCI id (not in ``seen``), gfx target, name, and what differs per PCI revision."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    dev_id = _hex(raw.get("id"), where)
    if dev_id in seen:
        raise ValueError(f"{where}: device id 0x{dev_id:04X} listed twice")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: missing name")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"{where}: missing source (where the id and gfx target were checked)")
    revisions: dict[int, tuple[str | None, str | None]] = {}
    for rev_key, rev in dict(raw.get("revisions", {})).items():
        rwhere = f"{where}.revisions[{rev_key}]"
        if not isinstance(rev, dict) or not (rev.get("gfx") or rev.get("name")):
            raise ValueError(f"{rwhere}: needs a gfx or a name")
        rev_gfx = _gfx(rev["gfx"], rwhere) if "gfx" in rev else None
        rev_name = rev.get("name")
        revisions[_hex(rev_key, rwhere)] = (rev_gfx, str(rev_name) if rev_name else None)
    return dev_id, _Entry(
        gfx=_gfx(raw.get("gfx"), where),
        name=name,
        integrated=bool(raw.get("integrated", False)),
        revisions=revisions,
    )


def _parse_windows_driver(drv: Any) -> WindowsDriverRequirement:
    """The oldest Windows driver ROCm runs on, and the HIP runtime files that show it is there."""
    if not isinstance(drv, dict):
        raise ValueError("windows_driver: expected an object")
    min_version = str(drv.get("min_version", ""))
    if not _VERSION_RE.match(min_version):
        raise ValueError(f"windows_driver.min_version: not a version: {min_version!r}")
    dlls = drv.get("hip_runtime_dlls")
    if not isinstance(dlls, list) or not dlls:
        raise ValueError("windows_driver.hip_runtime_dlls: expected a non-empty list")
    return WindowsDriverRequirement(
        min_version=min_version,
        min_release=str(drv.get("min_release", "")),
        hip_runtime_dlls=tuple(str(d) for d in dlls),
    )


def _parse_bf16(gfx_key: Any, row: Any) -> str:
    """How fast a gfx target runs BF16 ("fast", "slow", "unsupported")."""
    where = f"bf16.{gfx_key}"
    _gfx(gfx_key, where)
    if not isinstance(row, dict) or row.get("speed") not in BF16_SPEEDS:
        raise ValueError(f"{where}.speed: expected one of {', '.join(BF16_SPEEDS)}")
    if not isinstance(row.get("source"), str) or not row["source"].strip():
        raise ValueError(f"{where}: missing source")
    return str(row["speed"])


def _parse_bandwidth(row: Any, where: str) -> BandwidthRow:
    """One product's spec-sheet memory bandwidth."""
    if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not row["name"]:
        raise ValueError(f"{where}: missing name")
    gbps = row.get("gbps")
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not 0 < gbps < 100_000:
        raise ValueError(f"{where}.gbps: expected GB/s, got {gbps!r}")
    if not isinstance(row.get("source"), str) or not row["source"].strip():
        raise ValueError(f"{where}: missing source (the spec sheet the figure comes from)")
    return BandwidthRow(row["name"], float(gbps), row["source"], str(row.get("system_memory", "")))


def _parse_compute(row: Any, where: str) -> ComputeRow:
    """One product's spec-sheet matrix rates (null: no figure for that type)."""
    if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not row["name"]:
        raise ValueError(f"{where}: missing name")
    rates: dict[str, float] = {}
    for kind in ("fp16", "bf16", "int8", "fp32"):
        value = row.get(kind)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 100_000:
            raise ValueError(f"{where}.{kind}: expected TFLOPS, got {value!r}")
        rates[kind] = float(value)
    if not isinstance(row.get("source"), str) or not row["source"].strip():
        raise ValueError(f"{where}: missing source (the spec sheet the figures come from)")
    return ComputeRow(row["name"], rates, row["source"])


Row = TypeVar("Row", BandwidthRow, ComputeRow)


def _row_for(rows: Sequence[Row], gpu_name: str, figure: Callable[[Row], object]) -> Row | None:
    """The row of the product ``gpu_name`` names (the longest row name in it); a name covering
    several products gets one only when they all share its figure."""
    found: list[Row | None] = []
    for variant in _name_variants(gpu_name):
        hits = [r for r in rows if re.search(re.escape(r.name) + r"(?![A-Za-z0-9])", variant, re.IGNORECASE)]
        found.append(max(hits, key=lambda r: len(r.name)) if hits else None)
    first = found[0] if found else None
    if first is None or any(f is None or figure(f) != figure(first) for f in found):
        return None
    return first


def load_gpu_table(kernels_dir: Path) -> GpuIdTable:
    """Read and validate ``<kernels_dir>/amd-gpu-ids.json``.

    Raises:
        GpuDetectionError: The file is missing, unreadable or malformed.
    """
    path = kernels_dir / TABLE_FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GpuDetectionError(
            f"Could not read the GPU id table {path}: {exc.strerror or exc}",
            hint="Reinstall Strata; its kernels folder is incomplete.",
        ) from exc
    except json.JSONDecodeError as exc:
        raise GpuDetectionError(
            f"The GPU id table {path} is not valid JSON (line {exc.lineno}).",
            hint="Reinstall Strata; the file was edited or damaged.",
        ) from exc
    return parse_gpu_table(data)


def gfx_from_target_version(value: int) -> str | None:
    """KFD ``gfx_target_version`` (decimal, e.g. 110501) → ``gfx1151``; None for CPU nodes (0)."""
    if value <= 0:
        return None
    major = value // 10000
    minor = (value // 100) % 100
    step = value % 100
    return f"gfx{major}{minor:x}{step:x}"


def normalise_gfx(name: str) -> str | None:
    """``gfx1100:sramecc-:xnack-`` → ``gfx1100``; None when it is not a gfx target."""
    base = name.strip().split(":", 1)[0].lower()
    return base if _GFX_RE.match(base) else None
