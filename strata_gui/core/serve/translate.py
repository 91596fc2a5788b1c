"""Driving the engine's OpenAI API for a client that speaks another API (Ollama, Anthropic).

The API modules turn the client's request into an OpenAI body and each OpenAI reply (or stream
chunk) into their own shape; this module does the part in between that they share: the request
to the engine, reading its SSE stream into chunks, the client's stream (with the server's time-outs
and clean stop), errors in the right place, statistics and recording.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol

from aiohttp import web

from strata_gui.core.runtime.engine_http import EngineReply
from strata_gui.core.serve.router import Upstream
from strata_gui.core.serve.wire import (
    ENGINE_ERRORS,
    FAILED,
    JSON_TYPE,
    STARTED,
    ApiError,
    Flavor,
    Meter,
    context,
    end_stream_on_stop,
    end_stream_with_error,
    engine_failure,
    has_text,
    upstream_error,
    upstream_post,
    write_chunk,
)


class EngineStreamError(Exception):
    """The engine reported an error inside a stream (or sent something unreadable)."""


async def openai_chunks(resp: EngineReply) -> AsyncGenerator[list[dict[str, Any]]]:
    """The JSON chunks of an engine's OpenAI SSE stream up to ``[DONE]``, a list per network read:
    an engine ahead of the client sends several at once, and the client gets them in one write."""
    async for events in resp.events():
        batch: list[dict[str, Any]] = []
        for event in events:
            payload = event.data
            if not payload.strip():
                continue  # an event with no payload carries no chunk
            if payload.strip() == b"[DONE]":
                if batch:
                    yield batch
                return
            try:
                data = json.loads(payload)
                failure = None
            except ValueError:
                data, failure = None, f"The engine sent an unreadable event: {payload[:200]!r}"
            err = data.get("error") if isinstance(data, dict) else None
            if err:
                failure = f"The engine failed mid-reply: {err.get('message') if isinstance(err, dict) else err}"
            if failure is not None:
                if batch:
                    yield batch  # what came before the failure still reaches the client
                raise EngineStreamError(failure)
            if isinstance(data, dict):
                batch.append(data)
        if batch:
            yield batch


class StreamTranslator(Protocol):
    """Turns an engine's OpenAI chunks into one client API's stream items."""

    content_type: str

    def start(self) -> bytes:
        """What the client's stream opens with (may be empty)."""

    def feed(self, chunk: Mapping[str, Any]) -> bytes:
        """The items for one engine chunk (may be empty)."""

    def finish(self, meter: Meter) -> bytes:
        """What closes the client's stream, with the reply's statistics."""


async def post_json(request: web.Request, up: Upstream, path: str, body: Mapping[str, Any],
                    meter: Meter) -> dict[str, Any]:
    """POST an OpenAI body to the engine and return its JSON answer (errors in the client's shape)."""
    ctx = context(request)
    async with upstream_post(ctx, up, path, json.dumps(body).encode()) as resp:
        data = await resp.read()
        if resp.status_code != 200:
            raise upstream_error(resp, data)
    try:
        answer = json.loads(data)
    except ValueError as exc:
        raise ApiError(502, "The engine sent an answer Strata cannot read.", "upstream") from exc
    if not isinstance(answer, dict):
        raise ApiError(502, "The engine sent an answer Strata cannot read.", "upstream")
    meter.take(answer)
    return answer


async def stream(request: web.Request, up: Upstream, path: str, body: Mapping[str, Any],
                 translator: StreamTranslator, flavor: Flavor, meter: Meter) -> web.StreamResponse:
    """Stream an engine's OpenAI reply to the client through ``translator``.

    Errors before the engine's first byte are raised as :class:`ApiError` (the client gets a proper
    error status); after the stream started they end it with the API's error item.
    """
    ctx = context(request)
    async with upstream_post(ctx, up, path, json.dumps(body).encode()) as resp:
        if resp.status_code != 200:
            raise upstream_error(resp, await resp.read())
        out = web.StreamResponse(status=200, headers={"Content-Type": translator.content_type,
                                                      "Cache-Control": "no-cache"})
        await out.prepare(request)
        request[STARTED] = True
        try:
            head = translator.start()
            if head:
                await write_chunk(request, out, head)
            await _translate_chunks(request, out, resp, translator, meter)
            await write_chunk(request, out, translator.finish(meter))
        except asyncio.CancelledError:
            if not ctx.stopping:
                raise
            request[FAILED] = True
            await end_stream_on_stop(out, flavor)
            return out
        except (*ENGINE_ERRORS, EngineStreamError) as exc:
            request[FAILED] = True
            message = str(exc) if isinstance(exc, EngineStreamError) else \
                f"The engine stopped answering: {engine_failure(exc)}."
            await end_stream_with_error(request, out, flavor, message)
            return out
        await out.write_eof()
    ctx.record(meter.request(request.path, 200, up, stream=True))
    return out


async def _translate_chunks(request: web.Request, out: web.StreamResponse, resp: EngineReply,
                            translator: StreamTranslator, meter: Meter) -> None:
    """Each network read's engine chunks, translated, in one write to the client."""
    # Closed here also when the client goes away mid-stream (not left to the garbage collector).
    async with contextlib.aclosing(openai_chunks(resp)) as batches:
        async for batch in batches:
            items = []
            for chunk in batch:
                meter.take(chunk)
                if meter.ttft_s is None and has_text(chunk):
                    meter.first_text()
                items.append(translator.feed(chunk))
            data = b"".join(items)
            if data:
                await write_chunk(request, out, data)


def single(data: Any, *, ndjson: bool) -> web.Response:
    """One JSON object as a whole answer (a line of NDJSON when the client asked for a stream)."""
    body = json.dumps(data).encode()
    if ndjson:
        return web.Response(body=body + b"\n", content_type="application/x-ndjson")
    return web.Response(body=body, content_type=JSON_TYPE)
