"""Resolving a GPU the id table does not know from what the engine itself prints."""

from __future__ import annotations

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.engine_output import parse_list_devices, parse_rocm_startup, resolve_unknown_targets
from strata_gui.core.gpu.model import RocmVerdict
from strata_gui.core.gpu.service import build_gpu_service
from tests.gpu.conftest import family_of, linux_tree

LIST_DEVICES = """Available devices:
  ROCm0: AMD Radeon RX 7900 XTX (24560 MiB, 24000 MiB free)
  Vulkan0: AMD Radeon RX 7900 XTX (RADV NAVI31) (24560 MiB, 23000 MiB free)
"""
STARTUP = """ggml_cuda_init: found 1 ROCm devices:
  Device 0: AMD Radeon Graphics, gfx1200 (0x1200), VMM: no, Wave Size: 32, VRAM: 16304 MiB
main: loading model
"""


def test_parse_list_devices() -> None:
    devices = parse_list_devices(LIST_DEVICES)
    assert [(d.backend, d.index, d.name, d.total_mib, d.free_mib) for d in devices] == [
        ("ROCm", 0, "AMD Radeon RX 7900 XTX", 24560, 24000),
        ("Vulkan", 0, "AMD Radeon RX 7900 XTX (RADV NAVI31)", 24560, 23000),
    ]
    assert parse_list_devices("Available devices:\n  (none)\n") == []


def test_parse_rocm_startup_line() -> None:
    (dev,) = parse_rocm_startup(
        "  Device 0: AMD Radeon RX 6700 XT, gfx1031 (0x1031), VMM: no, Wave Size: 32, VRAM: 12272 MiB")
    assert (dev.index, dev.name, dev.gfx, dev.vram_mib) == (0, "AMD Radeon RX 6700 XT", "gfx1031", 12272)
    (feat,) = parse_rocm_startup("  Device 1: AMD Instinct MI210, gfx90a:sramecc+:xnack- (0x90a), VMM: no")
    assert feat.gfx == "gfx90a"


def test_unknown_card_is_resolved_from_the_startup_line() -> None:
    service = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("unknown-amd"), family_of=family_of)
    report = service.detect()
    assert report.gpus[0].verdict is RocmVerdict.UNKNOWN_TARGET
    resolved = service.resolve_from_engine_output(STARTUP).gpus[0]
    assert resolved.gfx_target == "gfx1200"
    assert resolved.verdict_text() == "ROCm via gfx120X build"
    assert resolved.sources["gfx_target"] == "engine ROCm start-up line (Device 0: AMD Radeon Graphics)"
    assert resolved.name == "AMD Radeon Graphics"


def test_known_gpus_are_left_alone_and_input_not_modified() -> None:
    gpus = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("rx7900xtx")).detect().gpus
    out = resolve_unknown_targets(gpus, STARTUP, family_of)
    assert [g.gfx_target for g in out] == ["gfx1100", "gfx1036"]
    unknown = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("unknown-amd")).detect().gpus
    resolve_unknown_targets(unknown, STARTUP, family_of)
    assert unknown[0].gfx_target is None
    # Output without ROCm lines (a Vulkan-only build) resolves nothing.
    assert resolve_unknown_targets(unknown, LIST_DEVICES, family_of)[0].gfx_target is None


def test_settings_override_fills_only_unknown_targets() -> None:
    unknown = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("unknown-amd"), family_of=family_of,
                                gfx_override="gfx1201").detect().gpus[0]
    assert (unknown.gfx_target, unknown.sources["gfx_target"]) == ("gfx1201", "settings: GPU target override")
    assert unknown.verdict_text() == "ROCm via gfx120X build"
    known = build_gpu_service(kernels_dir(), sysfs_root=linux_tree("rx6600"), gfx_override="gfx1030").detect()
    assert known.gpus[0].gfx_target == "gfx1032"
