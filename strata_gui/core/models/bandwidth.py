"""The decode ceiling: how fast a reply can possibly be on this memory.

Generating one token reads every weight the token passes through once, plus the KV cache written
so far, so decode is bound by memory bandwidth: ``tokens/s ≤ bandwidth ÷ bytes read per token``.

Bytes read per token, from the GGUF's own tensors:

* every tensor of the repeating blocks (``blk.N.*``) and the output head (``output.weight``,
  ``output_norm``);
* of a mixture-of-experts tensor (``*_exps``) only the experts a token uses:
  ``expert_used_count / expert_count`` of it (shared experts, ``*_shexp``, and the router are
  read whole);
* not the token embedding table: one row per token is read (it *is* the output head when the
  model ties them, and then counts whole);
* the KV cache at the reply's depth: ``depth × Σ_layers head_count_kv × (key + value length)``
  in the cache's types (the fit's rule).

Partial offload is two devices in series: the GPU reads its layers at its bandwidth, then the CPU
reads the rest at system memory's, so the time per token is the sum of both parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.models.fit import kv_row_bytes
from strata_gui.core.models.gguf_meta import SPLIT_RE, GGUFMetadata, read_header

GB = 1e9  # bandwidth is quoted in decimal GB/s on every spec sheet


@dataclass(frozen=True)
class TokenBytes:
    """What one decoded token reads, per place it can live.

    Attributes:
        layer_bytes: Weight bytes each repeating block reads per token (experts: the active share).
        head_bytes: Weight bytes outside the blocks read per token (output head, final norm).
        kv_per_position: KV-cache bytes each block reads per context position (f16 unless built
            with other cache types).
        total_weights: All weight bytes of the file(s), for comparison with the file size.
        expert_count, experts_used: The MoE shape (0, 0 for a dense model).
    """

    layer_bytes: tuple[int, ...]
    head_bytes: int
    kv_per_position: tuple[int, ...]
    total_weights: int
    expert_count: int = 0
    experts_used: int = 0

    @property
    def n_layers(self) -> int:
        return len(self.layer_bytes)

    @property
    def weights_per_token(self) -> int:
        return sum(self.layer_bytes) + self.head_bytes

    def per_token(self, depth: int = 0) -> int:
        """Bytes read for one token with ``depth`` positions already in the context."""
        return self.weights_per_token + max(0, depth) * sum(self.kv_per_position)

    def split(self, depth: int, gpu_layers: int | None) -> tuple[int, int]:
        """(GPU bytes, host bytes) per token with ``gpu_layers`` blocks offloaded (None: all).

        llama.cpp offloads the last ``gpu_layers`` blocks; the output head goes to the GPU only
        when every block does.
        """
        n = self.n_layers if gpu_layers is None else max(0, min(gpu_layers, self.n_layers))
        first_gpu = self.n_layers - n
        depth = max(0, depth)
        gpu = sum(self.layer_bytes[first_gpu:]) + depth * sum(self.kv_per_position[first_gpu:])
        host = sum(self.layer_bytes[:first_gpu]) + depth * sum(self.kv_per_position[:first_gpu])
        if n >= self.n_layers:
            gpu += self.head_bytes
        else:
            host += self.head_bytes
        return gpu, host


def _block_index(name: str) -> int | None:
    if not name.startswith("blk."):
        return None
    part = name.split(".", 2)[1]
    return int(part) if part.isdigit() else None


def token_bytes(metas: Sequence[GGUFMetadata], cache_type_k: str = "f16", cache_type_v: str = "f16") -> TokenBytes:
    """Bytes per token of a model from its header(s): one file, or every shard of a split set."""
    if not metas:
        raise ValueError("no GGUF header given")
    first = metas[0]
    n_layers = first.block_count
    experts = int(first.arch_key("expert_count", 0) or 0)
    used = int(first.arch_key("expert_used_count", 0) or 0)
    layers = [0] * n_layers
    head = 0
    total = 0
    embedding = 0
    has_output = False
    for meta in metas:
        for t in meta.tensors:
            size = t.n_bytes
            total += size
            if t.name == "token_embd.weight":
                embedding = size
                continue
            if t.name == "output.weight":
                has_output = True
            block = _block_index(t.name)
            if "_exps" in t.name and experts > 0 and used > 0:
                size = size * min(used, experts) // experts
            if block is not None and block < n_layers:
                layers[block] += size
            else:
                head += size
    if not has_output:
        head += embedding  # tied embeddings: the table is the output head, read whole
    heads = first.kv_heads_per_layer
    kv = tuple(kv_row_bytes(cache_type_k, h * first.key_length) + kv_row_bytes(cache_type_v, h * first.value_length)
               for h in (heads + [0] * n_layers)[:n_layers])
    return TokenBytes(tuple(layers), head, kv, total, experts if used else 0, used if experts else 0)


def shard_paths(model: Path) -> list[Path]:
    """``model`` and, for a split set, every shard of it in order."""
    m = SPLIT_RE.match(model.name)
    if not m:
        return [model]
    count = int(m.group("count"))
    return [model.with_name(f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]


def read_token_bytes(model: Path, cache_type_k: str = "f16", cache_type_v: str = "f16") -> TokenBytes:
    """:func:`token_bytes` of a model on disk (blocking: reads the headers).

    The headers are read in place by the streaming parser, which skips the vocabulary's strings
    instead of building a Python object for each: this runs after replies on a worker thread,
    where a burst of allocations would start the cyclic garbage collector there (and it must not
    free Qt objects off the GUI thread).

    Raises:
        GGUFError: a header or a file cannot be read.
    """
    return token_bytes([read_header(p) for p in shard_paths(model)], cache_type_k, cache_type_v)


@dataclass(frozen=True)
class DevicePart:
    """One device a token passes through: what it reads there and how fast it can."""

    device: str  # "Radeon RX 7900 XTX", "the CPU"
    bytes_per_token: int
    gbps: float
    source: str = ""  # where the bandwidth figure comes from (spec sheet, measured copy)

    @property
    def seconds(self) -> float:
        return self.bytes_per_token / (self.gbps * GB) if self.gbps > 0 else float("inf")

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "bytes_per_token": self.bytes_per_token, "gbps": self.gbps,
                "source": self.source}


@dataclass(frozen=True)
class Ceiling:
    """The fastest decode the memory allows for one model at one depth.

    Attributes:
        parts: The devices in series (one, or GPU then CPU for a partial offload).
        depth: Context positions the KV-cache read was counted for.
    """

    parts: tuple[DevicePart, ...]
    depth: int = 0

    @property
    def bytes_per_token(self) -> int:
        return sum(p.bytes_per_token for p in self.parts)

    @property
    def tokens_per_s(self) -> float:
        seconds = sum(p.seconds for p in self.parts if p.bytes_per_token)
        return 1.0 / seconds if seconds > 0 else 0.0

    @property
    def device(self) -> str:
        """What bounds it, for people: "Radeon RX 7900 XTX", "the CPU", "GPU + the CPU"."""
        return " + ".join(p.device for p in self.parts if p.bytes_per_token) or "—"

    @property
    def on_cpu_only(self) -> bool:
        return all(p.device == CPU_DEVICE for p in self.parts if p.bytes_per_token)

    def share(self, tokens_per_s: float) -> float | None:
        """Measured decode as a fraction of the ceiling (0.71 = 71 %); None without a ceiling."""
        limit = self.tokens_per_s
        return tokens_per_s / limit if limit > 0 and tokens_per_s > 0 else None

    def to_json(self, tokens_per_s: float | None = None) -> dict[str, Any]:
        share = self.share(tokens_per_s) if tokens_per_s else None
        return {"ceiling_tps": round(self.tokens_per_s, 2), "bytes_per_token": self.bytes_per_token,
                "depth": self.depth, "device": self.device, "parts": [p.to_json() for p in self.parts],
                # Four significant digits, not decimals: a reply slowed to 0.12 % of the limit kept
                # "0.0012", 1 % off the figure it came from.
                "share": float(f"{share:.4g}") if share is not None else None}


CPU_DEVICE = "the CPU"


def decode_ceiling(tokens: TokenBytes, depth: int, *, gpu: tuple[str, float, str] | None,
                   cpu: tuple[float, str] | None, gpu_layers: int | None = None) -> Ceiling | None:
    """The ceiling for ``tokens`` at ``depth``.

    Args:
        gpu: (name, GB/s, source) of the GPU the model runs on; None: it runs on the CPU.
        cpu: (GB/s, source) of system memory as the CPU reads it; None when unknown.
        gpu_layers: Blocks on the GPU (None: all); the rest is read by the CPU, in series.

    Returns:
        None when a bandwidth the model needs is unknown.
    """
    if gpu is None:
        if cpu is None:
            return None
        return Ceiling((DevicePart(CPU_DEVICE, tokens.per_token(depth), cpu[0], cpu[1]),), depth)
    on_gpu, on_host = tokens.split(depth, gpu_layers)
    parts = [DevicePart(gpu[0], on_gpu, gpu[1], gpu[2])]
    if on_host:
        if cpu is None:
            return None
        parts.append(DevicePart(CPU_DEVICE, on_host, cpu[0], cpu[1]))
    return Ceiling(tuple(parts), depth)
