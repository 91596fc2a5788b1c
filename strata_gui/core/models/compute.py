"""The prefill ceiling: how fast a prompt can possibly be read on this device's arithmetic.

Prefill multiplies every prompt token by every weight it passes through, in large batches, so it is
bound by the device's matrix throughput, not by its memory: ``tokens/s ≤ FLOP/s ÷ FLOPs per token``.

FLOPs per prompt token, from the GGUF's own tensors (a multiply-add is two FLOPs):

* ``2 ×`` the weights of the repeating blocks (``blk.N.*`` tensors of two or more dimensions;
  norms and biases are vectors and cost next to nothing);
* of a mixture-of-experts tensor (``*_exps``) only the experts a token uses:
  ``expert_used_count / expert_count`` of it (shared experts and the router count whole);
* attention over the context at the token's depth: per layer ``2 × head_count × (key_length +
  value_length)`` per position (``QKᵀ`` and ``AV``), the prompt's tokens seeing on average half of
  the prompt plus what was already in the context;
* the output head once per prompt (llama.cpp computes logits for the last token only); the
  embedding table is a lookup, not a product.

The compute type is what most of those weights are stored in: F16 and BF16 multiply at the
device's half-precision matrix rate, F32 at its single-precision rate, and quantised weights at
its INT8 rate (llama.cpp's quantised matrix kernels multiply 8-bit integers on GPUs). A device
without a figure for that type gives no ceiling rather than a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.models.bandwidth import shard_paths
from strata_gui.core.models.gguf_meta import GGUFMetadata, read_header

TERA = 1e12  # matrix rates are quoted in decimal TFLOPS / TOPS on every spec sheet

# ggml tensor types that are not quantised (GGML_TYPE_F32, F16, BF16).
_F32, _F16, _BF16 = 0, 1, 30
COMPUTE_TYPES = ("fp32", "fp16", "bf16", "int8")


@dataclass(frozen=True)
class TokenFlops:
    """What one prompt token costs in arithmetic.

    Attributes:
        matmul_params: Weight elements each prompt token is multiplied by (experts: the active share).
        head_params: Weight elements of the output head (multiplied once per prompt).
        attention_per_position: FLOPs per token per context position it attends to (all layers).
        compute_type: ``"fp16"``, ``"bf16"``, ``"fp32"`` or ``"int8"`` (quantised): what most of
            the multiplied weights are stored in.
        expert_count, experts_used: The MoE shape (0, 0 for a dense model).
    """

    matmul_params: int
    head_params: int
    attention_per_position: int
    compute_type: str
    expert_count: int = 0
    experts_used: int = 0

    def per_token(self, prompt_tokens: int, depth: int = 0) -> float:
        """Mean FLOPs per token of a ``prompt_tokens``-token prompt read after ``depth`` cached tokens."""
        n = max(1, prompt_tokens)
        mean_position = max(0, depth) + (n + 1) / 2  # causal: token i attends to depth + i + 1 positions
        return 2 * self.matmul_params + self.attention_per_position * mean_position + 2 * self.head_params / n

    def to_json(self) -> dict[str, Any]:
        return {"matmul_params": self.matmul_params, "head_params": self.head_params,
                "attention_per_position": self.attention_per_position, "compute_type": self.compute_type,
                "expert_count": self.expert_count, "experts_used": self.experts_used}


def _block_index(name: str) -> int | None:
    if not name.startswith("blk."):
        return None
    part = name.split(".", 2)[1]
    return int(part) if part.isdigit() else None


def _per_layer(value: Any, n_layers: int, default: int) -> list[int]:
    if isinstance(value, list):
        values = [int(v) for v in value][:n_layers]
        return values + [default] * (n_layers - len(values))
    return [int(value) if isinstance(value, int) else default] * n_layers


def token_flops(metas: Sequence[GGUFMetadata]) -> TokenFlops:
    """FLOPs per prompt token of a model from its header(s): one file, or every shard of a split set."""
    if not metas:
        raise ValueError("no GGUF header given")
    first = metas[0]
    n_layers = first.block_count
    experts = int(first.arch_key("expert_count", 0) or 0)
    used = int(first.arch_key("expert_used_count", 0) or 0)
    matmul = head = 0
    by_type = {"fp32": 0, "fp16": 0, "bf16": 0, "int8": 0}
    embedding = 0
    has_output = False
    for meta in metas:
        for t in meta.tensors:
            if len(t.dims) < 2 or t.dims[1] <= 1:
                continue  # norms, biases, scales: vectors
            n = t.n_elements
            if t.name == "token_embd.weight":
                embedding = n
                continue
            block = _block_index(t.name)
            if block is None or block >= n_layers:
                if t.name == "output.weight":
                    has_output = True
                    head += n
                continue
            if "_exps" in t.name and experts > 0 and used > 0:
                n = n * min(used, experts) // experts
            matmul += n
            by_type[_compute_type(t.ggml_type)] += n
    if not has_output:
        head += embedding  # tied embeddings: the table is the output head
    heads = _per_layer(first.arch_key("attention.head_count", 0), n_layers, 0)
    attention = sum(2 * h * (first.key_length + first.value_length) for h in heads)
    kind = max(by_type, key=lambda k: by_type[k]) if matmul else "fp32"
    return TokenFlops(matmul, head, attention, kind, experts if used else 0, used if experts else 0)


def _compute_type(ggml_type: int) -> str:
    if ggml_type == _F32:
        return "fp32"
    if ggml_type == _F16:
        return "fp16"
    if ggml_type == _BF16:
        return "bf16"
    return "int8"


def read_token_flops(model: Path) -> TokenFlops:
    """:func:`token_flops` of a model on disk (blocking: reads the headers).

    Raises:
        GGUFError: a header or a file cannot be read.
    """
    return token_flops([read_header(p) for p in shard_paths(model)])


@dataclass(frozen=True)
class ComputeRate:
    """A device's peak matrix throughput for one compute type.

    Attributes:
        device: "Radeon RX 7900 XTX", "the CPU".
        tflops: Peak rate in TFLOPS (TOPS for int8).
        compute_type: One of :data:`COMPUTE_TYPES`.
        source: Where the figure comes from (a spec sheet; cores × clock × FLOPs per cycle).
    """

    device: str
    tflops: float
    compute_type: str
    source: str = ""


@dataclass(frozen=True)
class PrefillCeiling:
    """The fastest prefill the arithmetic allows for one prompt of one model.

    Attributes:
        rate: The device's rate it is computed with.
        flops_per_token: Mean FLOPs per prompt token.
        prompt_tokens, depth: The prompt it is computed for.
    """

    rate: ComputeRate
    flops_per_token: float
    prompt_tokens: int
    depth: int = 0

    @property
    def tokens_per_s(self) -> float:
        return self.rate.tflops * TERA / self.flops_per_token if self.flops_per_token > 0 else 0.0

    def share(self, tokens_per_s: float) -> float | None:
        """Measured prefill as a fraction of the ceiling (0.18 = 18 %); None without a ceiling."""
        limit = self.tokens_per_s
        return tokens_per_s / limit if limit > 0 and tokens_per_s > 0 else None

    def to_json(self, tokens_per_s: float | None = None, device_kind: str = "gpu") -> dict[str, Any]:
        share = self.share(tokens_per_s) if tokens_per_s else None
        return {"ceiling_tps": round(self.tokens_per_s, 2), "flops_per_token": round(self.flops_per_token),
                "prompt_tokens": self.prompt_tokens, "depth": self.depth, "device": self.rate.device,
                "device_kind": device_kind, "tflops": self.rate.tflops, "compute_type": self.rate.compute_type,
                "source": self.rate.source, "share": float(f"{share:.4g}") if share is not None else None}
