"""GPU detection and telemetry on Windows, from captured outputs.

Every parser here is pure and runs on any OS: registry dumps of the display class keys
(``reg query ... /s``), the DXGI adapter list and the HIP runtime answer (JSON written by
:mod:`strata_gui.core.gpu.windows_probe`), WMI ``Win32_VideoController`` (``ConvertTo-Json``)
and PDH counters (``typeperf`` CSV). A snapshot file bundles them, so a Windows machine
replays anywhere.
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from strata_gui.core.gpu.ids import AMD_VENDOR_ID, GpuIdTable, WindowsDriverRequirement, normalise_gfx
from strata_gui.core.gpu.model import (
    SNAPSHOT_FORMAT,
    DriverState,
    DriverStatus,
    GpuInfo,
    GpuReport,
    GpuSample,
    HostInfo,
)

DISPLAY_CLASS_GUID = "{4d36e968-e325-11ce-bfc1-08002be10318}"
_PCI_RE = re.compile(r"ven_([0-9a-f]{4})&dev_([0-9a-f]{4})(?:&subsys_[0-9a-f]{8})?(?:&rev_([0-9a-f]{2}))?",
                     re.IGNORECASE)
_REG_VALUE_RE = re.compile(r"^\s{2,}(\S.*?)\s{2,}(REG_[A-Z_]+)\s{2,}(.*)$")
_REG_VALUE_EMPTY_RE = re.compile(r"^\s{2,}(\S.*?)\s{2,}(REG_[A-Z_]+)\s*$")
_LUID_RE = re.compile(r"luid_(0x[0-9a-f]{8})_(0x[0-9a-f]{8})", re.IGNORECASE)
_ENG_RE = re.compile(r"_eng_(\d+)_engtype_(.+)$")
GIB = 1024**3
WMI_ADAPTER_RAM_CAP = 0xFFFFFFFF


def parse_pci_id(text: str) -> tuple[int, int, int | None] | None:
    """``PCI\\VEN_1002&DEV_744C&SUBSYS_...&REV_C8`` → (vendor, device, revision)."""
    match = _PCI_RE.search(text or "")
    if not match:
        return None
    rev = match.group(3)
    return int(match.group(1), 16), int(match.group(2), 16), (int(rev, 16) if rev else None)


@dataclass(frozen=True)
class RegistryAdapter:
    """One ``...\\Class\\{display}\\00NN`` key."""

    key: str
    driver_desc: str | None
    driver_version: str | None
    provider: str | None
    pci: tuple[int, int, int | None] | None
    memory_size: int | None  # HardwareInformation.qwMemorySize (true VRAM)


def _reg_data(kind: str, raw: str) -> str | int | bytes:
    raw = raw.strip()
    if kind in ("REG_DWORD", "REG_QWORD"):
        return int(raw, 16)
    if kind == "REG_BINARY":
        return bytes.fromhex(raw)
    return raw


def parse_registry_display_class(text: str) -> list[RegistryAdapter]:
    """Parse ``reg query HKLM\\...\\Class\\{4d36e968-...} /s`` output into adapters.

    Only the numbered adapter keys (``0000``, ``0001`` ...) count; their sub-keys (``Settings``)
    and the class's ``Properties`` key are ignored.
    """
    keys: dict[str, dict[str, str | int | bytes]] = {}
    current: dict[str, str | int | bytes] | None = None
    for line in text.splitlines():
        if line.startswith("HKEY_"):
            last = line.rstrip().rsplit("\\", 1)[-1]
            parent = line.rstrip().rsplit("\\", 2)[-2] if line.count("\\") >= 2 else ""
            if re.fullmatch(r"\d{4}", last) and parent.lower() == DISPLAY_CLASS_GUID:
                current = keys.setdefault(last, {})
            else:
                current = None
            continue
        if current is None:
            continue
        match = _REG_VALUE_RE.match(line)
        if match:
            name, kind, raw = match.groups()
            try:
                current[name] = _reg_data(kind, raw)
            except ValueError:
                continue  # a value we cannot decode is a value we do not use
        elif _REG_VALUE_EMPTY_RE.match(line):
            continue
    adapters = []
    for key, values in sorted(keys.items()):
        mem = values.get("HardwareInformation.qwMemorySize")
        if isinstance(mem, bytes):
            mem = int.from_bytes(mem[:8], "little")
        if not isinstance(mem, int):
            legacy = values.get("HardwareInformation.MemorySize")  # 32-bit, capped like WMI's
            mem = None if legacy is None else (int.from_bytes(legacy[:4], "little")
                                               if isinstance(legacy, bytes) else int(legacy))
            mem = mem or None
        match_id = values.get("MatchingDeviceId")
        desc, version, provider = values.get("DriverDesc"), values.get("DriverVersion"), values.get("ProviderName")
        adapters.append(RegistryAdapter(
            key=key,
            driver_desc=str(desc) if desc is not None else None,
            driver_version=str(version) if version is not None else None,
            provider=str(provider) if provider is not None else None,
            pci=parse_pci_id(str(match_id)) if match_id else None,
            memory_size=mem,
        ))
    return adapters


@dataclass(frozen=True)
class DxgiAdapter:
    description: str
    vendor_id: int
    device_id: int
    revision: int
    dedicated_video: int
    shared_system: int
    luid: str  # "0x00000000_0x0000d1a3", the form PDH instance names use
    software: bool


def _int(value: Any) -> int:
    if isinstance(value, str):
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    return int(value)


def parse_dxgi_adapters(data: Any) -> list[DxgiAdapter]:
    """The probe's DXGI list (``DXGI_ADAPTER_DESC1`` fields) → adapters, software ones flagged."""
    adapters = []
    for raw in data if isinstance(data, list) else [data]:
        luid = raw.get("AdapterLuid", {})
        if isinstance(luid, dict):
            luid_text = f"0x{_int(luid.get('HighPart', 0)) & 0xFFFFFFFF:08x}_0x{_int(luid.get('LowPart', 0)):08x}"
        else:
            luid_text = str(luid).lower()
        adapters.append(DxgiAdapter(
            description=str(raw.get("Description", "")).strip(),
            vendor_id=_int(raw.get("VendorId", 0)),
            device_id=_int(raw.get("DeviceId", 0)),
            revision=_int(raw.get("Revision", 0)),
            dedicated_video=_int(raw.get("DedicatedVideoMemory", 0)),
            shared_system=_int(raw.get("SharedSystemMemory", 0)),
            luid=luid_text,
            software=bool(_int(raw.get("Flags", 0)) & 0x2),  # DXGI_ADAPTER_FLAG_SOFTWARE
        ))
    return adapters


@dataclass(frozen=True)
class WmiController:
    name: str
    pnp_device_id: str
    pci: tuple[int, int, int | None] | None
    driver_version: str | None
    adapter_ram: int | None  # uint32: capped at 4 GiB, shown only to explain the cap
    driver_date: str | None = None  # YYYY-MM-DD


def parse_driver_date(value: Any) -> str | None:
    """WMI ``20250619000000.000000-000``, registry ``6-19-2025`` or JSON ``/Date(1750291200000)/`` → ``2025-06-19``."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if m := re.match(r"^(\d{4})(\d{2})(\d{2})\d*", text):
        return f"{m[1]}-{m[2]}-{m[3]}"
    if m := re.match(r"^(\d{1,2})-(\d{1,2})-(\d{4})$", text):
        return f"{m[3]}-{int(m[1]):02d}-{int(m[2]):02d}"
    if m := re.match(r"^/Date\((\d+)\)/$", text):
        import datetime

        return datetime.datetime.fromtimestamp(int(m[1]) / 1000, datetime.UTC).strftime("%Y-%m-%d")
    return None


def parse_wmi_video_controllers(data: Any) -> list[WmiController]:
    """``Get-CimInstance Win32_VideoController | ConvertTo-Json`` (one object or a list)."""
    items = data if isinstance(data, list) else [data]
    result = []
    for raw in items:
        if not isinstance(raw, dict):
            continue
        pnp = str(raw.get("PNPDeviceID") or "")
        ram = raw.get("AdapterRAM")
        result.append(WmiController(
            name=str(raw.get("Name") or "").strip(),
            pnp_device_id=pnp,
            pci=parse_pci_id(pnp),
            driver_version=str(raw["DriverVersion"]) if raw.get("DriverVersion") else None,
            adapter_ram=int(ram) if isinstance(ram, int) else None,
            driver_date=parse_driver_date(raw.get("DriverDate")),
        ))
    return result


@dataclass(frozen=True)
class HipDevice:
    name: str
    gfx: str | None
    total_memory: int | None
    pci_bus: int | None


@dataclass(frozen=True)
class HipRuntime:
    dll: str | None  # file name of the runtime found, None when absent
    devices: list[HipDevice]
    error: str | None


def parse_hip_probe(data: Any) -> HipRuntime:
    """The probe's HIP answer: ``{"dll": ..., "devices": [{name, gcnArchName, ...}], "error": ...}``."""
    if not isinstance(data, dict):
        return HipRuntime(dll=None, devices=[], error="no HIP probe data")
    dll = data.get("dll")
    devices = []
    for raw in data.get("devices") or []:
        mem = raw.get("totalGlobalMem")
        bus = raw.get("pciBusID")
        devices.append(HipDevice(
            name=str(raw.get("name", "")).strip(),
            gfx=normalise_gfx(str(raw.get("gcnArchName", ""))),
            total_memory=int(mem) if isinstance(mem, int) else None,
            pci_bus=int(bus) if isinstance(bus, int) else None,
        ))
    dll_name = str(dll).replace("\\", "/").rsplit("/", 1)[-1] if dll else None
    return HipRuntime(dll=dll_name, devices=devices, error=data.get("error"))


def parse_typeperf_csv(text: str) -> list[dict[str, float | None]]:
    """``typeperf <counters> -sc N`` CSV → one ``{"\\Object(instance)\\Counter": value}`` per row.

    The ``\\\\HOST`` prefix is dropped; blank cells (a counter that vanished) become None.
    """
    rows = list(csv.reader(io.StringIO(text.strip())))
    if not rows or not rows[0] or not rows[0][0].startswith("(PDH-CSV"):
        return []
    paths = []
    for header in rows[0][1:]:
        path = re.sub(r"^\\\\[^\\]+", "", header.strip())
        paths.append(path)
    samples = []
    for row in rows[1:]:
        if len(row) < 2:
            continue
        values: dict[str, float | None] = {}
        for path, cell in zip(paths, row[1:], strict=False):
            try:
                values[path] = float(cell)
            except ValueError:
                values[path] = None
        samples.append(values)
    return samples


@dataclass(frozen=True)
class PdhAdapterUsage:
    load_percent: float | None
    dedicated_used: int | None
    shared_used: int | None


def summarize_pdh(values: dict[str, float | None]) -> dict[str, PdhAdapterUsage]:
    """Per adapter LUID: busiest engine (utilisation summed over processes, as Task Manager
    shows it) and dedicated/shared memory usage.

    Engine instances exist only while a process uses the engine: an adapter that reports
    memory counters but no engine instance is idle (0 %). An adapter absent from every counter
    has no reading (None).
    """
    engines: dict[str, dict[tuple[str, str], float]] = {}
    dedicated: dict[str, int] = {}
    shared: dict[str, int] = {}
    for path, value in values.items():
        if value is None:
            continue
        match = re.match(r"^\\(.+?)\((.*)\)\\(.+)$", path)
        if not match:
            continue
        obj, instance, counter = match.groups()
        luid_match = _LUID_RE.search(instance)
        if not luid_match:
            continue
        luid = f"{luid_match.group(1)}_{luid_match.group(2)}".lower()
        if obj == "GPU Engine" and counter == "Utilization Percentage":
            eng = _ENG_RE.search(instance)
            engine_key = (eng.group(1), eng.group(2)) if eng else ("?", instance)
            per = engines.setdefault(luid, {})
            per[engine_key] = per.get(engine_key, 0.0) + value
        elif obj == "GPU Adapter Memory" and counter == "Dedicated Usage":
            dedicated[luid] = dedicated.get(luid, 0) + int(value)
        elif obj == "GPU Adapter Memory" and counter == "Shared Usage":
            shared[luid] = shared.get(luid, 0) + int(value)
    result = {}
    for luid in set(engines) | set(dedicated) | set(shared):
        busiest = max(engines[luid].values()) if engines.get(luid) else 0.0
        result[luid] = PdhAdapterUsage(
            load_percent=None if busiest is None else min(100.0, busiest),
            dedicated_used=dedicated.get(luid),
            shared_used=shared.get(luid),
        )
    return result


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:4])


def driver_verdict(
    version: str | None,
    provider_is_amd: bool,
    hip: HipRuntime,
    requirement: WindowsDriverRequirement,
) -> DriverStatus:
    """Say plainly whether the AMD driver can run the ROCm engines, and what to install if not."""
    install = f"Install {requirement.min_release} or newer from AMD's driver download page."
    if not provider_is_amd or not version:
        return DriverStatus(
            DriverState.MISSING, version, hip.dll,
            "No AMD display driver is installed (Windows is using a generic driver).",
            install + " Until then only the CPU engine can run.",
        )
    if _version_tuple(version) < _version_tuple(requirement.min_version):
        return DriverStatus(
            DriverState.TOO_OLD, version, hip.dll,
            f"AMD driver {version} is too old for the ROCm engines (needs {requirement.min_version} or newer).",
            install + " The Vulkan engine works meanwhile.",
        )
    if hip.dll is None:
        return DriverStatus(
            DriverState.NO_HIP, version, None,
            f"AMD driver {version} is installed but its HIP runtime (amdhip64_*.dll) was not found.",
            f"Reinstall {requirement.min_release} or newer with the full installer (not a driver-only"
            " package). The Vulkan engine works meanwhile.",
        )
    return DriverStatus(DriverState.OK, version, hip.dll, f"AMD driver {version} with HIP runtime {hip.dll}.")


def make_windows_snapshot(
    *,
    registry: str,
    dxgi: Any,
    wmi: Any,
    hip: Any,
    pdh: list[str],
    host: dict[str, Any],
    captured_at: str = "",
) -> dict[str, Any]:
    """Bundle raw Windows outputs into the snapshot format :class:`WindowsSnapshotDetector` reads."""
    return {
        "format": SNAPSHOT_FORMAT,
        "version": 1,
        "platform": "windows",
        "captured_at": captured_at,
        "host": host,
        "registry": registry,
        "dxgi": dxgi,
        "wmi": wmi,
        "hip": hip,
        "pdh": list(pdh),
    }


class WindowsSnapshotDetector:
    """Builds the GPU list from a Windows snapshot (replayed file, or one just probed live).

    Args:
        snapshot: The decoded snapshot (``platform: "windows"``).
        table: The PCI-ID → gfx table.
        origin: Where the snapshot came from, for the report.
    """

    platform = "windows"

    def __init__(self, snapshot: dict[str, Any], table: GpuIdTable, origin: str) -> None:
        self.snapshot = snapshot
        self.table = table
        self.origin = origin

    def detect(self) -> GpuReport:
        snap, table = self.snapshot, self.table
        registry = parse_registry_display_class(str(snap.get("registry") or ""))
        dxgi = [a for a in parse_dxgi_adapters(snap.get("dxgi") or []) if not a.software]
        wmi = parse_wmi_video_controllers(snap.get("wmi") or [])
        hip = parse_hip_probe(snap.get("hip"))
        host_raw = snap.get("host") or {}
        host = HostInfo(
            cpu_name=str(host_raw.get("cpu_name") or "unknown CPU"),
            cpu_threads=host_raw.get("cpu_threads"),
            ram_total=host_raw.get("ram_total"),
        )
        notes: list[str] = []
        gpus: list[GpuInfo] = []
        hip_left = list(hip.devices)
        entries = _adapters(dxgi, wmi, notes)
        amd_versions: list[tuple[str | None, bool]] = []
        amd_count = sum(1 for e in entries if e[0] == AMD_VENDOR_ID)
        for index, (vendor_id, device_id, revision, desc, dedicated, shared, luid) in enumerate(entries):
            sources: dict[str, str] = {"pci_ids": "DXGI adapter description" if dxgi else "WMI PNPDeviceID"}
            reg = _pick(registry, vendor_id, device_id, desc, pci_of=lambda r: r.pci,
                        name_of=lambda r: r.driver_desc)
            wmi_c = _pick(wmi, vendor_id, device_id, desc, pci_of=lambda w: w.pci, name_of=lambda w: w.name)
            vendor = table.vendor_name(vendor_id)
            name = desc or (reg.driver_desc if reg else None) or f"{vendor} GPU 0x{device_id:04X}"
            sources["name"] = "DXGI adapter description" if desc else "registry DriverDesc"
            gfx: str | None = None
            integrated = False
            if vendor_id == AMD_VENDOR_ID:
                hip_dev = _take_hip(hip_left, name, dedicated, only_pair=amd_count == 1)
                gfx, integrated = _amd_target(table, device_id, revision, name, hip_dev, hip.dll, notes, sources)
            vram: int | None = None
            if reg is not None and reg.memory_size:
                vram = reg.memory_size
                sources["vram_total"] = f"registry {reg.key} HardwareInformation.qwMemorySize"
            elif dedicated:
                vram = dedicated
                sources["vram_total"] = "DXGI DedicatedVideoMemory"
            if wmi_c is not None and wmi_c.adapter_ram is not None and vram and wmi_c.adapter_ram < vram:
                sources["vram_total"] += f" (WMI AdapterRAM {wmi_c.adapter_ram} ignored: capped at 4 GiB)"
            if shared:
                sources["shared_total"] = "DXGI SharedSystemMemory"
            if vendor_id == AMD_VENDOR_ID and not integrated and vram is not None and vram < 2 * GIB:
                integrated = True
                sources["integrated"] = "heuristic: dedicated memory under 2 GiB"
            sources.setdefault("integrated", "PCI id table (discrete)" if gfx else "assumed discrete")
            version = (wmi_c.driver_version if wmi_c else None) or (reg.driver_version if reg else None)
            provider = reg.provider if reg else None
            if version:
                sources["driver"] = "WMI Win32_VideoController.DriverVersion" if wmi_c and wmi_c.driver_version \
                    else "registry DriverVersion"
            if vendor_id == AMD_VENDOR_ID:
                amd_versions.append((version, provider is None or "advanced micro devices" in provider.lower()
                                     or "amd" in provider.lower()))
            gpus.append(GpuInfo(
                key=f"luid:{luid}" if dxgi else f"wmi:{index}",
                vendor=vendor,
                vendor_id=vendor_id,
                device_id=device_id,
                revision=revision,
                name=name,
                gfx_target=gfx,
                integrated=integrated,
                vram_total=vram,
                shared_total=shared or None,
                driver=(f"{vendor} driver {version}" if version else None),
                pci_bus=None,
                sources=sources,
                driver_version=version,
                driver_date=wmi_c.driver_date if wmi_c else None,
            ))
        status = None
        if amd_versions:
            version, is_amd = amd_versions[0]
            status = driver_verdict(version, is_amd, hip, table.windows_driver)
        if hip.error:
            notes.append(f"HIP runtime probe: {hip.error}")
        return GpuReport(platform=self.platform, origin=self.origin, host=host, gpus=gpus,
                         driver_status=status, notes=notes)


_Adapter = tuple[int, int, int | None, str, int | None, int | None, str]
"""vendor id, device id, revision, description, dedicated memory, shared memory, LUID."""


def _adapters(dxgi: list[DxgiAdapter], wmi: list[WmiController], notes: list[str]) -> list[_Adapter]:
    """The display adapters from DXGI (hardware ones), else from WMI's PCI ids."""
    entries: list[_Adapter] = []
    if dxgi:
        for a in dxgi:
            entries.append((a.vendor_id, a.device_id, a.revision, a.description, a.dedicated_video,
                            a.shared_system, a.luid))
    else:
        notes.append("No DXGI adapter list in the snapshot; using WMI.")
        for w in wmi:
            if w.pci:
                entries.append((w.pci[0], w.pci[1], w.pci[2], w.name, None, None, f"wmi{len(entries)}"))
    return entries


def _amd_target(table: GpuIdTable, device_id: int, revision: int | None, name: str, hip_dev: HipDevice | None,
                hip_dll: str | None, notes: list[str], sources: dict[str, str]) -> tuple[str | None, bool]:
    """An AMD adapter's gfx target and whether it is integrated: the id table's, with the HIP
    runtime's gfx target winning."""
    gfx: str | None = None
    integrated = False
    match = table.lookup(device_id, revision)
    if match is not None:
        rev_txt = f" rev 0x{revision:02X}" if match.by_revision and revision is not None else ""
        gfx, integrated = match.gfx, match.integrated
        sources["gfx_target"] = f"PCI id table (0x{device_id:04X}{rev_txt})"
        if integrated:
            sources["integrated"] = "PCI id table (known integrated GPU)"
    if hip_dev is not None and hip_dev.gfx:
        if gfx and gfx != hip_dev.gfx:
            notes.append(f"{name}: id table says {gfx}, the HIP runtime says {hip_dev.gfx}; "
                         "using the runtime's.")
        gfx = hip_dev.gfx
        sources["gfx_target"] = f"HIP runtime gcnArchName ({hip_dll})"
    if gfx is None:
        sources["gfx_target"] = "unknown (not in the PCI id table, no HIP runtime answer)"
    return gfx, integrated


def _pick(items: list[Any], vendor_id: int, device_id: int, desc: str, *,
          pci_of: Callable[[Any], tuple[int, int, int | None] | None],
          name_of: Callable[[Any], str | None]) -> Any:
    same = [i for i in items if (p := pci_of(i)) is not None and p[0] == vendor_id and p[1] == device_id]
    if len(same) > 1:
        by_name = [i for i in same if (name_of(i) or "").strip() == desc]
        if by_name:
            return by_name[0]
    return same[0] if same else None


def _take_hip(devices: list[HipDevice], name: str, dedicated: int | None, only_pair: bool) -> HipDevice | None:
    """The HIP device for an adapter: same name, else same memory (±5 %), else the only pair."""
    pick = next((d for d in devices if d.name and d.name == name), None)
    if pick is None and dedicated:
        pick = next((d for d in devices if d.total_memory and abs(d.total_memory - dedicated) <= 0.05 * dedicated),
                    None)
    if pick is None and only_pair and len(devices) == 1:
        pick = devices[0]
    if pick is not None:
        devices.remove(pick)
    return pick


class PdhTelemetrySource:
    """Turns PDH ``typeperf`` CSV samples into :class:`GpuSample` per GPU.

    Windows exposes no temperature, power or clock through PDH: those stay None ("n/a").

    Args:
        gpus: The detected GPUs (keys ``luid:...``).
        read_csv: Returns one fresh ``typeperf`` CSV sample (live probe or replay).
        clock: Time source for the sample stamps.
    """

    def __init__(self, gpus: list[GpuInfo], read_csv: Callable[[], str],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.keys = {g.key[len("luid:"):]: g.key for g in gpus if g.key.startswith("luid:")}
        self.read_csv = read_csv
        self.clock = clock

    def sample(self) -> dict[str, GpuSample]:
        rows = parse_typeperf_csv(self.read_csv())
        usage = summarize_pdh(rows[-1]) if rows else {}
        now = self.clock()
        out = {}
        for luid, key in self.keys.items():
            u = usage.get(luid)
            out[key] = GpuSample(
                time=now,
                load_percent=u.load_percent if u else None,
                vram_used=u.dedicated_used if u else None,
                shared_used=u.shared_used if u else None,
            )
        return out


def cycle_samples(samples: list[str]) -> Callable[[], str]:
    """Replays captured PDH samples in a loop (a snapshot's ``pdh`` list)."""
    def gen() -> Iterator[str]:
        while True:
            yield from samples or [""]

    it = gen()
    return lambda: next(it)
