"""Speaking to the chat page: real widgets, the real CPU whisper-server on the engine pool, and a
virtual microphone (a PulseAudio null sink whose sound is a source Qt lists as a microphone; the
test plays whisper.cpp's sample into it while the button is held)."""

from __future__ import annotations

import asyncio
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QMimeData, QUrl
from PySide6.QtMultimedia import QAudioDevice

from strata_gui.core.base import ProgressCallback
from strata_gui.core.chat.service import ChatService
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime import SPEECH, EngineSpec
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.speech import AudioClip, Transcript, TranscriptionService
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.chat_page import ChatPage
from tests.speech.test_transcription import by_hand
from tests.support.engines import TestEngines
from tests.support.pool import real_pool
from tests.support.settings import settings_service

pytestmark = pytest.mark.slow


async def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll inside one loop run (qasync callbacks must not fire between separate runs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
def voice_page(qtbot, qasync_loop: asyncio.AbstractEventLoop, test_engines: TestEngines,  # type: ignore[no-untyped-def]
               whisper_model: Path, test_model: Path) -> Iterator[tuple[ChatPage, TranscriptionService]]:
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    pool = real_pool(http)
    chat = ChatService(ConversationStore(paths.database_file).open(), pool, http,
                       settings_service(context_size=1024, last_model=str(test_model)))
    spec = EngineSpec("whisper-test", "CPU", "cpu", test_engines.whisper_server, {}, kind=SPEECH)
    speech = TranscriptionService(lambda _m: [spec], lambda _m: ServerSettings(), pool, http, piece_seconds=12.0)

    async def transcribe(source: Path | AudioClip, on_progress: ProgressCallback) -> Transcript:
        return await speech.transcribe(whisper_model, source, language="en", on_progress=on_progress)

    bridge = AsyncBridge()
    page = ChatPage(chat, bridge, transcribe=transcribe)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    try:
        yield page, speech
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(chat.aclose())
        qasync_loop.run_until_complete(pool.aclose())
        qasync_loop.run_until_complete(http.aclose())


def test_holding_the_microphone_button_puts_the_words_in_the_message_box(
        voice_page, virtual_microphone, test_engines: TestEngines, qasync_loop, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, _speech = voice_page
    voice = page.voice
    assert voice is not None
    qtbot.keyClicks(page.input, "Please summarise:")  # typed first: the words go after it
    levels: list[float] = []
    voice.recorder.level.connect(levels.append)

    async def walk() -> None:
        voice.mic_button.pressed.emit()  # held down
        assert voice.recorder.recording and voice.meter.isVisible()
        player = virtual_microphone(test_engines.whisper_sample)
        await wait_until(lambda: len(levels) > 20 and max(levels) > 0.1, 30)
        assert voice.meter.value() >= 0  # the level is shown while recording
        await asyncio.sleep(0)
        voice.mic_button.released.emit()
        assert voice.handle is not None
        await voice.handle.wait()
        player.terminate()
        player.wait(10)

    qasync_loop.run_until_complete(walk())
    text = page.input.toPlainText()
    assert text.startswith("Please summarise: ") and len(text.split()) > 3  # the transcript, to edit
    assert page.conversation_id is None or not page.message_widgets  # nothing was sent
    assert not voice.meter.isVisible() and voice.mic_button.isEnabled()


def test_a_dropped_recording_is_transcribed_with_progress_and_cancel(
        voice_page, test_engines: TestEngines, whisper_model: Path, tmp_path: Path, qasync_loop) -> None:  # type: ignore[no-untyped-def]
    page, _speech = voice_page
    voice = page.voice
    assert voice is not None
    long_wav = tmp_path / "meeting.wav"
    with wave.open(str(test_engines.whisper_sample), "rb") as src, wave.open(str(long_wav), "wb") as out:
        out.setparams(src.getparams())
        frames = src.readframes(src.getnframes())
        out.writeframes(frames * 6)  # 66 s: 6 pieces of 12 s

    def drop(path: Path) -> None:
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(path))])
        page.input.insertFromMimeData(mime)  # what a drop on the message box calls

    async def walk() -> list[str]:
        shown: list[str] = []
        drop(long_wav)
        handle = voice.handle
        assert handle is not None and voice.cancel_button.isVisible()
        handle.progress.connect(lambda p: shown.append(voice.meter.format()))
        await wait_until(lambda: voice.meter.maximum() == 6 and voice.meter.value() >= 2)
        voice.cancel_button.click()
        await wait_until(lambda: not handle.is_running)
        assert handle.was_cancelled and page.input.toPlainText() == ""
        drop(test_engines.whisper_sample)  # a short one, to the end
        assert voice.handle is not None
        await voice.handle.wait()
        return shown

    shown = qasync_loop.run_until_complete(walk())
    assert "Transcribed piece 2 of 6" in shown
    assert page.input.toPlainText() == by_hand(test_engines, whisper_model, test_engines.whisper_sample)
    assert not page.attachments.images  # not taken for a picture


def test_no_microphone_gets_a_clear_error(voice_page) -> None:  # type: ignore[no-untyped-def]
    page, _speech = voice_page
    voice = page.voice
    assert voice is not None
    voice.recorder.default_device = QAudioDevice  # what Qt answers on a computer with no microphone: a null device
    voice.mic_button.pressed.emit()
    assert not voice.recorder.recording and not voice.meter.isVisible()
    assert page.notice.isVisible()
    shown = page.notice.text.text()
    assert shown.startswith("No microphone was found.")
    assert "Settings → Privacy & security → Microphone" in shown  # where Windows users allow it


def test_a_recording_in_a_format_the_engine_cannot_read_is_decoded_by_qt_first(
        voice_page, test_engines: TestEngines, tmp_path: Path, qasync_loop) -> None:  # type: ignore[no-untyped-def]
    """Ogg, Opus, M4A … go through QAudioDecoder (Qt's FFmpeg backend) to 16 kHz mono PCM. No encoder
    for those formats is installed here, so the file is a 44.1 kHz stereo recording under an
    ``.opus`` name: the page takes the decoder path by the name, FFmpeg reads it by its content."""
    from strata_gui.ui.chat.voice_capture import decode_audio

    page, _speech = voice_page
    voice = page.voice
    assert voice is not None
    with wave.open(str(test_engines.whisper_sample), "rb") as src:
        mono = src.readframes(src.getnframes())
    samples = memoryview(mono).cast("h")
    stereo = bytearray()
    for i in range(len(samples) * 44_100 // 16_000):  # nearest-sample resampling to 44.1 kHz, both channels
        s = samples[i * 16_000 // 44_100].to_bytes(2, "little", signed=True)
        stereo += s + s
    memo = tmp_path / "memo.opus"
    with wave.open(str(memo), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(44_100)
        out.writeframes(bytes(stereo))

    clip = qasync_loop.run_until_complete(decode_audio(memo))
    assert (clip.rate, clip.channels, clip.sample_width) == (16_000, 1, 2)
    assert abs(clip.seconds - 11.0) < 0.1

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(memo))])
    page.input.insertFromMimeData(mime)
    assert voice.handle is not None
    qasync_loop.run_until_complete(voice.handle.wait())
    assert len(page.input.toPlainText().split()) > 5


def test_a_recording_chosen_with_attach_is_transcribed_not_attached(
        voice_page, test_engines: TestEngines, whisper_model: Path, qasync_loop) -> None:  # type: ignore[no-untyped-def]
    """Attach… takes any file: a recording goes to the speech engine like a dropped one."""
    page, _speech = voice_page
    voice = page.voice
    assert voice is not None

    async def walk() -> None:
        assert page.attach_files([test_engines.whisper_sample]) is None  # nothing to index
        assert voice.handle is not None
        await voice.handle.wait()

    qasync_loop.run_until_complete(walk())
    assert page.input.toPlainText() == by_hand(test_engines, whisper_model, test_engines.whisper_sample)
    assert not page.attachments.images
