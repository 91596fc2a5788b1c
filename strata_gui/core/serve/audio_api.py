"""OpenAI's ``POST /v1/audio/transcriptions``, answered by a speech engine (whisper.cpp's server).

OpenAI's form and whisper-server's ``/inference`` form use the same field names (``file``,
``language``, ``prompt``, ``response_format`` json/text/verbose_json/srt/vtt, ``temperature``), so
the client's fields go to the engine as they are; Strata reads ``model`` (which engine; OpenAI's
``whisper-1``, many clients' default, means the one speech model served) and the file's first
bytes (audio that is not audio, or a container the engine cannot decode, is refused here with a
clear 400 before the rest is read and before any engine starts).

The form is read as it arrives with aiohttp's streaming multipart reader (the event loop serves
other requests between two network reads), the recording's bytes kept once, in memory (at most
the server's body limit, 32 MiB), and sent on to the engine as a new form that httpx streams.
"""

from __future__ import annotations

import io
import json

from aiohttp import BodyPartReader, web

from strata_gui.core.runtime.engine_http import Form
from strata_gui.core.runtime.kinds import SPEECH, WHISPER_INFERENCE
from strata_gui.core.serve.wire import (
    ApiError,
    Flavor,
    ServeContext,
    context,
    keep_for_capture,
    receiving,
    relay,
    too_large,
)
from strata_gui.core.speech.audio import ENGINE_FORMATS, sniff_format
from strata_gui.core.speech.service import INFERENCE_PATH

MULTIPART = "multipart/form-data"
OPENAI_WHISPER = "whisper-1"
_SNIFF_BYTES = 16
_CHUNK = 64 * 1024


class _Upload:
    """What the client's form said: its text fields and the recording."""

    def __init__(self) -> None:
        self.fields: dict[str, str] = {}
        self.file_name: str | None = None
        self.audio = io.BytesIO()
        self.size = 0  # bytes of the whole form read so far

    def form(self) -> Form:
        """The form for whisper-server: the client's fields and the recording, read as it is sent."""
        self.audio.seek(0)
        fields = {name: value for name, value in self.fields.items() if name != "model"}
        return Form(fields, {"file": (self.file_name or "audio", self.audio, "application/octet-stream")})

    def summary(self) -> bytes:
        """What an activity capture keeps: the fields, and the recording's name and size."""
        return json.dumps({**self.fields, "file": f"{self.file_name} ({self.audio.tell()} bytes)"}).encode()


def check_audio(data: bytes) -> None:
    """A 400 for a file that is not audio, or one the engine cannot decode."""
    found = sniff_format(data[:_SNIFF_BYTES])
    if found is None:
        raise ApiError(400, "The file is not audio (send WAV, MP3 or FLAC).")
    if found not in ENGINE_FORMATS:
        raise ApiError(400, f"The file is {found.upper()} audio, which the speech engine cannot decode: "
                            "send WAV, MP3 or FLAC.", "unsupported")


async def _read_part(part: BodyPartReader, upload: _Upload, ctx: ServeContext) -> bytes:
    """A part's bytes (the recording's go to ``upload.audio``, checked as soon as its first bytes
    came), counting against the body limit."""
    is_file = part.name == "file" and upload.file_name is None
    kept = upload.audio if is_file else io.BytesIO()
    while chunk := await part.read_chunk(_CHUNK):
        upload.size += len(chunk)
        if upload.size > ctx.limits.max_body_bytes:
            raise too_large(ctx)
        head_before = kept.tell()
        kept.write(chunk)
        if is_file and head_before < _SNIFF_BYTES <= kept.tell():
            check_audio(kept.getvalue()[:_SNIFF_BYTES])
    if is_file:
        if kept.tell() < _SNIFF_BYTES:
            check_audio(kept.getvalue())
        upload.file_name = part.filename or "audio"
        return b""
    return kept.getvalue()


async def read_form(request: web.Request, ctx: ServeContext) -> _Upload:
    """The client's form, read part by part as it arrives.

    Raises:
        ApiError: Not a multipart form, no ``file`` field, not audio (400), too large (413), too slow (408).
    """
    if not request.headers.get("Content-Type", "").lower().startswith(MULTIPART):
        raise ApiError(400, "Send the audio as multipart/form-data (a 'file' field and a 'model' field).")
    upload = _Upload()
    async with receiving(request, ctx):
        try:
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader) or part.name is None:
                    raise ApiError(400, "The form could not be read (a part without a field name).")
                value = await _read_part(part, upload, ctx)
                if part.name != "file":
                    upload.fields.setdefault(part.name, value.decode(errors="replace"))
        except ValueError as exc:  # aiohttp's words for a broken multipart body
            raise ApiError(400, f"The form could not be read: {exc}.") from exc
    if upload.file_name is None:
        raise ApiError(400, "The form has no 'file' field (the recording).")
    keep_for_capture(ctx, upload.summary())
    return upload


async def transcriptions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/audio/transcriptions``: the form goes to the speech engine of the model it names."""
    ctx = context(request)
    upload = await read_form(request, ctx)
    named = upload.fields.get("model", "")
    # OpenAI's own model name, which clients send by default: the speech model served here.
    model = ctx.pick_model({"model": named} if named and named != OPENAI_WHISPER else {}, SPEECH.name)
    async with ctx.borrow(model, kind=SPEECH.name, needs=WHISPER_INFERENCE) as up:
        return await relay(request, up, INFERENCE_PATH, upload.form(), stream=False, flavor=Flavor.OPENAI)
