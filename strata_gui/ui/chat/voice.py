"""Speaking to the chat: push-to-talk on the microphone, and audio files dropped on the page.

A recording, or a dropped file, goes to the core's transcription service and the words land in
the message box for editing before they are sent. Recording and decoding live in
:mod:`strata_gui.ui.chat.voice_capture` (QtMultimedia), loaded at the first use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QMimeData, QObject, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QToolButton, QWidget

from strata_gui.core.base import Progress, ProgressCallback, SpeechError
from strata_gui.core.speech import AudioClip, Transcript
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.chat.shortcuts import PUSH_TO_TALK
from strata_gui.ui.i18n import LiveTexts, core_text

if TYPE_CHECKING:
    from strata_gui.ui.chat.voice_capture import MicRecorder

Transcriber = Callable[[Path | AudioClip, ProgressCallback], Awaitable[Transcript]]
"""(recording or file, progress) → what was said (the app wires the core's service to it)."""

AUDIO_SUFFIXES = (".wav", ".mp3", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".webm", ".wma")
ENGINE_SUFFIXES = (".wav", ".mp3", ".flac")  # whisper-server decodes these itself


def audio_files(mime: QMimeData) -> list[Path]:
    """The recordings in a drop or paste (by name; the core checks the content)."""
    return [Path(u.toLocalFile()) for u in mime.urls()
            if u.isLocalFile() and u.toLocalFile().lower().endswith(AUDIO_SUFFIXES)]


class VoiceInput(QWidget):
    """The microphone button (hold to talk; :data:`PUSH_TO_TALK` starts and stops), the level
    while recording, and the progress of a transcription with Cancel.

    Signals:
        transcribed(str): The words heard (for the message box).
        problem(object): What went wrong (a ``StrataError``: no microphone, not audio, no speech
            engine ...), for the page's notice.
    """

    transcribed = Signal(str)
    problem = Signal(object)  # a StrataError

    def __init__(self, bridge: AsyncBridge, transcribe: Transcriber, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.texts = LiveTexts(self)
        self._bridge = bridge
        self._transcribe = transcribe
        self._recorder: MicRecorder | None = None
        self.handle: TaskHandle | None = None
        self.mic_button = QToolButton()
        self.mic_button.setObjectName("micButton")
        self.texts.set(self.mic_button.setText, lambda: self.tr("Hold to talk"))
        self.texts.set(self.mic_button.setToolTip, lambda: self.tr(
            "Hold to speak; the words land in the message box ({0} starts and stops). You can also drop "
            "an audio file on the chat.").format(PUSH_TO_TALK))
        self.mic_button.pressed.connect(self.start_recording)
        self.mic_button.released.connect(self.stop_recording)
        # A release away from the button (the pointer left it while held) emits no "released".
        self.mic_button.installEventFilter(self)
        self.meter = QProgressBar()
        self.meter.setRange(0, 100)
        self.meter.setFixedHeight(12)
        self.meter.setTextVisible(False)
        self.meter.hide()
        self.cancel_button = QPushButton()
        self.texts.set(self.cancel_button.setText, lambda: self.tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.mic_button)
        row.addWidget(self.meter, 1)
        row.addWidget(self.cancel_button)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.mic_button and event.type() == QEvent.Type.MouseButtonRelease:
            QTimer.singleShot(0, self.stop_recording)
        return super().eventFilter(watched, event)

    @property
    def recorder(self) -> MicRecorder:
        """The microphone (QtMultimedia loads with it, at the first recording)."""
        if self._recorder is None:
            from strata_gui.ui.chat.voice_capture import MicRecorder

            self._recorder = MicRecorder(self)
            self._recorder.level.connect(lambda v: self.meter.setValue(round(v * 100)))
        return self._recorder

    @property
    def busy(self) -> bool:
        return self.handle is not None and self.handle.is_running

    # -- the microphone --------------------------------------------------------------------------------
    def start_recording(self) -> None:
        if self.recorder.recording or self.busy:
            return
        try:
            self.recorder.start()
        except SpeechError as exc:
            self.problem.emit(exc)
            return
        self.meter.setFormat("")
        self.meter.setTextVisible(False)
        self.meter.setRange(0, 100)
        self.meter.setValue(0)
        self.meter.show()
        self.mic_button.setDown(True)  # held, also when the keyboard started it
        self.meter.setToolTip(self.tr("Recording… release the button (or press %1 again) to stop").replace(
            "%1", PUSH_TO_TALK))

    def stop_recording(self) -> TaskHandle | None:
        if self._recorder is None or not self._recorder.recording:
            return None
        clip = self.recorder.stop()
        self.mic_button.setDown(False)
        return self.transcribe(clip)

    def toggle_recording(self) -> None:
        """The keyboard's push-to-talk: first press starts, the next stops and transcribes."""
        if self._recorder is not None and self._recorder.recording:
            self.stop_recording()
        else:
            self.start_recording()

    # -- transcription -----------------------------------------------------------------------------------
    def transcribe(self, source: Path | AudioClip) -> TaskHandle | None:
        """Transcribe a recording or a file (progress and Cancel shown meanwhile)."""
        if self.busy:
            return None

        async def work(progress: ProgressCallback) -> Transcript:
            heard: Path | AudioClip = source
            if isinstance(source, Path) and not source.name.lower().endswith(ENGINE_SUFFIXES):
                from strata_gui.ui.chat.voice_capture import decode_audio

                progress(Progress(0, None, self.tr("Decoding {0}…").format(source.name)))
                heard = await decode_audio(source)
            return await self._transcribe(heard, progress)

        handle = self._bridge.run(work, name=self.tr("Transcribe speech"), show_errors=False)
        handle.progress.connect(self._show_progress)
        handle.succeeded.connect(lambda t: self.transcribed.emit(t.text))
        handle.failed.connect(self.problem.emit)
        handle.finished.connect(self._done)
        self.handle = handle
        self.mic_button.setEnabled(False)
        self.meter.setRange(0, 0)  # busy until the first piece is done
        self.meter.setTextVisible(True)
        self.meter.show()
        self.cancel_button.show()
        return handle

    def _show_progress(self, p: Progress) -> None:
        if p.total:
            self.meter.setRange(0, int(p.total))
            self.meter.setValue(int(p.done))
        self.meter.setFormat(core_text(p.message))

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()

    def _done(self) -> None:
        self.handle = None
        self.mic_button.setEnabled(True)
        self.meter.hide()
        self.cancel_button.hide()
