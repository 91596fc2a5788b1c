"""The OpenAI API (and the engine-native APIs beside it under ``/v1``): passed through to the engine.

llama-server and sd-server speak these themselves, so each request goes to the engine the
``model`` field names, unchanged, and its answer (an SSE stream included) comes back byte for byte.
The engine must speak the endpoint's API (:attr:`Upstream.apis`); otherwise the client gets a 400
saying what the model's engine offers.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from strata_gui.core.serve.audio_api import transcriptions
from strata_gui.core.serve.router import (
    API_EMBEDDINGS,
    API_IMAGES,
    API_OPENAI,
    API_RERANK,
    API_RESPONSES,
    KIND_EMBEDDING,
    KIND_IMAGE,
    KIND_RERANK,
    KIND_TEXT,
    ServedModel,
)
from strata_gui.core.serve.wire import (
    ApiError,
    Flavor,
    Handler,
    Route,
    context,
    json_response,
    read_json,
    relay,
)


def model_object(m: ServedModel) -> dict[str, Any]:
    """A model as OpenAI's ``/v1/models`` lists it (with Strata's kind beside)."""
    return {"id": m.id, "object": "model", "created": int(m.modified), "owned_by": "strata", "kind": m.kind}


async def list_models(request: web.Request) -> web.Response:
    router = context(request).router
    await router.refresh()
    models = router.models()
    return json_response({"object": "list", "data": [model_object(m) for m in models]})


async def get_model(request: web.Request) -> web.Response:
    name = request.match_info["model"]
    await context(request).router.refresh()
    found = context(request).find(name)
    if found is None:
        raise ApiError(404, f"The model '{name}' does not exist here.", "not_found")
    return json_response(model_object(found))


def passthrough(kind: str | None, api: str) -> Handler:
    """A handler that sends the request to the engine of the model it names, unchanged."""

    async def handle(request: web.Request) -> web.StreamResponse:
        ctx = context(request)
        raw, body = await read_json(request, ctx)
        model = ctx.pick_model(body, kind)
        async with ctx.borrow(model, kind=kind, needs=api) as up:
            return await relay(request, up, request.path, raw, stream=body.get("stream") is True,
                               flavor=Flavor.OPENAI)

    handle.__name__ = f"passthrough_{api}"
    return handle


def routes() -> list[Route]:
    """(method, path, handler, runs a model) for each OpenAI route."""
    return [
        ("GET", "/v1/models", list_models, False),
        ("GET", "/v1/models/{model:.+}", get_model, False),
        ("POST", "/v1/chat/completions", passthrough(KIND_TEXT, API_OPENAI), True),
        ("POST", "/v1/completions", passthrough(KIND_TEXT, API_OPENAI), True),
        ("POST", "/v1/embeddings", passthrough(KIND_EMBEDDING, API_EMBEDDINGS), True),
        ("POST", "/v1/responses", passthrough(KIND_TEXT, API_RESPONSES), True),
        # llama-server's spellings of its rerank endpoint (Jina's and TEI's request shapes)
        ("POST", "/v1/rerank", passthrough(KIND_RERANK, API_RERANK), True),
        ("POST", "/rerank", passthrough(KIND_RERANK, API_RERANK), True),
        ("POST", "/v1/images/generations", passthrough(KIND_IMAGE, API_IMAGES), True),
        ("POST", "/v1/audio/transcriptions", transcriptions, True),
    ]
