"""The local API through real parts: the CPU engine, a plain httpx client, real sockets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anthropic
import httpx
import ollama
import psutil
import pytest

from strata_gui.core.base.errors import ServerError
from strata_gui.core.runtime.supervisor import ServerState
from strata_gui.core.serve.access import is_loopback
from strata_gui.core.serve.server import ApiServer
from tests.runtime.conftest import cpu_spec
from tests.serve.conftest import Env, run_serving
from tests.support.engines import TestEngines
from tests.support.pool import library_router

# No "model": with one model served, a request that names none gets it (older clients send none).
CHAT = {"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 8, "seed": 1}


def _listening(port: int) -> list[str]:
    return [c.laddr.ip for c in psutil.Process(os.getpid()).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port]


async def _stream(http: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    chunks = []
    async with http.stream("POST", url + "/chat/completions", json={**CHAT, "stream": True},
                           headers=headers or {}) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[6:]))
    return resp.status_code, chunks


@pytest.mark.engine
def test_streams_and_plain_replies_through_the_proxy_are_recorded(test_engines: TestEngines,
                                                                  test_model: Path) -> None:
    async def body(env: Env) -> None:
        url = await env.serve.start()
        port = env.serve.port
        assert _listening(port) == ["127.0.0.1"]
        http = env.http
        assert (await http.get(url.removesuffix("/v1") + "/health")).json() == {"status": "ok"}
        models = (await http.get(url + "/models")).json()
        assert [m["id"] for m in models["data"]] == [test_model.stem]
        status, chunks = await _stream(http, url)
        assert status == 200
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
        assert text
        plain = await http.post(url + "/chat/completions", json=CHAT)
        assert plain.status_code == 200, plain.text
        assert plain.json()["choices"][0]["message"]["content"]
        assert (await http.get(url + "/nope")).status_code == 404
        c = env.serve.counters
        assert (c.total, c.completed, c.failed, c.active) == (2, 2, 0, 0)
        recs = env.dashboard.store.requests()
        assert [r.source for r in recs] == ["api-openai", "api-openai"]
        assert all(r.model == test_model.name and r.engine == "CPU" and r.decode_tps for r in recs)
        assert any(r.ttft_s is not None for r in recs)

    run_serving([cpu_spec(test_engines)], test_model, body)


@pytest.mark.engine
def test_key_required_once_generated(test_engines: TestEngines, test_model: Path) -> None:
    async def body(env: Env) -> None:
        key = env.serve.generate_key()
        url = await env.serve.start()
        r = await env.http.post(url + "/chat/completions", json=CHAT)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        r = await env.http.get(url + "/models", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
        status, chunks = await _stream(env.http, url, {"Authorization": f"Bearer {key}"})
        assert status == 200 and chunks
        assert env.serve.counters.unauthorized == 2

    run_serving([cpu_spec(test_engines)], test_model, body)


def test_lan_without_key_refuses_and_listens_nowhere() -> None:
    async def body(env: Env) -> None:
        with pytest.raises(ServerError, match="requires an API key"):
            await env.serve.start(lan=True)
        assert not env.serve.running
        with pytest.raises(ServerError, match="without an API key"):
            ApiServer(library_router(env.chat), host="0.0.0.0", port=0)
        assert not [c for c in psutil.Process(os.getpid()).net_connections(kind="inet")
                    if c.status == psutil.CONN_LISTEN]
        # With a key, LAN exposure is what the user asked for: every interface.
        env.serve.generate_key()
        await env.serve.start(lan=True)
        port = env.serve.port
        assert _listening(port) == ["0.0.0.0"]
        r = await env.http.get(f"http://127.0.0.1:{port}/v1/models")
        assert r.status_code == 401
        await env.serve.stop()
        assert _listening(port) == []

    run_serving([], None, body)


def test_no_model_in_the_library_is_said_clearly() -> None:
    async def body(env: Env) -> None:
        url = await env.serve.start()
        r = await env.http.post(url + "/chat/completions", json=CHAT)
        assert r.status_code == 400 and "Models served here: none" in r.json()["error"]["message"]
        r = await env.http.post(url + "/chat/completions", json={**CHAT, "model": "gpt-4o"})
        assert r.status_code == 404 and "No model named 'gpt-4o'" in r.json()["error"]["message"]
        assert env.serve.counters.failed == 2
        assert "curl " + url + "/chat/completions" in env.serve.curl_example()

    run_serving([], None, body)


def test_port_in_use_is_explained() -> None:
    async def body(env: Env) -> None:
        await env.serve.start()
        port = env.serve.port
        other = ApiServer(library_router(env.chat), port=port)
        with pytest.raises(ServerError, match="Cannot listen"):
            await other.start()

    run_serving([], None, body)


def test_loopback_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")


@pytest.mark.engine
def test_client_leaving_mid_stream_frees_the_engine(test_engines: TestEngines, test_model: Path) -> None:
    async def body(env: Env) -> None:
        url = await env.serve.start()
        long = {**CHAT, "max_tokens": 1500, "stream": True}  # about a second of generation
        async with env.http.stream("POST", url + "/chat/completions", json=long) as resp:
            async for line in resp.aiter_lines():
                if line.startswith("data: "):
                    break  # the other app closes the connection after the first piece
        status, chunks = await _stream(env.http, url)  # the single slot is free again
        assert status == 200 and chunks
        c = env.serve.counters
        assert (c.total, c.completed, c.failed, c.active) == (2, 1, 1, 0)
        sup = env.chat.supervisor
        assert sup is not None
        counters = await env.dashboard.server_counters(sup.base_url, sup.auth_headers())
        assert counters is not None and counters.predicted_tokens is not None
        assert counters.predicted_tokens < 1000  # the abandoned reply stopped early (8 more for the second)

    run_serving([cpu_spec(test_engines)], test_model, body)


@pytest.mark.engine
def test_ollama_and_anthropic_clients_reach_the_chats_model(test_engines: TestEngines, test_model: Path) -> None:
    async def body(env: Env) -> None:
        url = await env.serve.start()
        root = url.removesuffix("/v1")
        async with ollama.AsyncClient(host=root) as c:
            listed = (await c.list()).models
            assert [m.model for m in listed] == [test_model.stem]
            details = listed[0].details
            assert details is not None and (details.family, details.quantization_level) == ("llama", "F16")
            assert details.parameter_size  # read from the model's header
            reply = await c.chat(model=test_model.stem, messages=[{"role": "user", "content": "hi"}],
                                 options={"num_predict": 4})
            assert reply.message.content and env.chat.engine_state is ServerState.READY
            assert [m.model for m in (await c.ps()).models] == [test_model.stem]
            gone = await c.generate(model=test_model.stem, prompt="", keep_alive=0)
            assert gone.done_reason == "unload" and env.chat.engine_state is not ServerState.READY
        async with anthropic.AsyncAnthropic(base_url=root, api_key="none", max_retries=0) as a:
            msg = await a.messages.create(model=test_model.stem, max_tokens=4,
                                          messages=[{"role": "user", "content": "hi"}])
            assert msg.content[0].type == "text" and msg.usage.output_tokens == 4
        assert [r.source for r in env.dashboard.store.requests()] == ["api-ollama", "api-anthropic"]

    run_serving([cpu_spec(test_engines)], test_model, body)
