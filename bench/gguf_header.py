"""GGUF header parse speed on a header with a lot of metadata, read in 2 MiB pieces.

Run: ``.venv/bin/python bench/gguf_header.py [--mb 32] [--rounds 3]``

Writes two GGUFs whose headers hold ``--mb`` MB of metadata each: ``vocab`` (one long string
array, as a big vocabulary is, and 2000 short keys) and ``arrays`` (many keys of 256-item
arrays, which are kept and built), then times on each:

- ``incremental``: reads 2 MiB at a time and feeds each piece to one :class:`HeaderParser` (how a
  remote header is read, one Range reply at a time);
- ``restart``: the driver Strata used before (parse from byte 0 again after every 2 MiB piece),
  built on the same parser, to show what restarting costs;
- ``read_header``: the whole file mapped, parsed in one pass (the floor).

The ratio restart/incremental is what the incremental parser saves; it grows with the header.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata_gui.core.models.gguf_meta import HeaderParser, NeedMoreData, parse_prefix, read_header

CHUNK = 2 * 1024 * 1024


def _str(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def write_header(path: Path, mb: int, shape: str = "vocab") -> int:
    """A GGUF (no tensors) with ~``mb`` MB of metadata of one ``shape``; returns its size."""
    kvs = [_str(b"general.architecture") + struct.pack("<I", 8) + _str(b"llama")]
    if shape == "vocab":
        tokens = [b"tok%08d" % i for i in range(mb * 1024 * 1024 // 19)]
        kvs.append(_str(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(tokens))
                   + b"".join(_str(t) for t in tokens))
        kvs += [_str(b"x.key%05d" % i) + struct.pack("<II", 4, i) for i in range(2000)]
    else:
        arr = struct.pack("<IIQ", 9, 0, 256) + bytes(range(256))
        kvs += [_str(b"x.k%07d" % i) + arr for i in range(mb * 1024 * 1024 // 290)]
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
    data += b"\0" * (-len(data) % 32)
    path.write_bytes(data)
    return len(data)


def incremental(path: Path) -> object:
    parser = HeaderParser()
    with open(path, "rb") as fh:
        while (data := fh.read(max(CHUNK, parser.needed - parser.received))):
            meta = parser.feed(data)
            if meta is not None:
                return meta
    raise SystemExit(f"{path} ends inside its header")


def restart(path: Path) -> object:
    buf = bytearray()
    with open(path, "rb") as fh:
        while True:
            try:
                return parse_prefix(bytes(buf))
            except NeedMoreData as more:
                data = fh.read(max(more.needed, len(buf) + CHUNK) - len(buf))
                if not data:
                    raise
                buf += data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("vocab", "arrays"):
            path = Path(tmp) / f"{shape}.gguf"
            size = write_header(path, args.mb, shape)
            print(f"{shape}: header {size / 1e6:.1f} MB, read in {CHUNK // (1024 * 1024)} MiB pieces, "
                  f"median of {args.rounds}")
            results = {}
            for name, fn in (("incremental (HeaderParser)", incremental), ("restart from byte 0", restart),
                             ("read_header (mapped, one pass)", read_header)):
                times = []
                for _ in range(args.rounds):
                    t0 = time.perf_counter()
                    fn(path)
                    times.append(time.perf_counter() - t0)
                results[name] = statistics.median(times)
                print(f"  {name:34s} {results[name]:7.2f} s")
            ratio = results["restart from byte 0"] / results["incremental (HeaderParser)"]
            print(f"  restart / incremental: {ratio:.1f}x")

if __name__ == "__main__":
    main()
