"""Device mapping on captured machines: detected GPUs ↔ an engine's own ``--list-devices`` text.

The 7900 XTX + Raphael iGPU machine (tests/data/gpu/linux/rx7900xtx) with the ROCm and Vulkan
device lists of tests/data/engines/list-devices (sources in its README).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.engines import choose_devices, match_devices, pick_gpus
from strata_gui.core.engines.probe import parse_list_devices
from strata_gui.core.gpu import build_gpu_service
from strata_gui.core.gpu.model import GpuReport
from tests.gpu.conftest import family_of, linux_tree

LISTS = Path(__file__).resolve().parents[1] / "data" / "engines" / "list-devices"


@pytest.fixture(scope="module")
def xtx_igpu() -> GpuReport:
    return build_gpu_service(kernels_dir(), sysfs_root=linux_tree("rx7900xtx"), family_of=family_of).detect()


def devices(name: str) -> list:  # type: ignore[type-arg]
    return parse_list_devices((LISTS / name).read_text())


def test_each_engine_device_is_matched_to_the_detected_gpu_it_is(xtx_igpu: GpuReport) -> None:
    rocm = match_devices(xtx_igpu.gpus, devices("rocm-rx7900xtx-raphael.txt"))
    vulkan = match_devices(xtx_igpu.gpus, devices("vulkan-rx7900xtx-raphael.txt"))
    assert {n: g.key for n, g in rocm.items()} == {"ROCm0": "card0", "ROCm1": "card1"}
    assert {n: g.key for n, g in vulkan.items()} == {"Vulkan0": "card0", "Vulkan1": "card1"}
    # Listed in the other order (another ROCm enumeration), the names still follow the GPUs.
    flipped = [d for d in reversed(devices("rocm-rx7900xtx-raphael.txt"))]
    assert {n: g.key for n, g in match_devices(xtx_igpu.gpus, flipped).items()} == {"ROCm0": "card0",
                                                                                     "ROCm1": "card1"}
    # Mesa's llvmpipe is no detected GPU: left unmatched.
    assert match_devices(xtx_igpu.gpus, devices("vulkan-llvmpipe.txt")) == {}


def test_by_default_only_the_discrete_gpu_runs_and_the_igpu_is_left_out_with_why(xtx_igpu: GpuReport) -> None:
    picks = {p.key: p for p in pick_gpus(xtx_igpu, [])}
    assert picks["card0"].chosen and picks["card0"].reason == "the discrete AMD GPU"
    assert not picks["card1"].chosen and picks["card1"].reason.startswith("integrated GPU left out")

    linux = choose_devices("rocm", devices("rocm-rx7900xtx-raphael.txt"), xtx_igpu, [], {}, "linux")
    assert linux.devices == ("ROCm0",)
    assert linux.env == {"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"}
    assert "AMD Radeon RX 7900 XTX: the discrete AMD GPU" in linux.reason
    assert "left out: ROCm1 (AMD Radeon Graphics (Raphael))" in linux.reason
    windows = choose_devices("rocm", devices("rocm-rx7900xtx-raphael.txt"), xtx_igpu, [], {}, "windows")
    assert windows.env == {"HIP_VISIBLE_DEVICES": "0"}


def test_choosing_the_igpu_or_both_changes_the_launch_variables(xtx_igpu: GpuReport) -> None:
    rocm = devices("rocm-rx7900xtx-raphael.txt")
    igpu = choose_devices("rocm", rocm, xtx_igpu, ["card1"], {}, "linux")
    # ROCr hides the 7900 XTX first; HIP then numbers the iGPU 0.
    assert igpu.devices == ("ROCm1",) and igpu.env == {"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0"}
    assert "you chose it" in igpu.reason
    both = choose_devices("rocm", rocm, xtx_igpu, ["7900", "raphael"], {}, "linux")
    assert both.devices == ("ROCm0", "ROCm1")
    # Pooling the iGPU only because the user asked: layers split by free memory, the 7900 XTX main.
    assert both.env == {"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "0,1",
                        "LLAMA_ARG_SPLIT_MODE": "layer", "LLAMA_ARG_TENSOR_SPLIT": "24472,396",
                        "LLAMA_ARG_MAIN_GPU": "0"}
    assert "layers split over 2 devices by free memory" in both.reason


def test_vulkan_names_the_device_unless_the_physical_index_is_known(xtx_igpu: GpuReport) -> None:
    vk = devices("vulkan-rx7900xtx-raphael.txt")
    # llama.cpp's default Vulkan list skips CPU devices: VulkanK need not be physical device K.
    plain = choose_devices("vulkan", vk, xtx_igpu, ["card1"], {}, "linux")
    assert plain.devices == ("Vulkan1",) and plain.env == {"LLAMA_ARG_DEVICE": "Vulkan1"}
    # Probed under a visibility list, VulkanK is that list's K-th physical index.
    listed = choose_devices("vulkan", vk, xtx_igpu, [], {"GGML_VK_VISIBLE_DEVICES": "2,0"}, "linux")
    assert listed.devices == ("Vulkan0",) and listed.env == {"GGML_VK_VISIBLE_DEVICES": "2"}


def test_a_rocm_list_the_user_set_stays_theirs_and_cpu_builds_get_nothing(xtx_igpu: GpuReport) -> None:
    mine = choose_devices("rocm", devices("rocm-rx7900xtx-raphael.txt"), xtx_igpu, [],
                          {"HIP_VISIBLE_DEVICES": "1"}, "linux")
    assert mine.env == {} and "HIP_VISIBLE_DEVICES" in mine.reason
    assert choose_devices("cpu", devices("rocm-rx7900xtx-raphael.txt"), xtx_igpu, [], {}, "linux").env == {}


def test_with_no_detected_gpu_the_engine_keeps_its_devices_unless_named() -> None:
    llvmpipe = devices("vulkan-llvmpipe.txt")
    auto = choose_devices("vulkan", llvmpipe, None, [], {"GGML_VK_VISIBLE_DEVICES": "0"}, "linux")
    assert auto.devices == () and auto.env == {} and "every Vulkan device this build lists" in auto.reason
    named = choose_devices("vulkan", llvmpipe, None, ["vulkan0"], {"GGML_VK_VISIBLE_DEVICES": "0"}, "linux")
    assert named.devices == ("Vulkan0",) and named.env == {"GGML_VK_VISIBLE_DEVICES": "0"}
    assert named.reason.startswith("you chose Vulkan0 (llvmpipe")
