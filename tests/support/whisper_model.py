"""A real whisper.cpp model file with small random weights, for the speech engine's tests.

whisper.cpp's source ships vocab-only models (``models/for-tests-ggml-*.bin``: the real header,
mel filters and tokenizer vocabulary, no tensors); the engine loads them with uninitialised
weights and hears nothing. This writes the same header, filters and vocabulary (copied from that
file) with a tiny network (64 wide, one layer each side) of seeded random weights in every tensor
whisper.cpp's loader asks for, so whisper-server loads it, runs its real encoder and decoder over
the audio, and answers with (nonsense) words, the same on every run. A trained model would
answer with what was said; the pipeline is the same.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

MAGIC = 0x67676D6C  # "ggml"
STATE = 64
HEADS = 2
LAYERS = 1
AUDIO_CTX = 1500
TEXT_CTX = 448
MELS = 80
# Confident, position-dependent guesses: peaked logits (a large token embedding) that change with
# the position (a positional embedding larger still) keep whisper's fallback (decoding again at a
# higher temperature when a guess is unsure or repetitive) from running, so every run decodes the
# same words in a fraction of a second (random weights of one scale fall back five times: 15-40 s).
SCALES = {"decoder.token_embedding.weight": 4.0, "decoder.positional_embedding": 40.0}
F16 = 1  # ggml's type (and whisper.cpp's ftype) number for half floats


def _vocab_block(source: Path) -> tuple[int, bytes]:
    """n_vocab from the source file's header, and its mel filters + vocabulary bytes."""
    data = source.read_bytes()
    magic, n_vocab = struct.unpack("<Ii", data[:8])
    if magic != MAGIC:
        raise ValueError(f"{source} is not a whisper.cpp model")
    n_mel, n_fft = struct.unpack("<2i", data[48:56])
    offset = 56 + n_mel * n_fft * 4
    (words,) = struct.unpack("<i", data[offset:offset + 4])
    offset += 4
    for _ in range(words):
        (length,) = struct.unpack("<I", data[offset:offset + 4])
        offset += 4 + length
    return n_vocab, data[48:offset]


def _tensor_shapes(n_vocab: int) -> list[tuple[str, tuple[int, ...]]]:
    """(name, ggml shape ne0..) of every tensor the loader creates for these hyperparameters."""
    s = STATE
    shapes: list[tuple[str, tuple[int, ...]]] = [
        ("encoder.positional_embedding", (s, AUDIO_CTX)),
        ("encoder.conv1.weight", (3, MELS, s)), ("encoder.conv1.bias", (1, s)),
        ("encoder.conv2.weight", (3, s, s)), ("encoder.conv2.bias", (1, s)),
        ("encoder.ln_post.weight", (s,)), ("encoder.ln_post.bias", (s,)),
        ("decoder.positional_embedding", (s, TEXT_CTX)),
        ("decoder.token_embedding.weight", (s, n_vocab)),
        ("decoder.ln.weight", (s,)), ("decoder.ln.bias", (s,)),
    ]

    def block(prefix: str, attn: str) -> list[tuple[str, tuple[int, ...]]]:
        return [(f"{prefix}.{attn}_ln.weight", (s,)), (f"{prefix}.{attn}_ln.bias", (s,)),
                (f"{prefix}.{attn}.query.weight", (s, s)), (f"{prefix}.{attn}.query.bias", (s,)),
                (f"{prefix}.{attn}.key.weight", (s, s)),
                (f"{prefix}.{attn}.value.weight", (s, s)), (f"{prefix}.{attn}.value.bias", (s,)),
                (f"{prefix}.{attn}.out.weight", (s, s)), (f"{prefix}.{attn}.out.bias", (s,))]

    def mlp(prefix: str) -> list[tuple[str, tuple[int, ...]]]:
        return [(f"{prefix}.mlp_ln.weight", (s,)), (f"{prefix}.mlp_ln.bias", (s,)),
                (f"{prefix}.mlp.0.weight", (s, 4 * s)), (f"{prefix}.mlp.0.bias", (4 * s,)),
                (f"{prefix}.mlp.2.weight", (4 * s, s)), (f"{prefix}.mlp.2.bias", (s,))]

    for i in range(LAYERS):
        shapes += mlp(f"encoder.blocks.{i}") + block(f"encoder.blocks.{i}", "attn")
    for i in range(LAYERS):
        shapes += (mlp(f"decoder.blocks.{i}") + block(f"decoder.blocks.{i}", "attn")
                   + block(f"decoder.blocks.{i}", "cross_attn"))
    return shapes


def write_whisper_model(path: Path, vocab_source: Path, *, seed: int = 7) -> Path:
    """Write a loadable whisper.cpp model (f16 weights, about 8 MB) at ``path``.

    Args:
        vocab_source: One of whisper.cpp's ``models/for-tests-ggml-*.bin`` (its header, mel
            filters and vocabulary are reused; ``.en`` files make an English-only model).
    """
    n_vocab, block = _vocab_block(vocab_source)
    rng = np.random.default_rng(seed)
    with path.open("wb") as f:
        f.write(struct.pack("<I11i", MAGIC, n_vocab, AUDIO_CTX, STATE, HEADS, LAYERS, TEXT_CTX, STATE, HEADS,
                            LAYERS, MELS, F16))
        f.write(block)
        for name, shape in _tensor_shapes(n_vocab):
            raw = name.encode()
            # the loader's types: matrices and convolutions in the file's type, the rest f32
            half = len(shape) >= 2 and "positional" not in name and not name.endswith(".bias")
            f.write(struct.pack(f"<3i{len(shape)}i", len(shape), len(raw), F16 if half else 0, *shape))
            f.write(raw)
            ones = name.endswith("ln.weight") or name.endswith("ln_post.weight")
            values = np.ones(shape[::-1]) if ones else rng.normal(0.0, SCALES.get(name, 0.5), shape[::-1])
            f.write(values.astype("<f2" if half else "<f4").tobytes())
    return path

