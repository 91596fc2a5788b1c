"""GPU detection and telemetry on Linux from sysfs (``/sys/class/drm``) and the KFD topology.

Everything reads through a :class:`~strata_gui.core.gpu.tree.FileTree`, so a captured tree
replays a machine. Pure parsers (``parse_*``) take file contents and are tested on captured data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from strata_gui.core.gpu.ids import AMD_VENDOR_ID, GpuIdTable, gfx_from_target_version
from strata_gui.core.gpu.model import GpuInfo, GpuReport, GpuSample, HostInfo
from strata_gui.core.gpu.tree import FileTree

DRM = "sys/class/drm"
KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
_CARD_RE = re.compile(r"^card\d+$")  # card0-DP-1 and renderD128 are not GPUs
_SCLK_RE = re.compile(r"^\s*\d+:\s*(\d+(?:\.\d+)?)\s*mhz\s*\*", re.IGNORECASE | re.MULTILINE)
GIB = 1024**3
_INTEL_VENDOR_ID = 0x8086
# An APU's VRAM carve-out is small and its GTT (system RAM) large; used when the id table
# does not know the device.
_APU_MAX_CARVE_OUT = 4 * GIB

DEVICE_FILES = (
    "vendor", "device", "revision", "subsystem_vendor", "subsystem_device", "uevent", "product_name",
    "mem_info_vram_total", "mem_info_vram_used", "mem_info_gtt_total", "mem_info_gtt_used",
    "mem_info_vis_vram_total", "gpu_busy_percent", "pp_dpm_sclk", "boot_vga", "power/runtime_status",
)
HWMON_FILE_RE = re.compile(r"^(name|temp\d+_(input|label)|power\d+_(average|input|cap)|freq\d+_(input|label))$")


def parse_int(text: str | None, base: int = 10) -> int | None:
    """``"0x744c\\n"`` (base 16) or ``"25753026560\\n"`` → int; None for missing/garbage."""
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def parse_key_values(text: str | None, sep: str | None = None) -> dict[str, str]:
    """KFD ``properties`` (``key value``) or ``uevent`` (``KEY=value``) → dict."""
    result: dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split(sep, 1) if sep else line.split(None, 1)
        if len(parts) == 2:
            result[parts[0].strip()] = parts[1].strip()
    return result


def parse_sclk(text: str | None) -> float | None:
    """``pp_dpm_sclk`` → current core clock in MHz (the line marked ``*``)."""
    match = _SCLK_RE.search(text or "")
    return float(match.group(1)) if match else None


def parse_cpuinfo(text: str | None) -> tuple[str, int | None]:
    """``/proc/cpuinfo`` → (model name, logical CPU count)."""
    name, count = "unknown CPU", 0
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "processor":
            count += 1
        elif key == "model name" and name == "unknown CPU":
            name = value.strip()
    return name, (count or None)


def parse_meminfo_total(text: str | None) -> int | None:
    """``/proc/meminfo`` ``MemTotal: N kB`` → bytes."""
    for line in (text or "").splitlines():
        if line.startswith("MemTotal:"):
            value = parse_int(line.split()[1])
            return None if value is None else value * 1024
    return None


def pci_location_id(slot: str) -> int | None:
    """``0000:03:00.0`` → KFD ``location_id`` ((bus << 8) | (device << 3) | function)."""
    match = re.match(r"^(?:[0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$", slot)
    if not match:
        return None
    bus, dev, fn = (int(g, 16) for g in match.groups())
    return (bus << 8) | (dev << 3) | fn


@dataclass(frozen=True)
class KfdNode:
    """One GPU node of the KFD topology (CPU nodes are dropped)."""

    node: str
    gfx: str
    target_version: int
    vendor_id: int | None
    device_id: int | None
    location_id: int | None
    cpu_cores: int


def parse_kfd_nodes(tree: FileTree) -> list[KfdNode]:
    nodes = []
    for name in tree.list(KFD_NODES):
        props = parse_key_values(tree.read(f"{KFD_NODES}/{name}/properties"))
        version = parse_int(props.get("gfx_target_version")) or 0
        gfx = gfx_from_target_version(version)
        if gfx is None:
            continue
        nodes.append(KfdNode(
            node=name,
            gfx=gfx,
            target_version=version,
            vendor_id=parse_int(props.get("vendor_id")),
            device_id=parse_int(props.get("device_id")),
            location_id=parse_int(props.get("location_id")),
            cpu_cores=parse_int(props.get("cpu_cores_count")) or 0,
        ))
    return nodes


def _match_kfd(nodes: list[KfdNode], device_id: int, slot: str | None) -> KfdNode | None:
    location = pci_location_id(slot) if slot else None
    if location is not None:
        for node in nodes:
            if node.location_id == location and node.device_id in (None, device_id):
                return node
    same_id = [n for n in nodes if n.device_id == device_id]
    return same_id[0] if len(same_id) == 1 else None


def _driver_text(tree: FileTree, driver: str | None) -> str | None:
    if not driver:
        return None
    version = (tree.read(f"sys/module/{driver}/version") or "").strip()
    if version:
        return f"{driver} {version}"
    kernel = (tree.read("proc/sys/kernel/osrelease") or "").strip()
    return f"{driver} (Linux {kernel})" if kernel else driver


def read_host(tree: FileTree) -> HostInfo:
    name, threads = parse_cpuinfo(tree.read("proc/cpuinfo"))
    return HostInfo(cpu_name=name, cpu_threads=threads, ram_total=parse_meminfo_total(tree.read("proc/meminfo")))


class LinuxGpuDetector:
    """Lists GPUs from ``sys/class/drm/card*/device`` joined with the KFD topology.

    Args:
        tree: The file tree to read (``DirTree(Path("/"))`` on a live machine).
        table: The PCI-ID → gfx table.
    """

    platform = "linux"

    def __init__(self, tree: FileTree, table: GpuIdTable) -> None:
        self.tree = tree
        self.table = table

    def detect(self) -> GpuReport:
        tree = self.tree
        kfd = parse_kfd_nodes(tree)
        gpus: list[GpuInfo] = []
        notes: list[str] = []
        seen_slots: set[str] = set()
        for card in tree.list(DRM):
            if not _CARD_RE.match(card):
                continue
            gpu = self._read_card(card, kfd, notes)
            if gpu is None:
                continue
            if gpu.pci_bus and gpu.pci_bus in seen_slots:
                continue
            if gpu.pci_bus:
                seen_slots.add(gpu.pci_bus)
            gpus.append(gpu)
        if not tree.list(KFD_NODES) and any(g.is_amd for g in gpus):
            notes.append("No KFD topology: the amdgpu compute interface is not available (ROCm cannot run).")
        return GpuReport(platform=self.platform, origin=tree.describe(), host=read_host(tree), gpus=gpus,
                         notes=notes)

    def _read_card(self, card: str, kfd: list[KfdNode], notes: list[str]) -> GpuInfo | None:
        tree, base = self.tree, f"{DRM}/{card}/device"
        vendor_id = parse_int(tree.read(f"{base}/vendor"), 16)
        device_id = parse_int(tree.read(f"{base}/device"), 16)
        if vendor_id is None or device_id is None:
            return None  # simpledrm/virtual framebuffers have no PCI ids
        revision = parse_int(tree.read(f"{base}/revision"), 16)
        uevent = parse_key_values(tree.read(f"{base}/uevent"), "=")
        slot = uevent.get("PCI_SLOT_NAME")
        sources: dict[str, str] = {
            "pci_ids": f"sysfs {base}/vendor,device,revision",
        }
        vendor = self.table.vendor_name(vendor_id)
        name: str | None = None
        gfx: str | None = None
        integrated = False
        if vendor_id == AMD_VENDOR_ID:
            name, gfx, integrated = self._identify_amd(card, device_id, revision, slot, kfd, notes, sources)
        product = (tree.read(f"{base}/product_name") or "").strip()
        if name is None and product:
            name, sources["name"] = product, f"sysfs {base}/product_name"
        if name is None:
            name = f"{vendor} GPU 0x{device_id:04X}"
            sources["name"] = "generic (device not in the PCI id table)"
        if not name.startswith(vendor):
            name = f"{vendor} {name}"
        if gfx is None and vendor_id == AMD_VENDOR_ID:
            sources["gfx_target"] = "unknown (not in the PCI id table, no KFD node)"
        vram = parse_int(tree.read(f"{base}/mem_info_vram_total"))
        gtt = parse_int(tree.read(f"{base}/mem_info_gtt_total"))
        if vram is not None:
            sources["vram_total"] = f"sysfs {base}/mem_info_vram_total"
        if gtt is not None:
            sources["shared_total"] = f"sysfs {base}/mem_info_gtt_total"
        # The VRAM the CPU can map: the PCI BAR (all of it with Resizable BAR, 256 MiB without).
        visible = parse_int(tree.read(f"{base}/mem_info_vis_vram_total"))
        if visible is not None:
            sources["visible_vram"] = f"sysfs {base}/mem_info_vis_vram_total"
        if (vendor_id == AMD_VENDOR_ID and not integrated and vram is not None and gtt is not None
                and vram <= _APU_MAX_CARVE_OUT and gtt >= 4 * vram):
            integrated = True
            sources["integrated"] = "heuristic: small VRAM carve-out with a large GTT"
        elif vendor_id == _INTEL_VENDOR_ID and slot and slot.endswith("00:02.0"):
            integrated = True
            sources["integrated"] = "heuristic: Intel GPU in the iGPU slot 00:02.0"
        elif "integrated" not in sources:
            sources["integrated"] = ("PCI id table (discrete)" if vendor_id == AMD_VENDOR_ID and gfx
                                     else "assumed discrete")
        driver = _driver_text(tree, uevent.get("DRIVER"))
        if driver:
            sources["driver"] = f"sysfs {base}/uevent DRIVER"
        return GpuInfo(
            key=card,
            vendor=vendor,
            vendor_id=vendor_id,
            device_id=device_id,
            revision=revision,
            name=name,
            gfx_target=gfx,
            integrated=integrated,
            vram_total=vram,
            shared_total=gtt,
            driver=driver,
            pci_bus=slot,
            sources=sources,
            visible_vram=visible,
        )


    def _identify_amd(self, card: str, device_id: int, revision: int | None, slot: str | None,
                      kfd: list[KfdNode], notes: list[str],
                      sources: dict[str, str]) -> tuple[str | None, str | None, bool]:
        """An AMD card's name, gfx target and whether it is integrated, from the id table, with
        the gfx target the driver reports (its KFD node) winning over the table's."""
        name: str | None = None
        gfx: str | None = None
        integrated = False
        match = self.table.lookup(device_id, revision)
        if match is not None:
            rev_txt = f" rev 0x{revision:02X}" if match.by_revision and revision is not None else ""
            table_src = f"PCI id table (0x{device_id:04X}{rev_txt})"
            name, gfx, integrated = match.name, match.gfx, match.integrated
            sources["name"] = table_src
            sources["gfx_target"] = table_src
            if integrated:
                sources["integrated"] = "PCI id table (known integrated GPU)"
        node = _match_kfd(kfd, device_id, slot)
        if node is not None:
            if gfx and gfx != node.gfx:
                notes.append(f"{card}: id table says {gfx}, the driver says {node.gfx}; using the driver's.")
            gfx = node.gfx
            sources["gfx_target"] = f"KFD topology node {node.node} (gfx_target_version {node.target_version})"
        return name, gfx, integrated


@dataclass(frozen=True)
class _SensorPaths:
    runtime_status: str
    busy: str
    vram_used: str
    gtt_used: str
    sclk: str
    temp: str | None
    power: str | None
    freq: str | None


def _hwmon_paths(tree: FileTree, base: str) -> tuple[str | None, str | None, str | None]:
    for hw in tree.list(f"{base}/hwmon"):
        hdir = f"{base}/hwmon/{hw}"
        files = set(tree.list(hdir))
        temp = None
        for f in sorted(files):
            if f.startswith("temp") and f.endswith("_label") and (tree.read(f"{hdir}/{f}") or "").strip() == "edge":
                temp = f"{hdir}/{f[:-len('_label')]}_input"
        if temp is None and "temp1_input" in files:
            temp = f"{hdir}/temp1_input"
        power = next((f"{hdir}/{f}" for f in ("power1_average", "power1_input") if f in files), None)
        freq = f"{hdir}/freq1_input" if "freq1_input" in files else None
        if temp or power or freq:
            return temp, power, freq
    return None, None, None


class LinuxTelemetrySource:
    """Reads one :class:`GpuSample` per GPU from sysfs/hwmon; cheap enough for 1 Hz.

    Sensor paths are resolved once; each sample is a handful of small file reads. A GPU in
    runtime suspend is reported asleep without touching its sensors.
    """

    def __init__(self, tree: FileTree, gpus: list[GpuInfo], clock: Callable[[], float] = time.monotonic) -> None:
        self.tree = tree
        self.clock = clock
        self._paths: dict[str, _SensorPaths] = {}
        for gpu in gpus:
            base = f"{DRM}/{gpu.key}/device"
            temp, power, freq = _hwmon_paths(tree, base)
            self._paths[gpu.key] = _SensorPaths(
                runtime_status=f"{base}/power/runtime_status",
                busy=f"{base}/gpu_busy_percent",
                vram_used=f"{base}/mem_info_vram_used",
                gtt_used=f"{base}/mem_info_gtt_used",
                sclk=f"{base}/pp_dpm_sclk",
                temp=temp,
                power=power,
                freq=freq,
            )

    def sample(self) -> dict[str, GpuSample]:
        now = self.clock()
        read = self.tree.read
        out: dict[str, GpuSample] = {}
        for key, p in self._paths.items():
            if (read(p.runtime_status) or "").strip() == "suspended":
                # Reading amdgpu sensors wakes a runtime-suspended laptop dGPU (and drains the
                # battery): report it idle instead.
                out[key] = GpuSample(time=now, load_percent=0.0, asleep=True)
                continue
            busy = parse_int(read(p.busy))
            temp = parse_int(read(p.temp)) if p.temp else None
            power = parse_int(read(p.power)) if p.power else None
            clock = parse_sclk(read(p.sclk))
            if clock is None and p.freq:
                hz = parse_int(read(p.freq))
                clock = None if hz is None else hz / 1e6
            out[key] = GpuSample(
                time=now,
                load_percent=None if busy is None else float(busy),
                vram_used=parse_int(read(p.vram_used)),
                shared_used=parse_int(read(p.gtt_used)),
                temperature_c=None if temp is None else temp / 1000.0,
                power_w=None if power is None else power / 1e6,
                core_clock_mhz=clock,
            )
        return out


def capture_linux_tree(tree: FileTree) -> dict[str, str]:
    """Copy the files detection and telemetry read into a mapping (a replayable snapshot)."""
    files: dict[str, str] = {}

    def take(rel: str) -> None:
        text = tree.read(rel)
        if text is not None:
            files[rel] = text

    drivers: set[str] = set()
    for entry in tree.list(DRM):
        if not entry.startswith("card"):
            continue
        if not _CARD_RE.match(entry):
            take(f"{DRM}/{entry}/status")  # connectors: kept so the replay skips them too
            continue
        base = f"{DRM}/{entry}/device"
        for name in DEVICE_FILES:
            take(f"{base}/{name}")
        driver = parse_key_values(tree.read(f"{base}/uevent"), "=").get("DRIVER")
        if driver:
            drivers.add(driver)
        for hw in tree.list(f"{base}/hwmon"):
            for name in tree.list(f"{base}/hwmon/{hw}"):
                if HWMON_FILE_RE.match(name):
                    take(f"{base}/hwmon/{hw}/{name}")
    for node in tree.list(KFD_NODES):
        take(f"{KFD_NODES}/{node}/properties")
    for driver in sorted(drivers):
        take(f"sys/module/{driver}/version")
    take("proc/sys/kernel/osrelease")
    total = parse_meminfo_total(tree.read("proc/meminfo"))
    if total is not None:  # only the total: the rest of meminfo is nobody's business
        files["proc/meminfo"] = f"MemTotal:       {total // 1024} kB\n"
    cpuinfo = tree.read("proc/cpuinfo")
    if cpuinfo is not None:
        keep = [ln for ln in cpuinfo.splitlines() if ln.split(":", 1)[0].strip() in ("processor", "model name")]
        files["proc/cpuinfo"] = "\n".join(keep) + "\n"
    return files
