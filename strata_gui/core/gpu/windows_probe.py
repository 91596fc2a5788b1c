"""THIN WINDOWS-ONLY LAYER: gathers the raw outputs the pure parsers in ``windows.py`` read.

Not run on Linux or in the test suite (it needs Windows APIs); kept small on purpose. Each
function returns raw data in the exact shape a snapshot file stores, so a live machine and a
replayed snapshot take the same parsing path. Slow calls (PowerShell, typeperf) run on the
detection executor / the telemetry thread, never on the UI thread.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
from typing import Any

from strata_gui.core.gpu.ids import GpuIdTable
from strata_gui.core.gpu.model import GpuInfo, GpuReport
from strata_gui.core.gpu.telemetry import TelemetrySource
from strata_gui.core.gpu.windows import (
    DISPLAY_CLASS_GUID,
    PdhTelemetrySource,
    WindowsSnapshotDetector,
    make_windows_snapshot,
)

_NO_WINDOW = 0x08000000  # CREATE_NO_WINDOW: no console flashes from the windowed app
PDH_COUNTERS = (
    r"\GPU Engine(*)\Utilization Percentage",
    r"\GPU Adapter Memory(*)\Dedicated Usage",
    r"\GPU Adapter Memory(*)\Shared Usage",
)


def _run(args: list[str], timeout: float = 30.0) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False,
                              creationflags=_NO_WINDOW)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def registry_dump() -> str:
    return _run(["reg", "query", rf"HKLM\SYSTEM\CurrentControlSet\Control\Class\{DISPLAY_CLASS_GUID}", "/s"])


def wmi_video_controllers() -> Any:
    out = _run(["powershell", "-NoProfile", "-NonInteractive", "-Command",
                "Get-CimInstance Win32_VideoController | Select-Object Name,PNPDeviceID,DriverVersion,"
                "AdapterRAM,DriverDate | ConvertTo-Json"])
    try:
        return json.loads(out) if out.strip() else []
    except json.JSONDecodeError:
        return []


def pdh_sample() -> str:
    """One ``typeperf`` sample of the GPU counters (can take a second or two)."""
    return _run(["typeperf", *PDH_COUNTERS, "-sc", "1"], timeout=20.0)


def dxgi_adapters() -> list[dict[str, Any]]:
    """``DXGI_ADAPTER_DESC1`` of every adapter via IDXGIFactory1::EnumAdapters1 (COM by vtable)."""
    if sys.platform != "win32":
        return []
    import ctypes
    from ctypes import wintypes

    class LUID(ctypes.Structure):
        _fields_ = [("LowPart", wintypes.DWORD), ("HighPart", wintypes.LONG)]

    class DESC1(ctypes.Structure):
        _fields_ = [("Description", ctypes.c_wchar * 128), ("VendorId", wintypes.UINT),
                    ("DeviceId", wintypes.UINT), ("SubSysId", wintypes.UINT), ("Revision", wintypes.UINT),
                    ("DedicatedVideoMemory", ctypes.c_size_t), ("DedicatedSystemMemory", ctypes.c_size_t),
                    ("SharedSystemMemory", ctypes.c_size_t), ("AdapterLuid", LUID), ("Flags", wintypes.UINT)]

    class GUID(ctypes.Structure):
        _fields_ = [("a", wintypes.DWORD), ("b", wintypes.WORD), ("c", wintypes.WORD), ("d", ctypes.c_ubyte * 8)]

    def method(obj: ctypes.c_void_p, index: int, *argtypes: Any) -> Any:
        vtbl = ctypes.cast(obj, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p))).contents
        return ctypes.WINFUNCTYPE(ctypes.c_long, ctypes.c_void_p, *argtypes)(vtbl[index])

    iid = GUID(0x770AAE78, 0xF26F, 0x4DBA, (ctypes.c_ubyte * 8)(0xA8, 0x29, 0x25, 0x3C, 0x83, 0xD1, 0xB3, 0x87))
    factory = ctypes.c_void_p()
    if ctypes.WinDLL("dxgi").CreateDXGIFactory1(ctypes.byref(iid), ctypes.byref(factory)) != 0:
        return []
    adapters = []
    try:
        index = 0
        while True:
            adapter = ctypes.c_void_p()
            # IDXGIFactory1::EnumAdapters1 is vtable slot 12; it fails past the last adapter.
            enum_adapters1 = method(factory, 12, wintypes.UINT, ctypes.POINTER(ctypes.c_void_p))
            if enum_adapters1(factory, index, ctypes.byref(adapter)) != 0:
                break
            desc = DESC1()
            method(adapter, 10, ctypes.POINTER(DESC1))(adapter, ctypes.byref(desc))  # IDXGIAdapter1::GetDesc1
            method(adapter, 2)(adapter)  # Release
            adapters.append({
                "Description": desc.Description, "VendorId": desc.VendorId, "DeviceId": desc.DeviceId,
                "SubSysId": desc.SubSysId, "Revision": desc.Revision,
                "DedicatedVideoMemory": desc.DedicatedVideoMemory,
                "DedicatedSystemMemory": desc.DedicatedSystemMemory,
                "SharedSystemMemory": desc.SharedSystemMemory,
                "AdapterLuid": {"HighPart": desc.AdapterLuid.HighPart, "LowPart": desc.AdapterLuid.LowPart},
                "Flags": desc.Flags,
            })
            index += 1
    finally:
        method(factory, 2)(factory)
    return adapters


def hip_runtime(dll_names: tuple[str, ...]) -> dict[str, Any]:
    """Load the driver's ``amdhip64_*.dll`` and ask it for each device's name and gcnArchName."""
    if sys.platform != "win32":
        return {"dll": None, "devices": [], "error": "not Windows"}
    import ctypes

    for dll_name in dll_names:
        try:
            hip = ctypes.WinDLL(dll_name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if hip.hipGetDeviceCount(ctypes.byref(count)) != 0:
            return {"dll": dll_name, "devices": [], "error": "hipGetDeviceCount failed (no usable device)"}
        devices = []
        get_props = getattr(hip, "hipGetDevicePropertiesR0600", None) or hip.hipGetDeviceProperties
        for i in range(count.value):
            # hipDeviceProp_t's layout differs between HIP versions: read into a generous buffer
            # and take the name (first field) and the gfx string (found by pattern).
            buf = ctypes.create_string_buffer(16384)
            if get_props(buf, i) != 0:
                continue
            raw = buf.raw
            arch = re.search(rb"gfx[0-9a-f]{3,4}(?::[a-z+-]+)*", raw[256:])
            total = ctypes.c_size_t(0)
            hip.hipDeviceTotalMem(ctypes.byref(total), i)
            devices.append({"name": raw[:256].split(b"\0", 1)[0].decode(errors="replace"),
                            "gcnArchName": arch.group(0).decode() if arch else "",
                            "totalGlobalMem": total.value})
        return {"dll": dll_name, "devices": devices, "error": None}
    return {"dll": None, "devices": [], "error": None}


def gather(table: GpuIdTable) -> dict[str, Any]:
    """A full Windows snapshot of this machine."""
    import platform

    import psutil

    return make_windows_snapshot(
        registry=registry_dump(),
        dxgi=dxgi_adapters(),
        wmi=wmi_video_controllers(),
        hip=hip_runtime(table.windows_driver.hip_runtime_dlls),
        pdh=[pdh_sample()],
        host={"cpu_name": platform.processor() or "unknown CPU", "cpu_threads": os.cpu_count(),
              "ram_total": int(psutil.virtual_memory().total)},
        captured_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )


class WindowsLiveSource:
    """The live Windows machine: gathers a snapshot, then parses it like a replay."""

    platform = "windows"

    def __init__(self, table: GpuIdTable) -> None:
        self.table = table
        self._snapshot: dict[str, Any] | None = None

    def detect(self) -> GpuReport:
        self._snapshot = gather(self.table)
        return WindowsSnapshotDetector(self._snapshot, self.table, "live Windows").detect()

    def telemetry_source(self, gpus: list[GpuInfo]) -> TelemetrySource:
        return PdhTelemetrySource(gpus, pdh_sample)

    def capture(self) -> dict[str, Any]:
        return self._snapshot if self._snapshot is not None else gather(self.table)
