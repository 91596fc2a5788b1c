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

MODEL_ID = "ggml-strata-test.en"


@pytest.mark.engine
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


_CLIENT = """
import sys, httpx
url, path, form = sys.argv[1], sys.argv[2], sys.argv[3]
with open(path, "rb") as f, httpx.Client(timeout=120) as http:
    if form == "chunked":  # no Content-Length: the limit must hold while reading
        head = b"--b\\r\\nContent-Disposition: form-data; name=\\"file\\"; filename=\\"a.wav\\"\\r\\n\\r\\n"
        body = iter([head, f.read(), b"\\r\\n--b--\\r\\n"])
        r = http.post(url, content=body, headers={"Content-Type": "multipart/form-data; boundary=b"})
    else:  # the file first, the model after it: the whole form is read before the model is looked up
        r = http.post(url, files={"file": ("big.wav", f)}, data={"model": "no-such-model"})
print(r.status_code, r.text)
"""


def test_a_large_upload_is_read_as_it_arrives_and_kept_once(tmp_path: Path) -> None:
    """A 30 MiB form costs the server about 30 MiB, not copies of it for a parser; a form with no
    length announced is still cut at the body limit."""
    import subprocess
    import sys
    import tracemalloc

    size = 30 * 1024 * 1024
    recording = tmp_path / "big.wav"
    with recording.open("wb") as f:  # a WAV's header, then silence: audio as far as the check goes
        f.write(b"RIFF" + (size - 8).to_bytes(4, "little") + b"WAVE")
        f.truncate(size)
    too_big = tmp_path / "bigger.wav"
    with too_big.open("wb") as f:
        f.write(b"RIFF\x00\x00\x00\x00WAVE")
        f.truncate(33 * 1024 * 1024)

    async def post(url: str, path: Path, form: str) -> str:
        client = await asyncio.create_subprocess_exec(sys.executable, "-c", _CLIENT, url, str(path), form,
                                                      stdout=subprocess.PIPE)
        out, _ = await client.communicate()
        return out.decode()

    async def main() -> None:
        app = build_app_services(build_services())
        try:
            app.settings.update(model_dirs=[str(tmp_path)], serve_port=free_port())
            await app.prepare()
            url = await app.serve.start() + "/audio/transcriptions"
            tracemalloc.start()
            try:
                answer = await post(url, recording, "form")
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert answer.startswith(("400", "404")) and "no-such-model" in answer, answer
            assert peak < 1.5 * size, f"the server held {peak / size:.1f} times the upload"
            chunked = await post(url, too_big, "chunked")
            assert chunked.startswith("413") and "larger than 32768 KiB" in chunked, chunked
        finally:
            await app.aclose()

    asyncio.run(main())
