"""The microphone and the audio decoder (QtMultimedia), loaded when first used so the chat page
opens without loading Qt's multimedia backend.

The microphone is read with ``QAudioSource`` as raw 16-bit PCM (the level meter is the PCM's own
peak); files the speech engine cannot decode (Ogg, Opus, M4A, WebM …) are decoded with
``QAudioDecoder`` (Qt's FFmpeg backend: no new dependency) into 16 kHz mono PCM.
"""

from __future__ import annotations

import array
import asyncio
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QMicrophonePermission, QObject, Qt, QUrl, Signal
from PySide6.QtMultimedia import (
    QAudioBuffer,
    QAudioDecoder,
    QAudioDevice,
    QAudioFormat,
    QAudioSource,
    QMediaDevices,
    QtAudio,
)

from strata_gui.core.base import SpeechError
from strata_gui.core.speech import WHISPER_RATE, AudioClip

_PEAK = 32768.0


def whisper_format() -> QAudioFormat:
    """16 kHz mono 16-bit: what whisper hears, asked of the microphone and the decoder."""
    fmt = QAudioFormat()
    fmt.setSampleRate(WHISPER_RATE)
    fmt.setChannelCount(1)
    fmt.setSampleFormat(QAudioFormat.SampleFormat.Int16)
    return fmt


def peak_level(pcm: bytes) -> float:
    """The loudest 16-bit sample of ``pcm`` as 0..1 (the level meter)."""
    samples = array.array("h", pcm[: len(pcm) - len(pcm) % 2])
    if not samples:
        return 0.0
    loudest = max(samples)
    return min(1.0, max(loudest, -min(samples)) / _PEAK)


def _mic_error(reason: str) -> SpeechError:
    windows = QCoreApplication.translate(
        "Voice", "On Windows: Settings → Privacy & security → Microphone, then allow desktop apps to use it.")
    return SpeechError(reason, hint=windows)


class MicRecorder(QObject):
    """Records the default microphone as 16-bit PCM while held.

    Signals:
        level(float): The peak of the latest PCM, 0..1.
    """

    level = Signal(float)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._source: QAudioSource | None = None
        self._pcm = bytearray()
        self._format = whisper_format()
        # Which microphone records: the system's default (a seam for a computer with none).
        self.default_device: Callable[[], QAudioDevice] = QMediaDevices.defaultAudioInput

    @property
    def recording(self) -> bool:
        return self._source is not None

    def start(self) -> None:
        """Open the default microphone and start recording.

        Raises:
            SpeechError: no microphone, the OS denied it, or it would not open.
        """
        app = QCoreApplication.instance()
        if app is not None and app.checkPermission(QMicrophonePermission()) == Qt.PermissionStatus.Denied:
            raise _mic_error(QCoreApplication.translate("Voice", "The system denied Strata the microphone."))
        device = self.default_device()
        if device.isNull():
            raise _mic_error(QCoreApplication.translate("Voice", "No microphone was found."))
        fmt = whisper_format()
        if not device.isFormatSupported(fmt):
            fmt = device.preferredFormat()
            fmt.setSampleFormat(QAudioFormat.SampleFormat.Int16)
        source = QAudioSource(device, fmt, self)
        stream = source.start()
        if stream is None or source.error() != QtAudio.Error.NoError:
            source.deleteLater()
            raise _mic_error(QCoreApplication.translate("Voice", "The microphone could not be opened."))
        self._source, self._format = source, fmt
        self._pcm.clear()
        stream.readyRead.connect(lambda: self.feed(bytes(stream.readAll().data())))

    def feed(self, pcm: bytes) -> None:
        """Add recorded PCM (the microphone's reads arrive here) and announce its level."""
        self._pcm += pcm
        self.level.emit(peak_level(pcm))

    def stop(self) -> AudioClip:
        """Stop recording; the recording so far."""
        source, self._source = self._source, None
        if source is not None:
            source.stop()
            source.deleteLater()
        clip = AudioClip(bytes(self._pcm), self._format.sampleRate(), self._format.channelCount(), 2)
        self._pcm.clear()
        return clip


async def decode_audio(path: Path) -> AudioClip:
    """``path`` decoded to 16 kHz mono PCM with Qt's decoder (formats the engine cannot read).

    Raises:
        SpeechError: Qt cannot decode it.
    """
    decoder = QAudioDecoder()
    decoder.setAudioFormat(whisper_format())
    pcm = bytearray()
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def take() -> None:
        buffer: QAudioBuffer = decoder.read()
        pcm.extend(bytes(buffer.constData()))

    def failed(_error: QAudioDecoder.Error) -> None:
        if not done.done():
            done.set_exception(SpeechError(
                QCoreApplication.translate("Voice", "{0} could not be decoded: {1}").format(path.name,
                                                                                            decoder.errorString()),
                hint=QCoreApplication.translate("Voice", "Convert it to WAV, MP3 or FLAC.")))

    decoder.bufferReady.connect(take)
    def finished() -> None:
        if not done.done():
            done.set_result(None)

    decoder.finished.connect(finished)
    decoder.error.connect(failed)
    decoder.setSource(QUrl.fromLocalFile(str(path)))
    decoder.start()
    try:
        await done
    finally:
        decoder.stop()
        decoder.deleteLater()
    return AudioClip(bytes(pcm))
