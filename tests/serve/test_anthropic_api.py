"""The Anthropic Messages API of the local server, driven by the real ``anthropic`` client.

Two paths: passed through to llama-server's own ``/v1/messages``, and translated to chat
completions for an engine whose ``apis`` lack "anthropic" (the real engine, and a scripted one
that thinks and calls tools).
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from strata_gui.core.serve.router import KIND_TEXT
from tests.serve.conftest import CHAT_ID, SCRIPTED_ID, TRANSLATED_ID, Api, run_api, shared_models
from tests.support.engine_router import EngineRouter, TestModel, served
from tests.support.scripted_engine import ENGINE_KEY, scripted_engine

# The tests that start an engine are marked `engine` by the test_engines fixture (tests/conftest.py).

KEY = "client-key-for-strata"
MESSAGES = [{"role": "user", "content": "Say hi"}]
WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def client(api: Api) -> anthropic.AsyncAnthropic:
    # The client sends its key as x-api-key: the server accepts that header as well as Bearer.
    return anthropic.AsyncAnthropic(base_url=api.base, api_key=KEY, max_retries=0)


@pytest.mark.parametrize("model", [CHAT_ID, TRANSLATED_ID], ids=["passthrough", "translated"])
def test_messages_streamed_and_whole(shared_engines: dict[str, str], test_model: Path, model: str) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            whole = await c.messages.create(model=model, max_tokens=8, messages=MESSAGES, system="Be brief.")
            assert whole.role == "assistant" and whole.content[0].type == "text" and whole.content[0].text
            assert whole.stop_reason == "max_tokens" and whole.usage.output_tokens == 8
            async with c.messages.stream(model=model, max_tokens=8, messages=MESSAGES) as stream:
                pieces = [text async for text in stream.text_stream]
                final = await stream.get_final_message()
            assert len(pieces) > 1 and final.content[0].text == "".join(pieces)  # type: ignore[union-attr]
            assert final.stop_reason == "max_tokens" and final.usage.output_tokens == 8
            assert final.usage.input_tokens > 0
            assert whole.model == model and final.model == model  # the id asked for, not the engine's file
        assert [(r.path, r.stream) for r in api.recorded] == [("/v1/messages", False), ("/v1/messages", True)]

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_count_tokens_passes_through_and_needs_the_engine_api(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            counted = await c.messages.count_tokens(model=CHAT_ID, messages=MESSAGES)
            assert counted.input_tokens > 0
            with pytest.raises(anthropic.BadRequestError, match="cannot count tokens"):
                await c.messages.count_tokens(model=TRANSLATED_ID, messages=MESSAGES)
        assert api.recorded == []  # counting is not a reply: nothing for the dashboard

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_unknown_model_and_bad_requests_in_anthropic_shape(shared_engines: dict[str, str], test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with client(api) as c:
            with pytest.raises(anthropic.NotFoundError) as err:
                await c.messages.create(model="acme/Nothing", max_tokens=8, messages=MESSAGES)
            assert err.value.body == {"type": "error", "error": {
                "type": "not_found_error", "message": "No text model named 'acme/Nothing' is served here."}}
        r = await api.http.post(api.base + "/v1/messages", headers={"x-api-key": KEY},
                                json={"model": CHAT_ID, "messages": MESSAGES})
        assert r.status_code == 400 and r.json()["error"] == {"type": "invalid_request_error",
                                                              "message": "max_tokens: Field required (a positive integer)."}
        r = await api.http.post(api.base + "/v1/messages", headers={"x-api-key": KEY}, content=b"{not json")
        assert r.status_code == 400 and r.json()["type"] == "error" and "not valid JSON" in r.json()["error"]["message"]
        # Nested past what Python's parser can follow: a 400 in each API's shape, not a 500.
        deep = b'{"model": "x", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        r = await api.http.post(api.base + "/v1/messages", headers={"x-api-key": KEY}, content=deep)
        assert r.status_code == 400 and "nests too deeply" in r.json()["error"]["message"]
        r = await api.http.post(api.base + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                                content=deep)
        assert r.status_code == 400 and "nests too deeply" in r.json()["error"]["message"]
        r = await api.http.post(api.base + "/api/chat", headers={"Authorization": f"Bearer {KEY}"}, content=deep)
        assert r.status_code == 400 and "nests too deeply" in r.json()["error"]

    run_api(EngineRouter(shared_models(shared_engines, test_model)), body, api_key=KEY)


def test_translation_thinking_and_tool_use(test_model: Path) -> None:
    with scripted_engine("thinking") as engine:
        router = EngineRouter([TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({"openai"}),
                                         base_url=engine.base_url, api_key=ENGINE_KEY)])

        async def body(api: Api) -> None:
            async with client(api) as c:
                # Thinking: the engine's reasoning_content becomes a thinking block before the text.
                async with c.messages.stream(model=SCRIPTED_ID, max_tokens=64, messages=MESSAGES,
                                             thinking={"type": "enabled", "budget_tokens": 32}) as stream:
                    kinds = [e.type async for e in stream]
                    final = await stream.get_final_message()
                assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in final.content] == [
                    ("thinking", "Let me think about it."), ("text", "Hello there")]
                assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
                assert kinds.count("content_block_start") == 2 and kinds.count("content_block_stop") == 2
                assert final.stop_reason == "end_turn"
                assert (final.usage.input_tokens, final.usage.output_tokens) == (11, 7)
                whole = await c.messages.create(model=SCRIPTED_ID, max_tokens=64, messages=MESSAGES)
                assert [b.type for b in whole.content] == ["thinking", "text"]
                assert whole.content[0].thinking == "Let me think about it."  # type: ignore[union-attr]

                # Tool use, streamed (arguments in pieces) and whole.
                engine.script = "tool"
                async with c.messages.stream(model=SCRIPTED_ID, max_tokens=64, messages=MESSAGES,
                                             tools=[WEATHER_TOOL]) as stream:
                    final = await stream.get_final_message()
                use = final.content[0]
                assert (use.type, use.name, use.input, use.id) == ("tool_use", "get_weather", {"city": "Paris"},  # type: ignore[union-attr]
                                                                   "call_abc")
                assert final.stop_reason == "tool_use"
                whole = await c.messages.create(model=SCRIPTED_ID, max_tokens=64, messages=MESSAGES,
                                                tools=[WEATHER_TOOL], tool_choice={"type": "tool", "name": "get_weather"})
                assert whole.content[0].type == "tool_use" and whole.content[0].input == {"city": "Paris"}  # type: ignore[union-attr]
                assert whole.stop_reason == "tool_use"

                # The answer to the tool goes back as a tool message bound to the call.
                engine.script = "text"
                reply = await c.messages.create(model=SCRIPTED_ID, max_tokens=64, tools=[WEATHER_TOOL], messages=[
                    *MESSAGES,
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "I should look.", "signature": ""},
                        {"type": "tool_use", "id": "call_abc", "name": "get_weather", "input": {"city": "Paris"}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_abc", "content": "sunny"},
                        {"type": "text", "text": "And tomorrow?"}]},
                ], system=[{"type": "text", "text": "You are terse."}], stop_sequences=["END"], extra_body={"temperature": 0.1})
                assert reply.content[0].text == "It is sunny in Paris."  # type: ignore[union-attr]

            first = engine.requests[0]
            assert first["thinking_budget_tokens"] == 32 and first["stream"] is True
            assert first["stream_options"] == {"include_usage": True} and first["max_tokens"] == 64
            tooled = engine.requests[3]
            assert tooled["tools"] == [{"type": "function", "function": {
                "name": "get_weather", "description": "The weather in a city", "parameters": WEATHER_TOOL["input_schema"]}}]
            assert tooled["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
            last = engine.requests[-1]
            assert last["messages"] == [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say hi"},
                {"role": "assistant", "content": "", "reasoning_content": "I should look.", "tool_calls": [
                    {"id": "call_abc", "type": "function",
                     "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]},
                {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"},
                {"role": "user", "content": "And tomorrow?"},
            ]
            assert (last["stop"], last["temperature"]) == (["END"], 0.1)
            assert {h["authorization"] for h in engine.headers} == {f"Bearer {ENGINE_KEY}"}
            assert not any("x-api-key" in h for h in engine.headers)

        run_api(router, body, api_key=KEY)


def test_engine_failing_mid_stream_ends_the_stream_with_an_error_event(test_model: Path) -> None:
    with scripted_engine("midstream-error") as engine:
        router = EngineRouter([TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({"openai"}),
                                         base_url=engine.base_url, api_key=ENGINE_KEY)])

        async def body(api: Api) -> None:
            async with client(api) as c:
                with pytest.raises(anthropic.APIStatusError, match="llama_decode failed"):
                    async with c.messages.stream(model=SCRIPTED_ID, max_tokens=64, messages=MESSAGES) as stream:
                        async for _event in stream:
                            pass
            c_ = api.server.counters
            assert (c_.total, c_.failed, c_.completed) == (1, 1, 0) and api.recorded == []

        run_api(router, body, api_key=KEY)
