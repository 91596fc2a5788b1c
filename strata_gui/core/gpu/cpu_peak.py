"""The CPU's peak arithmetic: cores × clock × FLOPs per cycle of its vector unit, read from the OS.

A CPU multiplies a batch of prompt tokens with fused multiply-adds on its widest vector unit, so its
peak FP32 rate is ``physical cores × clock × FMA pipes × lanes × 2``. The parts come from the OS:

* Linux: ``/proc/cpuinfo`` (vendor, family, model, flags, ``cpu MHz``), and the rated maximum clock
  from ``/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq`` where the kernel has it;
* Windows: the registry's ``CentralProcessor\\0`` key (``~MHz``, ``VendorIdentifier``,
  ``Identifier``: "AMD64 Family 25 Model 97 Stepping 2") and ``IsProcessorFeaturePresent``.

FLOPs per cycle per core (FP32) by vector unit, as the vendors document their cores:

* AMD Zen 2 to Zen 4 (family 0x17 model ≥ 0x30, family 0x19): two 256-bit FMA pipes → 32
  (Zen 4's AVX-512 runs as two 256-bit halves); Zen 1: two 128-bit pipes → 16;
* AMD Zen 5 (family 0x1A) with AVX-512: two 512-bit pipes → 64;
* other x86 with AVX-512: two 512-bit FMA ports → 64; with AVX2 and FMA → 32; AVX → 16; SSE → 8;
* 64-bit Arm with NEON: two 128-bit FMA pipes → 16.

The figure is an upper bound: clocks drop under an all-core vector load, and it says so in its source.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
MAX_FREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")


@dataclass(frozen=True)
class CpuFacts:
    """What the OS says about the processor (the parts of the peak)."""

    vendor: str  # "AuthenticAMD", "GenuineIntel", "ARM", ""
    family: int | None
    model: int | None
    flags: frozenset[str]
    mhz: float | None
    clock_source: str  # where ``mhz`` comes from
    arch: str = "x86_64"


@dataclass(frozen=True)
class CpuPeak:
    """The CPU's peak FP32 rate and how it was worked out.

    Attributes:
        int8_factor: How many times the FP32 rate its 8-bit integer dot products reach (llama.cpp
            multiplies quantised weights that way): 4 with VNNI (four 8-bit products per 32-bit
            lane), else 2 (pairs, then a 16-bit add).
        bf16_factor: 2 with AVX-512 BF16's dot product (two BF16 products per lane), else 1.
    """

    cores: int
    mhz: float
    flops_per_cycle: int
    unit: str  # "two 256-bit FMA pipes (Zen 4)"
    source: str
    int8_factor: int = 2
    bf16_factor: int = 1

    @property
    def tflops(self) -> float:
        return self.cores * self.mhz * 1e6 * self.flops_per_cycle / 1e12

    def rate(self, compute_type: str) -> float:
        """Peak TFLOPS (TOPS) for weights of ``compute_type`` (F16 is widened to F32 first)."""
        if compute_type == "int8":
            return self.tflops * self.int8_factor
        if compute_type == "bf16":
            return self.tflops * self.bf16_factor
        return self.tflops


def parse_cpuinfo(text: str, max_freq_khz: str | None = None) -> CpuFacts:
    """The facts in ``/proc/cpuinfo`` (its first processor), and ``cpuinfo_max_freq`` if read."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block is enough: the others are the same part
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    flags = frozenset((fields.get("flags") or fields.get("features") or "").split())
    mhz: float | None = None
    clock = ""
    if max_freq_khz and max_freq_khz.strip().isdigit() and int(max_freq_khz) > 0:
        mhz, clock = int(max_freq_khz) / 1000, "cpufreq cpuinfo_max_freq"
    elif _number(fields.get("cpu mhz")) is not None:
        mhz, clock = _number(fields.get("cpu mhz")), "/proc/cpuinfo cpu MHz"
    arm = "asimd" in flags or fields.get("cpu architecture") == "8"
    return CpuFacts(fields.get("vendor_id", "ARM" if arm else ""), _int(fields.get("cpu family")),
                    _int(fields.get("model")), flags, mhz, clock, "aarch64" if arm else "x86_64")


_IDENTIFIER = re.compile(r"Family\s+(\d+)\s+Model\s+(\d+)", re.IGNORECASE)


def parse_windows_processor(identifier: str, vendor: str, mhz: int | None,
                            features: frozenset[str]) -> CpuFacts:
    """The facts in the registry's ``CentralProcessor\\0`` key and the feature checks.

    Args:
        identifier: ``Identifier`` ("AMD64 Family 25 Model 97 Stepping 2", "ARMv8 (64-bit) Family 8 …").
        vendor: ``VendorIdentifier``.
        mhz: ``~MHz`` (the rated clock).
        features: The vector units ``IsProcessorFeaturePresent`` confirmed ("avx", "avx2", "avx512f", "fma").
    """
    m = _IDENTIFIER.search(identifier)
    arm = identifier.upper().startswith("ARM")
    return CpuFacts(vendor or ("ARM" if arm else ""), int(m.group(1)) if m else None,
                    int(m.group(2)) if m else None, features | ({"asimd"} if arm else frozenset()),
                    float(mhz) if mhz else None, "registry ~MHz" if mhz else "", "aarch64" if arm else "x86_64")


def flops_per_cycle(facts: CpuFacts) -> tuple[int, str]:
    """FP32 FLOPs per cycle per core, and the vector unit it assumes (see the module's text)."""
    f, family, model = facts.flags, facts.family, facts.model
    if facts.arch == "aarch64":
        return 16, "two 128-bit NEON FMA pipes"
    if facts.vendor == "AuthenticAMD" and family is not None:
        if family >= 0x1A and "avx512f" in f:
            return 64, "two 512-bit FMA pipes (Zen 5)"
        if family == 0x19 or (family == 0x17 and (model or 0) >= 0x30) or family >= 0x1A:
            return 32, "two 256-bit FMA pipes (Zen 2–4)"
        if family == 0x17:
            return 16, "two 128-bit FMA pipes (Zen 1)"
    if "avx512f" in f:
        return 64, "two 512-bit FMA ports (AVX-512)"
    if "avx2" in f and "fma" in f:
        return 32, "two 256-bit FMA ports (AVX2)"
    if "avx" in f:
        return 16, "256-bit AVX without FMA"
    return 8, "128-bit SSE"


def cpu_peak(facts: CpuFacts | None, cores: int | None) -> CpuPeak | None:
    """The peak from ``facts`` and the physical core count; None when the clock or cores are unknown."""
    if facts is None or not facts.mhz or not cores:
        return None
    per_cycle, unit = flops_per_cycle(facts)
    source = (f"{cores} cores × {facts.mhz / 1000:.2f} GHz ({facts.clock_source}) × {per_cycle} FP32 FLOPs per "
              f"cycle ({unit}); a peak: clocks drop under an all-core vector load")
    vnni = bool(facts.flags & {"avx512_vnni", "avx_vnni", "avx512vnni", "asimddp"})
    return CpuPeak(cores, facts.mhz, per_cycle, unit, source, int8_factor=4 if vnni else 2,
                   bf16_factor=2 if "avx512_bf16" in facts.flags else 1)


def read_cpu_facts() -> CpuFacts | None:
    """This machine's :class:`CpuFacts` (None where the OS does not say)."""
    if sys.platform == "win32":
        return _windows_facts()
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    try:
        max_freq: str | None = MAX_FREQ.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        max_freq = None
    return parse_cpuinfo(text, max_freq)


if sys.platform == "win32":  # the thin Windows layer (its parser is tested on every OS)
    import ctypes
    import winreg

    def _windows_facts() -> CpuFacts | None:
        try:
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"HARDWARE\DESCRIPTION\System\CentralProcessor\0") as key:
                identifier = str(winreg.QueryValueEx(key, "Identifier")[0])
                vendor = str(winreg.QueryValueEx(key, "VendorIdentifier")[0])
                mhz = int(winreg.QueryValueEx(key, "~MHz")[0])
        except OSError:
            return None
        present = ctypes.windll.kernel32.IsProcessorFeaturePresent
        # PF_AVX_INSTRUCTIONS_AVAILABLE 39, PF_AVX2_… 40, PF_AVX512F_… 41 (winnt.h); AVX2 parts all have FMA.
        features = frozenset(name for name, code in (("avx", 39), ("avx2", 40), ("avx512f", 41)) if present(code))
        if "avx2" in features:
            features |= {"fma"}
        return parse_windows_processor(identifier, vendor, mhz, features)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None
