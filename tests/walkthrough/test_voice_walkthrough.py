"""Speaking to the chat in the composed app (issue 45): the app as ``run_gui`` builds it, the real
CPU whisper-server registered as a speech engine, a whisper model in the library, and a virtual
microphone (a PulseAudio null sink the test plays whisper.cpp's sample into). The user types,
holds the microphone button while speaking, lets go, and edits the words in the message box."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strata_gui.core.runtime import SPEECH
from tests.first_run.conftest import wait_until
from tests.support.engines import TestEngines
from tests.support.gguf_model import write_model
from tests.walkthrough.conftest import Shots, settle
from tests.walkthrough.test_walkthrough import start_app  # noqa: F401  (fixture)


def test_speaking_to_the_chat(start_app: Callable[..., Any], virtual_microphone: Callable[[Path], Any],  # noqa: F811
                              test_engines: TestEngines, whisper_model: Path, tmp_path: Path, qtbot: Any) -> None:
    library = tmp_path / "models"
    library.mkdir()
    chat_model = write_model(library / "voice-chat.gguf")
    shutil.copy2(whisper_model, library / "ggml-base.en.bin")
    run = start_app([], language="en", theme="light", first_run_done=True, offline=True,
                    model_dirs=[str(library)], last_model=str(chat_model))
    ui = run.ui
    chat = ui.pages.chat
    shots = Shots("voice")
    run.loop.run_until_complete(ui.services.engines.add_local(test_engines.whisper_server.parent, "cpu",
                                                              kind=SPEECH))
    ui.window.show_page(chat)
    voice = chat.voice
    assert voice is not None and voice.mic_button.isVisible()
    qtbot.keyClicks(chat.input, "Summarise this: ")
    levels: list[float] = []

    async def speak() -> None:
        await wait_until(lambda: not any(h.is_running for h in ui.bridge.running))
        voice.mic_button.pressed.emit()  # held down
        voice.recorder.level.connect(levels.append)
        player = virtual_microphone(test_engines.whisper_sample)
        await wait_until(lambda: len(levels) > 20 and max(levels) > 0.1)
        await settle()
        shots(ui.window, "recording")
        voice.mic_button.released.emit()
        assert voice.handle is not None
        await voice.handle.wait()
        player.terminate()
        player.wait(10)
        await settle()
        shots(ui.window, "transcript")

    run.loop.run_until_complete(speak())
    text = chat.input.toPlainText()
    assert text.startswith("Summarise this: ") and len(text.split()) > 5  # the words, to edit before sending
    assert not chat.message_widgets  # nothing was sent
    assert ui.services.pool.engines(kind=SPEECH)[0].model.name == "ggml-base.en.bin"  # the library's whisper model
    run.loop.run_until_complete(asyncio.sleep(0))
