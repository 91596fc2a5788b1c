"""Speech to text: whisper.cpp's ``whisper-server`` borrowed from the engine pool.

:class:`TranscriptionService` is the one place the chat's microphone, a dropped audio file and
``strata transcribe`` ask. It takes the speech engines in the resolver's order and runs each job
through the pool's fallback loop (:func:`~strata_gui.core.pool.run_along_plan`), as images do:
the engine keeps the model loaded between jobs and is shared with the local API's
``/v1/audio/transcriptions``. A long recording goes to the engine in pieces
(:data:`~strata_gui.core.speech.audio.PIECE_SECONDS`), each one a progress step; cancelling the
awaiting task stops between pieces (the piece being heard finishes first: whisper-server cannot
stop a running inference, and the engine stays loaded for the next job).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ServerError, SpeechError
from strata_gui.core.base.progress import GIB, Progress, ProgressCallback, format_bytes, no_progress
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.files import open_regular
from strata_gui.core.pool import EnginePool, FailedOver, Lease, run_along_plan
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.engine_http import EngineHttp, Form
from strata_gui.core.runtime.kinds import SPEECH
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.runtime.outcome import OutcomeKind, ProcessEnded, describe_outcome
from strata_gui.core.speech.audio import (
    ENGINE_FORMATS,
    PIECE_SECONDS,
    AudioClip,
    audio_format,
    wav_info,
    wav_pieces,
)
from strata_gui.core.speech.language import AUTO, WHISPER_LANGUAGES

log = logging.getLogger(__name__)

INFERENCE_PATH = "/inference"
"""whisper-server's transcription endpoint (multipart: file, response_format, language)."""
_JOB_TIMEOUT = httpx.Timeout(30.0, read=None)  # hearing a piece takes as long as it takes
WHOLE_FILE_LIMIT = 2 * GIB
"""The largest file sent to the engine whole (MP3, FLAC, a WAV Python cannot cut): it is streamed
from disk, but whisper-server holds the upload and its decoded samples in memory (2 GiB of FLAC is
already days of audio). PCM WAVs go in pieces and have no limit."""

PlanProvider = Callable[[Path], Sequence[EngineSpec]]
SettingsProvider = Callable[[Path], ServerSettings]


@dataclass(frozen=True)
class Transcript:
    """What a transcription heard.

    Attributes:
        text: The words, pieces joined by a space.
        engine: The engine's label.
        seconds: Wall time of the job (model loading included).
        audio_seconds: Length of the recording (None when the engine decoded it whole).
        pieces: How many pieces it was sent in.
        language: The language asked for ("auto": the engine detected it).
        notices: The engines given up on the way, each with why.
    """

    text: str
    engine: str
    seconds: float
    audio_seconds: float | None = None
    pieces: int = 1
    language: str = "auto"
    notices: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "engine": self.engine, "seconds": self.seconds,
                "audio_seconds": self.audio_seconds, "pieces": self.pieces, "language": self.language,
                "notices": list(self.notices)}


@dataclass(frozen=True)
class _Piece:
    """One upload: a piece's bytes or a whole file open for reading (streamed as it is sent), and
    its name (the engine tells the format by its content)."""

    data: bytes | BinaryIO
    name: str


@dataclass(frozen=True)
class _Pieces:
    """A recording, ready to send piece by piece."""

    count: int
    seconds: float | None
    make: Callable[[], Iterator[_Piece]]


def inference_form(piece: bytes | BinaryIO, name: str, fields: dict[str, str]) -> Form:
    """The multipart form whisper-server reads: ``file`` (bytes, or a file read as it is sent) and
    the fields."""
    return Form(fields, {"file": (name, piece, "application/octet-stream")})


def _whole_file(source: Path, seconds: float | None) -> _Pieces:
    """``source`` sent whole, streamed from disk (refused above :data:`WHOLE_FILE_LIMIT`)."""
    size = source.stat().st_size
    if size > WHOLE_FILE_LIMIT:
        raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "{name} is {size}: a recording sent whole to the speech "
                                                      "engine can be at most {limit}."), name=source.name,
                            size=format_bytes(size), limit=format_bytes(WHOLE_FILE_LIMIT)),
                          hint=QT_TRANSLATE_NOOP("Core", "Convert it to a 16-bit WAV (Strata sends those in "
                                                         "pieces, of any length), or cut it shorter."))
    return _Pieces(1, seconds, lambda: iter([_Piece(open_regular(source), source.name)]))


def _clip_pieces(clip: AudioClip, seconds: float) -> _Pieces:
    count = max(1, -(-len(clip.pcm) // max(1, int(seconds * clip.rate) * clip.frame_bytes)))
    return _Pieces(count, clip.seconds,
                   lambda: (_Piece(p.to_wav(), "speech.wav") for p in clip.pieces(seconds)))


def prepare(source: Path | AudioClip, seconds: float = PIECE_SECONDS) -> _Pieces:
    """How ``source`` goes to the engine (blocking: reads the file's header).

    A PCM WAV is cut into pieces; MP3, FLAC and WAV files Python cannot read (float samples) go
    whole (the engine decodes them); PCM from the GUI is wrapped as WAV.

    Raises:
        SpeechError: not audio, not a regular file, a format the engine cannot read, or a file sent
            whole that is larger than :data:`WHOLE_FILE_LIMIT`.
    """
    if isinstance(source, AudioClip):
        if not source.pcm:
            raise SpeechError(QT_TRANSLATE_NOOP("Core", "The recording is empty."),
                              hint=QT_TRANSLATE_NOOP("Core", "Hold the microphone button while you speak."))
        return _clip_pieces(source, seconds)
    kind = audio_format(source)
    if kind not in ENGINE_FORMATS:
        raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "{name} is {kind} audio, which the speech engine cannot "
                                                      "read."), name=source.name, kind=kind.upper()),
                          hint=QT_TRANSLATE_NOOP("Core", "Drop it on the chat (Strata converts it there), or "
                                                         "convert it to WAV, MP3 or FLAC."))
    info = wav_info(source) if kind == "wav" else None
    if info is None:
        return _whole_file(source, None)
    count = max(1, -(-info.frames // max(1, int(seconds * info.rate))))
    if count == 1:  # sent as it is: the engine reads it whole
        return _whole_file(source, info.seconds)
    return _Pieces(count, info.seconds,
                   lambda: (_Piece(p.to_wav(), f"{source.stem}-{n}.wav")
                            for n, p in enumerate(wav_pieces(source, seconds))))


class TranscriptionService:
    """Transcribes recordings with whisper.cpp engines borrowed from the engine pool.

    Args:
        plan: Speech engines for a model, best first (the resolver's plan for the speech kind).
        settings: How a speech model is launched (the same as the local API's, so both share it).
        pool: Where engines are borrowed.
        http: Loopback HTTP client (no proxy).
        piece_seconds: Length of one piece of a long recording.
        clock: Monotonic clock (seconds).
    """

    USER = "speech"

    def __init__(self, plan: PlanProvider, settings: SettingsProvider, pool: EnginePool,
                 http: httpx.AsyncClient, *, piece_seconds: float = PIECE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._plan = plan
        self.piece_seconds = piece_seconds
        self._settings = settings
        self.pool = pool
        self._http = http
        self._clock = clock
        self._lock = asyncio.Lock()

    def plan(self, model: Path) -> list[EngineSpec]:
        """The engines a job for ``model`` would try, in order."""
        return list(self._plan(model))

    async def transcribe(self, model: Path, source: Path | AudioClip, *, language: str = "auto",
                         on_progress: ProgressCallback = no_progress) -> Transcript:
        """What is said in ``source`` (a file, or PCM from the microphone), heard by ``model``.

        Cancel the awaiting task to cancel: it stops after the piece being heard.

        Raises:
            SpeechError: not audio, no speech engine, the model is not a whisper model, or every
                engine failed.
        """
        if language != AUTO and language not in WHISPER_LANGUAGES:
            raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "Whisper does not know the language '{language}'."),
                                language=language),
                              hint=QT_TRANSLATE_NOOP("Core", "Use a two-letter code such as en, de, fr, zh or ja, "
                                                             "or auto to let the engine detect it."))
        pieces = await run_blocking(prepare, source, self.piece_seconds, name="strata-speech-audio")
        plan = self.plan(model)
        if not plan:
            raise SpeechError(QT_TRANSLATE_NOOP("Core", "No speech engine is installed."),
                              hint=QT_TRANSLATE_NOOP("Core", "Add a whisper.cpp build: strata engines add-local "
                                                             "FOLDER --kind speech (or the Engines page)."))
        settings = await run_blocking(self._settings, model, name="strata-speech-model")
        started = self._clock()
        notices: list[str] = []

        def failed_over(event: FailedOver) -> None:  # the next engine of the plan takes the job
            notices.append(T(QT_TRANSLATE_NOOP("Core", "{reason} Switching to {engine}."), reason=event.reason,
                             engine=event.next.label))

        async with self._lock:
            try:
                ran = await run_along_plan(self.pool, plan, model, lambda _spec: settings,
                                           lambda lease: self._hear(lease, pieces, language, on_progress),
                                           user=self.USER, activity="transcribing", on_failover=failed_over)
            except ProcessEnded as exc:
                raise _engine_failed(exc, model) from exc
        text, label = ran.value
        return Transcript(text, label, self._clock() - started, pieces.seconds, pieces.count, language,
                          tuple(notices))

    async def _hear(self, lease: Lease, pieces: _Pieces, language: str,
                    on_progress: ProgressCallback) -> tuple[str, str]:
        engine = EngineHttp(self._http, lease.base_url, lease.api_key or None)
        label = lease.spec.label
        words: list[str] = []
        on_progress(Progress(0, pieces.count, T(QT_TRANSLATE_NOOP("Core", "Transcribing with {engine}…"),
                                                engine=label)))
        fields = {"response_format": "json", "language": language, "temperature": "0.0"}
        upload = pieces.make()
        n = 0
        # Each piece is read (or the file opened) on a worker: a long WAV's pieces are megabytes.
        while (piece := await run_blocking(next, upload, None, name="strata-speech-piece")) is not None:
            try:
                resp = await engine.post(INFERENCE_PATH, form=inference_form(piece.data, piece.name, fields),
                                         timeout=_JOB_TIMEOUT, resend=False)
            finally:
                if not isinstance(piece.data, bytes):
                    piece.data.close()
            words.append(_heard(resp, piece.name))
            n += 1
            on_progress(Progress(n, pieces.count, T(QT_TRANSLATE_NOOP("Core", "Transcribed piece {done} of "
                                                                              "{count}"), done=n,
                                                    count=pieces.count)))
        return " ".join(w for w in words if w), label

    async def unload(self) -> None:
        """Unload the speech engines (frees the model's memory)."""
        for engine in self.pool.engines(kind=SPEECH):
            await self.pool.unload(engine, "unloaded after transcribing")


def _heard(resp: httpx.Response, name: str) -> str:
    """The text of whisper-server's answer for one piece."""
    if resp.status_code == 400:
        raise SpeechError(T(QT_TRANSLATE_NOOP("Core", "The speech engine could not read {name} as audio."),
                            name=name),
                          hint=QT_TRANSLATE_NOOP("Core", "The file may be damaged, or not a WAV, MP3 or FLAC "
                                                         "recording."),
                          details=resp.text[:500])
    if resp.status_code != 200:
        raise ServerError(T(QT_TRANSLATE_NOOP("Core", "The speech engine answered {status}."),
                            status=resp.status_code), details=resp.text[:500])
    try:
        data = resp.json()
    except ValueError as exc:
        raise ServerError(QT_TRANSLATE_NOOP("Core", "The speech engine sent something that is not a "
                                                    "transcript."), details=resp.text[:500]) from exc
    text = data.get("text") if isinstance(data, dict) else None
    # whisper-server puts each segment on its own line; dictation wants one paragraph.
    return " ".join(text.split()) if isinstance(text, str) else ""


def _engine_failed(exc: ProcessEnded, model: Path) -> SpeechError:
    outcome = exc.outcome
    if outcome.kind is OutcomeKind.BAD_MODEL and outcome.exit_code is not None:
        return SpeechError(T(QT_TRANSLATE_NOOP("Core", "{model} is not a speech model whisper.cpp can load."),
                             model=model.name),
                           hint=QT_TRANSLATE_NOOP("Core", "Choose a whisper model (ggml-*.bin)."),
                           details=outcome.details())
    if outcome.kind is OutcomeKind.STOPPED:
        return SpeechError(QT_TRANSLATE_NOOP("Core", "The speech engine was stopped."))
    return SpeechError(T(QT_TRANSLATE_NOOP("Core", "No speech engine could transcribe the recording. {reason}"),
                         reason=describe_outcome(outcome, activity="transcribing")),
                       hint=QT_TRANSLATE_NOOP("Core", "See the engine log."), details=outcome.details())
