"""GGUF header metadata: read from a local file or from the bytes of a remote file as they arrive.

One bounded, incremental parser (:class:`HeaderParser`, :func:`parse_prefix`, :func:`read_header`)
reads every header: it resumes where it stopped when more bytes arrive, and refuses what a
hostile header claims (nested arrays, counts and strings larger than the header could hold,
NaN or 2**63 as a layer count) with a :class:`GGUFError` instead of RecursionError,
OverflowError or a hang. It is Strata's only GGUF reader: local files (:func:`read_header`), the
bytes of a remote file (:class:`HeaderParser`) and the vocabulary a draft model must share
(``digest=``: hashed while the token list is skipped). ``gguf.GGUFReader`` is the reference the
tests compare it with on the real test models (``tests/support/gguf_reference.py``); the app
does not ship gguf or numpy.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import struct
from collections.abc import Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from strata_gui.core.base.errors import GGUFError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text
from strata_gui.core.platform.files import NotRegularFileError, open_regular

_CANNOT_READ = QT_TRANSLATE_NOOP("Core", "Cannot read {file}: {reason}")
_CHECK_READABLE = QT_TRANSLATE_NOOP("Core", "Check the file exists and is readable.")
_ONLY_GGUF = QT_TRANSLATE_NOOP("Core", "Only .gguf model files can be used; convert or download a GGUF "
                                       "version.")
_NOT_GGUF_NAMED = QT_TRANSLATE_NOOP("Core", "{file} is not a GGUF file (it starts with {magic}, not "
                                            "b'GGUF').")
# A header the parser refused, named: "nested.gguf: Corrupt GGUF header: an array of arrays ..."
_REFUSED = QT_TRANSLATE_NOOP("Core", "{file}: {reason}")
_DOWNLOAD_AGAIN = QT_TRANSLATE_NOOP("Core", "Download the file again.")
_INCOMPLETE = QT_TRANSLATE_NOOP("Core", "{file} is incomplete: {size} bytes of the {required} its header "
                                        "describes.")
_DOWNLOAD_STOPPED = QT_TRANSLATE_NOOP("Core", "The download probably stopped; download the file again.")
_ENDS_IN_HEADER = QT_TRANSLATE_NOOP("Core", "{file} is incomplete: it ends inside its header.")

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
# Arrays longer than this (token lists, merges, scores) are kept as a summary only.
MAX_KEPT_ARRAY = 256

# ggml tensor type id -> (elements per block, bytes per block), as ggml defines them (the same as
# gguf.constants.GGML_QUANT_SIZES; a test keeps the two equal). A copy because the app does not
# ship gguf (it brings numpy: ~70 MB installed, and ~80 ms of imports on every `strata chat`,
# whose engine pool sizes the model's tensors before a load).
QK_K = 256
GGML_QUANT_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 2 + 16), 3: (32, 2 + 2 + 16), 6: (32, 2 + 4 + 16), 7: (32, 2 + 2 + 4 + 16),
    8: (32, 2 + 32), 9: (32, 4 + 4 + 32), 10: (256, 2 + 2 + QK_K // 16 + QK_K // 4),
    11: (256, 2 + QK_K // 4 + QK_K // 8 + 12), 12: (256, 2 + 2 + QK_K // 2 + 12),
    13: (256, 2 + 2 + QK_K // 2 + QK_K // 8 + 12), 14: (256, 2 + QK_K // 2 + QK_K // 4 + QK_K // 16),
    15: (256, 4 + QK_K + QK_K // 8), 16: (256, 2 + QK_K // 4), 17: (256, 2 + QK_K // 4 + QK_K // 32),
    18: (256, 2 + QK_K // 4 + QK_K // 8), 19: (256, 2 + QK_K // 8 + QK_K // 16), 20: (32, 2 + 16),
    21: (256, 2 + QK_K // 4 + QK_K // 8 + QK_K // 32 + 4), 22: (256, 2 + QK_K // 4 + QK_K // 16),
    23: (256, 2 + 2 + QK_K // 2 + QK_K // 64), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8),
    29: (256, QK_K // 8 + QK_K // 16 + QK_K // 32), 30: (1, 2), 34: (256, 2 + 4 * 13), 35: (256, 2 + 64),
    39: (32, 1 + 16), 40: (64, 4 + 32), 41: (128, 2 + 16),
}

# GGUF value types.
_SCALAR_FORMATS: dict[int, str] = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING = 8
_ARRAY = 9

# llama.cpp's LLAMA_FTYPE values (general.file_type) and the names users know them by.
FILE_TYPE_NAMES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
    18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
    25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
    32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}

_QUANT_RE = re.compile(
    r"(?<![A-Za-z0-9])(UD-)?((?:I?Q[1-8](?:_[0-9A-Z]+)*)|BF16|F16|F32|FP16|MXFP4(?:_MOE)?)(?![A-Za-z0-9])",
    re.IGNORECASE,
)
SPLIT_RE = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


def quant_from_filename(name: str) -> str | None:
    """The quantisation label in a file name (``model-Q4_K_M.gguf`` → ``Q4_K_M``), or None."""
    stem = Path(name).name
    stem = SPLIT_RE.sub(lambda m: m.group("prefix") + ".gguf", stem)
    matches = list(_QUANT_RE.finditer(stem.removesuffix(".gguf").replace(".", "-")))
    if not matches:
        return None
    label = matches[-1].group(2).upper()
    return "F16" if label == "FP16" else label


@dataclass(frozen=True, slots=True)
class LongArray:
    """Summary of an array too long to keep (e.g. 32 000 vocabulary tokens)."""

    item_type: int
    count: int


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One tensor's entry in the header (dims in GGUF order, innermost first)."""

    name: str
    dims: tuple[int, ...]
    ggml_type: int
    offset: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def n_bytes(self) -> int:
        sizes = GGML_QUANT_SIZES.get(self.ggml_type)
        if sizes is None:
            return 0
        block, size = sizes
        return self.n_elements * size // block


@dataclass(frozen=True)
class GGUFMetadata:
    """What a GGUF header says about a model.

    Attributes:
        version: GGUF format version.
        fields: Every key/value; long arrays summarised as :class:`LongArray`.
        tensors: Tensor infos in file order.
        data_offset: Where tensor data starts (after alignment padding).
        digests: SHA-256 (hex) of the arrays the reader was asked to hash (``digest=``), by key:
            of every item as stored, in order (a string as its 8-byte little-endian length and
            its bytes). Not part of equality: it describes the same fields.
    """

    version: int
    fields: Mapping[str, Any]
    tensors: tuple[TensorInfo, ...]
    data_offset: int
    digests: Mapping[str, str] = field(default_factory=dict, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def arch_key(self, suffix: str, default: Any = None) -> Any:
        return self.fields.get(f"{self.architecture}.{suffix}", default)

    @property
    def architecture(self) -> str:
        return str(self.fields.get("general.architecture", "unknown"))

    @property
    def name(self) -> str | None:
        value = self.fields.get("general.name")
        return str(value) if value is not None else None

    @property
    def file_type(self) -> int | None:
        value = self.fields.get("general.file_type")
        return int(value) if isinstance(value, int) else None

    @property
    def quant(self) -> str | None:
        """Quantisation name from ``general.file_type`` (``Q4_K_M``), or None when absent."""
        ft = self.file_type
        if ft is None:
            return None
        return FILE_TYPE_NAMES.get(ft, f"type {ft}")

    @property
    def context_length(self) -> int | None:
        value = self.arch_key("context_length")
        return int(value) if isinstance(value, int) else None

    @property
    def block_count(self) -> int:
        return int(self.arch_key("block_count", 0))

    @property
    def embedding_length(self) -> int:
        return int(self.arch_key("embedding_length", 0))

    @property
    def head_count(self) -> int:
        value = self.arch_key("attention.head_count", 0)
        if isinstance(value, list):
            return max((int(v) for v in value), default=0)
        return int(value)

    @property
    def kv_heads_per_layer(self) -> list[int]:
        """``head_count_kv`` for every layer (the key may be a scalar or a per-layer array)."""
        value = self.arch_key("attention.head_count_kv", self.arch_key("attention.head_count", 0))
        n = self.block_count
        if isinstance(value, list):
            return [int(v) for v in value][:n] + [0] * max(0, n - len(value))
        return [int(value)] * n

    @property
    def key_length(self) -> int:
        value = self.arch_key("attention.key_length")
        if isinstance(value, int):
            return value
        return self.embedding_length // self.head_count if self.head_count else 0

    @property
    def value_length(self) -> int:
        value = self.arch_key("attention.value_length")
        if isinstance(value, int):
            return value
        return self.embedding_length // self.head_count if self.head_count else 0

    @property
    def sliding_window(self) -> int | None:
        value = self.arch_key("attention.sliding_window")
        return int(value) if isinstance(value, int) and value > 0 else None

    @property
    def has_chat_template(self) -> bool:
        return bool(self.fields.get("tokenizer.chat_template"))

    @property
    def chat_template(self) -> str | None:
        """The model's default chat template (``tokenizer.chat_template``), if it has one."""
        value = self.fields.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value else None

    @property
    def split_no(self) -> int:
        return int(self.fields.get("split.no", 0))

    @property
    def split_count(self) -> int:
        return int(self.fields.get("split.count", 0))

    @property
    def parameter_count(self) -> int:
        """Elements in the tensors of THIS file (a split set's shards must be summed)."""
        return sum(t.n_elements for t in self.tensors)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def required_size(self) -> int:
        """Bytes a complete file must have: data offset + the end of the last tensor."""
        end = max((t.offset + t.n_bytes for t in self.tensors), default=0)
        return self.data_offset + end


def format_params(n: int) -> str:
    """``7.24B``, ``135M``, ``2.1M`` as model cards write parameter counts."""
    if n >= 1_000_000_000:
        return f"{n / 1e9:.1f}B" if n < 1e10 else f"{n / 1e9:.0f}B"
    if n >= 1_000_000:
        return f"{n / 1e6:.0f}M" if n >= 1e7 else f"{n / 1e6:.1f}M"
    return f"{n / 1e3:.0f}K"


# --------------------------------------------------------------------------- the bounded, incremental parser
#
# One parser reads every header Strata meets (local files, shards, the first bytes of a remote
# file): a generator that asks for bytes when it runs out (``yield <absolute offset needed>``) and
# resumes where it stopped when they arrive, so a header that arrives in pieces is parsed once,
# never again from byte 0. It trusts nothing a header says: nested arrays (which llama.cpp does
# not load either) are refused, every count and length is checked against what the header could
# hold before anything is allocated, and the header may not grow past MAX_HEADER_BYTES.

# The largest header read. Real ones are a few MB (Gemma's 262k-token vocabulary with its merges
# is ~10 MB); anything past this is a damaged or hostile file, not a header.
MAX_HEADER_BYTES = 256 * 1024 * 1024
# The longest single string (a chat template is KBs, a token a few bytes).
MAX_STRING_BYTES = 16 * 1024 * 1024
MAX_TENSORS = 1 << 20
MAX_DIMS = 8
_NOT_GGUF = QT_TRANSLATE_NOOP("Core", "Not a GGUF file (it starts with {magic}, not b'GGUF').")
_STRING_CLAIMS = QT_TRANSLATE_NOOP("Core", "a string claims {size} bytes")
_HINT_DAMAGED = QT_TRANSLATE_NOOP("Core", "The file is damaged or not a real model: download it again, or "
                                         "remove it from the models folder.")

_Parse = Generator[int, None, Any]


class Hasher(Protocol):
    """What hashes an array's bytes (``hashlib.sha256()``)."""

    def update(self, data: bytes | memoryview, /) -> None: ...


class NeedMoreData(Exception):
    """The prefix ends before the header does; ``needed`` is a lower bound of the total bytes."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


def _corrupt(what: str) -> GGUFError:
    return GGUFError(T(QT_TRANSLATE_NOOP("Core", "Corrupt GGUF header: {what}."), what=what),
                     hint=_HINT_DAMAGED)


class _Buffer:
    """Bytes seen so far: a growing ``bytearray`` (fed in pieces) or a fixed view (a mapped file).

    ``base`` is the file offset of ``data[0]``; ``pos`` the parser's file offset. Consumed bytes
    are dropped from a growing buffer, so a long header does not stay in memory twice; those from
    ``hold`` on are kept even when consumed (an array being hashed has not seen them yet).
    """

    __slots__ = ("base", "data", "hold", "limit", "pos")

    def __init__(self, data: bytearray | memoryview, limit: int) -> None:
        self.data = data
        self.base = 0
        self.pos = 0
        self.limit = limit
        self.hold: int | None = None

    @property
    def end(self) -> int:
        return self.base + len(self.data)

    def feed(self, chunk: bytes | bytearray | memoryview) -> None:
        if not isinstance(self.data, bytearray):
            raise TypeError("a fixed buffer cannot be fed")
        # The parser may be past the end (inside a string it skipped): only bytes it has are dropped.
        drop = min(self.pos - self.base, len(self.data))
        if self.hold is not None:
            drop = min(drop, self.hold - self.base)
        if drop > 1 << 20:
            del self.data[:drop]
            self.base += drop
        self.data += chunk

    def need(self, end: int) -> _Parse:
        """Wait (yield) until the buffer reaches file offset ``end``."""
        if end > self.limit:
            too_large = (T(QT_TRANSLATE_NOOP("Core", "The GGUF header is larger than {size} MB."),
                           size=self.limit // (1024 * 1024)) if self.limit >= 1024 * 1024
                         else T(QT_TRANSLATE_NOOP("Core", "The GGUF header is larger than {size} bytes."),
                                size=self.limit))
            raise GGUFError(too_large, hint=_HINT_DAMAGED)
        while end > self.end:
            yield end

    def take(self, n: int) -> _Parse:
        yield from self.need(self.pos + n)
        start = self.pos - self.base
        chunk = bytes(self.data[start:start + n])
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> _Parse:
        size = struct.calcsize(fmt)
        yield from self.need(self.pos + size)
        value = struct.unpack_from(fmt, self.data, self.pos - self.base)[0]
        self.pos += size
        return value

    def room(self) -> int:
        """Bytes the header may still hold (what bounds every count before it is believed)."""
        return self.limit - self.pos


def _string(buf: _Buffer) -> _Parse:
    n = yield from buf.unpack("<Q")
    if n > MAX_STRING_BYTES or n > buf.room():
        raise _corrupt(T(_STRING_CLAIMS, size=n))
    raw = yield from buf.take(n)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _corrupt(QT_TRANSLATE_NOOP("Core", "a string is not valid UTF-8")) from exc


def _skip_strings(buf: _Buffer, count: int, digest: Hasher | None = None) -> _Parse:
    """Skip ``count`` strings without decoding them (a 262k-token vocabulary is ~800k strings):
    a tight loop over the bytes at hand, waiting only when they run out. ``digest`` is fed the
    skipped bytes as they stand in the file (each string's length and bytes), a whole stretch
    per call, never a Python object per string."""
    unpack = struct.unpack_from
    remaining = count
    hashed = buf.pos  # the file offset up to which ``digest`` has seen the array
    while remaining:
        data, base = buf.data, buf.base
        off, last = buf.pos - base, len(data) - 8
        longest = 0
        while remaining and off <= last:
            n = unpack("<Q", data, off)[0]
            off += 8 + n
            remaining -= 1
            longest = n if n > longest else longest
        if longest > MAX_STRING_BYTES:
            raise _corrupt(T(_STRING_CLAIMS, size=longest))
        buf.pos = base + off
        if remaining:
            hashed = _hash_upto(buf, digest, hashed)
            yield from buf.need(buf.pos + 8)
    # The last string's bytes too, so the limit check sees how far the header reaches.
    hashed = _hash_upto(buf, digest, hashed)
    yield from buf.need(buf.pos)
    _hash_upto(buf, digest, hashed)
    buf.hold = None


def _hash_upto(buf: _Buffer, digest: Hasher | None, hashed: int) -> int:
    """Feed ``digest`` the consumed bytes at hand past file offset ``hashed``; the new offset.

    What is not at hand yet is held (:attr:`_Buffer.hold`) until it arrives and is hashed.
    """
    if digest is None:
        return hashed
    upto = min(buf.pos, buf.end)
    if upto > hashed:
        with memoryview(buf.data) as view, view[hashed - buf.base:upto - buf.base] as part:
            digest.update(part)
        hashed = upto
    buf.hold = hashed
    return hashed


def _array(buf: _Buffer, digest: Hasher | None = None) -> _Parse:
    """An array's items (a :class:`LongArray` summary past :data:`MAX_KEPT_ARRAY`), its stored
    bytes fed to ``digest`` when given."""
    sub = yield from buf.unpack("<I")
    count = yield from buf.unpack("<Q")
    if sub == _ARRAY:
        raise _corrupt(QT_TRANSLATE_NOOP("Core", "an array of arrays (llama.cpp does not load nested "
                                                 "arrays)"))
    if sub == _STRING:
        item = 8
    elif sub in _SCALAR_FORMATS:
        item = struct.calcsize(_SCALAR_FORMATS[sub])
    else:
        raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "an array of unknown value type {type}"), type=sub))
    if count * item > buf.room():
        raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "an array claims {count} items"), count=count))
    if sub == _STRING:
        if count > MAX_KEPT_ARRAY:
            yield from _skip_strings(buf, count, digest)
            return LongArray(sub, count)
        items = []
        for _ in range(count):
            text = yield from _string(buf)
            if digest is not None:  # a strictly decoded string encodes back to the same bytes
                raw = text.encode("utf-8")
                digest.update(struct.pack("<Q", len(raw)) + raw)
            items.append(text)
        return items
    raw = yield from buf.take(item * count)
    if digest is not None:
        digest.update(raw)
    if count > MAX_KEPT_ARRAY:
        # Long numeric arrays (scores, token types) are summarised, never built.
        return LongArray(sub, count)
    return list(struct.unpack(f"<{count}{_SCALAR_FORMATS[sub][1:]}", raw))


def _value(buf: _Buffer, vtype: int, digest: Hasher | None = None) -> _Parse:
    if vtype == _STRING:
        return (yield from _string(buf))
    if vtype == _ARRAY:
        return (yield from _array(buf, digest))
    fmt = _SCALAR_FORMATS.get(vtype)
    if fmt is None:
        raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "unknown value type {type}"), type=vtype))
    return (yield from buf.unpack(fmt))


# Keys whose value other code turns into a count or a size: checked here, so a crafted value
# (NaN, 1e300, 2**63, -5) is a damaged file, not an OverflowError in a memory estimate.
_COUNT_KEYS = ("block_count", "embedding_length", "context_length", "attention.head_count",
               "attention.head_count_kv", "attention.key_length", "attention.value_length")
_MAX_COUNT = 1 << 32


def _check_fields(fields: Mapping[str, Any]) -> None:
    arch = fields.get("general.architecture", "unknown")
    keys = [f"{arch}.{k}" for k in _COUNT_KEYS] + ["split.no", "split.count", "general.file_type"]
    for key in keys:
        value = fields.get(key)
        if value is None or isinstance(value, LongArray):
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < _MAX_COUNT:
                raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "{key} is {value}, not a count"), key=key,
                                 value=repr(v)))


def _header(buf: _Buffer, only_key: str | None = None, digest: Collection[str] = ()) -> _Parse:
    """The header parser (see the section comment). With ``only_key``: that key's string value
    (or None when absent), without reading the tensor infos. The arrays under the keys in
    ``digest`` are hashed as they are read (:attr:`GGUFMetadata.digests`)."""
    magic = yield from buf.take(4)
    if magic != GGUF_MAGIC:
        raise GGUFError(T(_NOT_GGUF, magic=repr(magic)), hint=_ONLY_GGUF)
    version = yield from buf.unpack("<I")
    if version not in (2, 3):
        raise GGUFError(T(QT_TRANSLATE_NOOP("Core", "Unsupported GGUF version {version}."), version=version),
                        hint=QT_TRANSLATE_NOOP("Core", "Update Strata or use a newer conversion of the "
                                                       "model."))
    n_tensors = yield from buf.unpack("<Q")
    n_kv = yield from buf.unpack("<Q")
    # A key/value pair takes at least 12 bytes, a tensor info at least 24.
    if n_tensors > MAX_TENSORS or n_tensors * 24 > buf.room() or n_kv * 12 > buf.room():
        raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "impossible tensor or key count ({tensors} tensors, "
                                                   "{keys} keys)"), tensors=n_tensors, keys=n_kv))
    fields: dict[str, Any] = {}
    digests: dict[str, str] = {}
    for _ in range(n_kv):
        key = yield from _string(buf)
        vtype = yield from buf.unpack("<I")
        if key in fields:
            raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "the key {key} appears twice"), key=key))
        if only_key is not None and key == only_key and vtype == _STRING:
            return (yield from _string(buf))
        hasher = hashlib.sha256() if key in digest and vtype == _ARRAY else None
        fields[key] = yield from _value(buf, vtype, hasher)
        if hasher is not None:
            digests[key] = hasher.hexdigest()
    if only_key is not None:
        return None
    _check_fields(fields)
    tensors = []
    for _ in range(n_tensors):
        name = yield from _string(buf)
        n_dims = yield from buf.unpack("<I")
        if n_dims > MAX_DIMS:
            raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "tensor {name} has {count} dimensions"), name=name,
                           count=n_dims))
        dims = []
        for _ in range(n_dims):
            dims.append(int((yield from buf.unpack("<Q"))))
        ggml_type = yield from buf.unpack("<I")
        offset = yield from buf.unpack("<Q")
        tensors.append(TensorInfo(name, tuple(dims), int(ggml_type), int(offset)))
    alignment = fields.get("general.alignment", DEFAULT_ALIGNMENT)
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise _corrupt(T(QT_TRANSLATE_NOOP("Core", "alignment {value}"), value=repr(alignment)))
    pos = buf.pos
    data_offset = pos + (-pos % alignment)
    return GGUFMetadata(int(version), fields, tuple(tensors), data_offset, digests)


class HeaderParser:
    """Parse a GGUF header from bytes fed as they arrive (HTTP Range replies, file reads).

    Every byte is parsed once: :meth:`feed` resumes where the last call stopped.

    Args:
        limit: The largest header accepted (bytes).
        digest: Keys of arrays to hash as they arrive (:attr:`GGUFMetadata.digests`).
    """

    def __init__(self, *, limit: int = MAX_HEADER_BYTES, digest: Collection[str] = ()) -> None:
        self._buf = _Buffer(bytearray(), limit)
        self._gen = _header(self._buf, digest=digest)
        self.result: GGUFMetadata | None = None
        self.needed = 0
        self._step()

    @property
    def received(self) -> int:
        """Bytes fed so far."""
        return self._buf.end

    def _step(self) -> None:
        try:
            self.needed = next(self._gen)
        except StopIteration as done:
            self.result = done.value

    def feed(self, data: bytes | bytearray | memoryview) -> GGUFMetadata | None:
        """Add the next bytes of the file; the metadata once the header is complete, else None.

        Raises:
            GGUFError: Not a GGUF file, a corrupt header, or one past ``limit``.
        """
        if self.result is not None:
            return self.result
        self._buf.feed(data)
        if self._buf.end >= self.needed:
            self._step()
        return self.result


def _run_fixed(data: bytes | bytearray | memoryview, only_key: str | None = None,
               digest: Collection[str] = ()) -> Any:
    view = data if isinstance(data, memoryview) else memoryview(data)
    gen = _header(_Buffer(view, MAX_HEADER_BYTES), only_key, digest)
    try:
        needed = next(gen)
    except StopIteration as done:
        return done.value
    finally:
        gen.close()
    raise NeedMoreData(needed)


def parse_prefix(data: bytes | memoryview) -> GGUFMetadata:
    """Parse the GGUF header from the first bytes of a file.

    Raises:
        NeedMoreData: ``data`` ends inside the header (retry with at least ``needed`` bytes).
        GGUFError: Not a GGUF file or a corrupt header.
    """
    meta: GGUFMetadata = _run_fixed(data)
    return meta


def check_complete(meta: GGUFMetadata, size: int, label: str) -> None:
    """Raise GGUFError when a file of ``size`` bytes is shorter than its header says.

    A file without tensors (llama.cpp's vocabulary-only ``ggml-vocab-*.gguf``) ends with its
    header: it needs no padding up to the data offset, and the parser saw all of it.
    """
    if meta.tensors and meta.required_size > size:
        raise GGUFError(
            T(_INCOMPLETE, file=label, size=size, required=meta.required_size),
            hint=_DOWNLOAD_STOPPED,
        )


def _cannot_read(path: Path, exc: OSError) -> GGUFError:
    return GGUFError(T(_CANNOT_READ, file=path.name, reason=str(exc.strerror or exc)),
                     hint=_CHECK_READABLE)


def _mapped(path: Path, only_key: str | None, digest: Collection[str] = ()) -> tuple[Any, int]:
    """Run the parser over the mapped file; (its answer, the file's size). Errors name the file."""
    import mmap

    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 4:
                raise GGUFError(T(QT_TRANSLATE_NOOP("Core", "{file} is not a GGUF file (it is too short)."),
                                  file=path.name),
                                hint=QT_TRANSLATE_NOOP("Core", "Only .gguf model files can be used."))
            # A failure is raised after the map is closed: its traceback holds views of the map,
            # which must be gone before the map can close.
            failure: GGUFError | None = None
            result: Any = None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                view = memoryview(mm)
                try:
                    result = _run_fixed(view, only_key, digest)
                except NeedMoreData:
                    failure = GGUFError(T(_ENDS_IN_HEADER, file=path.name), hint=_DOWNLOAD_AGAIN)
                except GGUFError as exc:
                    if isinstance(exc.message, Text) and exc.message.template == _NOT_GGUF:
                        failure = GGUFError(T(_NOT_GGUF_NAMED, file=path.name,
                                              magic=exc.message.args["magic"]), hint=exc.hint)
                    else:
                        failure = GGUFError(T(_REFUSED, file=path.name, reason=exc.message), hint=exc.hint)
                finally:
                    view.release()
            if failure is not None:
                raise failure
    except NotRegularFileError as exc:
        raise GGUFError(exc.message, hint=exc.hint) from exc
    except OSError as exc:
        raise _cannot_read(path, exc) from exc
    return result, size


def read_header(path: Path, *, digest: Collection[str] = ()) -> GGUFMetadata:
    """A local GGUF header, read in place (``mmap``) with the bounded parser, and checked
    complete. Long arrays are skipped, not built: ``gguf.GGUFReader`` takes ~20 s on Gemma's
    262k-token vocabulary on 2 cores, this ~0.12 s; and a hostile header is a clear
    :class:`GGUFError` where ``GGUFReader`` raises RecursionError or OverflowError. What the
    library, ``models inspect``, the engine pool's memory check, the decode ceiling and the draft
    model check read.

    Args:
        path: The file (a shard of a split set is read on its own).
        digest: Keys of arrays to hash while they are skipped (``tokenizer.ggml.tokens``: is a
            draft's vocabulary the model's?); in :attr:`GGUFMetadata.digests`.

    Raises:
        GGUFError: Not a regular file, not a GGUF file, a corrupt header, or a file cut short.
    """
    meta, size = _mapped(path, None, digest)
    check_complete(meta, size, path.name)
    return meta  # type: ignore[no-any-return]


def read_string_field(path: Path, key: str) -> str | None:
    """One string value of a local GGUF header, or None when the key is absent.

    Walks the header in place (``mmap``), skipping long arrays without decoding them.

    Raises:
        GGUFError: Not a regular file, not a GGUF file, or the header is damaged or cut short.
    """
    value, _ = _mapped(path, key)
    return value if isinstance(value, str) else None


def metadata_summary(meta: GGUFMetadata, *, drop: Sequence[str] = ()) -> dict[str, Any]:
    """JSON-friendly key/values (long arrays shown as ``"<array of N>"``)."""
    out: dict[str, Any] = {}
    for k, v in meta.fields.items():
        if k in drop:
            continue
        if isinstance(v, LongArray):
            out[k] = f"<array of {v.count}>"
        elif isinstance(v, float) and not math.isfinite(v):
            out[k] = str(v)  # JSON has no NaN or Infinity: `models inspect --json` must stay valid JSON
        elif isinstance(v, list):
            out[k] = [str(x) if isinstance(x, float) and not math.isfinite(x) else x for x in v]
        else:
            out[k] = v
    return out
