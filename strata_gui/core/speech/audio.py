"""Audio for the speech engine: what a file is, and cutting long recordings into pieces.

whisper.cpp's server decodes WAV, MP3 and FLAC itself (miniaudio, built into it), at any sample
rate and channel count, and resamples to the 16 kHz mono its models hear; Strata therefore sends
those as they are and converts nothing it does not have to. What Strata does itself:

- it tells audio from everything else by the file's first bytes (a renamed PDF is refused with a
  clear error before any engine starts), and names the formats the engine cannot read;
- it cuts a long WAV into pieces of :data:`PIECE_SECONDS`, read one at a time (a 3-hour file is
  never held in memory whole), so a transcription shows progress per piece and can be cancelled
  between pieces;
- it wraps raw PCM (the microphone, or a file the GUI decoded with QtMultimedia) as a WAV.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from strata_gui.core.base.errors import SpeechError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.files import NotRegularFileError, open_regular

WHISPER_RATE = 16_000
"""The sample rate whisper models hear (the engine resamples anything else to it)."""
PIECE_SECONDS = 120.0
"""Length of one piece of a long recording (progress and Cancel act between pieces)."""
ENGINE_FORMATS = frozenset({"wav", "mp3", "flac"})
"""What whisper-server's built-in decoder reads."""
_SNIFF_BYTES = 16


@dataclass(frozen=True)
class AudioClip:
    """Raw PCM audio: little-endian signed integers, channels interleaved.

    Attributes:
        pcm: The samples.
        rate: Samples per second (per channel).
        channels: 1 (mono) or more.
        sample_width: Bytes per sample (2 for 16-bit).
    """

    pcm: bytes
    rate: int = WHISPER_RATE
    channels: int = 1
    sample_width: int = 2

    @property
    def frame_bytes(self) -> int:
        return max(1, self.channels * self.sample_width)

    @property
    def seconds(self) -> float:
        return len(self.pcm) / self.frame_bytes / max(self.rate, 1)

    def to_wav(self) -> bytes:
        """The clip as a WAV file's bytes."""
        out = io.BytesIO()
        with wave.open(out, "wb") as w:
            w.setnchannels(self.channels)
            w.setsampwidth(self.sample_width)
            w.setframerate(self.rate)
            w.writeframes(self.pcm)
        return out.getvalue()

    def pieces(self, seconds: float = PIECE_SECONDS) -> Iterator[AudioClip]:
        """The clip cut every ``seconds`` (at whole frames)."""
        step = max(1, int(seconds * self.rate)) * self.frame_bytes
        for start in range(0, max(len(self.pcm), 1), step):
            yield AudioClip(self.pcm[start:start + step], self.rate, self.channels, self.sample_width)


def sniff_format(head: bytes) -> str | None:
    """The audio container a file's first bytes announce ("wav", "mp3", "flac", "ogg", "mp4",
    "webm"), else None (not audio)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    if head[:4] == b"OggS":
        return "ogg"
    if head[4:8] == b"ftyp":
        return "mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm"
    return None


def audio_format(path: Path) -> str:
    """The audio format of ``path``.

    Raises:
        SpeechError: the file cannot be read, is no regular file (a pipe such as ``/dev/stdin``
            or a device: reading it could block forever), or it is not audio.
    """
    try:
        with open_regular(path) as f:
            head = f.read(_SNIFF_BYTES)
    except NotRegularFileError as exc:
        raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "{path} is not a regular file (a pipe, device or folder "
                                                      "cannot be transcribed)."), path=str(path)),
                          hint=QT_TRANSLATE_NOOP("Core", "Save the recording to a file first, then transcribe "
                                                         "that file."),
                          details=exc.message) from exc
    except OSError as exc:
        raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "Could not read {path}: {reason}"), path=str(path),
                            reason=exc.strerror or str(exc))) from exc
    found = sniff_format(head)
    if found is None:
        raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "{name} is not audio."), name=path.name),
                          hint=QT_TRANSLATE_NOOP("Core", "Choose a recording: WAV, MP3 or FLAC (other formats: "
                                                         "drop them on the chat, which converts them)."))
    return found


@dataclass(frozen=True)
class WavInfo:
    """What a WAV file's header says."""

    rate: int
    channels: int
    sample_width: int
    frames: int

    @property
    def seconds(self) -> float:
        return self.frames / max(self.rate, 1)


def wav_info(path: Path) -> WavInfo | None:
    """The header of a PCM WAV file; None for one Python's reader does not take (float samples,
    some extensible headers): the engine still reads those whole."""
    try:
        with open_regular(path) as f, wave.open(f, "rb") as w:
            return WavInfo(w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes())
    except (wave.Error, EOFError):
        return None


def wav_pieces(path: Path, seconds: float = PIECE_SECONDS) -> Iterator[AudioClip]:
    """A PCM WAV file in pieces of ``seconds``, read one piece at a time."""
    with open_regular(path) as f, wave.open(f, "rb") as w:
        rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        frames = max(1, int(seconds * rate))
        while True:
            pcm = w.readframes(frames)
            if not pcm:
                return
            yield AudioClip(pcm, rate, channels, width)
