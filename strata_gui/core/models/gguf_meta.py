"""GGUF header metadata: read from a local file (``gguf.GGUFReader``) or from a byte prefix.

A remote model's header is read with HTTP Range requests; ``GGUFReader`` needs the whole file,
so :func:`parse_prefix` is a small streaming parser that either returns the metadata or raises
:class:`NeedMoreData` saying how many bytes it needs. Both paths produce the same
:class:`GGUFMetadata`, which the tests compare on the real test models.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strata_gui.core.errors import GGUFError

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
# Arrays longer than this (token lists, merges, scores) are kept as a summary only.
MAX_KEPT_ARRAY = 256

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
        from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

        try:
            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(self.ggml_type)]
        except (ValueError, KeyError):
            return 0
        return self.n_elements * size // block


@dataclass(frozen=True)
class GGUFMetadata:
    """What a GGUF header says about a model.

    Attributes:
        version: GGUF format version.
        fields: Every key/value; long arrays summarised as :class:`LongArray`.
        tensors: Tensor infos in file order.
        data_offset: Where tensor data starts (after alignment padding).
    """

    version: int
    fields: Mapping[str, Any]
    tensors: tuple[TensorInfo, ...]
    data_offset: int
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


def _keep(value: Any, item_type: int) -> Any:
    if isinstance(value, list) and len(value) > MAX_KEPT_ARRAY:
        return LongArray(item_type, len(value))
    return value


# --------------------------------------------------------------------------- local (GGUFReader)


def read_local(path: Path) -> GGUFMetadata:
    """Read a local GGUF file's header with ``gguf.GGUFReader`` and check it is complete.

    Raises:
        GGUFError: Not a GGUF file, a corrupt header, or a file cut short (with the reason).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
        size = path.stat().st_size
    except OSError as exc:
        raise GGUFError(f"Cannot read {path.name}: {exc.strerror or exc}", hint="Check the file exists and is readable.") from exc
    if head[:4] != GGUF_MAGIC:
        raise GGUFError(f"{path.name} is not a GGUF file (it starts with {head[:4]!r}, not b'GGUF').",
                        hint="Only .gguf model files can be used; convert or download a GGUF version.")
    import gguf  # heavy import (numpy): only when a file is actually read

    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, IndexError, KeyError, struct.error, OSError, UnicodeDecodeError) as exc:
        # GGUFReader maps the whole file; a short file fails while building tensor views.
        raise GGUFError(f"{path.name} is damaged or incomplete: {exc}",
                        hint="Download the file again.") from exc
    fields: dict[str, Any] = {}
    version = 0
    for name, fld in reader.fields.items():
        if name.startswith("GGUF."):
            if name == "GGUF.version":
                version = int(fld.contents())
            continue
        main = int(fld.types[0]) if fld.types else -1
        value = fld.contents()
        if main == _ARRAY:
            sub = int(fld.types[-1]) if len(fld.types) > 1 else -1
            count = len(fld.data)
            fields[name] = LongArray(sub, count) if count > MAX_KEPT_ARRAY else list(value)
        else:
            fields[name] = value
    tensors = tuple(
        TensorInfo(t.name, tuple(int(d) for d in t.shape.tolist()), int(t.tensor_type), int(t.data_offset) - reader.data_offset)
        for t in reader.tensors
    )
    meta = GGUFMetadata(version, fields, tensors, int(reader.data_offset))
    if meta.required_size > size:
        raise GGUFError(
            f"{path.name} is incomplete: {size} bytes of the {meta.required_size} its header describes.",
            hint="The download probably stopped; download the file again.",
        )
    return meta


# --------------------------------------------------------------------------- streaming prefix parser


class NeedMoreData(Exception):
    """The prefix ends before the header does; ``needed`` is a lower bound of the total bytes."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


class _Cursor:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        end = self.pos + n
        if end > len(self.data):
            raise NeedMoreData(end)
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def string(self) -> str:
        n = self.unpack("<Q")
        if n > 1 << 30:
            raise GGUFError(f"Corrupt GGUF header: a string claims {n} bytes.", hint="Download the file again.")
        try:
            return bytes(self.take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GGUFError("Corrupt GGUF header: a string is not valid UTF-8.", hint="Download the file again.") from exc

    def _skip_strings(self, count: int) -> None:
        data, pos, unpack = self.data, self.pos, struct.unpack_from
        end = len(data)
        for _ in range(count):
            if pos + 8 > end:
                raise NeedMoreData(pos + 8)
            pos += 8 + unpack("<Q", data, pos)[0]
        if pos > end:
            raise NeedMoreData(pos)
        self.pos = pos

    def value(self, vtype: int) -> Any:
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            sub = self.unpack("<I")
            count = self.unpack("<Q")
            if count > 1 << 32:
                raise GGUFError(f"Corrupt GGUF header: an array claims {count} items.", hint="Download the file again.")
            if sub in _SCALAR_FORMATS and count > MAX_KEPT_ARRAY:
                # Skip long numeric arrays in one step (scores, token types).
                self.take(struct.calcsize(_SCALAR_FORMATS[sub]) * count)
                return LongArray(sub, count)
            if sub == _STRING and count > MAX_KEPT_ARRAY:
                # Skip long string arrays (tokens, merges) without decoding them: a 262k-token
                # vocabulary with its merges is ~800k strings.
                self._skip_strings(count)
                return LongArray(sub, count)
            items = [self.value(sub) for _ in range(count)]
            return _keep(items, sub)
        fmt = _SCALAR_FORMATS.get(vtype)
        if fmt is None:
            raise GGUFError(f"Corrupt GGUF header: unknown value type {vtype}.", hint="Download the file again.")
        return self.unpack(fmt)


def parse_prefix(data: bytes | memoryview) -> GGUFMetadata:
    """Parse the GGUF header from the first bytes of a file.

    Raises:
        NeedMoreData: ``data`` ends inside the header (retry with at least ``needed`` bytes).
        GGUFError: Not a GGUF file or a corrupt header.
    """
    cur = _Cursor(data)
    magic = bytes(cur.take(4))
    if magic != GGUF_MAGIC:
        raise GGUFError(f"Not a GGUF file (it starts with {magic!r}, not b'GGUF').",
                        hint="Only .gguf model files can be used.")
    version = cur.unpack("<I")
    if version not in (2, 3):
        raise GGUFError(f"Unsupported GGUF version {version}.", hint="Update Strata or use a newer conversion of the model.")
    n_tensors = cur.unpack("<Q")
    n_kv = cur.unpack("<Q")
    if n_tensors > 1 << 24 or n_kv > 1 << 24:
        raise GGUFError("Corrupt GGUF header: impossible tensor or key count.", hint="Download the file again.")
    fields: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        vtype = cur.unpack("<I")
        fields[key] = cur.value(vtype)
    tensors = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.unpack("<I")
        if n_dims > 8:
            raise GGUFError(f"Corrupt GGUF header: tensor {name} has {n_dims} dimensions.", hint="Download the file again.")
        dims = tuple(int(cur.unpack("<Q")) for _ in range(n_dims))
        ggml_type = cur.unpack("<I")
        offset = cur.unpack("<Q")
        tensors.append(TensorInfo(name, dims, int(ggml_type), int(offset)))
    alignment = fields.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(f"Corrupt GGUF header: alignment {alignment!r}.", hint="Download the file again.")
    pos = cur.pos
    data_offset = pos + (-pos % alignment)
    return GGUFMetadata(int(version), fields, tuple(tensors), data_offset)


def check_complete(meta: GGUFMetadata, size: int, label: str) -> None:
    """Raise GGUFError when a file of ``size`` bytes is shorter than its header says."""
    if meta.required_size > size:
        raise GGUFError(
            f"{label} is incomplete: {size} bytes of the {meta.required_size} its header describes.",
            hint="The download probably stopped; download the file again.",
        )


def read_header(path: Path) -> GGUFMetadata:
    """A local GGUF header, read in place (``mmap``) with the streaming parser, and checked
    complete: the same answer as :func:`read_local` in a fraction of the time (long arrays are
    skipped, not built: ``gguf.GGUFReader`` takes ~20 s on Gemma's 262k-token vocabulary on 2 cores,
    this ~0.3 s). What the engine pool's memory check reads before every load.

    Raises:
        GGUFError: Not a GGUF file, a corrupt header, or a file cut short (with the reason).
    """
    import mmap

    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 4:
                raise GGUFError(f"{path.name} is not a GGUF file (it is too short).",
                                hint="Only .gguf model files can be used.")
            # A failure is raised after the map is closed: its traceback holds views of the map,
            # which must be gone before the map can close.
            failure: GGUFError | None = None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                view = memoryview(mm)
                try:
                    magic = bytes(view[:4])
                    if magic != GGUF_MAGIC:
                        failure = GGUFError(f"{path.name} is not a GGUF file (it starts with {magic!r}, not b'GGUF').",
                                            hint="Only .gguf model files can be used; convert or download a GGUF "
                                                 "version.")
                    else:
                        meta = parse_prefix(view)
                except NeedMoreData:
                    failure = GGUFError(f"{path.name} is incomplete: it ends inside its header.",
                                        hint="Download the file again.")
                except GGUFError as exc:
                    failure = GGUFError(f"{path.name} is damaged or incomplete: {exc.message}", hint=exc.hint)
                finally:
                    view.release()
            if failure is not None:
                raise failure
    except OSError as exc:
        raise GGUFError(f"Cannot read {path.name}: {exc.strerror or exc}",
                        hint="Check the file exists and is readable.") from exc
    check_complete(meta, size, path.name)
    return meta


def read_prefix_file(path: Path, *, chunk: int = 2 * 1024 * 1024, limit: int = 256 * 1024 * 1024) -> GGUFMetadata:
    """Read a local header with the streaming parser (reads only the header's bytes)."""
    buf = bytearray()
    try:
        with open(path, "rb") as fh:
            while True:
                try:
                    return parse_prefix(bytes(buf))
                except GGUFError as exc:
                    raise GGUFError(f"{path.name}: {exc.message}", hint=exc.hint) from exc
                except NeedMoreData as more:
                    want = max(more.needed, len(buf) + chunk)
                    if want > limit:
                        raise GGUFError(f"{path.name}: the GGUF header is larger than {limit} bytes.") from None
                    data = fh.read(want - len(buf))
                    if not data:
                        raise GGUFError(f"{path.name} is incomplete: it ends inside its header.",
                                        hint="Download the file again.") from None
                    buf += data
    except OSError as exc:
        raise GGUFError(f"Cannot read {path.name}: {exc.strerror or exc}") from exc


def read_string_field(path: Path, key: str) -> str | None:
    """One string value of a local GGUF header, or None when the key is absent.

    Walks the header in place (``mmap``), skipping other values without decoding them: a
    150k-token vocabulary (tokens and merges are string arrays) costs ~0.1 s instead of the
    ~1 s :func:`read_prefix_file` takes to build every string.

    Raises:
        GGUFError: Not a GGUF file, or the header is damaged or cut short.
    """
    import mmap

    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return _find_string(mm, key, path.name)
    except ValueError as exc:  # mmap of an empty file
        raise GGUFError(f"{path.name} is not a GGUF file (it is empty).") from exc
    except OSError as exc:
        raise GGUFError(f"Cannot read {path.name}: {exc.strerror or exc}") from exc


def _find_string(mm: Any, key: str, label: str) -> str | None:
    unpack = struct.unpack_from
    size = len(mm)
    try:
        if mm[:4] != GGUF_MAGIC:
            raise GGUFError(f"{label} is not a GGUF file (it starts with {bytes(mm[:4])!r}, not b'GGUF').",
                            hint="Only .gguf model files can be used.")
        n_kv = unpack("<Q", mm, 16)[0]
        pos = 24
        wanted = key.encode()
        for _ in range(n_kv):
            n = unpack("<Q", mm, pos)[0]
            name = mm[pos + 8:pos + 8 + n]
            pos += 8 + n
            vtype = unpack("<I", mm, pos)[0]
            pos += 4
            if name == wanted and vtype == _STRING:
                n = unpack("<Q", mm, pos)[0]
                if pos + 8 + n > size:
                    raise struct.error("string past the end")
                return bytes(mm[pos + 8:pos + 8 + n]).decode("utf-8")
            pos = _skip_value(mm, pos, vtype)
            if pos > size:
                raise struct.error("value past the end")
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise GGUFError(f"{label} is damaged or incomplete: its header cannot be read ({exc}).",
                        hint="Download the file again.") from exc
    return None


def _skip_value(mm: Any, pos: int, vtype: int) -> int:
    if vtype == _STRING:
        return pos + 8 + int(struct.unpack_from("<Q", mm, pos)[0])
    if vtype == _ARRAY:
        sub, count = struct.unpack_from("<IQ", mm, pos)
        pos += 12
        if sub in _SCALAR_FORMATS:
            return pos + struct.calcsize(_SCALAR_FORMATS[sub]) * int(count)
        for _ in range(count):
            pos = _skip_value(mm, pos, sub)
        return pos
    fmt = _SCALAR_FORMATS.get(vtype)
    if fmt is None:
        raise GGUFError(f"Corrupt GGUF header: unknown value type {vtype}.", hint="Download the file again.")
    return pos + struct.calcsize(fmt)


def metadata_summary(meta: GGUFMetadata, *, drop: Sequence[str] = ()) -> dict[str, Any]:
    """JSON-friendly key/values (long arrays shown as ``"<array of N>"``)."""
    out: dict[str, Any] = {}
    for k, v in meta.fields.items():
        if k in drop:
            continue
        out[k] = f"<array of {v.count}>" if isinstance(v, LongArray) else v
    return out
