"""Writes small but real llama-architecture GGUF models for tests.

The model uses the real SentencePiece vocabulary shipped in the pinned llama.cpp source
(``models/ggml-vocab-llama-spm.gguf``), random weights (deterministic by seed) and a ChatML
chat template, so a real llama-server loads it and streams replies. ``ModelSpec.vocab`` picks
another of the source's real tokenizers (``"qwen2"``: the byte-level BPE of Qwen2 and the
DeepSeek-R1 distills) and ``ModelSpec.chat_template`` another template (e.g. one of
``models/templates/*.jinja``). Also writes split
(``-0000N-of-0000M.gguf``) and broken variants, and a random-weight multimodal projector
(``mmproj``, llava-style "mlp" CLIP) that the pinned llama-server loads with ``--mmproj``.

Usable as a script: ``python -m tests.support.gguf_model OUT.gguf [--layers N] [--width W]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a generated test model."""

    layers: int = 2
    width: int = 64
    heads: int = 4
    kv_heads: int = 2
    ff: int = 128
    context: int = 4096
    seed: int = 1234
    name: str = "Strata Test Llama"
    # Which real tokenizer (``models/ggml-vocab-<vocab>.gguf``) and chat template the model carries.
    vocab: str = "llama-spm"
    chat_template: str = CHATML_TEMPLATE


def vocab_path(vocab: str = "llama-spm") -> Path:
    """A vocab GGUF from the pinned llama.cpp source (built by scripts/test-engines.sh): by default
    the SentencePiece one; ``"qwen2"`` is the byte-level BPE of Qwen2 and the DeepSeek-R1 distills."""
    src = os.environ.get("STRATA_TEST_LLAMA_SRC")
    if not src:
        env_file = Path(os.environ.get("STRATA_DEV_CACHE", Path.home() / ".cache/strata-dev")) / "engines.env"
        if env_file.exists():
            for line in env_file.read_text().splitlines():
                if line.startswith("STRATA_TEST_LLAMA_SRC="):
                    src = line.split("=", 1)[1]
    if not src:
        raise FileNotFoundError("llama.cpp source not found: run scripts/test-engines.sh first")
    path = Path(src) / "models" / f"ggml-vocab-{vocab}.gguf"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: re-run scripts/test-engines.sh")
    return path


@functools.cache  # reading Qwen2's 151,936 tokens and merges takes seconds; models share them
def _vocab(vocab: str = "llama-spm") -> dict[str, object]:
    import gguf

    reader = gguf.GGUFReader(str(vocab_path(vocab)))

    def field(name: str) -> object:
        f = reader.fields.get(name)
        return None if f is None else f.contents()

    # A BPE vocab (qwen2) has merges and no scores or unknown token; SentencePiece the reverse.
    return {
        "model": field("tokenizer.ggml.model"),
        "pre": field("tokenizer.ggml.pre") or "default",
        "tokens": field("tokenizer.ggml.tokens"),
        "scores": field("tokenizer.ggml.scores"),
        "token_type": field("tokenizer.ggml.token_type"),
        "merges": field("tokenizer.ggml.merges"),
        "bos": field("tokenizer.ggml.bos_token_id"),
        "eos": field("tokenizer.ggml.eos_token_id"),
        "unk": field("tokenizer.ggml.unknown_token_id"),
    }


def _tensors(spec: ModelSpec, n_vocab: int) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(spec.seed)
    head_dim = spec.width // spec.heads

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    def norm(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    # numpy shapes are (rows, cols) = GGUF dims reversed.
    out = [("token_embd.weight", w(n_vocab, spec.width))]
    for i in range(spec.layers):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", norm(spec.width)),
            (p + "attn_q.weight", w(spec.width, spec.width)),
            (p + "attn_k.weight", w(spec.kv_heads * head_dim, spec.width)),
            (p + "attn_v.weight", w(spec.kv_heads * head_dim, spec.width)),
            (p + "attn_output.weight", w(spec.width, spec.width)),
            (p + "ffn_norm.weight", norm(spec.width)),
            (p + "ffn_gate.weight", w(spec.ff, spec.width)),
            (p + "ffn_up.weight", w(spec.ff, spec.width)),
            (p + "ffn_down.weight", w(spec.width, spec.ff)),
        ]
    out += [("output_norm.weight", norm(spec.width)), ("output.weight", w(n_vocab, spec.width))]
    return out


def _writer_common(writer: object, spec: ModelSpec, vocab: dict[str, object]) -> None:
    import gguf

    wr: gguf.GGUFWriter = writer  # type: ignore[assignment]
    wr.add_name(spec.name)
    wr.add_context_length(spec.context)
    wr.add_embedding_length(spec.width)
    wr.add_block_count(spec.layers)
    wr.add_feed_forward_length(spec.ff)
    wr.add_head_count(spec.heads)
    wr.add_head_count_kv(spec.kv_heads)
    wr.add_rope_dimension_count(spec.width // spec.heads)
    wr.add_layer_norm_rms_eps(1e-5)
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_tokenizer_model(str(vocab["model"]))
    wr.add_tokenizer_pre(str(vocab["pre"]))
    wr.add_token_list(vocab["tokens"])  # type: ignore[arg-type]
    if vocab["scores"] is not None:
        wr.add_token_scores(vocab["scores"])  # type: ignore[arg-type]
    wr.add_token_types(vocab["token_type"])  # type: ignore[arg-type]
    if vocab["merges"] is not None:
        wr.add_token_merges(vocab["merges"])  # type: ignore[arg-type]
    wr.add_bos_token_id(int(vocab["bos"]))  # type: ignore[call-overload]
    wr.add_eos_token_id(int(vocab["eos"]))  # type: ignore[call-overload]
    if vocab["unk"] is not None:
        wr.add_unk_token_id(int(vocab["unk"]))  # type: ignore[call-overload]
    wr.add_add_bos_token(vocab["model"] == "llama")  # SentencePiece models add BOS; Qwen2's BPE does not
    wr.add_add_eos_token(False)
    wr.add_chat_template(spec.chat_template)


def write_model(path: Path, spec: ModelSpec | None = None) -> Path:
    """Write a single-file test model to ``path`` and return it."""
    import gguf

    spec = spec or ModelSpec()
    vocab = _vocab(spec.vocab)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), "llama")
    _writer_common(writer, spec, vocab)
    for name, data in _tensors(spec, len(vocab["tokens"])):  # type: ignore[arg-type]
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@dataclass(frozen=True)
class ProjectorSpec:
    """Shape of a generated CLIP vision projector (llava "mlp" type, the simplest the loader accepts).

    ``text_width`` must equal the text model's embedding width: llama-server refuses a projector
    whose output width differs. An image becomes ``(image_size // patch_size) ** 2`` tokens.
    """

    text_width: int = 64
    width: int = 32
    ff: int = 64
    heads: int = 2
    # The llava graph runs ``layers - 1`` blocks (it takes the second-to-last layer's output).
    layers: int = 2
    image_size: int = 32
    patch_size: int = 8
    seed: int = 4321
    name: str = "Strata Test Projector"

    @property
    def image_tokens(self) -> int:
        return (self.image_size // self.patch_size) ** 2


def _projector_tensors(spec: ProjectorSpec) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(spec.seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    def b(n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.float32)

    d, p = spec.width, spec.patch_size
    n_pos = spec.image_tokens + 1  # +1: the class embedding
    out = [
        # numpy shape (out_ch, in_ch, kh, kw) is GGML's conv kernel ne = [kw, kh, in_ch, out_ch].
        ("v.patch_embd.weight", w(d, 3, p, p)),
        ("v.class_embd", (rng.standard_normal(d) * 0.02).astype(np.float32)),
        ("v.position_embd.weight", w(n_pos, d)),
        ("v.pre_ln.weight", np.ones(d, dtype=np.float32)),
        ("v.pre_ln.bias", b(d)),
    ]
    for i in range(spec.layers):
        q = f"v.blk.{i}."
        out += [
            (q + "ln1.weight", np.ones(d, dtype=np.float32)), (q + "ln1.bias", b(d)),
            (q + "attn_q.weight", w(d, d)), (q + "attn_q.bias", b(d)),
            (q + "attn_k.weight", w(d, d)), (q + "attn_k.bias", b(d)),
            (q + "attn_v.weight", w(d, d)), (q + "attn_v.bias", b(d)),
            (q + "attn_out.weight", w(d, d)), (q + "attn_out.bias", b(d)),
            (q + "ln2.weight", np.ones(d, dtype=np.float32)), (q + "ln2.bias", b(d)),
            (q + "ffn_up.weight", w(spec.ff, d)), (q + "ffn_up.bias", b(spec.ff)),
            (q + "ffn_down.weight", w(d, spec.ff)), (q + "ffn_down.bias", b(d)),
        ]
    out += [
        ("mm.0.weight", w(spec.text_width, d)), ("mm.0.bias", b(spec.text_width)),
        ("mm.2.weight", w(spec.text_width, spec.text_width)), ("mm.2.bias", b(spec.text_width)),
    ]
    return out


def write_mmproj(path: Path, spec: ProjectorSpec | None = None) -> Path:
    """Write a random-weight CLIP projector GGUF (``general.architecture = clip``) and return it."""
    import gguf

    spec = spec or ProjectorSpec()
    path.parent.mkdir(parents=True, exist_ok=True)
    wr = gguf.GGUFWriter(str(path), "clip")
    wr.add_name(spec.name)
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_string("clip.projector_type", "mlp")
    wr.add_bool("clip.has_vision_encoder", True)
    wr.add_bool("clip.use_gelu", True)
    wr.add_uint32("clip.vision.image_size", spec.image_size)
    wr.add_uint32("clip.vision.patch_size", spec.patch_size)
    wr.add_uint32("clip.vision.embedding_length", spec.width)
    wr.add_uint32("clip.vision.feed_forward_length", spec.ff)
    wr.add_uint32("clip.vision.block_count", spec.layers)
    wr.add_uint32("clip.vision.projection_dim", spec.text_width)
    wr.add_uint32("clip.vision.attention.head_count", spec.heads)
    wr.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    wr.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    wr.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    for name, data in _projector_tensors(spec):
        wr.add_tensor(name, data)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return path


def write_split_model(directory: Path, stem: str, parts: int = 3, spec: ModelSpec | None = None) -> list[Path]:
    """Write a split model as ``{stem}-0000N-of-0000M.gguf`` files; returns them in order."""
    import gguf

    spec = spec or ModelSpec()
    vocab = _vocab(spec.vocab)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = _tensors(spec, len(vocab["tokens"]))  # type: ignore[arg-type]
    # Spread the tensors over `parts` shards of roughly equal size.
    per = -(-len(tensors) // parts)
    base = directory / f"{stem}.gguf"
    writer = gguf.GGUFWriter(
        str(base),
        "llama",
        split_max_tensors=per,
    )
    _writer_common(writer, spec, vocab)
    for name, data in tensors:
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    files = sorted(directory.glob(f"{stem}-*-of-*.gguf"))
    if len(files) != parts:
        raise RuntimeError(f"expected {parts} shards, got {[f.name for f in files]}")
    return files


def write_bad_magic(path: Path, source: Path) -> Path:
    """A copy of ``source`` whose first four bytes are not ``GGUF``."""
    shutil.copyfile(source, path)
    with open(path, "r+b") as fh:
        fh.write(b"GGML")
    return path


def write_truncated(path: Path, source: Path, keep_fraction: float = 0.5) -> Path:
    """A copy of ``source`` cut off part-way (a download that stopped)."""
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * keep_fraction)])
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("out", type=Path)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--split", type=int, default=0, help="write N shards into OUT's folder")
    args = ap.parse_args()
    spec = ModelSpec(layers=args.layers, width=args.width, seed=args.seed)
    if args.split:
        for f in write_split_model(args.out.parent, args.out.stem, args.split, spec):
            print(f)
    else:
        print(write_model(args.out, spec))


if __name__ == "__main__":
    main()
