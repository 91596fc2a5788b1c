"""Windows parsers and detection on captured outputs of a 7900 XTX desktop and a Strix Halo mini-PC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.ids import GpuIdTable
from strata_gui.core.gpu.model import DriverState, GpuReport
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.gpu.windows import (
    HipRuntime,
    driver_verdict,
    parse_dxgi_adapters,
    parse_registry_display_class,
    parse_typeperf_csv,
    parse_wmi_video_controllers,
    summarize_pdh,
)
from tests.gpu.conftest import DATA, family_of, windows_snapshot_data

GIB = 1024**3
XTX_LUID = "0x00000000_0x0000d1a3"


def detect(snapshot_file: Path) -> GpuReport:
    return build_gpu_service(kernels_dir(), snapshot_file=snapshot_file, family_of=family_of).detect()


def test_registry_dump_gives_true_vram_and_skips_subkeys() -> None:
    adapters = parse_registry_display_class((DATA / "windows/rx7900xtx/registry.txt").read_text())
    assert [(a.key, a.driver_desc, a.memory_size, a.pci) for a in adapters] == [
        ("0000", "AMD Radeon RX 7900 XTX", 25753026560, (0x1002, 0x744C, 0xC8)),
        ("0001", "AMD Radeon(TM) Graphics", 512 * 1024 * 1024, (0x1002, 0x164E, 0xC1)),
    ]
    assert adapters[0].driver_version == "32.0.21013.1000"


def test_dxgi_list_flags_the_software_adapter() -> None:
    import json

    adapters = parse_dxgi_adapters(json.loads((DATA / "windows/rx7900xtx/dxgi.json").read_text()))
    assert [(a.description, a.software) for a in adapters] == [
        ("AMD Radeon RX 7900 XTX", False), ("AMD Radeon(TM) Graphics", False),
        ("Microsoft Basic Render Driver", True)]
    assert adapters[0].luid == XTX_LUID
    assert (adapters[0].device_id, adapters[0].revision) == (0x744C, 0xC8)


def test_wmi_single_object_and_capped_adapter_ram() -> None:
    import json

    (ctrl,) = parse_wmi_video_controllers(json.loads((DATA / "windows/strix-halo/wmi.json").read_text()))
    assert ctrl.pci == (0x1002, 0x1586, 0xC1)
    assert ctrl.adapter_ram == 4293918720  # what WMI claims; never used as VRAM


def test_typeperf_csv_and_task_manager_style_load() -> None:
    rows = parse_typeperf_csv((DATA / "windows/rx7900xtx/pdh-1.csv").read_text())
    assert len(rows) == 1
    usage = summarize_pdh(rows[0])
    xtx = usage[XTX_LUID]
    assert xtx.load_percent == pytest.approx(61.4)  # busiest engine (compute), not the sum of all
    assert (xtx.dedicated_used, xtx.shared_used) == (19_654_123_520, 412_581_888)
    # The Strix Halo compute engine is used by two processes: their shares add up.
    sh = summarize_pdh(parse_typeperf_csv((DATA / "windows/strix-halo/pdh-1.csv").read_text())[0])
    assert sh["0x00000000_0x000137c4"].load_percent == pytest.approx(91.5)


def test_blank_pdh_cell_and_garbage() -> None:
    rows = parse_typeperf_csv((DATA / "windows/rx7900xtx/pdh-2.csv").read_text())
    igpu_key = next(k for k in rows[0] if "0x0000E2B4_phys_0_eng_0" in k)
    assert rows[0][igpu_key] is None
    assert parse_typeperf_csv("not csv at all") == []


def test_7900xtx_machine(windows_snapshot_file) -> None:
    report = detect(windows_snapshot_file("rx7900xtx"))
    xtx, igpu = report.gpus
    assert (xtx.name, xtx.gfx_target, xtx.integrated, xtx.vram_total) == \
        ("AMD Radeon RX 7900 XTX", "gfx1100", False, 25753026560)
    assert xtx.sources["vram_total"].startswith("registry 0000 HardwareInformation.qwMemorySize")
    assert "WMI AdapterRAM 4293918720 ignored" in xtx.sources["vram_total"]
    assert xtx.sources["gfx_target"] == "HIP runtime gcnArchName (amdhip64_6.dll)"
    assert xtx.verdict_text() == "ROCm via gfx110X build"
    assert xtx.driver == "AMD driver 32.0.21013.1000"
    assert (igpu.gfx_target, igpu.integrated, igpu.vram_total) == ("gfx1036", True, 512 * 1024 * 1024)
    assert igpu.sources["gfx_target"] == "PCI id table (0x164E)"  # HIP did not list it
    assert igpu.verdict_text() == "Vulkan only: no ROCm build for gfx1036"
    assert report.driver_status is not None and report.driver_status.state is DriverState.OK
    assert report.host.cpu_name == "AMD Ryzen 7 7800X3D 8-Core Processor"


def test_strix_halo_machine(windows_snapshot_file) -> None:
    report = detect(windows_snapshot_file("strix-halo"))
    (gpu,) = report.gpus  # the Microsoft Basic Render Driver is not listed
    assert (gpu.name, gpu.gfx_target, gpu.integrated) == ("AMD Radeon(TM) 8060S Graphics", "gfx1151", True)
    assert gpu.vram_total == 64 * GIB  # BIOS-assigned dedicated memory, from the registry
    assert gpu.shared_total == 34209595392
    assert gpu.model_memory == 64 * GIB + 34209595392
    assert gpu.verdict_text() == "ROCm via gfx1151 build"


def test_windows_telemetry_from_pdh_replay(windows_snapshot_file) -> None:
    service = build_gpu_service(kernels_dir(), snapshot_file=windows_snapshot_file("rx7900xtx"))
    report = service.detect()
    sampler = service.sampler(report.gpus)
    first = sampler.sample_once()
    second = sampler.sample_once()
    xtx_key, igpu_key = (g.key for g in report.gpus)
    assert first[xtx_key].load_percent == pytest.approx(61.4)
    assert second[xtx_key].load_percent == pytest.approx(78.9)
    assert second[xtx_key].vram_used == 19_702_312_960
    # PDH has no temperature, power or clock: n/a, never 0.
    assert (second[xtx_key].temperature_c, second[xtx_key].power_w, second[xtx_key].core_clock_mhz) == \
        (None, None, None)
    assert second[igpu_key].load_percent == 0.0  # no engine instance: idle
    assert second[igpu_key].vram_used == 88_211_456


def _hip(dll: str | None) -> HipRuntime:
    return HipRuntime(dll=dll, devices=[], error=None)


@pytest.mark.parametrize(("version", "provider_is_amd", "dll", "state", "says"), [
    ("32.0.21013.1000", True, "amdhip64_6.dll", DriverState.OK, "with HIP runtime amdhip64_6.dll"),
    ("31.0.24033.1003", True, "amdhip64_6.dll", DriverState.TOO_OLD, "too old for the ROCm engines"),
    ("32.0.21013.1000", True, None, DriverState.NO_HIP, "HIP runtime (amdhip64_*.dll) was not found"),
    (None, True, None, DriverState.MISSING, "No AMD display driver"),
    ("10.0.26100.1", False, None, DriverState.MISSING, "No AMD display driver"),
])
def test_driver_verdicts_say_what_to_install(gpu_table: GpuIdTable, version: str | None, provider_is_amd: bool,
                                             dll: str | None, state: DriverState, says: str) -> None:
    status = driver_verdict(version, provider_is_amd, _hip(dll), gpu_table.windows_driver)
    assert status.state is state
    assert says in status.message
    if state is not DriverState.OK:
        assert "Adrenalin" in (status.hint or "")


def test_old_driver_without_hip_reaches_the_report(windows_snapshot_file) -> None:
    def old_driver(data: dict[str, Any]) -> None:
        data["wmi"][0]["DriverVersion"] = "31.0.21921.1000"
        data["hip"] = {"dll": None, "devices": [], "error": None}

    report = detect(windows_snapshot_file("rx7900xtx", old_driver))
    assert report.driver_status is not None
    assert report.driver_status.state is DriverState.TOO_OLD
    assert "too old" in report.report()
    # Without the HIP answer the table still knows the target.
    assert report.gpus[0].gfx_target == "gfx1100"
    assert report.gpus[0].sources["gfx_target"] == "PCI id table (0x744C rev 0xC8)"


def test_basic_display_driver_means_no_amd_driver(windows_snapshot_file) -> None:
    def basic(data: dict[str, Any]) -> None:
        data["registry"] = data["registry"].replace("Advanced Micro Devices, Inc.", "Microsoft")
        for w in data["wmi"]:
            w["Name"], w["DriverVersion"] = "Microsoft Basic Display Adapter", "10.0.26100.1"
        data["hip"] = {"dll": None, "devices": [], "error": None}

    report = detect(windows_snapshot_file("rx7900xtx", basic))
    assert report.driver_status is not None and report.driver_status.state is DriverState.MISSING
    assert "Install AMD Software: Adrenalin Edition" in (report.driver_status.hint or "")


def test_snapshot_without_dxgi_falls_back_to_wmi() -> None:
    data = windows_snapshot_data("strix-halo")
    data["dxgi"] = []
    from strata_gui.core.gpu.ids import load_gpu_table
    from strata_gui.core.gpu.windows import WindowsSnapshotDetector

    report = WindowsSnapshotDetector(data, load_gpu_table(kernels_dir()), "test").detect()
    (gpu,) = report.gpus
    assert (gpu.device_id, gpu.vram_total, gpu.gfx_target) == (0x1586, 64 * GIB, "gfx1151")
    assert any("using WMI" in n for n in report.notes)


def test_what_wine_reports_degrades_to_na_without_a_crash(windows_snapshot_file) -> None:
    """Captured from the Windows build under Wine 8.0: registry without PCI ids, no WMI/HIP/PDH."""
    report = detect(windows_snapshot_file("wine-8.0"))
    (gpu,) = report.gpus  # Wine's invented DXGI adapter; the "Wine Adapter" registry key adds nothing
    assert (gpu.name, gpu.vendor, gpu.gfx_target, gpu.driver) == ("NVIDIA GeForce GTX 470", "NVIDIA", None, None)
    assert gpu.sources["vram_total"] == "DXGI DedicatedVideoMemory"
    assert gpu.verdict_text() == "Not ROCm-eligible (NVIDIA GPU); Vulkan may work"
    assert report.primary is None
    # Telemetry from PDH's empty answer: nothing measured is n/a, nothing is invented.
    service = build_gpu_service(kernels_dir(), snapshot_file=windows_snapshot_file("wine-8.0"))
    sample = service.sampler(service.detect().gpus).sample_once()
    (only,) = sample.values()
    assert (only.load_percent, only.vram_used, only.temperature_c) == (None, None, None)
