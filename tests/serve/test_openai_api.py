"""The OpenAI API of the local server, driven by the real ``openai`` client against real CPU engines.

The server requires a key of its own; the engines require theirs (which clients never see): a
reply at all proves the client's key stayed at the door and the engine's key was used.
"""

from __future__ import annotations

import math
from pathlib import Path

import openai
import pytest

from tests.serve.conftest import CHAT_ID, EMBED_ID, TRANSLATED_ID, Api, run_api, shared_models
from tests.support.engine_router import EngineRouter

pytestmark = pytest.mark.engine

KEY = "client-key-for-strata"
MESSAGES = [{"role": "user", "content": "Say hi"}]


def client(api: Api) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=KEY, max_retries=0)


def test_chat_streamed_and_whole(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            stream = await c.chat.completions.create(model=CHAT_ID, messages=MESSAGES, max_tokens=12, seed=1,
                                                     stream=True, stream_options={"include_usage": True})
            pieces, usage, names = [], None, set()
            async for chunk in stream:
                names.add(chunk.model)
                if chunk.choices and chunk.choices[0].delta.content:
                    pieces.append(chunk.choices[0].delta.content)
                if chunk.usage is not None:
                    usage = chunk.usage
            assert len(pieces) > 1 and usage is not None and usage.completion_tokens > 0
            whole = await c.chat.completions.create(model=CHAT_ID, messages=MESSAGES, max_tokens=12, seed=1)
            assert whole.choices[0].message.content and whole.usage is not None
            assert whole.choices[0].message.content == "".join(pieces)  # same seed, same engine: same reply
            # The id asked for, not the engine's file (its path named the user's folders).
            assert names == {CHAT_ID} and whole.model == CHAT_ID
        assert [(r.path, r.stream) for r in api.recorded] == [("/v1/chat/completions", True),
                                                              ("/v1/chat/completions", False)]
        assert all(r.upstream.model.id == CHAT_ID and r.decode_tps and r.output_tokens for r in api.recorded)
        assert api.recorded[0].ttft_s is not None
        c_ = api.server.counters
        assert (c_.total, c_.completed, c_.failed, c_.active, c_.unauthorized) == (2, 2, 0, 0, 0)

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_legacy_completions_streamed_and_whole(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            stream = await c.completions.create(model=CHAT_ID, prompt="Once upon a time", max_tokens=8, stream=True)
            text = "".join([ch.choices[0].text async for ch in stream if ch.choices])
            assert text
            whole = await c.completions.create(model=CHAT_ID, prompt="Once upon a time", max_tokens=8)
            assert whole.choices[0].text

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_embeddings_from_the_embedding_engine(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            res = await c.embeddings.create(model=EMBED_ID, input=["a lighthouse", "a keeper"])
            vectors = [d.embedding for d in res.data]
            assert len(vectors) == 2 and len(vectors[0]) == 64 and vectors[0] != vectors[1]
            assert math.isclose(math.sqrt(sum(x * x for x in vectors[0])), 1.0, rel_tol=1e-3)
            # The chat model is not an embedding model: the router says so, in OpenAI's shape.
            with pytest.raises(openai.NotFoundError, match="No embedding model named"):
                await c.embeddings.create(model=CHAT_ID, input="a lighthouse")
        assert api.router.borrows[-1] == (CHAT_ID, "embedding", None)

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_models_listed_and_retrieved(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            ids = [m.id async for m in c.models.list()]
            assert ids == [CHAT_ID, EMBED_ID, TRANSLATED_ID]
            one = await c.models.retrieve(CHAT_ID)
            assert one.id == CHAT_ID and one.owned_by == "strata"
            with pytest.raises(openai.NotFoundError, match="does not exist"):
                await c.models.retrieve("acme/Nothing-GGUF")

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_unknown_model_is_a_404_and_loads_nothing(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            with pytest.raises(openai.NotFoundError) as err:
                await c.chat.completions.create(model="acme/Nothing-GGUF", messages=MESSAGES, max_tokens=4)
            assert err.value.body["code"] == "model_not_found"  # type: ignore[index]
            assert "No text model named 'acme/Nothing-GGUF'" in err.value.message
        assert api.server.counters.failed == 1

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_responses_api_passes_through(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            whole = await c.responses.create(model=CHAT_ID, input="Say hi", max_output_tokens=16)
            assert whole.output_text
            events = [e.type async for e in await c.responses.create(model=CHAT_ID, input="Say hi",
                                                                      max_output_tokens=16, stream=True)]
            assert events[0] == "response.created" and events[-1] == "response.completed"
            assert "response.output_text.delta" in events

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_engine_refusal_comes_back_with_the_engine_reason(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            with pytest.raises(openai.BadRequestError) as err:
                await c.chat.completions.create(model=CHAT_ID, messages=MESSAGES, max_tokens=4,
                                                response_format={"type": "xml"})  # type: ignore[arg-type, typeddict-item]
            assert err.value.message.startswith("Error code: 400 - The engine refused the request: ")
            assert "response_format type must be one of" in err.value.message
            assert err.value.body["type"] == "invalid_request_error"  # type: ignore[index]
        assert api.recorded == [] and api.server.counters.failed == 1

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)
