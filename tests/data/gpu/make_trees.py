"""Writes the sysfs/procfs trees under tests/data/gpu/linux/ (run once; the output is committed).

File contents follow what amdgpu, i915, nvidia and the KFD expose on real machines (values
as those cards report them: VRAM totals in bytes, hwmon in milli-degrees / micro-watts, KFD
properties in decimal). Connectors (card0-DP-1 ...) and render nodes are included so the
detector has to skip them. Run: python tests/data/gpu/make_trees.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent / "linux"
MIB = 1024 * 1024
GIB = 1024 * MIB


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")


def host(root: Path, cpu: str, threads: int, ram_kb: int, kernel: str = "6.11.0-21-generic") -> None:
    write(root, "proc/cpuinfo", "".join(
        f"processor\t: {i}\nvendor_id\t: {'AuthenticAMD' if 'AMD' in cpu else 'GenuineIntel'}\n"
        f"model name\t: {cpu}\ncpu MHz\t\t: 3000.000\n\n" for i in range(threads)))
    write(root, "proc/meminfo", f"MemTotal:       {ram_kb} kB\nMemFree:        {ram_kb // 3} kB\n"
                                f"MemAvailable:   {ram_kb // 2} kB\n")
    write(root, "proc/sys/kernel/osrelease", kernel)
    write(root, "sys/class/drm/version", "drm 1.1.0 20060810")


def sclk(levels: list[int], current: int) -> str:
    return "".join(f"{i}: {mhz}Mhz{' *' if i == current else ''}\n" for i, mhz in enumerate(levels))


def card(root: Path, n: int, *, vendor: int, device: int, revision: int, slot: str, driver: str,
         vram: int | None = None, vram_used: int | None = None, gtt: int | None = None,
         gtt_used: int | None = None, busy: int | None = None, pp_sclk: str | None = None,
         hwmon: dict[str, str] | None = None, connectors: tuple[str, ...] = (), render_minor: int = 128,
         boot_vga: int = 0, runtime_status: str = "active") -> None:
    base = f"sys/class/drm/card{n}/device"
    write(root, f"{base}/vendor", f"0x{vendor:04x}")
    write(root, f"{base}/device", f"0x{device:04x}")
    write(root, f"{base}/revision", f"0x{revision:02x}")
    write(root, f"{base}/subsystem_vendor", f"0x{vendor:04x}")
    write(root, f"{base}/boot_vga", str(boot_vga))
    write(root, f"{base}/power/runtime_status", runtime_status)
    write(root, f"{base}/uevent", f"DRIVER={driver}\nPCI_CLASS=30000\nPCI_ID={vendor:04X}:{device:04X}\n"
                                   f"PCI_SUBSYS_ID={vendor:04X}:0E3B\nPCI_SLOT_NAME={slot}\n"
                                   f"MODALIAS=pci:v0000{vendor:04X}d0000{device:04X}\n")
    for name, value in (("mem_info_vram_total", vram), ("mem_info_vram_used", vram_used),
                        ("mem_info_gtt_total", gtt), ("mem_info_gtt_used", gtt_used),
                        ("gpu_busy_percent", busy)):
        if value is not None:
            write(root, f"{base}/{name}", str(value))
    if pp_sclk is not None:
        write(root, f"{base}/pp_dpm_sclk", pp_sclk)
    for name, value in (hwmon or {}).items():
        write(root, f"{base}/hwmon/hwmon{n + 2}/{name}", value)
    for conn in connectors:
        write(root, f"sys/class/drm/card{n}-{conn}/status", "connected" if conn.endswith("-1") else "disconnected")
        write(root, f"sys/class/drm/card{n}-{conn}/enabled", "enabled")
    write(root, f"sys/class/drm/renderD{render_minor}/dev", f"226:{render_minor}")


def kfd(root: Path, node: int, *, gfx_target_version: int, vendor: int = 0, device: int = 0,
        location: int = 0, render_minor: int = 0, cpu_cores: int = 0, simd: int = 0) -> None:
    props = {
        "cpu_cores_count": cpu_cores, "simd_count": simd, "mem_banks_count": 1,
        "gfx_target_version": gfx_target_version, "vendor_id": vendor, "device_id": device,
        "location_id": location, "domain": 0, "drm_render_minor": render_minor,
        "unique_id": 0 if not simd else 10840318457036291911 + node, "max_engine_clk_fcompute": 2482,
    }
    write(root, f"sys/class/kfd/kfd/topology/nodes/{node}/properties",
          "".join(f"{k} {v}\n" for k, v in props.items()))


def amd_hwmon(edge: int, power_uw: int | None, *, junction: int | None = None, mem: int | None = None,
              power_file: str = "power1_average", freq_hz: int | None = None) -> dict[str, str]:
    files = {"name": "amdgpu", "temp1_input": str(edge), "temp1_label": "edge"}
    if junction is not None:
        files |= {"temp2_input": str(junction), "temp2_label": "junction"}
    if mem is not None:
        files |= {"temp3_input": str(mem), "temp3_label": "mem"}
    if power_uw is not None:
        files[power_file] = str(power_uw)
        files["power1_cap"] = "327000000"
    if freq_hz is not None:
        files |= {"freq1_input": str(freq_hz), "freq1_label": "sclk"}
    return files


def rx7900xtx(root: Path) -> None:
    host(root, "AMD Ryzen 9 7950X 16-Core Processor", 32, 65_511_224)
    card(root, 0, vendor=0x1002, device=0x744C, revision=0xC8, slot="0000:03:00.0", driver="amdgpu",
         vram=25753026560, vram_used=1_402_994_688, gtt=33_541_775_360, gtt_used=28_286_976, busy=37,
         pp_sclk=sclk([500, 1780, 2526], 1),
         hwmon=amd_hwmon(46000, 88_000_000, junction=58000, mem=62000, freq_hz=1_780_000_000),
         connectors=("DP-1", "DP-2", "HDMI-A-1"), boot_vga=1)
    card(root, 1, vendor=0x1002, device=0x164E, revision=0xC1, slot="0000:13:00.0", driver="amdgpu",
         vram=536_870_912, vram_used=24_870_912, gtt=33_541_775_360, gtt_used=9_437_184, busy=0,
         pp_sclk=sclk([600, 2200], 0), hwmon=amd_hwmon(41000, None, power_file="power1_input"),
         connectors=("DP-3", "HDMI-A-2"), render_minor=129)
    kfd(root, 0, gfx_target_version=0, cpu_cores=32)
    kfd(root, 1, gfx_target_version=110000, vendor=4098, device=0x744C, location=0x0300, render_minor=128,
        simd=192)
    kfd(root, 2, gfx_target_version=100306, vendor=4098, device=0x164E, location=0x1300, render_minor=129,
        simd=4)


def strix_halo(root: Path) -> None:
    host(root, "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", 32, 130_476_520, kernel="6.15.4-arch2-1")
    card(root, 1, vendor=0x1002, device=0x1586, revision=0xC1, slot="0000:c5:00.0", driver="amdgpu",
         vram=536_870_912, vram_used=301_989_888, gtt=103_079_215_104, gtt_used=41_238_577_152, busy=88,
         pp_sclk=sclk([600, 1600, 2900], 2),
         hwmon=amd_hwmon(61000, 118_000_000, power_file="power1_input"),
         connectors=("DP-1", "DP-2", "eDP-1"))
    kfd(root, 0, gfx_target_version=0, cpu_cores=32)
    kfd(root, 1, gfx_target_version=110501, vendor=4098, device=0x1586, location=0xC500, render_minor=128,
        simd=80, cpu_cores=0)


def laptop_780m_7600(root: Path) -> None:
    host(root, "AMD Ryzen 9 7940HS w/ Radeon 780M Graphics", 16, 32_044_916)
    # The iGPU has no power sensor exposed here: the page must show "n/a", not 0 W.
    card(root, 0, vendor=0x1002, device=0x15BF, revision=0xC4, slot="0000:65:00.0", driver="amdgpu",
         vram=536_870_912, vram_used=188_743_680, gtt=16_406_996_992, gtt_used=612_368_384, busy=14,
         pp_sclk=sclk([800, 2000, 2800], 1), hwmon=amd_hwmon(52000, None),
         connectors=("eDP-1", "DP-1"), render_minor=128)
    card(root, 1, vendor=0x1002, device=0x7480, revision=0xCF, slot="0000:03:00.0", driver="amdgpu",
         vram=8_573_157_376, vram_used=5_368_709_120, gtt=16_406_996_992, gtt_used=41_943_040, busy=96,
         pp_sclk=sclk([500, 1300, 2625], 2), hwmon=amd_hwmon(71000, 92_000_000, junction=84000, mem=76000),
         render_minor=129)
    kfd(root, 0, gfx_target_version=0, cpu_cores=16)
    kfd(root, 1, gfx_target_version=110003, vendor=4098, device=0x15BF, location=0x6500, render_minor=128, simd=24)
    kfd(root, 2, gfx_target_version=110002, vendor=4098, device=0x7480, location=0x0300, render_minor=129, simd=64)


def two_discrete(root: Path) -> None:
    """A desktop with two discrete cards (RX 7900 XTX + RX 7600) and a Raphael iGPU: models go to the
    7900 XTX by default; both discrete cards can be chosen and the model split over them."""
    host(root, "AMD Ryzen 9 7950X 16-Core Processor", 32, 65_511_224)
    card(root, 0, vendor=0x1002, device=0x744C, revision=0xC8, slot="0000:03:00.0", driver="amdgpu",
         vram=25753026560, vram_used=1_402_994_688, gtt=33_541_775_360, gtt_used=28_286_976, busy=12,
         pp_sclk=sclk([500, 1780, 2526], 1),
         hwmon=amd_hwmon(44000, 71_000_000, junction=52000, mem=60000, freq_hz=1_780_000_000),
         connectors=("DP-1", "DP-2"), boot_vga=1)
    card(root, 1, vendor=0x1002, device=0x7480, revision=0xCF, slot="0000:08:00.0", driver="amdgpu",
         vram=8_573_157_376, vram_used=402_653_184, gtt=33_541_775_360, gtt_used=8_388_608, busy=0,
         pp_sclk=sclk([500, 1300, 2625], 0), hwmon=amd_hwmon(38000, 9_000_000, junction=40000, mem=42000),
         connectors=("DP-3",), render_minor=129)
    card(root, 2, vendor=0x1002, device=0x164E, revision=0xC1, slot="0000:13:00.0", driver="amdgpu",
         vram=536_870_912, vram_used=24_870_912, gtt=33_541_775_360, gtt_used=9_437_184, busy=0,
         pp_sclk=sclk([600, 2200], 0), hwmon=amd_hwmon(41000, None, power_file="power1_input"),
         connectors=("HDMI-A-1",), render_minor=130)
    kfd(root, 0, gfx_target_version=0, cpu_cores=32)
    kfd(root, 1, gfx_target_version=110000, vendor=4098, device=0x744C, location=0x0300, render_minor=128,
        simd=192)
    kfd(root, 2, gfx_target_version=110002, vendor=4098, device=0x7480, location=0x0800, render_minor=129,
        simd=64)
    kfd(root, 3, gfx_target_version=100306, vendor=4098, device=0x164E, location=0x1300, render_minor=130,
        simd=4)


def w7900_igpu(root: Path) -> None:
    """A workstation: Radeon Pro W7900 (48 GB) next to a Raphael iGPU."""
    host(root, "AMD Ryzen 9 7950X3D 16-Core Processor", 32, 131_022_448)
    card(root, 0, vendor=0x1002, device=0x7448, revision=0x00, slot="0000:03:00.0", driver="amdgpu",
         vram=51_522_830_336, vram_used=1_107_296_256, gtt=67_083_550_720, gtt_used=31_457_280, busy=5,
         pp_sclk=sclk([500, 1600, 2400], 1),
         hwmon=amd_hwmon(39000, 41_000_000, junction=45000, mem=50000, freq_hz=1_600_000_000),
         connectors=("DP-1", "DP-2", "DP-3", "DP-4"), boot_vga=1)
    card(root, 1, vendor=0x1002, device=0x164E, revision=0xC1, slot="0000:13:00.0", driver="amdgpu",
         vram=536_870_912, vram_used=24_870_912, gtt=67_083_550_720, gtt_used=9_437_184, busy=0,
         pp_sclk=sclk([600, 2200], 0), hwmon=amd_hwmon(40000, None, power_file="power1_input"),
         connectors=("HDMI-A-1",), render_minor=129)
    kfd(root, 0, gfx_target_version=0, cpu_cores=32)
    kfd(root, 1, gfx_target_version=110000, vendor=4098, device=0x7448, location=0x0300, render_minor=128,
        simd=192)
    kfd(root, 2, gfx_target_version=100306, vendor=4098, device=0x164E, location=0x1300, render_minor=129,
        simd=4)


def rx9070xt(root: Path) -> None:
    host(root, "Intel(R) Core(TM) i7-14700K", 28, 32_585_044)
    card(root, 0, vendor=0x8086, device=0xA780, revision=0x04, slot="0000:00:02.0", driver="i915",
         connectors=("HDMI-A-1",), render_minor=128)
    card(root, 1, vendor=0x1002, device=0x7550, revision=0xC0, slot="0000:03:00.0", driver="amdgpu",
         vram=17_095_983_104, vram_used=12_079_595_520, gtt=16_683_544_576, gtt_used=35_651_584, busy=99,
         pp_sclk=sclk([500, 2970], 1), hwmon=amd_hwmon(64000, 301_000_000, junction=81000, mem=84000),
         connectors=("DP-1", "DP-2", "DP-3"), render_minor=129, boot_vga=1)
    kfd(root, 0, gfx_target_version=0, cpu_cores=28)
    kfd(root, 1, gfx_target_version=120001, vendor=4098, device=0x7550, location=0x0300, render_minor=129, simd=128)


def rx6600(root: Path) -> None:
    host(root, "AMD Ryzen 5 5600X 6-Core Processor", 12, 16_310_916, kernel="6.8.0-52-generic")
    card(root, 0, vendor=0x1002, device=0x73FF, revision=0xC7, slot="0000:0a:00.0", driver="amdgpu",
         vram=8_573_157_376, vram_used=734_003_200, gtt=8_351_223_808, gtt_used=14_680_064, busy=3,
         pp_sclk=sclk([500, 700, 2491], 0), hwmon=amd_hwmon(38000, 9_000_000, junction=40000, mem=42000),
         connectors=("DP-1", "HDMI-A-1"), boot_vga=1)
    kfd(root, 0, gfx_target_version=0, cpu_cores=12)
    kfd(root, 1, gfx_target_version=100302, vendor=4098, device=0x73FF, location=0x0A00, render_minor=128, simd=56)


def nvidia(root: Path) -> None:
    host(root, "AMD Ryzen 7 7800X3D 8-Core Processor", 16, 32_585_044)
    card(root, 0, vendor=0x10DE, device=0x2684, revision=0xA1, slot="0000:01:00.0", driver="nvidia",
         connectors=("DP-1", "HDMI-A-1"), boot_vga=1)
    write(root, "sys/module/nvidia/version", "550.107.02")


def unknown_amd(root: Path) -> None:
    # A card newer than the id table, on a kernel without KFD support for it yet.
    host(root, "AMD Ryzen 7 9700X 8-Core Processor", 16, 65_511_224)
    card(root, 0, vendor=0x1002, device=0x7599, revision=0xC0, slot="0000:03:00.0", driver="amdgpu",
         vram=17_095_983_104, vram_used=402_653_184, gtt=33_541_775_360, gtt_used=10_485_760, busy=1,
         hwmon=amd_hwmon(35000, 14_000_000, junction=37000), connectors=("DP-1",))


def no_gpu(root: Path) -> None:
    host(root, "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 2, 8_048_512)
    # A firmware framebuffer: a DRM card with no PCI ids, not a GPU.
    write(root, "sys/class/drm/card0/device/uevent", "DRIVER=simple-framebuffer\nOF_NAME=framebuffer\n")
    write(root, "sys/class/drm/card0-Unknown-1/status", "connected")


CASES = {
    "rx7900xtx": rx7900xtx,
    "rx7900xtx-rx7600-igpu": two_discrete,
    "w7900-igpu": w7900_igpu,
    "strix-halo": strix_halo,
    "laptop-780m-rx7600": laptop_780m_7600,
    "rx9070xt-intel-igpu": rx9070xt,
    "rx6600": rx6600,
    "nvidia": nvidia,
    "unknown-amd": unknown_amd,
    "no-gpu": no_gpu,
}

if __name__ == "__main__":
    for case_name, build in CASES.items():
        target = HERE / case_name
        shutil.rmtree(target, ignore_errors=True)
        build(target)
        print("wrote", target)
