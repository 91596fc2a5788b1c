"""OpenAI's ``POST /v1/audio/transcriptions``, answered by a speech engine (whisper.cpp's server).

OpenAI's form and whisper-server's ``/inference`` form use the same field names (``file``,
``language``, ``prompt``, ``response_format`` json/text/verbose_json/srt/vtt, ``temperature``), so
the client's multipart body goes to the engine unchanged; Strata reads only ``model`` (which engine;
OpenAI's ``whisper-1``, many clients' default, means the one speech model served) and the file's
first bytes (audio that is not audio, or a container the engine cannot decode, is
refused here with a clear 400 before any engine starts).
"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from aiohttp import web

from strata_gui.core.runtime.kinds import SPEECH, WHISPER_INFERENCE
from strata_gui.core.serve.wire import ApiError, Flavor, context, read_body, relay
from strata_gui.core.speech.audio import ENGINE_FORMATS, sniff_format
from strata_gui.core.speech.service import INFERENCE_PATH

MULTIPART = "multipart/form-data"
OPENAI_WHISPER = "whisper-1"


def form_fields(raw: bytes, content_type: str) -> dict[str, bytes]:
    """The parts of a multipart form by field name (the standard library's MIME parser)."""
    if not content_type.lower().startswith(MULTIPART):
        raise ApiError(400, "Send the audio as multipart/form-data (a 'file' field and a 'model' field).")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=policy.HTTP).parsebytes(head + raw)
    if not isinstance(message, EmailMessage) or not message.is_multipart():
        raise ApiError(400, "The form could not be read (no multipart parts).")
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields.setdefault(name, payload)
    return fields


def check_audio(data: bytes) -> None:
    """A 400 for a file that is not audio, or one the engine cannot decode."""
    found = sniff_format(data[:16])
    if found is None:
        raise ApiError(400, "The file is not audio (send WAV, MP3 or FLAC).")
    if found not in ENGINE_FORMATS:
        raise ApiError(400, f"The file is {found.upper()} audio, which the speech engine cannot decode: "
                            "send WAV, MP3 or FLAC.", "unsupported")


async def transcriptions(request: web.Request) -> web.StreamResponse:
    """``POST /v1/audio/transcriptions``: the form goes to the speech engine of the model it names."""
    ctx = context(request)
    raw = await read_body(request, ctx)
    fields = form_fields(raw, request.headers.get("Content-Type", ""))
    if "file" not in fields:
        raise ApiError(400, "The form has no 'file' field (the recording).")
    check_audio(fields["file"])
    named = fields["model"].decode(errors="replace") if "model" in fields else ""
    # OpenAI's own model name, which clients send by default: the speech model served here.
    model = ctx.pick_model({"model": named} if named and named != OPENAI_WHISPER else {}, SPEECH.name)
    async with ctx.borrow(model, kind=SPEECH.name, needs=WHISPER_INFERENCE) as up:
        return await relay(request, up, INFERENCE_PATH, raw, stream=False, flavor=Flavor.OPENAI,
                           content_type=request.headers["Content-Type"])
