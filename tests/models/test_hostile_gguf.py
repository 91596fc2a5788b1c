"""Hostile model files: crafted GGUF headers and FIFOs are refused with a GGUFError, never a
RecursionError, OverflowError, ValueError or a hang, and one such file in a models folder never
breaks the listing (``models list``, ``models inspect``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import GGUFError, ImageError, ServerError
from strata_gui.core.config.services import build_services
from strata_gui.core.models import gguf_meta
from strata_gui.core.models.draft import read_vocabulary
from strata_gui.core.models.gguf_meta import (
    HeaderParser,
    parse_prefix,
    read_header,
    read_string_field,
)
from strata_gui.core.models.library import ModelLibrary

_U32, _F32, _STRING, _ARRAY, _U64 = 4, 6, 8, 9, 10


def _str(s: str | bytes) -> bytes:
    raw = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(raw)) + raw


def _gguf(kvs: list[bytes], *, n_kv: int | None = None, n_tensors: int = 0, tail: bytes = b"") -> bytes:
    """A GGUF v3 header from already-encoded key/value pairs (key + type + value)."""
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + tail


def _kv(key: str, vtype: int, value: bytes) -> bytes:
    return _str(key) + struct.pack("<I", vtype) + value


ARCH = _kv("general.architecture", _STRING, _str("llama"))


def _nested_arrays(depth: int) -> bytes:
    # An array of one array of one array ... of one u32: what made gguf's reader recurse until
    # RecursionError.
    inner = struct.pack("<IQI", _U32, 1, 7)
    for _ in range(depth):
        inner = struct.pack("<IQ", _ARRAY, 1) + inner
    return _kv("x.nested", _ARRAY, inner)


HOSTILE: dict[str, tuple[bytes, str]] = {
    "nested": (_gguf([ARCH, _nested_arrays(50_000)]), "array of arrays"),
    "huge-array": (_gguf([ARCH, _kv("x.big", _ARRAY, struct.pack("<IQ", _U64, 1 << 61))]), "array claims"),
    "huge-string-array": (_gguf([ARCH, _kv("x.s", _ARRAY, struct.pack("<IQ", _STRING, 1 << 62))]), "array claims"),
    "huge-string": (_gguf([ARCH, _str("x.s") + struct.pack("<IQ", _STRING, 1 << 63)]), "string claims"),
    "huge-kv-count": (_gguf([ARCH], n_kv=1 << 62), "impossible tensor or key count"),
    "huge-tensor-count": (_gguf([ARCH], n_tensors=1 << 60), "impossible tensor or key count"),
    "nan-layers": (_gguf([ARCH, _kv("llama.block_count", _F32, struct.pack("<f", float("nan")))]),
                   "llama.block_count is nan"),
    "inf-context": (_gguf([ARCH, _kv("llama.context_length", _F32, struct.pack("<f", float("inf")))]),
                    "llama.context_length is inf"),
    "2**63-layers": (_gguf([ARCH, _kv("llama.block_count", _U64, struct.pack("<Q", 1 << 63))]),
                     "llama.block_count is 9223372036854775808"),
    "duplicate-key": (_gguf([ARCH, ARCH]), "appears twice"),
    "bad-type": (_gguf([ARCH, _kv("x.t", 77, b"")]), "unknown value type 77"),
}


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    for name, (data, _) in HOSTILE.items():
        (d / f"{name}.gguf").write_bytes(data)
    return d


def _feed_in_pieces(data: bytes, piece: int) -> Any:
    parser = HeaderParser(digest=("tokenizer.ggml.tokens", "x.s", "x.big", "x.nested"))
    for i in range(0, len(data), piece):
        if parser.feed(data[i:i + piece]) is not None:
            break
    return parser.result


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_reader_refuses_a_crafted_header_with_a_gguf_error(name: str, hostile_dir: Path) -> None:
    data, reason = HOSTILE[name]
    path = hostile_dir / f"{name}.gguf"
    readers: list[Callable[[], Any]] = [lambda: read_header(path), lambda: read_vocabulary(path),
                                        lambda: parse_prefix(data), lambda: HeaderParser().feed(data),
                                        lambda: _feed_in_pieces(data, 4096)]
    for read in readers:
        with pytest.raises(GGUFError, match=reason) as info:
            read()
        assert info.value.hint, "every refusal says what to do"
    if name not in ("nan-layers", "inf-context", "2**63-layers"):  # bad values, but a readable header
        with pytest.raises(GGUFError, match=reason):
            read_string_field(path, "tokenizer.chat_template")


def test_nan_in_an_ordinary_float_is_kept_and_shown_as_text(tmp_path: Path, test_model: Path) -> None:
    """NaN where no count is expected (a rope scale) is the file's business: inspect shows it, and
    its JSON stays JSON."""
    header = test_model.read_bytes()
    # One more key, first: a NaN float. 32 bytes long, so the data after the header stays aligned.
    extra = _kv("x.nan_rope_scale", _F32, struct.pack("<f", float("nan")))
    assert len(extra) == 32
    n_kv = struct.unpack_from("<Q", header, 16)[0]
    path = tmp_path / "nan-rope.gguf"
    path.write_bytes(header[:16] + struct.pack("<Q", n_kv + 1) + extra + header[24:])
    got = read_header(path)
    assert got.block_count == 2 and str(got.get("x.nan_rope_scale")) == "nan"
    summary = gguf_meta.metadata_summary(got)
    assert json.loads(json.dumps(summary, allow_nan=False))["x.nan_rope_scale"] == "nan"


def test_the_parser_gives_one_answer_however_the_bytes_arrive(test_model: Path) -> None:
    """Fed in odd-sized pieces (it resumes where it stopped) or all at once, the same metadata;
    and a header past the limit is refused while it arrives. (The speed is bench/gguf_header.py's.)"""
    data = test_model.read_bytes()
    whole = parse_prefix(data)
    parser = HeaderParser()
    for i in range(0, len(data), 997):
        if parser.feed(data[i:i + 997]) is not None:
            break
    assert parser.result == whole
    # A header of several MB whose long string array is skipped across the pieces' edges (the
    # parser drops what it consumed while it waits inside a string).
    tokens = [b"tok%07d" % i for i in range(400_000)]
    tokens[200_000] = b"x" * 5_000_000  # one string longer than several pieces
    big = _gguf([ARCH, _str("tokenizer.ggml.tokens") + struct.pack("<IIQ", _ARRAY, _STRING, len(tokens))
                 + b"".join(_str(t) for t in tokens), _kv("general.name", _STRING, _str("after"))])
    # The token list's digest, taken while it is skipped, sees every byte even when the parser
    # drops what it consumed between pieces, also while it waits inside the long string.
    digest = hashlib.sha256(b"".join(_str(t) for t in tokens)).hexdigest()
    for piece in ((1 << 20) + 7, 3_000_001, len(big)):
        for fed in (HeaderParser(), HeaderParser(digest=("tokenizer.ggml.tokens",))):
            for i in range(0, len(big), piece):
                fed.feed(big[i:i + piece])
            assert fed.result is not None and fed.result.name == "after", piece
            assert fed.result.get("tokenizer.ggml.tokens") == gguf_meta.LongArray(_STRING, len(tokens))
        assert fed.result.digests == {"tokenizer.ggml.tokens": digest}, piece
    small = HeaderParser(limit=100_000)
    with pytest.raises(GGUFError, match=r"larger than 100000 bytes|array claims 32000 items"):
        for i in range(0, len(data), 1 << 16):
            small.feed(data[i:i + (1 << 16)])
    assert small.received <= 100_000 + (1 << 16)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """open() of a FIFO blocks until a writer comes: the readers check the file type first."""
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    for read in (read_header, read_vocabulary, lambda p: read_string_field(p, "general.name")):
        with pytest.raises(GGUFError, match=r"pipe\.gguf is a named pipe \(FIFO\), not a regular file"):
            read(fifo)
    with pytest.raises(GGUFError, match="folder"):
        read_header(tmp_path)


def test_a_folder_with_hostile_files_still_lists(tmp_path: Path, test_model: Path, hostile_dir: Path) -> None:
    folder = tmp_path / "models"
    shutil.copytree(hostile_dir, folder)
    shutil.copy(test_model, folder / "good-F16.gguf")
    os.mkfifo(folder / "pipe.gguf")
    os.mkfifo(folder / "pipe.safetensors")
    entries = {e.display_name: e for e in ModelLibrary(tmp_path / "no-cache", [folder]).scan()}
    assert not entries["good-F16.gguf"].broken
    assert "named pipe" in entries["pipe.gguf"].error
    assert "pipe.safetensors" not in entries  # not an image model: not listed, and not waited on
    for name, (_, reason) in HOSTILE.items():
        assert reason in entries[f"{name}.gguf"].error, name


def test_models_list_and_inspect_commands_survive_hostile_files(tmp_path: Path, test_model: Path, hostile_dir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "models"
    shutil.copytree(hostile_dir, folder)
    shutil.copy(test_model, folder / "good-F16.gguf")
    os.mkfifo(folder / "pipe.gguf")
    services = build_services()
    services.settings_service.update(model_dirs=[str(folder)], offline=True)
    assert run_command(["models", "list", "--json"]) == 0
    listed = {Path(e["path"]).name: e for e in json.loads(capsys.readouterr().out)}
    assert listed["good-F16.gguf"]["error"] is None
    assert "array of arrays" in listed["nested.gguf"]["error"]
    assert "named pipe" in listed["pipe.gguf"]["error"]
    with pytest.raises(GGUFError, match="named pipe"):
        run_command(["models", "inspect", str(folder / "pipe.gguf")])
    with pytest.raises(GGUFError, match="array of arrays"):
        run_command(["models", "inspect", str(folder / "nested.gguf")])


@pytest.mark.engine
def test_chat_with_a_fifo_as_its_model_says_so_and_returns(tmp_path: Path, test_engines: Any) -> None:
    """The engine is never started on a FIFO (it would wait on it forever, as would Strata)."""
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    with pytest.raises(ServerError) as info:
        run_command(["chat", "-m", str(fifo), "-e", str(test_engines.cpu_dir), "--ctx-size", "512", "hi"])
    assert info.value.message == (f"The model file {fifo} cannot be used: pipe.gguf is a named pipe (FIFO), not a "
                                  "regular file; Strata only reads regular files.")


def test_an_image_command_with_a_fifo_as_its_model_says_so(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    with pytest.raises(ImageError, match=r"cannot be used: pipe\.gguf is a named pipe \(FIFO\), not a regular file"):
        run_command(["image", "-m", str(fifo), "a cat"])
