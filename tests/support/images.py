"""Real PNG files for vision tests, written with zlib alone (no imaging library needed)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path


def png_bytes(width: int = 48, height: int = 40, seed: int = 0) -> bytes:
    """An RGB PNG of a colour gradient (``seed`` shifts the colours, so images differ)."""
    rows = b"".join(
        b"\x00" + b"".join(bytes(((x * 8 + seed) % 256, (y * 8 + 3 * seed) % 256, 128)) for x in range(width))
        for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def write_png(path: Path, width: int = 48, height: int = 40, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(width, height, seed))
    return path
