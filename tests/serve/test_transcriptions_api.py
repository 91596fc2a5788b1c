"""``POST /v1/audio/transcriptions`` through the real ``openai`` client to ``strata serve``: the
composed core, the library's whisper model, the real CPU whisper-server started by the engine pool."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import openai
import pytest

from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime import SPEECH
from tests.speech.test_transcription import by_hand
from tests.support.engines import TestEngines, free_port

pytestmark = pytest.mark.engine

MODEL_ID = "ggml-strata-test.en"


def test_the_openai_client_transcribes_through_strata_serve(test_engines: TestEngines, whisper_model: Path,
                                                            tmp_path: Path) -> None:
    library = tmp_path / "library"
    library.mkdir()
    model = Path(shutil.copy2(whisper_model, library / whisper_model.name))
    sample = Path(shutil.copy2(test_engines.whisper_sample, tmp_path / "jfk.wav"))
    expected = by_hand(test_engines, model, sample)
    recording = ("jfk.wav", sample.read_bytes())
    not_audio = ("notes.wav", b"these are meeting notes, not a recording\n" * 50)

    async def main() -> None:
        app = build_app_services(build_services())
        try:
            app.settings.update(model_dirs=[str(library)], serve_port=free_port())
            await app.prepare()
            await app.engines.add_local(test_engines.whisper_server.parent, "cpu", kind=SPEECH)
            url = await app.serve.start()
            async with openai.AsyncOpenAI(base_url=url, api_key="none", max_retries=0) as client:
                listed = {m.id: m for m in (await client.models.list()).data}
                assert listed[MODEL_ID].model_extra == {"kind": "speech"}
                heard = await client.audio.transcriptions.create(model=MODEL_ID, file=recording, language="en")
                assert " ".join(heard.text.split()) == expected
                # OpenAI's model name (what clients send unless told otherwise): the speech model served
                text = await client.audio.transcriptions.create(model="whisper-1", file=recording,
                                                                response_format="text")
                assert " ".join(str(text).split()) == expected
                verbose = await client.audio.transcriptions.create(model=MODEL_ID, file=recording,
                                                                   response_format="verbose_json")
                assert verbose.duration == pytest.approx(11.0, abs=0.01) and verbose.segments
                with pytest.raises(openai.BadRequestError, match="not audio"):
                    await client.audio.transcriptions.create(model=MODEL_ID, file=not_audio)
            # one engine served them all, loaded once
            assert len(app.pool.engines(kind=SPEECH)) == 1
            async with httpx.AsyncClient() as raw:
                wrong = await raw.post(url + "/audio/transcriptions", json={"model": MODEL_ID})
            assert wrong.status_code == 400 and "multipart/form-data" in wrong.text
        finally:
            await app.aclose()

    asyncio.run(main())
