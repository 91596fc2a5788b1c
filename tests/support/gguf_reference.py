"""The reference GGUF reader the tests compare Strata's own with: ``gguf.GGUFReader``.

llama.cpp maintains gguf-py; Strata reads headers with its own bounded, streaming parser
(``strata_gui.core.models.gguf_meta``) and does not ship gguf or numpy. The tests hold that
parser to what gguf reads from the same files (fields, tensors, data offset), so this is the
test-only side of that comparison.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import GGUFError
from strata_gui.core.models.gguf_meta import MAX_KEPT_ARRAY, GGUFMetadata, LongArray, TensorInfo

_ARRAY = 9


def read_local(path: Path) -> GGUFMetadata:
    """A local GGUF file's header as ``gguf.GGUFReader`` reads it, in Strata's shape (long arrays
    summarised as :class:`LongArray`), checked complete.

    Raises:
        GGUFError: Not a GGUF file, a corrupt header, or a file cut short (with the reason).
    """
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[:4] != b"GGUF":
        raise GGUFError(f"{path.name} is not a GGUF file (it starts with {head[:4]!r}, not b'GGUF').")
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, IndexError, KeyError, struct.error, OSError, UnicodeDecodeError, RecursionError,
            OverflowError, MemoryError) as exc:
        # GGUFReader maps the whole file; a short file fails while building tensor views.
        raise GGUFError(f"{path.name} is damaged or incomplete: {exc}") from exc
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
        TensorInfo(t.name, tuple(int(d) for d in t.shape.tolist()), int(t.tensor_type),
                   int(t.data_offset) - reader.data_offset)
        for t in reader.tensors
    )
    meta = GGUFMetadata(version, fields, tensors, int(reader.data_offset))
    if meta.required_size > size:
        raise GGUFError(f"{path.name} is incomplete: {size} bytes of the {meta.required_size} its header "
                        "describes.")
    return meta


def vocabulary_digest(path: Path, key: str = "tokenizer.ggml.tokens") -> str:
    """SHA-256 of a string array as ``GGUFReader`` reads it, each string as its 8-byte
    little-endian length and its bytes: what Strata's parser computes while it skips the array."""
    import hashlib

    import gguf

    fld = gguf.GGUFReader(str(path)).fields[key]
    digest = hashlib.sha256()
    for index in fld.data:
        raw = bytes(fld.parts[index])
        digest.update(struct.pack("<Q", len(raw)) + raw)
    return digest.hexdigest()
