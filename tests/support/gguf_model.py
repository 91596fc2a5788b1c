"""Writes small but real llama-architecture GGUF models for tests.

The model uses a real vocabulary shipped in the pinned llama.cpp source (by default the
SentencePiece ``models/ggml-vocab-llama-spm.gguf``; any ``ggml-vocab-*.gguf`` by name, BPE ones
with their pre-tokenizer and merges), random weights (deterministic by seed) and a chat template
(ChatML by default), so a real llama-server loads it and streams replies. Also writes split
(``-0000N-of-0000M.gguf``) and broken variants, and a random-weight multimodal projector
(``mmproj``, llava-style "mlp" CLIP) that the pinned llama-server loads with ``--mmproj``.

Usable as a script: ``python -m tests.support.gguf_model OUT.gguf [--layers N] [--width W]
[--vocab qwen2] [--template FILE.jinja]``. The chat-template zoo (one model per real template) is
``tests/support/template_zoo.py``.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.engines import locate_source

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


# Qwen3-Reranker's prompt as llama.cpp's converter stores it (conversion/qwen.py), shortened.
RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query. "
    "Answer only \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Query>: {query}\n<Document>: {document}<|im_end|>\n<|im_start|>assistant\n"
)
RERANKER_SPEC_ARGS: dict[str, Any] = {"arch": "qwen3", "rerank": True, "pooling": 4, "vocab": "qwen2", "name": "Strata Test Reranker",
                                      "tie_embeddings": True, "embedding_type": "Q8_0"}
"""A small Qwen3-style reranker: ``ModelSpec(**RERANKER_SPEC_ARGS)``."""


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a generated test model.

    ``vocab`` names a ``models/ggml-vocab-<vocab>.gguf`` of the pinned llama.cpp source; its
    ``tokenizer.*`` keys are copied as they are (SPM, BPE with ``pre`` and ``merges``, special
    token ids), so the engine tokenizes exactly as for the real model family. ``added_tokens``
    become single tokens (in the vocabulary's unused ``[PAD…]`` slots, else appended), as the real
    models have their template's markers (``<think>``, ``<tool_call>``) as added tokens.
    ``tie_embeddings`` drops ``output.weight`` (llama reuses ``token_embd``) and
    ``embedding_type`` may quantise ``token_embd`` (``Q4_0``/``Q8_0``): both keep models with
    150k-token vocabularies a few MB. ``pooling`` writes ``llama.pooling_type`` (1: mean), as
    llama.cpp's converter does for embedding models only: the library then lists it as one.
    """

    layers: int = 2
    width: int = 64
    heads: int = 4
    kv_heads: int = 2
    ff: int = 128
    context: int = 4096
    seed: int = 1234
    name: str = "Strata Test Llama"
    vocab: str = "llama-spm"
    chat_template: str = CHATML_TEMPLATE
    added_tokens: tuple[str, ...] = ()
    tie_embeddings: bool = False
    embedding_type: str = "F16"
    pooling: int | None = None
    # Mixture of experts (Mixtral's layout in the llama architecture): ``experts`` feed-forward
    # experts per block (``ffn_*_exps``, one 3-D tensor each) and a router, of which each token
    # uses ``experts_used``; 0 writes a dense model.
    experts: int = 0
    experts_used: int = 0
    # The architecture written (``general.architecture`` and the prefix of its keys): "llama", or
    # "qwen3" (llama's layout plus a norm on each head's queries and keys).
    arch: str = "llama"
    # A reranker's head as llama.cpp's converter writes Qwen3-Reranker (conversion/qwen.py), with
    # ``pooling=4`` (rank) as it writes it too: ``classifier.output_labels`` ["yes", "no"], a ``cls.output`` head of two rows and a
    # "rerank" chat template that puts the query and the document in one prompt.
    rerank: bool = False


def vocab_path(name: str = "llama-spm") -> Path:
    """A vocab GGUF from the pinned llama.cpp source (built by scripts/test-engines.sh)."""
    path = locate_source() / "models" / f"ggml-vocab-{name}.gguf"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: re-run scripts/test-engines.sh")
    return path


# A vocabulary file's keys that describe its own (absent) chat template or model, not the tokenizer.
_NOT_COPIED = ("tokenizer.chat_template", "tokenizer.chat_templates")
# Token types (llama.cpp's llama_token_type): what an added marker becomes.
_USER_DEFINED = 4
_CONTROL = 3


@dataclass(frozen=True)
class Vocab:
    """The ``tokenizer.*`` key/values of a real vocabulary, ready to copy into a model.

    Attributes:
        name: The vocab file's name part (``qwen2`` for ``ggml-vocab-qwen2.gguf``).
        fields: ``(key, value, value type, array item type)`` in file order.
        n_tokens: Tokens in the vocabulary (rows of ``token_embd``).
    """

    name: str
    fields: tuple[tuple[str, Any, Any, Any], ...]
    n_tokens: int

    def value(self, key: str) -> Any:
        for k, v, _, _ in self.fields:
            if k == key:
                return v
        raise KeyError(key)


# GGUF value types (gguf.GGUFValueType) and their struct formats, for the header reader below.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NP = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}


def _read_kv(data: bytes) -> list[tuple[str, Any, int, int | None]]:
    """Every key/value of a GGUF header as ``(key, value, type, array item type)``.

    ``gguf.GGUFReader`` takes ~15 s on a 150k-token vocabulary (a numpy view per string); this
    walks the bytes once (~0.3 s), so writing a zoo model stays quick.
    """
    import struct

    mv = memoryview(data)
    pos = 24
    n_kv = struct.unpack_from("<Q", mv, 16)[0]

    def string(at: int) -> tuple[str, int]:
        n = struct.unpack_from("<Q", mv, at)[0]
        return bytes(mv[at + 8:at + 8 + n]).decode("utf-8", errors="surrogateescape"), at + 8 + n

    out: list[tuple[str, Any, int, int | None]] = []
    for _ in range(n_kv):
        key, pos = string(pos)
        vtype = struct.unpack_from("<I", mv, pos)[0]
        pos += 4
        if vtype == 8:
            value, pos = string(pos)
            out.append((key, value, vtype, None))
        elif vtype == 9:
            sub, count = struct.unpack_from("<IQ", mv, pos)
            pos += 12
            if sub == 8:
                items = []
                for _ in range(count):
                    item, pos = string(pos)
                    items.append(item)
                out.append((key, items, vtype, sub))
            else:
                arr = np.frombuffer(mv, dtype=_NP[sub], count=count, offset=pos)
                pos += arr.nbytes
                out.append((key, arr.tolist(), vtype, sub))
        else:
            fmt = _SCALARS[vtype]
            out.append((key, struct.unpack_from(fmt, mv, pos)[0], vtype, None))
            pos += struct.calcsize(fmt)
    return out


@functools.lru_cache(maxsize=8)
def _read_vocab(name: str) -> Vocab:
    import gguf

    fields = tuple(
        (key, value, gguf.GGUFValueType(vtype), None if sub is None else gguf.GGUFValueType(sub))
        for key, value, vtype, sub in _read_kv(vocab_path(name).read_bytes())
        if key.startswith("tokenizer.") and not key.startswith(_NOT_COPIED)
    )
    vocab = Vocab(name, fields, 0)
    return Vocab(name, fields, len(vocab.value("tokenizer.ggml.tokens")))


def load_vocab(name: str = "llama-spm", added_tokens: tuple[str, ...] = ()) -> Vocab:
    """The real vocabulary ``name``, with ``added_tokens`` it lacks made single tokens.

    An added token takes the first unused ``[PAD…]`` slot (BPE vocabularies are padded to a round
    size, and the real models put their added tokens there), else it is appended. Markers written
    ``<|…|>`` (``<｜…｜>``) become control tokens, the rest user-defined, as the real models have
    them (Qwen3's ``<think>`` is not special; gpt-oss's ``<|channel|>`` is).
    """
    base = _read_vocab(name)
    tokens: list[str] = list(base.value("tokenizer.ggml.tokens"))
    present = set(tokens)
    missing = [t for t in dict.fromkeys(added_tokens) if t not in present]
    if not missing:
        return base
    types: list[int] = list(base.value("tokenizer.ggml.token_type"))
    scores: list[float] | None = None
    try:
        scores = list(base.value("tokenizer.ggml.scores"))
    except KeyError:
        pass
    pads = (i for i, t in enumerate(tokens) if t.startswith("[PAD") and t.endswith("]"))
    for marker in missing:
        kind = _CONTROL if re.fullmatch(r"<[|｜].*[|｜]>", marker) else _USER_DEFINED
        slot = next(pads, None)
        if slot is None:
            tokens.append(marker)
            types.append(kind)
            if scores is not None:
                scores.append(0.0)
        else:
            tokens[slot] = marker
            types[slot] = kind
            if scores is not None:
                scores[slot] = 0.0
    replaced = {"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types}
    if scores is not None:
        replaced["tokenizer.ggml.scores"] = scores
    fields = tuple((k, replaced.get(k, v), t, s) for k, v, t, s in base.fields)
    return Vocab(name, fields, len(tokens))


def _tensors(spec: ModelSpec, n_vocab: int) -> list[tuple[str, np.ndarray, Any]]:
    """``(name, data, raw type or None)``; ``token_embd`` quantised when the spec says so."""
    import gguf

    rng = np.random.default_rng(spec.seed)
    head_dim = spec.width // spec.heads

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    def norm(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    # numpy shapes are (rows, cols) = GGUF dims reversed.
    if spec.embedding_type == "F16":
        out: list[tuple[str, np.ndarray, Any]] = [("token_embd.weight", w(n_vocab, spec.width), None)]
    else:
        qtype = gguf.GGMLQuantizationType[spec.embedding_type]
        out = [("token_embd.weight", _random_quantized(rng, n_vocab, spec.width, qtype), qtype)]
    for i in range(spec.layers):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", norm(spec.width), None),
            (p + "attn_q.weight", w(spec.width, spec.width), None),
            (p + "attn_k.weight", w(spec.kv_heads * head_dim, spec.width), None),
            (p + "attn_v.weight", w(spec.kv_heads * head_dim, spec.width), None),
            (p + "attn_output.weight", w(spec.width, spec.width), None),
            (p + "ffn_norm.weight", norm(spec.width), None),
        ]
        if spec.arch == "qwen3":
            out += [(p + "attn_q_norm.weight", norm(head_dim), None), (p + "attn_k_norm.weight", norm(head_dim), None)]
        if spec.experts:
            out += [
                (p + "ffn_gate_inp.weight", w(spec.experts, spec.width).astype(np.float32), None),
                (p + "ffn_gate_exps.weight", w(spec.experts, spec.ff, spec.width), None),
                (p + "ffn_up_exps.weight", w(spec.experts, spec.ff, spec.width), None),
                (p + "ffn_down_exps.weight", w(spec.experts, spec.width, spec.ff), None),
            ]
        else:
            out += [
                (p + "ffn_gate.weight", w(spec.ff, spec.width), None),
                (p + "ffn_up.weight", w(spec.ff, spec.width), None),
                (p + "ffn_down.weight", w(spec.width, spec.ff), None),
            ]
    out.append(("output_norm.weight", norm(spec.width), None))
    if not spec.tie_embeddings:
        out.append(("output.weight", w(n_vocab, spec.width), None))
    if spec.rerank:  # the rows of "yes" and "no" of the output head: numpy (2, width) = GGUF {width, 2}
        out.append(("cls.output.weight", w(2, spec.width), None))
    return out


def _random_quantized(rng: np.random.Generator, rows: int, cols: int, qtype: Any) -> np.ndarray:
    """Random weights written straight in a block format (quantising 150k rows in numpy is slow).

    A ``Q8_0`` block is an f16 scale and 32 int8 values; a ``Q4_0`` block an f16 scale and 32
    4-bit values stored offset by 8. The scale keeps values near the f16 weights' spread (±0.05).
    """
    import gguf

    if cols % 32:
        raise ValueError(f"a quantised row needs a multiple of 32 values, not {cols}")
    blocks = rows * cols // 32
    if qtype == gguf.GGMLQuantizationType.Q8_0:
        scale, body = np.float16(0.05 / 127), rng.integers(-127, 128, (blocks, 32), dtype=np.int8).view(np.uint8)
    elif qtype == gguf.GGMLQuantizationType.Q4_0:
        scale, body = np.float16(0.05 / 8), rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
    else:
        raise ValueError(f"unsupported embedding type {qtype!r}")
    head = np.full((blocks, 1), scale, dtype=np.float16).view(np.uint8)
    return np.concatenate([head, body], axis=1).reshape(rows, -1)


def _fast_writer(path: str, arch: str, **kw: Any) -> Any:
    """A ``gguf.GGUFWriter`` that packs long arrays in one step.

    Its own packer builds each of a 150k-token vocabulary's strings (tokens and merges: ~1.3M
    values for Gemma 4) one call at a time, 2-4 s per model; the zoo writes 71 of them.
    """
    import struct

    import gguf

    numpy_types = {gguf.GGUFValueType.UINT8: "<u1", gguf.GGUFValueType.INT8: "<i1",
                   gguf.GGUFValueType.UINT16: "<u2", gguf.GGUFValueType.INT16: "<i2",
                   gguf.GGUFValueType.UINT32: "<u4", gguf.GGUFValueType.INT32: "<i4",
                   gguf.GGUFValueType.FLOAT32: "<f4", gguf.GGUFValueType.UINT64: "<u8",
                   gguf.GGUFValueType.INT64: "<i8", gguf.GGUFValueType.FLOAT64: "<f8"}

    class FastWriter(gguf.GGUFWriter):  # type: ignore[misc]
        def _pack_val(self, val: Any, vtype: Any, add_vtype: bool, sub_type: Any = None) -> bytes:
            if (vtype != gguf.GGUFValueType.ARRAY or sub_type is None or len(val) < 1024
                    or self.endianess != gguf.GGUFEndian.LITTLE):
                return bytes(super()._pack_val(val, vtype, add_vtype, sub_type))
            head = struct.pack("<I", vtype) if add_vtype else b""
            head += struct.pack("<IQ", sub_type, len(val))
            if sub_type == gguf.GGUFValueType.STRING:
                encoded = [v.encode("utf-8") if isinstance(v, str) else v for v in val]
                lengths = np.array([len(e) for e in encoded], dtype="<u8")
                body = b"".join(n + e for n, e in zip((x.tobytes() for x in lengths), encoded, strict=True))
                return head + body
            return head + np.asarray(val, dtype=numpy_types[sub_type]).tobytes()

    return FastWriter(path, arch, **kw)


def _writer_common(writer: object, spec: ModelSpec, vocab: Vocab) -> None:
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
    for key, value, vtype, sub in vocab.fields:
        wr.add_key_value(key, value, vtype, sub)
    if spec.rerank:
        wr.add_chat_template([{"name": "default", "template": spec.chat_template},
                              {"name": "rerank", "template": RERANK_TEMPLATE}])
        wr.add_array(f"{spec.arch}.classifier.output_labels", ["yes", "no"])
    else:
        wr.add_chat_template(spec.chat_template)
    if spec.pooling is not None:
        wr.add_uint32(f"{spec.arch}.pooling_type", spec.pooling)
    if spec.experts:
        wr.add_expert_count(spec.experts)
        wr.add_expert_used_count(spec.experts_used)


def _write_tensors(writer: object, spec: ModelSpec, vocab: Vocab) -> None:
    import gguf

    wr: gguf.GGUFWriter = writer  # type: ignore[assignment]
    for name, data, raw in _tensors(spec, vocab.n_tokens):
        wr.add_tensor(name, data, raw_dtype=raw)


def write_model(path: Path, spec: ModelSpec | None = None) -> Path:
    """Write a single-file test model to ``path`` and return it."""

    spec = spec or ModelSpec()
    vocab = load_vocab(spec.vocab, spec.added_tokens)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = _fast_writer(str(path), spec.arch)
    _writer_common(writer, spec, vocab)
    _write_tensors(writer, spec, vocab)
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

    spec = spec or ModelSpec()
    vocab = load_vocab(spec.vocab, spec.added_tokens)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = _tensors(spec, vocab.n_tokens)
    # Spread the tensors over `parts` shards of roughly equal size.
    per = -(-len(tensors) // parts)
    base = directory / f"{stem}.gguf"
    writer = _fast_writer(str(base), "llama", split_max_tensors=per)
    _writer_common(writer, spec, vocab)
    for name, data, raw in tensors:
        writer.add_tensor(name, data, raw_dtype=raw)
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
    ap.add_argument("--vocab", default="llama-spm", help="a ggml-vocab-<NAME>.gguf of the pinned source")
    ap.add_argument("--template", type=Path, help="a .jinja chat template file (default: ChatML)")
    ap.add_argument("--rerank", action="store_true", help="a Qwen3-style reranker (pooling type rank)")
    args = ap.parse_args()
    spec = ModelSpec(layers=args.layers, width=args.width, seed=args.seed, vocab=args.vocab,
                     chat_template=args.template.read_text(encoding="utf-8") if args.template else CHATML_TEMPLATE)
    if args.rerank:
        spec = ModelSpec(**{**RERANKER_SPEC_ARGS, "layers": args.layers, "width": args.width, "seed": args.seed})
    if args.split:
        for f in write_split_model(args.out.parent, args.out.stem, args.split, spec):
            print(f)
    else:
        print(write_model(args.out, spec))


if __name__ == "__main__":
    main()
