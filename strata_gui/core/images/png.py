"""PNG text chunks (``tEXt``) with the standard library: write the generation parameters into an
image and read them back, the way AUTOMATIC1111's web UI and most image tools do (``parameters``).
"""

from __future__ import annotations

import struct
import zlib

from strata_gui.core.base.errors import ImageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    if not data.startswith(PNG_SIGNATURE):
        raise ImageError(QT_TRANSLATE_NOOP("Core", "The file is not a PNG image."))
    out: list[tuple[bytes, bytes]] = []
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length:
            raise ImageError(QT_TRANSLATE_NOOP("Core", "The PNG image is truncated."))
        out.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            break
    return out


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def read_text(data: bytes) -> dict[str, str]:
    """Every ``tEXt`` (Latin-1) and ``iTXt`` (UTF-8, uncompressed or zlib) entry of a PNG."""
    out: dict[str, str] = {}
    for kind, body in _chunks(data):
        if kind == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"iTXt" and b"\0" in body:
            key, rest = body.split(b"\0", 1)
            if len(rest) < 2:
                continue
            compressed, rest = rest[0], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _tkey, _, text = rest.partition(b"\0")
            try:
                out[key.decode("latin-1")] = (zlib.decompress(text) if compressed else text).decode("utf-8")
            except (zlib.error, UnicodeDecodeError):
                continue
    return out


def with_text(data: bytes, entries: dict[str, str]) -> bytes:
    """The PNG with ``entries`` as text chunks right after ``IHDR`` (same keys replaced).

    Text that Latin-1 cannot hold (a prompt in Chinese) goes in an ``iTXt`` chunk (UTF-8), which
    readers of ``parameters`` accept as well.
    """
    chunks = [(k, b) for k, b in _chunks(data)
              if not (k in (b"tEXt", b"iTXt") and b"\0" in b and b.split(b"\0", 1)[0].decode("latin-1") in entries)]
    if not chunks or chunks[0][0] != b"IHDR":
        raise ImageError(QT_TRANSLATE_NOOP("Core", "The PNG image has no header."))
    added = []
    for key, value in entries.items():
        try:
            added.append(_chunk(b"tEXt", key.encode("latin-1") + b"\0" + value.encode("latin-1")))
        except UnicodeEncodeError:
            added.append(_chunk(b"iTXt", key.encode("latin-1") + b"\0\0\0\0\0" + value.encode("utf-8")))
    body = [_chunk(*chunks[0]), *added, *(_chunk(k, b) for k, b in chunks[1:])]
    return PNG_SIGNATURE + b"".join(body)


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the PNG header."""
    chunks = _chunks(data)
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) < 8:
        raise ImageError(QT_TRANSLATE_NOOP("Core", "The PNG image has no header."))
    width, height = struct.unpack(">II", chunks[0][1][:8])
    return int(width), int(height)
