"""Multimodal projectors (``mmproj-*.gguf``): how they are told apart from models and which one to take.

A vision model on the hub is a text model plus a CLIP-style projector file that llama-server
loads with ``--mmproj``. The projector is not a quant of its own: it goes with every quant.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# When a repo ships several projectors, the one llama.cpp's own conversions default to comes first;
# they all work, so this only saves memory (F32 doubles it).
_PROJECTOR_PREFERENCE = ("f16", "bf16", "q8_0", "f32")


def is_projector(name: str) -> bool:
    """Whether a file name is a multimodal projector (``mmproj-*.gguf``), not a model."""
    low = PurePosixPath(name).name.lower()
    return low.endswith(".gguf") and low.startswith("mmproj")


def projector_rank(name: str) -> tuple[int, str]:
    """Sort key: preferred precision first, then by name (stable choice among equals)."""
    low = PurePosixPath(name).name.lower().removesuffix(".gguf")
    for i, tag in enumerate(_PROJECTOR_PREFERENCE):
        if low.endswith(tag) or f"-{tag}-" in low or f"_{tag}_" in low or f"-{tag}." in low:
            return i, low
    return len(_PROJECTOR_PREFERENCE), low
