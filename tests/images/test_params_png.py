"""The settings text in a PNG: written with the standard library, read back by Strata and by other tools."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from strata_gui.core.base.errors import ImageError
from strata_gui.core.images import Gallery, ImageRequest, parse_parameters, read_settings
from strata_gui.core.images.png import image_size, read_text, with_text


def tiny_png(width: int = 2, height: int = 1) -> bytes:
    """A real PNG (8-bit RGB) made the long way, as an encoder writes it."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    raw = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_a1111_text_round_trips_with_negative_prompt_and_multiline_prompt() -> None:
    req = ImageRequest("a cat\non a chair", negative_prompt="blurry, dark", width=768, height=512, steps=30,
                       cfg_scale=6.5, sampler="dpm++2m", seed=99)
    text = req.parameters_text(model="sd15.gguf", engine="ROCm master-929-3f8527a")
    assert text.splitlines()[-1].startswith("Steps: 30, Sampler: dpm++2m, CFG scale: 6.5, Seed: 99, Size: 768x512")
    parsed = parse_parameters(text)
    assert parsed.request == req and parsed.model == "sd15.gguf" and parsed.engine == "ROCm master-929-3f8527a"


def test_reads_another_tools_parameters_and_keeps_unknown_keys() -> None:
    text = ("masterpiece, castle\nNegative prompt: lowres\n"
            "Steps: 25, Sampler: Euler a, Schedule type: Karras, CFG scale: 7, Seed: 123, Size: 512x640, "
            "Model hash: abc123, Model: v1-5")
    parsed = parse_parameters(text)
    assert (parsed.request.prompt, parsed.request.negative_prompt) == ("masterpiece, castle", "lowres")
    assert (parsed.request.width, parsed.request.height, parsed.request.seed) == (512, 640, 123)
    assert ("Schedule type", "Karras") in parsed.extra and parsed.model == "v1-5"
    with pytest.raises(ImageError, match="no generation settings"):
        parse_parameters("just a caption")


def test_text_chunks_survive_and_non_latin_prompts_use_itxt(tmp_path: Path) -> None:
    png = with_text(tiny_png(), {"parameters": "一只猫\nSteps: 4, Sampler: euler, CFG scale: 7, Seed: 1, Size: 64x64",
                                 "Software": "Strata"})
    assert image_size(png) == (2, 1)
    text = read_text(png)
    assert text["Software"] == "Strata" and text["parameters"].startswith("一只猫")
    assert b"iTXt" in png and b"tEXt" in png
    # Replacing a key leaves one chunk for it.
    again = with_text(png, {"Software": "Strata 2"})
    assert read_text(again)["Software"] == "Strata 2" and again.count(b"Software") == 1


def test_gallery_saves_reads_back_and_lists_newest_first(tmp_path: Path) -> None:
    clock = iter([1000.0, 2000.0])
    gallery = Gallery(tmp_path / "images", clock=lambda: next(clock))
    req = ImageRequest("a red fox", width=64, height=64, steps=2, seed=10, count=2)
    first = gallery.save(tiny_png(), req, seed=10, model="m.gguf", engine="CPU", seconds=1.5)
    second = gallery.save(tiny_png(), req, seed=11, model="m.gguf", engine="CPU", seconds=1.5)
    assert [g.request.seed for g in gallery.images()] == [11, 10]
    back = gallery.read(second.path)
    assert back.request.count == 1 and back.request.seed == 11 and back.engine == "CPU" and back.seconds == 1.5
    assert read_settings(first.path).request.seed == 10  # the A1111 text other tools read
    (tmp_path / "images" / "not-a-png.png").write_bytes(b"nope")
    assert len(gallery.images()) == 2  # unreadable files are skipped, never fail the gallery
