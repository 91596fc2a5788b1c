"""The decode ceiling against a hand computation made from the GGUF's own tensors, on captured
machines (7900 XTX, Strix Halo, a 780M APU laptop, CPU only), for a dense and an MoE model.

The hand computation reads the file with llama.cpp's own ``gguf`` reader (not Strata's parser):
every tensor's bytes except the token embedding table (one row per token), the expert tensors
at ``expert_used_count / expert_count``, plus the f16 KV cache of every layer at the depth.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import gguf
import pytest

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.ids import load_gpu_table
from strata_gui.core.gpu.membw import CpuBandwidth, MeasuredBandwidth, measure_copy_bandwidth
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.models.bandwidth import CPU_DEVICE, TokenBytes, decode_ceiling, read_token_bytes
from tests.support import gguf_model

TREES = Path(__file__).resolve().parent.parent / "data" / "gpu" / "linux"
DENSE = gguf_model.ModelSpec(layers=3, width=128, heads=4, kv_heads=2, ff=256, name="Strata Test Dense")
MOE = gguf_model.ModelSpec(layers=3, width=128, heads=4, kv_heads=2, ff=256, experts=8, experts_used=2,
                           name="Strata Test MoE", seed=99)
CPU_GBPS = 41.5  # a fixed "measured" CPU figure, so the CPU-only case is computed by hand too


@cache
def reader_of(path: Path) -> gguf.GGUFReader:
    return gguf.GGUFReader(path)  # each read parses a 32 000-token vocabulary: read once


@cache
def tokens_of(path: Path) -> TokenBytes:
    return read_token_bytes(path)


def hand_bytes_per_token(path: Path, depth: int) -> int:
    """Bytes one token reads, computed from the file's tensors with llama.cpp's reader."""
    reader = reader_of(path)

    def field(key: str) -> int:
        f = reader.fields.get(key)
        return int(f.parts[f.data[0]][0]) if f is not None else 0

    experts, used = field("llama.expert_count"), field("llama.expert_used_count")
    names = {t.name for t in reader.tensors}
    total = 0
    for t in reader.tensors:
        if t.name == "token_embd.weight" and "output.weight" in names:
            continue
        n = int(t.n_bytes)
        total += n * used // experts if "_exps" in t.name else n
    layers, kv_heads = field("llama.block_count"), field("llama.attention.head_count_kv")
    head_dim = field("llama.embedding_length") // field("llama.attention.head_count")
    kv = layers * kv_heads * head_dim * 2 * 2  # K and V, f16
    return total + depth * kv


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, llama_source: Path) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ceiling")
    return {"dense": gguf_model.write_model(folder / "dense-F16.gguf", DENSE),
            "moe": gguf_model.write_model(folder / "moe-F16.gguf", MOE)}


@pytest.mark.parametrize(("machine", "gpu_name", "gbps"), [
    ("rx7900xtx", "AMD Radeon RX 7900 XTX", 960.0),
    ("strix-halo", "AMD Radeon 8060S", 256.0),  # LPDDR5X-8000 × 256-bit (revision C1: the 8060S)
    ("laptop-780m-rx7600", "AMD Radeon 780M", 89.6),  # the APU: DDR5-5600, two channels
    ("no-gpu", None, CPU_GBPS),
])
@pytest.mark.parametrize("kind", ["dense", "moe"])
@pytest.mark.parametrize("depth", [0, 1000])
def test_ceiling_matches_a_hand_computation(machine: str, gpu_name: str | None, gbps: float, kind: str, depth: int,
                                            models: dict[str, Path]) -> None:
    report = build_gpu_service(kernels_dir(), sysfs_root=TREES / machine).detect()
    gpu = next((g for g in report.gpus if g.name == gpu_name), None)
    if gpu_name is not None:
        assert gpu is not None and gpu.bandwidth_gbps == gbps and "bandwidth" in gpu.sources
    else:
        assert report.gpus == []
    tokens = tokens_of(models[kind])
    ceiling = decode_ceiling(tokens, depth, gpu=(gpu.name, gbps, "table") if gpu is not None else None,
                             cpu=(CPU_GBPS, "measured"))
    assert ceiling is not None
    expected_bytes = hand_bytes_per_token(models[kind], depth)
    assert ceiling.bytes_per_token == expected_bytes
    assert ceiling.tokens_per_s == pytest.approx(gbps * 1e9 / expected_bytes, rel=1e-9)
    assert ceiling.device == (gpu.name if gpu is not None else CPU_DEVICE)


def test_an_moe_model_reads_only_its_active_experts(models: dict[str, Path]) -> None:
    tokens = tokens_of(models["moe"])
    assert (tokens.expert_count, tokens.experts_used) == (8, 2)
    reader = reader_of(models["moe"])
    experts = sum(int(t.n_bytes) for t in reader.tensors if "_exps" in t.name)
    assert experts > 0
    # All experts are in the file; a token reads a quarter of them.
    assert tokens.total_weights - tokens.weights_per_token == experts - experts // 4 + sum(
        int(t.n_bytes) for t in reader.tensors if t.name == "token_embd.weight")


def test_partial_offload_is_two_devices_in_series(models: dict[str, Path]) -> None:
    tokens = tokens_of(models["dense"])
    gpu_part, host_part = tokens.split(depth=100, gpu_layers=2)
    assert gpu_part + host_part == tokens.per_token(100)
    # The last two blocks on the GPU; the first block and the output head stay with the CPU.
    assert host_part == tokens.layer_bytes[0] + tokens.head_bytes + 100 * tokens.kv_per_position[0]
    ceiling = decode_ceiling(tokens, 100, gpu=("GPU", 960.0, "table"), cpu=(CPU_GBPS, "measured"), gpu_layers=2)
    assert ceiling is not None
    seconds = gpu_part / 960e9 + host_part / (CPU_GBPS * 1e9)
    assert ceiling.tokens_per_s == pytest.approx(1 / seconds)
    assert ceiling.share(ceiling.tokens_per_s * 0.71) == pytest.approx(0.71)
    # Without a CPU figure the host part cannot be judged: no ceiling rather than a wrong one.
    assert decode_ceiling(tokens, 100, gpu=("GPU", 960.0, "table"), cpu=None, gpu_layers=2) is None


def test_every_bandwidth_row_has_a_source_and_products_are_told_apart() -> None:
    table = load_gpu_table(kernels_dir())
    assert table.bandwidth and all(r.source.strip() and r.gbps > 0 for r in table.bandwidth)
    figures = {n: (r.gbps if (r := table.bandwidth_for(n)) else None) for n in (
        "Radeon RX 7900 XTX", "AMD Radeon RX 7900 XT", "AMD Radeon(TM) 8060S Graphics", "Radeon RX 7800 XT",
        "Radeon RX 7700 XT", "Radeon RX 7800 XT / 7700 XT", "Radeon RX 6800 / 6800 XT / 6900 XT")}
    assert figures == {"Radeon RX 7900 XTX": 960.0, "AMD Radeon RX 7900 XT": 800.0,
                       "AMD Radeon(TM) 8060S Graphics": 256.0, "Radeon RX 7800 XT": 624.0,
                       "Radeon RX 7700 XT": 432.0,
                       "Radeon RX 7800 XT / 7700 XT": None,  # two products, two figures: unknown, not a guess
                       "Radeon RX 6800 / 6800 XT / 6900 XT": 512.0}  # all three share it


def test_the_cpu_bandwidth_is_measured_once_and_kept(tmp_path: Path) -> None:
    calls: list[int] = []

    def small() -> MeasuredBandwidth:
        calls.append(1)
        return measure_copy_bandwidth(16 * 1024 * 1024, rounds=2)

    kept = CpuBandwidth(tmp_path / "bw.json", small)
    assert kept.known() is None
    first = kept.get()
    assert first.gbps > 0 and calls == [1]
    assert json.loads((tmp_path / "bw.json").read_text())["gbps"] == first.gbps
    again = CpuBandwidth(tmp_path / "bw.json", small)  # the next start reads it back
    assert again.get() == first and calls == [1]
    (tmp_path / "bw.json").write_text("{damaged")
    assert CpuBandwidth(tmp_path / "bw.json", small).known() is None
    # A figure an earlier Strata measured on one thread is too low for a CPU engine on every core
    # (its decode showed above 100 % of the limit): it is measured again.
    (tmp_path / "bw.json").write_text(json.dumps({"gbps": 23.5, "copy_bytes": 268435456, "rounds": 5,
                                                  "measured_at": 1.0}))
    older = CpuBandwidth(tmp_path / "bw.json", small)
    assert older.known() is None
    assert older.get().gbps > 0 and calls == [1, 1]
    assert json.loads((tmp_path / "bw.json").read_text())["threads"] == older.get().threads


def test_the_copy_runs_on_every_core_at_once() -> None:
    """One thread per processor, each on its own part (memmove without the GIL, so they overlap; how
    much faster that is depends on the machine's memory: bench/decode_ceiling.py shows it)."""
    cores = os.cpu_count() or 1
    many = measure_copy_bandwidth(128 * 1024 * 1024, rounds=3)
    assert many.threads == min(cores, 32) and many.copy_bytes == 128 * 1024 * 1024 // many.threads * many.threads
    assert ("threads" in many.source) == (many.threads > 1)
    one = measure_copy_bandwidth(128 * 1024 * 1024, rounds=3, threads=1)
    assert one.threads == 1 and one.gbps > 0 and "threads" not in one.source


@pytest.mark.parametrize(("visible", "warned"), [(256 * 1024 * 1024, True), (None, False), ("same", False)])
def test_resizable_bar_off_is_told_from_the_visible_vram(tmp_path: Path, visible: int | str | None,
                                                         warned: bool) -> None:
    import shutil

    from strata_gui.core.engines.limits import resizable_bar_warning

    tree = tmp_path / "rx7900xtx"
    shutil.copytree(TREES / "rx7900xtx", tree, symlinks=True)
    device = tree / "sys/class/drm/card0/device"
    vram = int((device / "mem_info_vram_total").read_text())
    if visible is not None:
        (device / "mem_info_vis_vram_total").write_text(f"{vram if visible == 'same' else visible}\n")
    gpu = build_gpu_service(kernels_dir(), sysfs_root=tree).detect().gpus[0]
    assert gpu.name == "AMD Radeon RX 7900 XTX"
    warning = resizable_bar_warning(gpu)
    if warned:
        assert gpu.visible_vram == visible
        assert warning is not None and warning.startswith("Resizable BAR is off on AMD Radeon RX 7900 XTX")
        assert "mem_info_vis_vram_total" in warning and "BIOS/UEFI" in warning
    else:
        assert warning is None
