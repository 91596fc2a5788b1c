"""GGUF header reading: Strata's streaming parser (local, fed in pieces, ranged remote reads) vs the
reference, gguf.GGUFReader."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_gui.core.base.errors import GGUFError, HubError
from strata_gui.core.models import gguf_meta
from strata_gui.core.models.gguf_meta import (
    HeaderParser,
    LongArray,
    parse_prefix,
    quant_from_filename,
    read_header,
)
from strata_gui.core.models.remote_header import read_remote_header
from tests.support.gguf_reference import read_local, vocabulary_digest

TOKENS = "tokenizer.ggml.tokens"


def _fed_in_pieces(path: Path, piece: int = 2 * 1024 * 1024, **kwargs: Any) -> gguf_meta.GGUFMetadata:
    """The header as a remote read gets it: one parser fed ``piece`` bytes at a time."""
    parser = HeaderParser(**kwargs)
    with open(path, "rb") as fh:
        while (data := fh.read(piece)):
            if parser.feed(data) is not None:
                break
    assert parser.result is not None, path.name
    return parser.result


def _remote(url: str, chunk: int = 2 * 1024 * 1024) -> tuple[gguf_meta.GGUFMetadata, int | None]:
    async def go() -> tuple[gguf_meta.GGUFMetadata, int | None]:
        async with httpx.AsyncClient() as client:
            return await read_remote_header(client, url, chunk=chunk)

    return asyncio.run(go())


def test_local_read_describes_the_test_model(test_model: Path) -> None:
    meta = read_local(test_model)
    assert meta.architecture == "llama"
    assert meta.name == "Strata Test Llama"
    assert meta.quant == "F16"
    assert meta.context_length == 4096
    assert meta.block_count == 2
    assert meta.kv_heads_per_layer == [2, 2]
    assert meta.key_length == meta.value_length == 16
    assert meta.has_chat_template
    assert meta.get("tokenizer.ggml.tokens") == LongArray(8, 32000)
    assert meta.required_size == test_model.stat().st_size


def test_prefix_parser_equals_gguf_reader(test_model: Path, split_model: list[Path]) -> None:
    for path in [test_model, *split_model]:
        assert _fed_in_pieces(path) == read_local(path), path.name


def test_prefix_parser_asks_for_more_bytes(test_model: Path) -> None:
    head = test_model.read_bytes()[:100_000]
    with pytest.raises(gguf_meta.NeedMoreData) as info:
        parse_prefix(head)
    assert info.value.needed > len(head)


def test_remote_header_read_equals_local_read(hub: Any, test_model: Path, split_model: list[Path]) -> None:
    url = hub.resolve_url("strata/test-llama-GGUF", "strata-test-llama-Q4_K_M.gguf")
    # Small chunks force several Range round trips through the 600 KB token list.
    meta, total = _remote(url, chunk=128 * 1024)
    assert meta == read_local(test_model)
    assert total == test_model.stat().st_size
    ranges = [h.get("Range") for m, p, h in hub.state.requests if p.endswith("Q4_K_M.gguf")]
    assert len(ranges) > 1 and ranges[0] == "bytes=0-131071"
    for shard in split_model:
        meta, _ = _remote(hub.resolve_url("strata/test-llama-split-GGUF", f"F16/{shard.name}"))
        assert meta == read_local(shard)


def test_remote_header_of_a_non_gguf_file_is_a_gguf_error(hub: Any) -> None:
    with pytest.raises(GGUFError, match="Not a GGUF file"):
        _remote(hub.resolve_url("strata/test-llama-GGUF", "README.md"))


def test_remote_header_errors_say_what_happened(hub: Any) -> None:
    with pytest.raises(HubError, match="access token"):
        _remote(hub.resolve_url("strata/gated-llama-GGUF", "gated-Q4_K_M.gguf"))
    hub.state.fail_next.append(("Q8_0", 429))
    with pytest.raises(HubError, match="rate-limiting"):
        _remote(hub.resolve_url("strata/test-llama-GGUF", "strata-test-llama-Q8_0.gguf"))
    with pytest.raises(HubError, match="not found"):
        _remote(hub.resolve_url("strata/test-llama-GGUF", "missing.gguf"))


def test_truncated_and_foreign_files_are_rejected_with_the_reason(broken_models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_local(broken_models["bad_magic"])
    with pytest.raises(GGUFError, match=r"incomplete|damaged"):
        read_local(broken_models["truncated"])
    short = tmp_path / "header-only.gguf"
    short.write_bytes(broken_models["truncated"].read_bytes()[:5000])
    with pytest.raises(GGUFError, match="ends inside its header"):
        read_header(short)


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
        ("qwen2.5-7b-instruct-q5_k_m-00001-of-00002.gguf", "Q5_K_M"),
        ("gemma-2-9b-it-IQ2_XXS.gguf", "IQ2_XXS"),
        ("Llama-3.3-70B-Instruct-UD-Q4_K_XL.gguf", "Q4_K_XL"),
        ("phi-3-mini.f16.gguf", "F16"),
        ("tinyllama.BF16.gguf", "BF16"),
        ("mmproj-model.gguf", None),
    ],
)
def test_quant_label_from_file_name(name: str, quant: str | None) -> None:
    assert quant_from_filename(name) == quant


def test_the_fast_local_read_equals_gguf_reader(test_model: Path, split_model: list[Path],
                                                broken_models: dict[str, Path], tmp_path: Path) -> None:
    """read_header (in place, long arrays skipped) gives what GGUFReader gives, and refuses the same files.
    Gemma's 262k-token vocabulary with 515k merges is the case it exists for: GGUFReader takes ~20 s
    over it here, so GGUFReader checks a 50k-token BPE vocabulary with merges (GLM's, 3 s), and
    Gemma's header must end exactly where its tensors say the file ends."""
    from tests.support import template_zoo as zoo

    bpe = zoo.zoo_model("GLM-4.6").ensure()
    for path in [test_model, *split_model, bpe]:
        assert read_header(path) == read_local(path), path.name
    assert read_header(bpe).get("tokenizer.ggml.merges") == LongArray(8, 50000)
    gemma_path = zoo.zoo_model("google-gemma-2-2b-it").ensure()
    gemma = read_header(gemma_path)
    assert gemma.get("tokenizer.ggml.tokens") == LongArray(8, 262144)
    assert gemma.get("tokenizer.ggml.merges") == LongArray(8, 514906)
    assert gemma.get("tokenizer.ggml.bos_token_id") == 2 and gemma.architecture
    assert gemma.required_size == gemma_path.stat().st_size  # every long array skipped to the byte
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_header(broken_models["bad_magic"])
    with pytest.raises(GGUFError, match=r"truncated.gguf is incomplete: \d+ bytes of the \d+"):
        read_header(broken_models["truncated"])
    short = tmp_path / "header-only.gguf"
    short.write_bytes(broken_models["truncated"].read_bytes()[:5000])
    with pytest.raises(GGUFError, match=r"header-only\.gguf is incomplete: it ends inside its header"):
        read_header(short)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_header(empty)


def test_tensor_sizes_match_gguf() -> None:
    """Strata's copy of ggml's block sizes (kept so sizing a model does not import numpy) is gguf's."""
    from gguf.constants import GGML_QUANT_SIZES

    assert {int(t): sizes for t, sizes in GGML_QUANT_SIZES.items()} == gguf_meta.GGML_QUANT_SIZES


def test_sizing_a_model_leaves_numpy_unloaded(test_model: Path) -> None:
    """Every `strata chat` sizes its model before the load: that must not import gguf (and numpy)."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from strata_gui.core.models.gguf_meta import read_header; "
            f"meta = read_header(Path({str(test_model)!r})); assert meta.tensor_bytes > 0; "
            "print(sorted(m for m in ('gguf', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_vocabulary_digest_is_the_token_list_gguf_reads(test_model: Path) -> None:
    """``digest=`` hashes the token list while the parser skips it: the digest of the tokens
    GGUFReader decodes, however the bytes arrive (a piece may end inside a token), and only
    for the keys asked for."""
    expected = vocabulary_digest(test_model)
    assert read_header(test_model, digest=(TOKENS,)).digests == {TOKENS: expected}
    for piece in (997, 64 * 1024 + 3, 2 * 1024 * 1024):
        assert _fed_in_pieces(test_model, piece, digest=(TOKENS,)).digests == {TOKENS: expected}, piece
    assert read_header(test_model).digests == {}
    # Another real vocabulary (GPT-2's 50,257 BPE tokens) has another digest.
    from tests.support.gguf_model import vocab_path

    gpt2 = read_header(vocab_path("gpt-2"), digest=(TOKENS,))
    assert gpt2.get(TOKENS) == LongArray(8, 50257) and gpt2.digests[TOKENS] != expected


def test_a_short_token_list_is_kept_and_hashed_the_same_way(tmp_path: Path) -> None:
    """A list short enough to be kept (decoded) is hashed as its stored bytes too; tokens cut at
    another place ("ab", "c" vs "a", "bc") are another vocabulary."""
    import hashlib
    import struct

    def header(tokens: list[bytes]) -> bytes:
        def s(raw: bytes) -> bytes:
            return struct.pack("<Q", len(raw)) + raw
        kvs = [s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama"),
               s(TOKENS.encode()) + struct.pack("<IIQ", 9, 8, len(tokens)) + b"".join(s(t) for t in tokens)]
        data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
        return data + b"\0" * (-len(data) % 32)

    def digest_of(tokens: list[bytes]) -> str:
        path = tmp_path / "vocab.gguf"
        path.write_bytes(header(tokens))
        meta = read_header(path, digest=(TOKENS,))
        assert meta.get(TOKENS) == [t.decode() for t in tokens]
        return meta.digests[TOKENS]

    tokens = [b"ab", b"c", "\u00e9".encode()]
    assert digest_of(tokens) == hashlib.sha256(b"".join(struct.pack("<Q", len(t)) + t for t in tokens)).hexdigest()
    assert digest_of([b"ab", b"c"]) != digest_of([b"a", b"bc"])
    # Past MAX_KEPT_ARRAY the list is skipped, not kept: the same rule, the same digest.
    many = [b"t%d" % i for i in range(gguf_meta.MAX_KEPT_ARRAY + 1)]
    path = tmp_path / "many.gguf"
    path.write_bytes(header(many))
    meta = read_header(path, digest=(TOKENS,))
    assert meta.get(TOKENS) == LongArray(8, len(many))
    assert meta.digests[TOKENS] == hashlib.sha256(b"".join(struct.pack("<Q", len(t)) + t for t in many)).hexdigest()
