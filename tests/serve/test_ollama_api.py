"""The Ollama API of the local server, driven by the real ``ollama`` client.

Real CPU engines answer chat, generate and embeddings; a scripted engine stands in where a
random-weight model cannot be made to think or call a tool, and shows what was sent to the engine.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import ollama
import pytest

from strata_gui.core.serve.router import KIND_TEXT, LLAMA_TEXT_APIS
from tests.serve.conftest import CHAT_ID, EMBED_ID, SCRIPTED_ID, Api, run_api, shared_models
from tests.support.engine_router import EngineRouter, TestModel, llama_command, served
from tests.support.engines import TestEngines
from tests.support.scripted_engine import ENGINE_KEY, scripted_engine

# The tests that start an engine are marked `engine` by the test_engines fixture (tests/conftest.py).

KEY = "client-key-for-strata"
MESSAGES = [{"role": "user", "content": "Say hi"}]
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def client(api: Api) -> ollama.AsyncClient:
    return ollama.AsyncClient(host=api.base, headers={"Authorization": f"Bearer {KEY}"})


def test_chat_streamed_and_whole(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            parts = [p async for p in await c.chat(model=CHAT_ID, messages=MESSAGES, stream=True,
                                                   options={"num_predict": 8, "seed": 1, "temperature": 0.7})]
            assert all(not p.done for p in parts[:-1]) and parts[-1].done
            text = "".join(p.message.content or "" for p in parts)
            last = parts[-1]
            assert text and last.done_reason == "length" and last.eval_count == 8
            assert last.prompt_eval_count and last.eval_duration and last.total_duration
            whole = await c.chat(model=CHAT_ID, messages=MESSAGES, stream=False,
                                 options={"num_predict": 8, "seed": 1, "temperature": 0.7})
            assert whole.done and whole.message.role == "assistant" and whole.message.content == text
        assert [(r.path, r.stream) for r in api.recorded] == [("/api/chat", True), ("/api/chat", False)]
        assert all(r.decode_tps and r.output_tokens == 8 for r in api.recorded)

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_generate_with_the_template_and_raw(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            parts = [p async for p in await c.generate(model=CHAT_ID, prompt="Say hi", system="Be brief.",
                                                       options={"num_predict": 6}, stream=True)]
            assert "".join(p.response or "" for p in parts) and parts[-1].done and parts[-1].eval_count == 6
            whole = await c.generate(model=CHAT_ID, prompt="Once upon a time", raw=True, options={"num_predict": 6})
            assert whole.response and whole.done and whole.done_reason == "length"

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_embed_both_endpoints(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            res = await c.embed(model=EMBED_ID, input=["a lighthouse", "a keeper"])
            assert len(res.embeddings) == 2 and len(res.embeddings[0]) == 64
            assert math.isclose(math.hypot(*res.embeddings[0]), 1.0, rel_tol=1e-3)
            assert res.prompt_eval_count and res.prompt_eval_count > 0
            short = await c.embed(model=EMBED_ID, input="a lighthouse", dimensions=16)
            assert len(short.embeddings[0]) == 16 and math.isclose(math.hypot(*short.embeddings[0]), 1.0, rel_tol=1e-3)
            legacy = await c.embeddings(model=EMBED_ID, prompt="a lighthouse")
            assert len(legacy.embedding) == 64
            # The legacy endpoint gives the raw vector, the new one its unit-length form: same direction.
            norm = math.hypot(*legacy.embedding)
            assert [round(x / norm, 4) for x in legacy.embedding] == [round(x, 4) for x in res.embeddings[0]]

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_tags_show_ps_version(shared_engines: dict[str, str], test_model: Path) -> None:
    size = test_model.stat().st_size

    async def body(api: Api) -> None:
        async with client(api) as c:
            listed = (await c.list()).models
            assert [m.model for m in listed][:2] == [CHAT_ID, EMBED_ID]
            assert listed[0].size == size and listed[0].details is not None
            assert listed[0].details.family == "llama" and listed[0].details.quantization_level == "F16"
            assert len(listed[0].digest or "") == 64 and listed[0].digest == listed[1].digest  # one file, one digest
            shown = await c.show(CHAT_ID)
            assert shown.capabilities == ["completion"] and shown.modelinfo["general.architecture"] == "llama"
            with pytest.raises(ollama.ResponseError) as err:
                await c.show("acme/Nothing-GGUF")
            assert err.value.status_code == 404 and "not found" in err.value.error
            assert [m.model for m in (await c.ps()).models] == [m.model for m in listed]  # all running (shared)
            # Ollama's clients name a model without a tag "name:latest" (`ollama run acme/Strata-Embed-GGUF`).
            assert (await c.show(EMBED_ID + ":latest")).capabilities == ["embedding"]
            assert (await c.embed(model=EMBED_ID + ":latest", input="x")).embeddings
        version = (await api.http.get(api.base + "/api/version", headers={"Authorization": f"Bearer {KEY}"})).json()
        assert version["version"].count(".") == 2

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_unknown_model_is_a_404(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            for call in (c.chat(model="acme/Nothing", messages=MESSAGES), c.generate(model="acme/Nothing", prompt="x"),
                         c.embed(model="acme/Nothing", input="x")):
                with pytest.raises(ollama.ResponseError) as err:
                    await call
                assert err.value.status_code == 404 and "acme/Nothing" in err.value.error

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_load_unload_and_keep_alive(test_engines: TestEngines, test_model: Path) -> None:
    """An engine the router starts on demand: an empty prompt loads it, keep_alive 0 unloads it."""
    model = TestModel(served(CHAT_ID, KIND_TEXT, test_model), LLAMA_TEXT_APIS, api_key=ENGINE_KEY,
                      command=lambda port: llama_command(test_engines.cpu_server, test_model, port, api_key=ENGINE_KEY))
    router = EngineRouter([model])

    async def body(api: Api) -> None:
        async with client(api) as c:
            assert (await c.ps()).models == []
            loaded = await c.generate(model=CHAT_ID, prompt="", keep_alive="10m")
            assert loaded.done and loaded.done_reason == "load" and model.starts == 1
            ps = (await c.ps()).models
            assert [m.model for m in ps] == [CHAT_ID] and ps[0].expires_at is not None
            gone = await c.generate(model=CHAT_ID, prompt="", keep_alive=0)
            assert gone.done_reason == "unload" and router.unloads == [CHAT_ID] and (await c.ps()).models == []
            # A reply with keep_alive 0: loaded for it, unloaded right after.
            reply = await c.chat(model=CHAT_ID, messages=MESSAGES, options={"num_predict": 4}, keep_alive=0)
            assert reply.message.content and model.starts == 2 and (await c.ps()).models == []
        assert [b[2] for b in router.borrows] == [600.0, 0.0]

    run_api(router, body, api_key=KEY)


def test_thinking_tools_and_options_map_both_ways(test_model: Path) -> None:
    with scripted_engine("tool") as engine:
        router = EngineRouter([TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({"openai"}),
                                         base_url=engine.base_url, api_key=ENGINE_KEY)])

        async def body(api: Api) -> None:
            async with client(api) as c:
                history = [
                    {"role": "user", "content": "Weather in Paris and Rome?"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                        {"function": {"name": "get_time", "arguments": {"city": "Rome"}}}]},
                    {"role": "tool", "content": "12:00", "tool_name": "get_time"},
                    {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
                ]
                reply = await c.chat(model=SCRIPTED_ID, messages=history, tools=[WEATHER_TOOL], think=False,
                                     format="json", options={"temperature": 0.2, "top_k": 5, "num_predict": 100,
                                                            "seed": 3, "stop": ["\n\n"], "num_ctx": 8192})
                call = reply.message.tool_calls[0]  # type: ignore[index]
                assert (call.function.name, dict(call.function.arguments)) == ("get_weather", {"city": "Paris"})
                streamed = [p async for p in await c.chat(model=SCRIPTED_ID, messages=MESSAGES, stream=True,
                                                          tools=[WEATHER_TOOL])]
                calls = [tc for p in streamed for tc in (p.message.tool_calls or [])]
                assert [(tc.function.name, dict(tc.function.arguments)) for tc in calls] == [
                    ("get_weather", {"city": "Paris"})]
                engine.script = "thinking"
                thought = await c.chat(model=SCRIPTED_ID, messages=MESSAGES, think=True)
                assert (thought.message.thinking, thought.message.content) == ("Let me think about it.", "Hello there")
                parts = [p async for p in await c.chat(model=SCRIPTED_ID, messages=MESSAGES, think=True, stream=True)]
                assert "".join(p.message.thinking or "" for p in parts) == "Let me think about it."
                assert "".join(p.message.content or "" for p in parts) == "Hello there"
                hidden = await c.chat(model=SCRIPTED_ID, messages=MESSAGES, think=False, format=SCHEMA)
                assert hidden.message.thinking is None and hidden.message.content == "Hello there"

            sent = engine.requests[0]
            calls = sent["messages"][1]["tool_calls"]
            assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
                ("get_weather", {"city": "Paris"}), ("get_time", {"city": "Rome"})]
            # Each tool answer carries the id of the call it answers (matched by the tool's name).
            assert [(m["tool_call_id"], m["content"]) for m in sent["messages"][2:]] == [
                (calls[1]["id"], "12:00"), (calls[0]["id"], "sunny")]
            assert sent["tools"] == [WEATHER_TOOL]
            assert sent["response_format"] == {"type": "json_object"}
            assert (sent["reasoning_effort"], sent["chat_template_kwargs"]) == ("none", {"enable_thinking": False})
            assert {k: sent[k] for k in ("temperature", "top_k", "max_tokens", "seed", "stop")} == {
                "temperature": 0.2, "top_k": 5, "max_tokens": 100, "seed": 3, "stop": ["\n\n"]}
            assert "num_ctx" not in sent and "options" not in sent
            assert engine.requests[-1]["response_format"] == {"type": "json_schema",
                                                              "json_schema": {"name": "response", "schema": SCHEMA}}
            assert engine.requests[1]["stream"] is True and engine.requests[1]["stream_options"] == {"include_usage": True}
            # The engine got its own key, never the client's.
            assert {h["authorization"] for h in engine.headers} == {f"Bearer {ENGINE_KEY}"}

        run_api(router, body, api_key=KEY)
