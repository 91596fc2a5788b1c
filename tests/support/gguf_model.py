"""Writes small but real llama-architecture GGUF models for tests.

The model uses the real SentencePiece vocabulary shipped in the pinned llama.cpp source
(``models/ggml-vocab-llama-spm.gguf``), random weights (deterministic by seed) and a ChatML
chat template, so a real llama-server loads it and streams replies. Also writes split
(``-0000N-of-0000M.gguf``) and broken variants.

Usable as a script: ``python -m tests.support.gguf_model OUT.gguf [--layers N] [--width W]``.
"""

from __future__ import annotations

import argparse
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


def vocab_path() -> Path:
    """The SentencePiece vocab GGUF from the pinned llama.cpp source (built by scripts/test-engines.sh)."""
    src = os.environ.get("STRATA_TEST_LLAMA_SRC")
    if not src:
        env_file = Path(os.environ.get("STRATA_DEV_CACHE", Path.home() / ".cache/strata-dev")) / "engines.env"
        if env_file.exists():
            for line in env_file.read_text().splitlines():
                if line.startswith("STRATA_TEST_LLAMA_SRC="):
                    src = line.split("=", 1)[1]
    if not src:
        raise FileNotFoundError("llama.cpp source not found: run scripts/test-engines.sh first")
    path = Path(src) / "models" / "ggml-vocab-llama-spm.gguf"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: re-run scripts/test-engines.sh")
    return path


def _vocab() -> dict[str, object]:
    import gguf

    reader = gguf.GGUFReader(str(vocab_path()))

    def field(name: str) -> object:
        f = reader.fields[name]
        return f.contents()

    return {
        "tokens": field("tokenizer.ggml.tokens"),
        "scores": field("tokenizer.ggml.scores"),
        "token_type": field("tokenizer.ggml.token_type"),
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
    wr.add_tokenizer_model("llama")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(vocab["tokens"])  # type: ignore[arg-type]
    wr.add_token_scores(vocab["scores"])  # type: ignore[arg-type]
    wr.add_token_types(vocab["token_type"])  # type: ignore[arg-type]
    wr.add_bos_token_id(int(vocab["bos"]))  # type: ignore[call-overload]
    wr.add_eos_token_id(int(vocab["eos"]))  # type: ignore[call-overload]
    wr.add_unk_token_id(int(vocab["unk"]))  # type: ignore[call-overload]
    wr.add_add_bos_token(True)
    wr.add_add_eos_token(False)
    wr.add_chat_template(CHATML_TEMPLATE)


def write_model(path: Path, spec: ModelSpec | None = None) -> Path:
    """Write a single-file test model to ``path`` and return it."""
    import gguf

    spec = spec or ModelSpec()
    vocab = _vocab()
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


def write_split_model(directory: Path, stem: str, parts: int = 3, spec: ModelSpec | None = None) -> list[Path]:
    """Write a split model as ``{stem}-0000N-of-0000M.gguf`` files; returns them in order."""
    import gguf

    spec = spec or ModelSpec()
    vocab = _vocab()
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
