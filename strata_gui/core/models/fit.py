"""Will a model fit? Weights + KV cache + compute overhead against a GPU's memory.

The KV cache (f16) takes ``n_ctx × Σ_layers head_count_kv × (key_length + value_length) × 2``
bytes, which the tests check against the KV buffer size a real llama-server reports. A quantised
cache stores blocks of 32 values: q8_0 in 34 bytes (32 int8 + an f16 scale), q4_0 in 18 bytes, so
q8_0 takes exactly 34/64 of the f16 bytes and q4_0 18/64. Memory on
an APU is its (small) VRAM carve-out plus GTT (system RAM the GPU may map); a user budget caps
either. Sliding-window and MLA attention are estimated with the full-attention rule, which
over-estimates their KV cache (the safe direction).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.gguf_meta import GGUFMetadata

MIB = 1024 * 1024
GIB = 1024 * MIB
# Backend context, scratch and runtime buffers that do not scale with the model (measured
# llama.cpp ROCm/Vulkan figures are 150-400 MiB; the upper end keeps verdicts safe).
BASE_OVERHEAD = 320 * MIB
UBATCH = 512
CONTEXT_STEP = 256
# System RAM left for the OS and the desktop when a model runs on the CPU.
RAM_RESERVE = 2 * GIB
# Quants a user should get by default when several fit (good quality per byte).
PREFERRED_QUANTS = ("Q4_K_M", "Q4_K_L", "Q4_K_XL", "Q4_K_S", "IQ4_XS", "IQ4_NL", "Q4_0")
FULL_PRECISION = ("F32", "F16", "BF16")
# KV-cache types llama-server accepts for -ctk/-ctv that Strata offers: (bytes per block, values per block).
KV_CACHE_TYPES: dict[str, tuple[int, int]] = {"f16": (2, 1), "q8_0": (34, 32), "q4_0": (18, 32)}


def kv_row_bytes(cache_type: str, n_values: int) -> int:
    """Bytes of ``n_values`` cache values stored as ``cache_type`` (whole blocks: rounded up)."""
    block_bytes, block_values = KV_CACHE_TYPES.get(cache_type, KV_CACHE_TYPES["f16"])
    return -(-n_values // block_values) * block_bytes


@dataclass(frozen=True)
class MemoryTarget:
    """The memory a model may use on one GPU.

    Attributes:
        name: What to call it ("Radeon RX 7900 XTX", "Memory from Settings").
        vram_bytes: Dedicated VRAM (the BIOS carve-out on an APU).
        shared_bytes: GTT: system RAM the GPU can map (what an APU mostly runs from).
        is_apu: Integrated GPU sharing system RAM.
        budget_bytes: User cap on what Strata may use (0 = no cap).
        bf16: How the GPU runs BF16 models: "fast", "slow", "unsupported" (None: unknown).
        devices: Usable bytes of each GPU when a model is spread over several (layer split);
            empty for one GPU. ``vram_bytes`` is then their sum.
        on_cpu: The engine that runs models works on the processor (a CPU build, Vulkan on
            llvmpipe): ``vram_bytes`` is then the system RAM models may use, and every verdict is
            "runs on the CPU", whatever GPU was detected.
    """

    name: str
    vram_bytes: int
    shared_bytes: int = 0
    is_apu: bool = False
    budget_bytes: int = 0
    bf16: str | None = None
    devices: tuple[int, ...] = ()
    on_cpu: bool = False

    @property
    def usable_bytes(self) -> int:
        """VRAM for a discrete card, VRAM + GTT for an APU, capped by the budget. Spread over
        several GPUs, each extra GPU holds its own backend buffers, which are not model room."""
        total = self.vram_bytes + (self.shared_bytes if self.is_apu else 0)
        if len(self.devices) > 1:
            total = sum(self.devices) - (len(self.devices) - 1) * BASE_OVERHEAD
        if self.budget_bytes > 0:
            total = min(total, self.budget_bytes)
        return max(0, total)

    @property
    def largest_device_bytes(self) -> int:
        """What the biggest single GPU of the target can hold (the whole target for one GPU)."""
        if len(self.devices) > 1:
            biggest = max(self.devices)
            return min(biggest, self.budget_bytes) if self.budget_bytes > 0 else biggest
        return self.usable_bytes

    @classmethod
    def from_settings(cls, fallback_gpu_memory_mb: int, memory_budget_mb: int) -> MemoryTarget:
        """The target used until a detected GPU's figures are available."""
        return cls(
            name="GPU memory from Settings",
            vram_bytes=max(0, fallback_gpu_memory_mb) * MIB,
            budget_bytes=max(0, memory_budget_mb) * MIB,
        )


@dataclass(frozen=True)
class ModelShape:
    """The parts of a GGUF header the estimate needs (single file or a whole split set)."""

    n_layers: int
    kv_heads_per_layer: tuple[int, ...]
    key_length: int
    value_length: int
    trained_context: int
    n_vocab: int
    embedding_length: int
    weights_bytes: int

    @classmethod
    def from_metadata(cls, meta: GGUFMetadata, weights_bytes: int) -> ModelShape:
        tokens = meta.get("tokenizer.ggml.tokens")
        n_vocab = getattr(tokens, "count", None) or (len(tokens) if isinstance(tokens, list) else 0)
        return cls(
            n_layers=meta.block_count,
            kv_heads_per_layer=tuple(meta.kv_heads_per_layer),
            key_length=meta.key_length,
            value_length=meta.value_length,
            trained_context=meta.context_length or 4096,
            n_vocab=int(n_vocab or 32000),
            embedding_length=meta.embedding_length,
            weights_bytes=weights_bytes,
        )

    def kv_bytes_per_token(self, cache_type_k: str = "f16", cache_type_v: str = "f16") -> int:
        """K and V for every layer, per context position, in the given cache types."""
        return sum(kv_row_bytes(cache_type_k, h * self.key_length) + kv_row_bytes(cache_type_v, h * self.value_length)
                   for h in self.kv_heads_per_layer)

    def kv_bytes(self, n_ctx: int, cache_type_k: str = "f16", cache_type_v: str = "f16") -> int:
        return n_ctx * self.kv_bytes_per_token(cache_type_k, cache_type_v)

    def compute_bytes(self, n_ctx: int, ubatch: int = UBATCH) -> int:
        """Compute buffers: fixed runtime cost + logits and activations of one micro-batch.

        llama.cpp's scheduler buffer holds the logits (``n_vocab × ubatch`` f32) and the
        attention scores of a micro-batch against the whole context.
        """
        logits = self.n_vocab * ubatch * 4
        activations = self.embedding_length * ubatch * 4 * 4
        attention = n_ctx * ubatch * 4
        return BASE_OVERHEAD + logits + activations + attention


class Verdict(enum.Enum):
    FULL_GPU = "fits fully on GPU"
    PARTIAL = "partial offload"
    CPU_ONLY = "CPU only"
    WONT_FIT = "won't fit"


#: Each verdict's words, marked for the catalogue (the values stay English: they are saved and printed).
_VERDICT_WORDS = {
    Verdict.FULL_GPU: QT_TRANSLATE_NOOP("Core", "fits fully on GPU"),
    Verdict.PARTIAL: QT_TRANSLATE_NOOP("Core", "partial offload"),
    Verdict.CPU_ONLY: QT_TRANSLATE_NOOP("Core", "CPU only"),
    Verdict.WONT_FIT: QT_TRANSLATE_NOOP("Core", "won't fit"),
}


@dataclass(frozen=True)
class FitEstimate:
    """The outcome for one model file (or split set) on one memory target.

    Attributes:
        verdict: The headline.
        gpu_layers: Layers that fit on the GPU (all of them for FULL_GPU, 0 for CPU only).
        total_layers: Layers in the model.
        n_ctx: Context size the estimate was made for.
        weights_bytes, kv_bytes, compute_bytes: The parts of the memory need.
        gpu_bytes: What the GPU can hold (usable memory of the target).
        max_context: Largest context (multiple of 256, at most the trained one) that still gets
            this verdict with all layers on the GPU; for partial/CPU verdicts the largest that
            fits in GPU + system memory. 0 when nothing fits.
        gpu_count: GPUs the model needs (2+ when it fits only spread over several).
        slots: Requests the engine serves at once (parallel slots, a KV cache of ``slots ×
            n_ctx`` positions split between them: each request gets ``n_ctx``); ``kv_bytes``
            counts them all, ``max_context`` is per request.
    """

    verdict: Verdict
    gpu_layers: int
    total_layers: int
    n_ctx: int
    weights_bytes: int
    kv_bytes: int
    compute_bytes: int
    gpu_bytes: int
    max_context: int
    gpu_count: int = 1
    slots: int = 1

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.compute_bytes

    def describe(self) -> str:
        if self.verdict is Verdict.CPU_ONLY:
            return T(QT_TRANSLATE_NOOP("Core", "fits in system RAM, runs on the CPU"))
        if self.verdict is Verdict.PARTIAL:
            return T(QT_TRANSLATE_NOOP("Core", "partial offload ({layers} of {total} layers)"),
                     layers=self.gpu_layers, total=self.total_layers)
        if self.verdict is Verdict.FULL_GPU and self.gpu_count > 1:
            return T(QT_TRANSLATE_NOOP("Core", "fits across {count} GPUs"), count=self.gpu_count)
        return T(_VERDICT_WORDS[self.verdict])


@dataclass(frozen=True)
class CacheLayout:
    """How the KV cache and compute buffers are laid out (the load options the fit depends on).

    Attributes:
        cache_type_k, cache_type_v: KV-cache types (keys of :data:`KV_CACHE_TYPES`).
        ubatch: Micro-batch size (the compute buffers scale with it).
        gpu_layers: Layers the user asked to put on the GPU (None: as many as fit).
    """

    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    ubatch: int = UBATCH
    gpu_layers: int | None = None


DEFAULT_LAYOUT = CacheLayout()


def _largest_context(budget: int, fixed: int, shape: ModelShape, layout: CacheLayout = DEFAULT_LAYOUT,
                     slots: int = 1) -> int:
    """Largest context per request such that fixed + kv(ctx × slots) + attention(ctx × slots) <= budget."""
    per_token = (shape.kv_bytes_per_token(layout.cache_type_k, layout.cache_type_v) + layout.ubatch * 4) * max(1, slots)
    if per_token <= 0:
        return shape.trained_context
    room = budget - fixed
    if room < per_token * CONTEXT_STEP:
        return 0
    ctx = min(shape.trained_context, room // per_token)
    return int(ctx - ctx % CONTEXT_STEP) if ctx >= CONTEXT_STEP else 0


def estimate_fit(shape: ModelShape, target: MemoryTarget, ram_bytes: int, n_ctx: int,
                 layout: CacheLayout = DEFAULT_LAYOUT, slots: int = 1) -> FitEstimate:
    """Estimate where a model runs at context ``n_ctx`` per request.

    Args:
        shape: The model.
        target: The GPU's memory (``usable_bytes`` 0 means no GPU).
        ram_bytes: Total system RAM.
        n_ctx: Context size the user wants for each request.
        layout: KV-cache types, micro-batch and a user cap on GPU layers (the load options).
        slots: Requests served at once (each with a cache of ``n_ctx``).
    """
    n_ctx = max(1, min(n_ctx, shape.trained_context))
    slots = max(1, slots)
    gpu = target.usable_bytes
    # APU GTT is the same RAM the CPU uses: what the GPU holds is not available to the CPU.
    ram = max(0, ram_bytes - RAM_RESERVE)
    ub = max(1, layout.ubatch)
    kv = shape.kv_bytes(n_ctx * slots, layout.cache_type_k, layout.cache_type_v)
    compute = shape.compute_bytes(n_ctx * slots, ub)
    need = shape.weights_bytes + kv + compute
    layers = max(1, shape.n_layers)
    # Embeddings/output count as one extra "layer" of weights that may stay on the host.
    per_layer = shape.weights_bytes // (layers + 1) + kv // layers
    fixed_no_kv = shape.weights_bytes + BASE_OVERHEAD + shape.n_vocab * ub * 4 + shape.embedding_length * ub * 16
    cap = shape.n_layers if layout.gpu_layers is None else max(0, min(layout.gpu_layers, shape.n_layers))

    def result(verdict: Verdict, gpu_layers: int, max_ctx: int, gpu_count: int = 1) -> FitEstimate:
        return FitEstimate(verdict, gpu_layers, shape.n_layers, n_ctx, shape.weights_bytes, kv, compute, gpu, max_ctx,
                           gpu_count, slots)

    def largest(budget: int) -> int:
        return _largest_context(budget, fixed_no_kv, shape, layout, slots)

    if target.on_cpu:
        # No GPU engine runs here: the model is judged against the RAM the CPU engine may use.
        room = min(ram, gpu) if gpu > 0 else ram
        if need <= room:
            return FitEstimate(Verdict.CPU_ONLY, 0, shape.n_layers, n_ctx, shape.weights_bytes, kv, compute, room,
                               largest(room), 1, slots)
        return FitEstimate(Verdict.WONT_FIT, 0, shape.n_layers, n_ctx, shape.weights_bytes, kv, compute, room, 0,
                           1, slots)
    if gpu > 0 and need <= gpu and cap >= shape.n_layers:
        # Spread over several GPUs, say so when one of them alone would not hold it.
        count = len(target.devices) if len(target.devices) > 1 and need > target.largest_device_bytes else 1
        return result(Verdict.FULL_GPU, shape.n_layers, largest(gpu), count)
    pooled = gpu + ram if not target.is_apu else max(gpu, ram)
    max_pooled = largest(pooled)
    if gpu > compute + per_layer and cap > 0:
        # The user's cap wins over what would fit (asked for fewer layers on the GPU).
        n_gpu = min(shape.n_layers - 1, (gpu - compute) // per_layer, cap)
        host_part = need - n_gpu * per_layer - compute
        host_room = ram - (n_gpu * per_layer + compute if target.is_apu else 0)
        if host_part <= host_room:
            return result(Verdict.PARTIAL, int(n_gpu), max_pooled)
        return result(Verdict.WONT_FIT, 0, 0)
    if need <= ram:
        return result(Verdict.CPU_ONLY, 0, largest(ram))
    return result(Verdict.WONT_FIT, 0, 0)


MOST_AUTO_SLOTS = 4
"""Parallel requests per model when Settings leave it automatic and memory allows (LM Studio's default)."""


def auto_slots(shape: ModelShape, target: MemoryTarget, ram_bytes: int, n_ctx: int,
               layout: CacheLayout = DEFAULT_LAYOUT, most: int = MOST_AUTO_SLOTS) -> int:
    """How many requests a model serves at once when Settings leave it automatic: as many parallel
    slots (each with the full ``n_ctx``) as fit without a worse verdict than one slot gets (all
    layers stay on the GPU, the same layers stay on it when partly offloaded), at most ``most``."""
    one = estimate_fit(shape, target, ram_bytes, n_ctx, layout)
    if one.verdict is Verdict.WONT_FIT:
        return 1
    for slots in range(max(1, most), 1, -1):
        more = estimate_fit(shape, target, ram_bytes, n_ctx, layout, slots)
        if more.verdict is one.verdict and more.gpu_layers >= one.gpu_layers and more.gpu_count <= one.gpu_count:
            return slots
    return 1


@dataclass(frozen=True)
class QuantChoice:
    """One downloadable quantisation with its estimate (input/output of :func:`default_pick`)."""

    label: str
    size_bytes: int
    estimate: FitEstimate


def is_preferred_quant(label: str) -> bool:
    return label.upper() in PREFERRED_QUANTS


def default_pick(
    choices: Sequence[QuantChoice], *, closeness: float = 1.3, headroom: float = 0.9, bf16: str | None = None,
) -> QuantChoice | None:
    """The quant to pre-select: the largest that fits fully on the GPU, but a Q4_K_M-class
    quant when the larger one is close: within ``closeness`` × its size, or using more than
    ``headroom`` of the GPU's memory (little quality gained, no room left for a longer context).
    Full-precision files are picked only when nothing else fits. BF16 is left out where the GPU
    runs it slowly or not at all (``bf16``), unless it is the only file that runs.
    Without a full fit: the preferred-class quant that runs at all, else the smallest that does.
    """
    runnable = [c for c in choices if c.estimate.verdict is not Verdict.WONT_FIT]
    if bf16 in ("slow", "unsupported"):
        runnable = [c for c in runnable if c.label.upper() != "BF16"] or runnable
    if not runnable:
        return None
    full = [c for c in runnable if c.estimate.verdict is Verdict.FULL_GPU]
    quantised_full = [c for c in full if c.label.upper() not in FULL_PRECISION] or full
    if quantised_full:
        best = max(quantised_full, key=lambda c: c.size_bytes)
        preferred = [c for c in quantised_full if is_preferred_quant(c.label)]
        if preferred and not is_preferred_quant(best.label):
            pref = max(preferred, key=lambda c: (PREFERRED_QUANTS[::-1].index(c.label.upper()), c.size_bytes))
            tight = best.estimate.total_bytes > headroom * best.estimate.gpu_bytes
            if tight or best.size_bytes <= pref.size_bytes * closeness:
                return pref
        return best
    preferred = [c for c in runnable if is_preferred_quant(c.label)]
    if preferred:
        return max(preferred, key=lambda c: c.estimate.gpu_layers)
    return min(runnable, key=lambda c: c.size_bytes)
