"""Speech models: whisper.cpp's GGML files (``ggml-tiny.en.bin``, ``ggml-large-v3-q5_0.bin``) told
by their header, not their name.

A whisper.cpp model starts with the GGML magic (``0x67676d6c``, "ggml") and eleven 32-bit
hyperparameters (vocabulary, audio context and width, heads, layers, text context ..., mel bands,
file type). Strata reads them to list the file as a speech model with its size class; a ``.bin``
that is anything else is not listed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from strata_gui.core.models.hub_files import QuantEntry, RemoteFile

GGML_MAGIC = 0x67676D6C
_HEADER = struct.Struct("<I11i")
# The size class whisper.cpp itself names from the encoder's depth (its model loader).
_SIZES = {4: "tiny", 6: "base", 12: "small", 24: "medium", 32: "large"}


@dataclass(frozen=True)
class WhisperHeader:
    """A whisper.cpp model's hyperparameters.

    Attributes:
        n_vocab: Tokens (51864: English-only, 51865: multilingual, 51866: large-v3).
        audio_layers: Encoder depth (4 tiny … 32 large).
        n_mels: Mel bands (80; 128 for large-v3).
        ftype: Weight type (0 f32, 1 f16, quantised types above).
    """

    n_vocab: int
    audio_ctx: int
    audio_state: int
    audio_layers: int
    text_ctx: int
    text_state: int
    n_mels: int
    ftype: int

    @property
    def size_class(self) -> str:
        """"tiny", "base", "small", "medium", "large" (else "whisper")."""
        return _SIZES.get(self.audio_layers, "whisper")

    @property
    def multilingual(self) -> bool:
        return self.n_vocab >= 51865


def parse_whisper_header(head: bytes) -> WhisperHeader | None:
    """The hyperparameters in a file's first 48 bytes; None unless they are a whisper model's."""
    if len(head) < _HEADER.size:
        return None
    magic, n_vocab, a_ctx, a_state, _a_head, a_layer, t_ctx, t_state, _t_head, _t_layer, n_mels, ftype = (
        _HEADER.unpack_from(head))
    plausible = (magic == GGML_MAGIC and 50_000 <= n_vocab <= 52_000 and a_state == t_state and a_state > 0
                 and 0 < a_ctx <= 10_000 and 0 < t_ctx <= 10_000 and 0 < a_layer <= 128 and n_mels in (80, 128)
                 and 0 <= ftype % 1000 < 64)
    if not plausible:
        return None
    return WhisperHeader(n_vocab, a_ctx, a_state, a_layer, t_ctx, t_state, n_mels, ftype)


def whisper_header(path: Path) -> WhisperHeader | None:
    """The header of ``path`` when it is a whisper.cpp model (None otherwise, or unreadable)."""
    try:
        with path.open("rb") as f:
            return parse_whisper_header(f.read(_HEADER.size))
    except OSError:
        return None


def is_whisper_file_name(name: str) -> bool:
    """A file name whisper.cpp's repos use for models (``ggml-*.bin``), before its header is read."""
    low = name.lower().rsplit("/", 1)[-1]
    return low.endswith(".bin") and low.startswith("ggml-") and "encoder" not in low and "silero" not in low


SPEECH_OVERHEAD_BYTES = 200 * 1024 * 1024
"""What a whisper model needs beyond its file: the mel and KV buffers and compute graphs (whisper.cpp
reports about 100-200 MB for the small sizes)."""


def is_speech_repo(files: list[RemoteFile]) -> bool:
    """A hub repo of whisper.cpp models: it holds ``ggml-*.bin`` files and no GGUF."""
    names = [PurePosixPath(f.path).name for f in files]
    return any(is_whisper_file_name(n) for n in names) and not any(n.lower().endswith(".gguf") for n in names)


def speech_variants(files: list[RemoteFile]) -> tuple[list[QuantEntry], list[RemoteFile]]:
    """The whisper model files of a repo (smallest first, labelled ``base.en``, ``large-v3-q5_0``)
    and the rest."""
    from strata_gui.core.models.hub_files import QuantEntry

    variants: list[QuantEntry] = []
    others: list[RemoteFile] = []
    for f in files:
        name = PurePosixPath(f.path).name
        if is_whisper_file_name(name) and f.size > 0:
            variants.append(QuantEntry(name[len("ggml-"):-len(".bin")], name, (f,)))
        else:
            others.append(f)
    variants.sort(key=lambda q: q.size)
    return variants, others
