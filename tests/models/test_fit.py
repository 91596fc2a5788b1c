"""Fit estimates: the KV-cache rule against a real llama-server, verdicts for captured GPUs."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.models.fit import (
    GIB,
    MIB,
    MemoryTarget,
    ModelShape,
    QuantChoice,
    Verdict,
    default_pick,
    estimate_fit,
)
from strata_gui.core.models.gguf_meta import read_header
from tests.support.engines import TestEngines, free_port

KV_LINE = re.compile(r"KV buffer size\s*=\s*([0-9.]+)\s*MiB")


def _reported_kv_mib(exe: Path, model: Path, n_ctx: int, log: Path) -> float:
    """Start the real llama-server at ``n_ctx``, read the KV buffer size it logs, stop it."""
    cmd = [str(exe), "-m", str(model), "-c", str(n_ctx), "-np", "1", "--host", "127.0.0.1",
           "--port", str(free_port()), "-lv", "4"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = KV_LINE.findall(log.read_text(errors="replace"))
                if found:
                    return sum(float(x) for x in found)
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
            raise AssertionError(f"no KV buffer line in llama-server output:\n{log.read_text()[-2000:]}")
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.engine
def test_kv_cache_estimate_matches_what_llama_server_allocates(
    test_engines: TestEngines, test_model: Path, tmp_path: Path
) -> None:
    shape = ModelShape.from_metadata(read_header(test_model), test_model.stat().st_size)
    for n_ctx in (512, 2048, 4096):
        reported = _reported_kv_mib(test_engines.cpu_server, test_model, n_ctx, tmp_path / f"kv-{n_ctx}.log")
        assert shape.kv_bytes(n_ctx) / MIB == pytest.approx(reported, abs=0.01), n_ctx


def _shape(spec: dict[str, Any], quant: str) -> ModelShape:
    return ModelShape(
        n_layers=spec["n_layers"],
        kv_heads_per_layer=(spec["kv_heads"],) * spec["n_layers"],
        key_length=spec["head_dim"],
        value_length=spec["head_dim"],
        trained_context=spec["trained_context"],
        n_vocab=spec["n_vocab"],
        embedding_length=spec["embedding_length"],
        weights_bytes=spec["files"][quant],
    )


def _target(gpu: dict[str, Any], budget: int = 0) -> MemoryTarget:
    return MemoryTarget(gpu["name"], gpu["vram_bytes"], gpu["shared_bytes"], gpu["is_apu"], budget)


def test_kv_cache_of_a_published_model() -> None:
    # Llama 3.1 8B: 32 layers x 8 KV heads x (128 + 128) x 2 bytes = 128 KiB per token.
    shape = ModelShape(32, (8,) * 32, 128, 128, 131072, 128256, 4096, 4_920_739_232)
    assert shape.kv_bytes(8192) == 1 * GIB


def test_verdicts_on_a_24_gb_card(captured_gpus: dict[str, Any], model_shapes: dict[str, Any]) -> None:
    gpu = captured_gpus["rx7900xtx"]
    target, ram = _target(gpu), gpu["ram_bytes"]
    small = estimate_fit(_shape(model_shapes["llama-3.1-8b"], "Q8_0"), target, ram, 8192)
    assert small.verdict is Verdict.FULL_GPU and small.gpu_layers == 32
    assert 65536 <= small.max_context <= 131072
    mid = estimate_fit(_shape(model_shapes["qwen2.5-32b"], "Q4_K_M"), target, ram, 8192)
    assert mid.verdict is Verdict.FULL_GPU
    assert mid.max_context < 32768  # the full trained context does not fit next to 19.9 GB of weights
    big = estimate_fit(_shape(model_shapes["llama-3.3-70b"], "Q4_K_M"), target, ram, 8192)
    assert big.verdict is Verdict.PARTIAL
    assert 30 <= big.gpu_layers <= 45 and big.total_layers == 80
    assert big.describe() == f"partial offload ({big.gpu_layers} of 80 layers)"
    huge = estimate_fit(_shape(model_shapes["llama-3.1-405b"], "Q4_K_M"), target, ram, 8192)
    assert huge.verdict is Verdict.WONT_FIT and huge.max_context == 0


def test_verdicts_on_a_strix_halo_apu(captured_gpus: dict[str, Any], model_shapes: dict[str, Any]) -> None:
    gpu = captured_gpus["strix_halo"]
    target, ram = _target(gpu), gpu["ram_bytes"]
    assert target.vram_bytes == 512 * MIB  # judged against VRAM alone nothing would fit
    big = estimate_fit(_shape(model_shapes["llama-3.3-70b"], "Q4_K_M"), target, ram, 16384)
    assert big.verdict is Verdict.FULL_GPU
    q8 = estimate_fit(_shape(model_shapes["llama-3.3-70b"], "Q8_0"), target, ram, 8192)
    assert q8.verdict is Verdict.FULL_GPU  # 75 GB of weights in 96 GB of GTT
    # A user budget of 40 GB turns the 70B Q4_K_M into a partial offload.
    capped = estimate_fit(_shape(model_shapes["llama-3.3-70b"], "Q4_K_M"), _target(gpu, 40 * GIB), ram, 8192)
    assert capped.verdict is Verdict.PARTIAL
    huge = estimate_fit(_shape(model_shapes["llama-3.1-405b"], "Q4_K_M"), target, ram, 8192)
    assert huge.verdict is Verdict.WONT_FIT


def test_verdicts_on_an_8_gb_card(captured_gpus: dict[str, Any], model_shapes: dict[str, Any]) -> None:
    gpu = captured_gpus["rx7600"]
    target, ram = _target(gpu), gpu["ram_bytes"]
    q4 = estimate_fit(_shape(model_shapes["llama-3.1-8b"], "Q4_K_M"), target, ram, 8192)
    assert q4.verdict is Verdict.FULL_GPU
    q8 = estimate_fit(_shape(model_shapes["llama-3.1-8b"], "Q8_0"), target, ram, 8192)
    assert q8.verdict is Verdict.PARTIAL and 0 < q8.gpu_layers < 32
    # 70B Q8 (75 GB) needs more than the 8 GB card plus the 31 GB of RAM.
    big = estimate_fit(_shape(model_shapes["llama-3.3-70b"], "Q8_0"), target, ram, 8192)
    assert big.verdict is Verdict.WONT_FIT


def test_cpu_only_without_gpu_memory(model_shapes: dict[str, Any]) -> None:
    target = MemoryTarget.from_settings(fallback_gpu_memory_mb=0, memory_budget_mb=0)
    est = estimate_fit(_shape(model_shapes["llama-3.1-8b"], "Q4_K_M"), target, 32 * GIB, 4096)
    assert est.verdict is Verdict.CPU_ONLY and est.gpu_layers == 0 and est.max_context > 4096


def test_settings_budget_caps_the_target() -> None:
    target = MemoryTarget.from_settings(fallback_gpu_memory_mb=16384, memory_budget_mb=6000)
    assert target.usable_bytes == 6000 * MIB


def _choices(spec: dict[str, Any], target: MemoryTarget, ram: int) -> list[QuantChoice]:
    return [QuantChoice(q, size, estimate_fit(_shape(spec, q), target, ram, 8192)) for q, size in spec["files"].items()]


def test_default_pick(captured_gpus: dict[str, Any], model_shapes: dict[str, Any]) -> None:
    llama8 = model_shapes["llama-3.1-8b"]
    big_card, small_card = captured_gpus["rx7900xtx"], captured_gpus["rx7600"]
    # 24 GB: Q8_0 fits and is much larger than Q4_K_M -> the better quant; never F16 by default.
    pick = default_pick(_choices(llama8, _target(big_card), big_card["ram_bytes"]))
    assert pick is not None and pick.label == "Q8_0"
    # 8 GB: Q5_K_M/Q6_K fit but are close to Q4_K_M -> Q4_K_M keeps headroom.
    pick = default_pick(_choices(llama8, _target(small_card), small_card["ram_bytes"]))
    assert pick is not None and pick.label == "Q4_K_M"
    # Nothing fits fully: the Q4_K_M-class quant that runs partly offloaded.
    pick = default_pick(_choices(model_shapes["llama-3.3-70b"], _target(small_card), 128 * GIB))
    assert pick is not None and pick.label == "Q4_K_M" and pick.estimate.verdict is Verdict.PARTIAL
    # Nothing runs at all.
    assert default_pick(_choices(model_shapes["llama-3.1-405b"], _target(small_card), small_card["ram_bytes"])) is None


def test_memory_target_from_detected_gpus(captured_gpus: dict[str, Any], model_shapes: dict[str, Any]) -> None:
    from strata_gui.core.config.settings import Settings
    from strata_gui.core.gpu.model import GpuInfo
    from strata_gui.core.models.targets import memory_target_for

    halo = captured_gpus["strix_halo"]
    apu = GpuInfo("card0", "AMD", 0x1002, 0x1586, 0xC1, halo["name"], "gfx1151", True,
                  halo["vram_bytes"], halo["shared_bytes"], "amdgpu", "0000:c5:00.0")
    target = memory_target_for(apu, Settings(memory_budget_mb=0))
    assert target.is_apu and target.usable_bytes == halo["vram_bytes"] + halo["shared_bytes"]
    est = estimate_fit(_shape(model_shapes["llama-3.3-70b"], "Q4_K_M"), target, halo["ram_bytes"], 8192)
    assert est.verdict is Verdict.FULL_GPU
    assert memory_target_for(apu, Settings(memory_budget_mb=32768)).usable_bytes == 32 * GIB
    fallback = memory_target_for(None, Settings(fallback_gpu_memory_mb=12288))
    assert fallback.usable_bytes == 12 * GIB and not fallback.is_apu


def test_default_pick_avoids_bf16_where_the_gpu_runs_it_slowly(captured_gpus: dict[str, Any],
                                                               model_shapes: dict[str, Any]) -> None:
    """A repo with only full-precision files (BF16 and F16, the same size): BF16 is the default only
    where the GPU has BF16 matrix instructions (per-gfx table in kernels/amd-gpu-ids.json)."""
    llama8, card = model_shapes["llama-3.1-8b"], captured_gpus["rx7900xtx"]
    f16 = estimate_fit(_shape(llama8, "F16"), _target(card), card["ram_bytes"], 8192)
    choices = [QuantChoice("BF16", llama8["files"]["F16"], f16), QuantChoice("F16", llama8["files"]["F16"], f16)]
    assert default_pick(choices, bf16="fast").label == "BF16"  # type: ignore[union-attr]
    assert default_pick(choices, bf16="slow").label == "F16"  # type: ignore[union-attr]
    assert default_pick(choices, bf16="unsupported").label == "F16"  # type: ignore[union-attr]
    assert default_pick(choices[:1], bf16="slow").label == "BF16"  # type: ignore[union-attr]  # the only file


def test_the_bf16_table_covers_every_known_target() -> None:
    from strata_gui.core.config.resources import kernels_dir
    from strata_gui.core.gpu.ids import load_gpu_table

    table = load_gpu_table(kernels_dir())
    assert table.bf16_speed("gfx1032") == "slow" and table.bf16_speed("gfx1100") == "fast"
    assert table.bf16_speed("gfx1201") == "fast" and table.bf16_speed("gfx942") == "fast"
    known = {e.gfx for e in table.devices.values()}
    assert known <= set(table.bf16), sorted(known - set(table.bf16))


def test_a_model_that_fits_only_across_two_gpus(captured_gpus: dict[str, Any], model_shapes: dict[str, Any]) -> None:
    """7900 XTX + RX 7600 chosen together: a 32B Q4_K_M at 32K context is more than the 24 GB card
    holds, but fits spread over both; the verdict says so."""
    from strata_gui.core.config.settings import Settings
    from strata_gui.core.gpu.model import GpuInfo
    from strata_gui.core.models.targets import memory_target_for_gpus

    xtx, small = captured_gpus["rx7900xtx"], captured_gpus["rx7600"]
    cards = [GpuInfo("card0", "AMD", 0x1002, 0x744C, 0xC8, xtx["name"], "gfx1100", False, xtx["vram_bytes"],
                     xtx["shared_bytes"], "amdgpu", "0000:03:00.0"),
             GpuInfo("card1", "AMD", 0x1002, 0x7480, 0xCF, small["name"], "gfx1102", False, small["vram_bytes"],
                     small["shared_bytes"], "amdgpu", "0000:08:00.0")]
    both = memory_target_for_gpus(cards, Settings())
    one = memory_target_for_gpus(cards[:1], Settings())
    assert both.devices == (xtx["vram_bytes"], small["vram_bytes"]) and " + " in both.name
    assert both.usable_bytes == xtx["vram_bytes"] + small["vram_bytes"] - 320 * MIB  # the 2nd GPU's own buffers
    ram = xtx["ram_bytes"]
    mid = _shape(model_shapes["qwen2.5-32b"], "Q4_K_M")
    # At 32K context the 24 GB card alone only holds part of it; both cards hold all of it.
    alone = estimate_fit(mid, one, ram, 32768)
    spread = estimate_fit(mid, both, ram, 32768)
    assert alone.verdict is Verdict.PARTIAL
    assert spread.verdict is Verdict.FULL_GPU and spread.gpu_count == 2
    assert spread.describe() == "fits across 2 GPUs"
    # A model one card holds is "fits fully on GPU", not "across 2".
    small_model = estimate_fit(_shape(model_shapes["llama-3.1-8b"], "Q4_K_M"), both, ram, 8192)
    assert small_model.gpu_count == 1 and small_model.describe() == "fits fully on GPU"
