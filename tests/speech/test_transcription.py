"""Speech to text through the composed core: the real CPU whisper-server (built from the pinned
whisper.cpp source) started by the engine pool, whisper.cpp's own sample recording, a real
whisper model file (real vocabulary, seeded random weights), and the ``strata transcribe`` CLI."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import struct
import subprocess
import sys
import wave
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.base import Progress, SpeechError
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime import SPEECH
from strata_gui.core.speech import AudioClip
from tests.support.engines import TestEngines

T = TypeVar("T")


def by_hand(engines: TestEngines, model: Path, audio: Path) -> str:
    """What whisper-cli says with the decoding Strata's requests ask of whisper-server (greedy,
    best of 2: the server's defaults), words on one line (its text file: the words without times)."""
    out = audio.parent / f"{audio.stem}-by-hand"
    subprocess.run([str(engines.whisper_cli), "-m", str(model), "-f", str(audio), "-bs", "1", "-bo", "2", "-np",
                    "-otxt", "-of", str(out)], capture_output=True, timeout=120, check=True)
    return " ".join(out.with_suffix(".txt").read_text().split())


def with_speech(engines: TestEngines, model: Path, body: Callable[[AppServices], Awaitable[T]]) -> T:
    """The composed core with the CPU whisper.cpp build registered and ``model``'s folder in the library."""

    async def main() -> T:
        app = build_app_services(build_services())
        try:
            app.settings.update(model_dirs=[str(model.parent)])
            await app.prepare()
            await app.engines.add_local(engines.whisper_server.parent, "cpu", kind=SPEECH)
            return await body(app)
        finally:
            await app.aclose()

    return asyncio.run(main())


def write_wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())
    return path


def read_samples(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def test_a_recording_is_heard_as_whisper_cli_hears_it(test_engines: TestEngines, whisper_model: Path) -> None:
    expected = by_hand(test_engines, whisper_model, test_engines.whisper_sample)
    assert len(expected.split()) >= 5  # the random model says words (nonsense ones)

    async def body(app: AppServices) -> None:
        assert await app.speech_model() == whisper_model  # the library's whisper model, told by its header
        shown: list[Progress] = []
        transcript = await app.speech.transcribe(whisper_model, test_engines.whisper_sample, language="en",
                                                 on_progress=shown.append)
        assert transcript.text == expected
        assert transcript.audio_seconds == pytest.approx(11.0, abs=0.01) and transcript.pieces == 1
        assert (shown[-1].done, shown[-1].total) == (1, 1)
        # the engine stays loaded for the next recording: the microphone's PCM, wrapped as WAV
        pcm = read_samples(test_engines.whisper_sample).tobytes()
        again = await app.speech.transcribe(whisper_model, AudioClip(pcm), language="en")
        assert again.text == expected
        assert len(app.pool.engines(kind=SPEECH)) == 1

    with_speech(test_engines, whisper_model, body)


def test_a_long_recording_goes_in_pieces_with_progress_and_cancel_stops_between_them(
        test_engines: TestEngines, whisper_model: Path, tmp_path: Path) -> None:
    sample = read_samples(test_engines.whisper_sample)
    long_wav = write_wav(tmp_path / "long.wav", np.tile(sample, 4), 16_000)  # 44 s

    async def body(app: AppServices) -> None:
        app.speech.piece_seconds = 12.0  # a 3-hour file is cut the same way, every 120 s
        shown: list[Progress] = []
        transcript = await app.speech.transcribe(whisper_model, long_wav, language="en", on_progress=shown.append)
        assert transcript.pieces == 4 and transcript.audio_seconds == pytest.approx(44.0, abs=0.01)
        assert [(p.done, p.total) for p in shown] == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
        assert len(transcript.text.split()) > 10

        first_piece = asyncio.Event()
        task = asyncio.ensure_future(app.speech.transcribe(
            whisper_model, long_wav, language="en",
            on_progress=lambda p: first_piece.set() if p.done == 1 else None))
        await first_piece.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the engine was not stopped: the next job needs no reload
        assert [e.ready for e in app.pool.engines(kind=SPEECH)] == [True]

    with_speech(test_engines, whisper_model, body)


def test_another_sample_rate_and_stereo_are_converted_by_the_engine(
        test_engines: TestEngines, whisper_model: Path, tmp_path: Path) -> None:
    mono = read_samples(test_engines.whisper_sample).astype(np.float64)
    # 44.1 kHz stereo: the recording resampled (linear) and put on both channels
    t = np.arange(int(len(mono) * 44_100 / 16_000)) * 16_000 / 44_100
    resampled = np.interp(t, np.arange(len(mono)), mono)
    stereo = write_wav(tmp_path / "cd.wav", np.repeat(resampled, 2), 44_100, channels=2)

    async def body(app: AppServices) -> None:
        transcript = await app.speech.transcribe(whisper_model, stereo, language="en")
        assert transcript.audio_seconds == pytest.approx(11.0, abs=0.01)
        assert len(transcript.text.split()) >= 5

    with_speech(test_engines, whisper_model, body)


def test_what_is_not_audio_is_refused_before_any_engine_starts(
        test_engines: TestEngines, whisper_model: Path, tmp_path: Path) -> None:
    pdf = tmp_path / "talk.wav"
    pdf.write_bytes(b"%PDF-1.7\n" + b"x" * 4000)  # a PDF named like a recording
    ogg = tmp_path / "voice.ogg"
    ogg.write_bytes(b"OggS\x00\x02" + b"\x00" * 4000)

    async def body(app: AppServices) -> None:
        with pytest.raises(SpeechError, match=r"talk\.wav is not audio"):
            await app.speech.transcribe(whisper_model, pdf)
        with pytest.raises(SpeechError, match="OGG audio, which the speech engine cannot read") as info:
            await app.speech.transcribe(whisper_model, ogg)
        assert "WAV, MP3 or FLAC" in (info.value.hint or "")
        with pytest.raises(SpeechError, match="recording is empty"):
            await app.speech.transcribe(whisper_model, AudioClip(b""))
        with pytest.raises(SpeechError, match="does not know the language 'klingon'"):
            await app.speech.transcribe(whisper_model, test_engines.whisper_sample, language="klingon")
        assert app.pool.engines() == []

    with_speech(test_engines, whisper_model, body)


def test_a_file_that_is_no_whisper_model_gets_a_clear_error(
        test_engines: TestEngines, whisper_model: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "ggml-wrong.bin"
    wrong.write_bytes(b"GGUF" + bytes(range(256)) * 20)  # a model file, but not whisper.cpp's

    async def body(app: AppServices) -> None:
        with pytest.raises(SpeechError) as info:
            await app.speech.transcribe(wrong, test_engines.whisper_sample)
        assert info.value.message == "ggml-wrong.bin is not a speech model whisper.cpp can load."
        assert "bad magic" in (info.value.details or "")

    with_speech(test_engines, whisper_model, body)


def test_strata_transcribe_prints_the_words(test_engines: TestEngines, whisper_model: Path,
                                             tmp_path: Path) -> None:
    env_home = {"STRATA_HOME": str(tmp_path / "home")}
    import os

    env = {**os.environ, **env_home}
    cli = [sys.executable, "-m", "strata_gui.cli"]
    subprocess.run([*cli, "engines", "add-local", str(test_engines.whisper_server.parent), "--kind", "speech"],
                   env=env, check=True, capture_output=True, timeout=120)
    out = subprocess.run([*cli, "transcribe", str(test_engines.whisper_sample), "--model", str(whisper_model),
                          "--language", "en", "--json"], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["text"] == by_hand(test_engines, whisper_model, test_engines.whisper_sample)
    assert data["engine"].startswith("CPU") and data["pieces"] == 1
    bad = subprocess.run([*cli, "transcribe", str(whisper_model), "--model", str(whisper_model)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "is not audio" in bad.stderr


def test_a_three_hour_recording_is_cut_into_pieces_read_one_at_a_time(tmp_path: Path) -> None:
    from strata_gui.core.speech.service import prepare

    hours3 = tmp_path / "lecture.wav"
    data = 3 * 3600 * 16_000 * 2  # 3 hours of 16 kHz mono 16-bit
    header = (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVE" + b"fmt " +
              struct.pack("<IHHIIHH", 16, 1, 1, 16_000, 32_000, 2, 16) + b"data" + struct.pack("<I", data))
    with hours3.open("wb") as f:  # the samples: a sparse file of silence (no 345 MB written)
        f.write(header)
        f.truncate(len(header) + data)
    with wave.open(str(hours3), "rb") as check:
        assert check.getnframes() == 3 * 3600 * 16_000
    pieces = prepare(hours3)
    assert (pieces.count, pieces.seconds) == (90, 10_800.0)  # 2-minute pieces
    first = next(iter(pieces.make()))
    with wave.open(io.BytesIO(first.data), "rb") as piece:
        assert (piece.getnframes(), piece.getframerate()) == (120 * 16_000, 16_000)


def test_an_engine_that_cannot_start_is_left_for_the_next_one_of_the_plan(
        test_engines: TestEngines, whisper_model: Path, tmp_path: Path) -> None:
    """The same fallback loop as text and image engines: a build that dies while starting (here a
    GPU build whose library is missing, as a script that says so) gives the job to the next."""
    import httpx

    from strata_gui.core.runtime import EngineSpec
    from strata_gui.core.runtime.launch import ServerSettings
    from strata_gui.core.speech import TranscriptionService
    from tests.support.pool import real_pool

    broken = tmp_path / "vulkan" / "whisper-server"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries: libvulkan.so.1: cannot open shared "
                      "object file' >&2\nexit 127\n")
    broken.chmod(0o755)
    plan = [EngineSpec("speech-vulkan", "Vulkan", "vulkan", broken, {}, kind=SPEECH),
            EngineSpec("speech-cpu", "CPU", "cpu", test_engines.whisper_server, {}, kind=SPEECH)]

    async def main() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            pool = real_pool(http)
            try:
                speech = TranscriptionService(lambda _m: plan, lambda _m: ServerSettings(), pool, http)
                transcript = await speech.transcribe(whisper_model, test_engines.whisper_sample, language="en")
            finally:
                await pool.aclose()
        assert transcript.engine == "CPU" and transcript.text == by_hand(test_engines, whisper_model,
                                                                           test_engines.whisper_sample)
        [notice] = transcript.notices
        assert "Switching to CPU." in notice

    asyncio.run(main())


def test_a_pipe_is_refused_instead_of_waiting_forever_for_a_writer(tmp_path: Path) -> None:
    """``/dev/stdin`` or a FIFO dropped on the chat: reading it would block until a writer comes."""
    import os

    from strata_gui.core.speech.service import prepare

    fifo = tmp_path / "recording.wav"
    os.mkfifo(fifo)

    async def main() -> None:
        try:
            with pytest.raises(SpeechError, match=r"recording\.wav is not a regular file") as info:
                await asyncio.wait_for(asyncio.to_thread(prepare, fifo), 60)
            assert "Save the recording to a file first" in (info.value.hint or "")
        finally:  # a reader blocked in open() (the bug) is let go, so the test ends either way
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    asyncio.run(main())


def test_a_file_too_large_to_send_whole_is_refused_with_the_limit_named(tmp_path: Path) -> None:
    from strata_gui.core.speech.service import WHOLE_FILE_LIMIT, prepare

    flac = tmp_path / "week.flac"
    with flac.open("wb") as f:  # a sparse file: nothing but the header is written
        f.write(b"fLaC" + b"\x00" * 60)
        f.truncate(3 * 1024**3)
    with pytest.raises(SpeechError, match=r"week\.flac is 3\.0 GiB: a recording sent whole to the speech engine "
                                          r"can be at most 2\.0 GiB\.") as info:
        prepare(flac)
    assert "16-bit WAV" in (info.value.hint or "")
    flac.unlink()
    with flac.open("wb") as f:  # at the limit it goes, read from disk as it is sent
        f.write(b"fLaC" + b"\x00" * 60)
        f.truncate(WHOLE_FILE_LIMIT)
    [piece] = list(prepare(flac).make())
    assert not isinstance(piece.data, bytes) and piece.data.read(4) == b"fLaC"
    piece.data.close()
