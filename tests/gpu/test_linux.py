"""Linux detection and telemetry on captured sysfs trees (several GPUs each)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.linux import parse_cpuinfo, parse_sclk, pci_location_id
from strata_gui.core.gpu.model import GpuReport, RocmVerdict
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.gpu.telemetry import TelemetrySampler
from tests.gpu.conftest import LINUX_CASES, family_of, linux_tree

GIB = 1024**3

# case → [(key, name, gfx, integrated, vram bytes, gtt bytes, verdict text)]
EXPECTED = {
    "rx7900xtx": [
        ("card0", "AMD Radeon RX 7900 XTX", "gfx1100", False, 25753026560, 33541775360,
         "ROCm via gfx110X build"),
        ("card1", "AMD Radeon Graphics (Raphael)", "gfx1036", True, 536870912, 33541775360,
         "Vulkan only: no ROCm build for gfx1036"),
    ],
    "rx7900xtx-rx7600-igpu": [
        ("card0", "AMD Radeon RX 7900 XTX", "gfx1100", False, 25753026560, 33541775360,
         "ROCm via gfx110X build"),
        ("card1", "AMD Radeon RX 7600 series", "gfx1102", False, 8573157376, 33541775360,
         "ROCm via gfx110X build"),
        ("card2", "AMD Radeon Graphics (Raphael)", "gfx1036", True, 536870912, 33541775360,
         "Vulkan only: no ROCm build for gfx1036"),
    ],
    "w7900-igpu": [
        ("card0", "AMD Radeon Pro W7900", "gfx1100", False, 51522830336, 67083550720, "ROCm via gfx110X build"),
        ("card1", "AMD Radeon Graphics (Raphael)", "gfx1036", True, 536870912, 67083550720,
         "Vulkan only: no ROCm build for gfx1036"),
    ],
    "strix-halo": [
        ("card1", "AMD Radeon 8060S", "gfx1151", True, 536870912, 96 * GIB,
         "ROCm via gfx1151 build"),
    ],
    "laptop-780m-rx7600": [
        ("card0", "AMD Radeon 780M", "gfx1103", True, 536870912, 16406996992, "ROCm via gfx110X build"),
        ("card1", "AMD Radeon RX 7600 series", "gfx1102", False, 8573157376, 16406996992,
         "ROCm via gfx110X build"),
    ],
    "rx9070xt-intel-igpu": [
        ("card0", "Intel GPU 0xA780", None, True, None, None, "Not ROCm-eligible (Intel GPU); Vulkan may work"),
        ("card1", "AMD Radeon RX 9070 XT", "gfx1201", False, 17095983104, 16683544576, "ROCm via gfx120X build"),
    ],
    "rx6600": [
        ("card0", "AMD Radeon RX 6600 XT / 6600", "gfx1032", False, 8573157376, 8351223808,
         "ROCm via gfx103X build"),
    ],
    "nvidia": [
        ("card0", "NVIDIA GPU 0x2684", None, False, None, None, "Not ROCm-eligible (NVIDIA GPU); Vulkan may work"),
    ],
    "unknown-amd": [
        ("card0", "AMD GPU 0x7599", None, False, 17095983104, 33541775360,
         "Unknown target: gfx target not known yet (Vulkan works; an engine probe can tell)"),
    ],
    "no-gpu": [],
}


def detect(case: str) -> GpuReport:
    return build_gpu_service(kernels_dir(), sysfs_root=linux_tree(case), family_of=family_of).detect()


def test_every_captured_tree_has_expectations() -> None:
    assert sorted(EXPECTED) == LINUX_CASES


@pytest.mark.parametrize("case", LINUX_CASES)
def test_detects_names_targets_memory_and_apus(case: str) -> None:
    report = detect(case)
    got = [(g.key, g.name, g.gfx_target, g.integrated, g.vram_total, g.shared_total, g.verdict_text())
           for g in report.gpus]
    assert got == EXPECTED[case]
    for gpu in report.gpus:  # every fact says where it came from
        assert "pci_ids" in gpu.sources and "integrated" in gpu.sources and "name" in gpu.sources


def test_connectors_and_render_nodes_are_not_gpus() -> None:
    root = linux_tree("rx7900xtx")
    drm = sorted(p.name for p in (root / "sys/class/drm").iterdir())
    assert "card0-DP-1" in drm and "renderD128" in drm
    assert [g.key for g in detect("rx7900xtx").gpus] == ["card0", "card1"]


def test_kfd_topology_wins_over_the_table_and_is_recorded() -> None:
    gpu = detect("rx7900xtx").gpus[0]
    assert gpu.sources["gfx_target"] == "KFD topology node 1 (gfx_target_version 110000)"
    assert gpu.sources["name"] == "PCI id table (0x744C rev 0xC8)"
    assert gpu.sources["vram_total"].endswith("card0/device/mem_info_vram_total")


def test_kfd_disagreeing_with_the_table_is_noted(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("rx6600"), tree)
    (tree / "sys/class/drm/card0/device/revision").write_text("0xdf\n")  # table: 6750 GRE, gfx1031
    report = build_gpu_service(kernels_dir(), sysfs_root=tree, family_of=family_of).detect()
    assert report.gpus[0].gfx_target == "gfx1032"
    assert any("id table says gfx1031, the driver says gfx1032" in n for n in report.notes)


def test_without_kfd_the_table_answers_and_a_note_says_rocm_cannot_run(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("rx6600"), tree)
    shutil.rmtree(tree / "sys/class/kfd")
    report = build_gpu_service(kernels_dir(), sysfs_root=tree, family_of=family_of).detect()
    assert report.gpus[0].gfx_target == "gfx1032"
    assert report.gpus[0].sources["gfx_target"] == "PCI id table (0x73FF)"
    assert any("No KFD topology" in n for n in report.notes)


def test_apu_heuristic_catches_an_unlisted_apu(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("strix-halo"), tree)
    (tree / "sys/class/drm/card1/device/device").write_text("0x15ff\n")  # a future APU id
    (tree / "sys/class/kfd/kfd/topology/nodes/1/properties").unlink()
    gpu = build_gpu_service(kernels_dir(), sysfs_root=tree).detect().gpus[0]
    assert gpu.integrated
    assert gpu.sources["integrated"] == "heuristic: small VRAM carve-out with a large GTT"
    assert gpu.model_memory == 536870912 + 96 * GIB


def test_without_engine_catalog_the_family_is_unknown() -> None:
    gpu = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("rx7900xtx")).detect().gpus[0]
    assert gpu.verdict is RocmVerdict.FAMILY_UNKNOWN
    assert gpu.verdict_text() == "gfx1100: ROCm family unknown (engine catalog not available)"


def test_host_cpu_and_ram_come_from_the_tree() -> None:
    host = detect("strix-halo").host
    assert host.cpu_name == "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"
    assert host.cpu_threads == 32
    assert host.ram_total == 130_476_520 * 1024


def test_telemetry_values_and_missing_sensors() -> None:
    service = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("laptop-780m-rx7600"))
    report = service.detect()
    samples = service.sampler(report.gpus).sample_once()
    igpu, dgpu = samples["card0"], samples["card1"]
    assert (igpu.load_percent, igpu.vram_used, igpu.shared_used) == (14.0, 188_743_680, 612_368_384)
    assert (igpu.temperature_c, igpu.core_clock_mhz) == (52.0, 2000.0)
    assert igpu.power_w is None  # no power sensor on this iGPU: None, not 0
    assert (dgpu.load_percent, dgpu.temperature_c, dgpu.power_w, dgpu.core_clock_mhz) == (96.0, 71.0, 92.0, 2625.0)


def test_temperature_is_the_edge_sensor_and_clock_falls_back_to_hwmon(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("rx7900xtx"), tree)
    (tree / "sys/class/drm/card0/device/pp_dpm_sclk").unlink()
    service = build_gpu_service(kernels_dir(), sysfs_root=tree)
    sample = service.sampler(service.detect().gpus).sample_once()["card0"]
    assert sample.temperature_c == 46.0  # edge, not junction (58) or memory (62)
    assert sample.core_clock_mhz == 1780.0  # hwmon freq1_input


def test_nvidia_and_unknown_sensors_are_all_none() -> None:
    service = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("nvidia"))
    sample = service.sampler(service.detect().gpus).sample_once()["card0"]
    assert all(getattr(sample, f) is None for f in
               ("load_percent", "vram_used", "shared_used", "temperature_c", "power_w", "core_clock_mhz"))
    assert "load n/a" in service.last_report.report({"card0": sample})


def test_sampler_thread_fills_a_bounded_ring_buffer_and_stops() -> None:
    service = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("rx9070xt-intel-igpu"))
    report = service.detect()
    enough = threading.Event()
    sampler = TelemetrySampler(service.detector.telemetry_source(report.gpus), interval=0.01, history=5)
    sampler.samples.subscribe(lambda _s: enough.set() if sampler.samples_taken >= 8 else None)
    sampler.start()
    try:
        assert enough.wait(10)
    finally:
        sampler.stop()
    assert not sampler.running
    assert len(sampler.history("card1")) == 5
    assert sampler.latest()["card1"].power_w == 301.0


def test_capture_replays_the_same_machine(tmp_path: Path) -> None:
    service = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("rx7900xtx"), family_of=family_of)
    original = service.detect()
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(service.capture()))
    assert "card0-DP-1" in json.dumps(service.capture())
    replay_service = build_gpu_service(kernels_dir(), snapshot_file=snap, family_of=family_of)
    replay = replay_service.detect()
    assert [g.to_dict() for g in replay.gpus] == [g.to_dict() for g in original.gpus]
    assert replay.host == original.host
    assert replay_service.sampler(replay.gpus).sample_once()["card0"].power_w == 88.0


def test_environment_override_points_detection_at_a_tree() -> None:
    env = {"STRATA_SYSFS_ROOT": str(linux_tree("rx6600"))}
    report = build_gpu_service(kernels_dir(), environ=env).detect()
    assert [g.gfx_target for g in report.gpus] == ["gfx1032"]


def test_small_parsers() -> None:
    assert parse_sclk("0: 500Mhz\n1: 1780Mhz *\n2: 2526Mhz\n") == 1780.0
    assert parse_sclk("0: 500Mhz\n") is None
    assert pci_location_id("0000:c5:00.0") == 0xC500
    assert pci_location_id("garbage") is None
    assert parse_cpuinfo("") == ("unknown CPU", None)


@pytest.mark.parametrize(("case", "key", "label"), [
    ("laptop-780m-rx7600", "card1", "AMD Radeon RX 7600 series · gfx1102"),  # the discrete card
    ("rx7900xtx", "card0", "AMD Radeon RX 7900 XTX · gfx1100"),
    ("rx9070xt-intel-igpu", "card1", "AMD Radeon RX 9070 XT · gfx1201"),  # never the Intel iGPU
    ("strix-halo", "card1", "AMD Radeon 8060S · gfx1151"),
    ("nvidia", None, "CPU only"),
    ("no-gpu", None, "CPU only"),
])
def test_primary_gpu_and_label(case: str, key: str | None, label: str) -> None:
    service = build_gpu_service(kernels_dir(), sysfs_root=linux_tree(case), family_of=family_of)
    assert service.label() == label
    report = service.last_report
    assert report is not None
    assert (report.primary.key if report.primary else None) == key


def test_runtime_suspended_dgpu_is_reported_asleep_without_reading_sensors(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(linux_tree("laptop-780m-rx7600"), tree)
    (tree / "sys/class/drm/card1/device/power/runtime_status").write_text("suspended\n")
    service = build_gpu_service(kernels_dir(), sysfs_root=tree)
    report = service.detect()
    samples = service.sampler(report.gpus).sample_once()
    assert samples["card1"].asleep and samples["card1"].load_percent == 0.0
    assert samples["card1"].temperature_c is None
    assert not samples["card0"].asleep and samples["card0"].load_percent == 14.0
    assert "asleep (power saving" in report.report(samples)
