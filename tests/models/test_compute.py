"""The prefill ceiling against a hand computation made from the GGUF's own tensors, on captured
machines (7900 XTX, Strix Halo, CPU only), for a dense and an MoE model (issue 43).

The hand computation reads the file with llama.cpp's own ``gguf`` reader (not Strata's parser):
two FLOPs per weight element of every repeating block's matrices (experts at
``expert_used_count / expert_count``), attention over the mean position of the prompt, and the
output head once per prompt; divided into the device's spec-sheet rate for the weights' type.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.cpu_peak import cpu_peak, flops_per_cycle, parse_cpuinfo, parse_windows_processor
from strata_gui.core.gpu.ids import load_gpu_table
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.core.models.compute import ComputeRate, PrefillCeiling, read_token_flops
from tests.models.test_bandwidth import DENSE, MOE, TREES, reader_of
from tests.support import gguf_model

DATA = Path(__file__).resolve().parent.parent / "data" / "gpu"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, llama_source: Path) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("compute")
    return {"dense": gguf_model.write_model(folder / "dense-F16.gguf", DENSE),
            "moe": gguf_model.write_model(folder / "moe-F16.gguf", MOE)}


def hand_flops_per_token(path: Path, prompt: int, depth: int) -> float:
    """FLOPs per prompt token, from the file's tensors read with llama.cpp's reader."""
    reader = reader_of(path)

    def field(key: str) -> int:
        f = reader.fields.get(key)
        return int(f.parts[f.data[0]][0]) if f is not None else 0

    experts, used = field("llama.expert_count"), field("llama.expert_used_count")
    matmul = head = embedding = 0
    for t in reader.tensors:
        shape = [int(d) for d in t.shape]
        if len(shape) < 2 or shape[1] <= 1:
            continue
        n = int(t.n_elements)
        if t.name.startswith("blk."):
            matmul += n * used // experts if "_exps" in t.name else n
        elif t.name == "output.weight":
            head += n
        elif t.name == "token_embd.weight":
            embedding = n
    if not any(t.name == "output.weight" for t in reader.tensors):
        head = embedding
    heads, layers = field("llama.attention.head_count"), field("llama.block_count")
    head_dim = field("llama.embedding_length") // heads
    attention = layers * 2 * heads * 2 * head_dim * (depth + (prompt + 1) / 2)
    return 2 * matmul + attention + 2 * head / prompt


@pytest.mark.parametrize(("machine", "gpu_name", "fp16"), [
    ("rx7900xtx", "AMD Radeon RX 7900 XTX", 122.9),  # 96 CU × 2.5 GHz × 512 FP16 ops per CU per clock
    ("strix-halo", "AMD Radeon 8060S", 59.4),  # 40 CU × 2.9 GHz × 512
])
@pytest.mark.parametrize("kind", ["dense", "moe"])
@pytest.mark.parametrize(("prompt", "depth"), [(512, 0), (2048, 4096)])
def test_gpu_ceiling_matches_a_hand_computation(machine: str, gpu_name: str, fp16: float, kind: str, prompt: int,
                                                depth: int, models: dict[str, Path]) -> None:
    report = build_gpu_service(kernels_dir(), sysfs_root=TREES / machine).detect()
    gpu = next(g for g in report.gpus if g.name == gpu_name)
    assert gpu.compute_tflops["fp16"] == fp16 and "compute" in gpu.sources
    flops = read_token_flops(models[kind])
    assert flops.compute_type == "fp16"  # the test models are F16
    ceiling = PrefillCeiling(ComputeRate(gpu.name, gpu.compute_tflops["fp16"], "fp16"),
                             flops.per_token(prompt, depth), prompt, depth)
    expected = hand_flops_per_token(models[kind], prompt, depth)
    assert ceiling.flops_per_token == pytest.approx(expected, rel=0.02)
    assert ceiling.tokens_per_s == pytest.approx(fp16 * 1e12 / expected, rel=0.02)


def test_an_moe_model_multiplies_only_its_active_experts(models: dict[str, Path]) -> None:
    dense_like = read_token_flops(models["moe"])
    assert (dense_like.expert_count, dense_like.experts_used) == (8, 2)
    reader: gguf.GGUFReader = reader_of(models["moe"])
    experts = sum(int(t.n_elements) for t in reader.tensors if "_exps" in t.name)
    others = sum(int(t.n_elements) for t in reader.tensors if t.name.startswith("blk.") and "_exps" not in t.name
                 and len(t.shape) >= 2 and int(t.shape[1]) > 1)
    assert dense_like.matmul_params == others + experts // 4


def test_every_compute_row_has_a_source_and_ambiguous_names_get_none() -> None:
    table = load_gpu_table(kernels_dir())
    assert table.compute and all(r.source.strip() for r in table.compute)
    assert all(set(r.rates) <= {"fp16", "bf16", "int8", "fp32"} and r.rates for r in table.compute)
    # RDNA2 has no BF16 matrix or dot path: no figure rather than a guess.
    rdna2 = table.compute_for("AMD Radeon RX 6800 XT")
    assert rdna2 is not None and "bf16" not in rdna2.rates
    assert rdna2.rates["int8"] == pytest.approx(2 * rdna2.rates["fp16"], rel=0.01)  # dot4: 4× FP32, FP16 2×
    # A name that may be two products with different figures gets none, as for bandwidth.
    assert table.compute_for("Radeon 8060S / 8050S (Strix Halo)") is None
    assert table.compute_for("AMD Radeon(TM) 8060S Graphics") is not None  # Windows names the product


def test_the_cpu_peak_is_cores_times_clock_times_its_vector_unit() -> None:
    strix = parse_cpuinfo((DATA / "linux" / "strix-halo" / "proc" / "cpuinfo").read_text(encoding="utf-8"))
    assert strix.mhz == 3000.0 and strix.clock_source == "/proc/cpuinfo cpu MHz"
    zen4 = parse_cpuinfo("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\ncpu MHz\t\t: 2596.130\n"
                         "flags\t\t: fpu avx avx2 fma avx512f avx512_bf16 avx512_vnni\n\n", "3700000")
    assert (zen4.mhz, zen4.clock_source) == (3700.0, "cpufreq cpuinfo_max_freq")  # the rated maximum wins
    assert flops_per_cycle(zen4) == (32, "two 256-bit FMA pipes (Zen 2–4)")  # AVX-512 as two halves
    peak = cpu_peak(zen4, 2)
    assert peak is not None and peak.tflops == pytest.approx(2 * 3.7e9 * 32 / 1e12)
    assert peak.rate("int8") == pytest.approx(4 * peak.tflops) and peak.rate("bf16") == pytest.approx(2 * peak.tflops)
    assert "2 cores × 3.70 GHz" in peak.source
    intel = parse_cpuinfo("vendor_id : GenuineIntel\ncpu family : 6\nflags : avx avx2 fma\ncpu MHz : 3000\n")
    assert flops_per_cycle(intel)[0] == 32 and cpu_peak(intel, 8).rate("int8") == pytest.approx(  # type: ignore[union-attr]
        2 * 8 * 3e9 * 32 / 1e12)
    # Windows: the registry's identifier and the feature checks (captured from a Strix Halo machine).
    win = parse_windows_processor("AMD64 Family 26 Model 112 Stepping 0", "AuthenticAMD", 3000,
                                  frozenset({"avx", "avx2", "fma", "avx512f"}))
    assert (win.family, win.model, win.mhz) == (26, 112, 3000.0)
    assert flops_per_cycle(win) == (64, "two 512-bit FMA pipes (Zen 5)")
    assert cpu_peak(win, None) is None  # no core count: no figure
