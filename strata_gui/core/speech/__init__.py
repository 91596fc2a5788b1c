"""Speech to text with whisper.cpp engines: audio files and microphone PCM in, text out.

For the chat's microphone, a dropped audio file and ``strata transcribe`` (``app`` is the
composed ``AppServices``)::

    transcript = await app.speech.transcribe(model, Path("talk.wav"), language="auto",
                                             on_progress=show)         # a file: WAV pieces, MP3/FLAC whole
    transcript = await app.speech.transcribe(model, AudioClip(pcm, 16000, 1, 2))  # the microphone
    transcript.text                                                     # the words
    task.cancel()                                                       # Cancel: stops between pieces
    app.resolver.resolve(model, kind=SPEECH)                            # which speech engine runs, and why
"""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.speech.audio import (
        PIECE_SECONDS,
        WHISPER_RATE,
        AudioClip,
        audio_format,
        sniff_format,
    )
    from strata_gui.core.speech.language import WHISPER_LANGUAGES, spoken_language
    from strata_gui.core.speech.service import Transcript, TranscriptionService

__all__ = [
    "PIECE_SECONDS",
    "WHISPER_LANGUAGES",
    "WHISPER_RATE",
    "AudioClip",
    "Transcript",
    "TranscriptionService",
    "audio_format",
    "sniff_format",
    "spoken_language",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "audio": ["PIECE_SECONDS", "WHISPER_RATE", "AudioClip", "audio_format", "sniff_format"],
    "language": ["WHISPER_LANGUAGES", "spoken_language"],
    "service": ["Transcript", "TranscriptionService"],
})
