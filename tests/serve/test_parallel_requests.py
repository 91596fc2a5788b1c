"""The chat and other apps on one model at the same time: the engine's parallel slots through the
pool's scheduler, with the real engine and the real OpenAI client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai
import pytest

from strata_gui.core.chat.events import ChatEvent, MessageDelta
from strata_gui.core.pool import Waiting
from strata_gui.core.runtime.client import SamplingParams
from tests.runtime.conftest import cpu_spec
from tests.serve.conftest import Env, run_serving
from tests.support.engines import TestEngines

pytestmark = pytest.mark.engine


def test_the_chat_and_an_openai_client_stream_from_one_model_at_the_same_time(
        test_engines: TestEngines, test_model: Path) -> None:
    """The chat streams a long reply; an OpenAI client asks the same model meanwhile and its reply
    streams while the chat's still does (with one slot it got no byte until the chat's ended)."""

    async def body(env: Env) -> None:
        url = await env.serve.start()
        conv = env.chat.new_conversation()
        env.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=1200, seed=1))
        chat_tokens: list[int] = []

        def on_chat(event: ChatEvent) -> None:
            if isinstance(event, MessageDelta):
                chat_tokens.append(event.tokens)

        env.chat.events.subscribe(on_chat)
        chat = asyncio.create_task(env.chat.send(conv.id, "Tell me a long story"))
        while not chat_tokens:  # the chat's reply is streaming
            await asyncio.wait([chat], timeout=0.05)
            assert not chat.done(), chat
        chat_tokens_at_api_first: list[int] = []
        api_text = []
        async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model=test_model.stem, messages=[{"role": "user", "content": "Say hi"}], max_tokens=8, stream=True)
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    if not chat_tokens_at_api_first:
                        chat_tokens_at_api_first.append(chat_tokens[-1])
                        assert not chat.done()  # the chat still streams
                    api_text.append(chunk.choices[0].delta.content)
        reply = await chat
        assert api_text and reply.content
        assert chat_tokens_at_api_first[0] < chat_tokens[-1]  # the chat went on streaming after it
        assert env.chat.pool.starts == 1 and len(env.chat.pool.engines()) == 1
        assert env.chat.pool.engines()[0].slots == 2

    run_serving([cpu_spec(test_engines)], test_model, body, parallel_slots=2)


def test_an_api_request_waiting_past_the_limit_gets_503_with_retry_after(
        test_engines: TestEngines, test_model: Path) -> None:
    """One slot, taken by the chat: the OpenAI client waits its limit (Settings), then gets 503 with
    Retry-After in OpenAI's error shape; once the slot is free the same request is answered."""

    async def body(env: Env) -> None:
        url = await env.serve.start()
        await env.chat.ensure_engine()
        waits: list[Waiting] = []
        env.chat.pool.events.subscribe(lambda e: waits.append(e) if isinstance(e, Waiting) else None)
        [spec] = env.chat.plan
        chat = await env.chat.pool.acquire(spec, test_model, env.chat.launch_settings(), user="chat")
        async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
            with pytest.raises(openai.APIStatusError) as info:
                await client.chat.completions.create(model=test_model.stem, max_tokens=4,
                                                     messages=[{"role": "user", "content": "hi"}])
            resp = info.value.response
            assert resp.status_code == 503 and int(resp.headers["Retry-After"]) >= 1
            error = resp.json()["error"]
            assert error["message"].startswith("Waited 1 s: Waiting: 1 request ahead for ")
            assert error["type"]  # OpenAI's shape
            assert [w.user for w in waits] == ["api"]
            chat.release()
            again = await client.chat.completions.create(model=test_model.stem, max_tokens=4,
                                                         messages=[{"role": "user", "content": "hi"}])
            assert again.choices[0].message.content is not None

    run_serving([cpu_spec(test_engines)], test_model, body, parallel_slots=1, api_wait_seconds=1)
