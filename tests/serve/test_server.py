"""The local API's server itself: the key on every route, limits, slow clients, busy, stop.

Run on the Qt (qasync) loop the app uses where it matters, with a scripted engine where the
engine's behaviour must be controlled (a stream that never ends, one that ends slowly).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import anthropic
import httpx
import ollama
import openai
import pytest

from strata_gui.core.base.errors import ServerError
from strata_gui.core.serve.records import ServerLimits
from strata_gui.core.serve.router import KIND_EMBEDDING, KIND_TEXT
from strata_gui.core.serve.server import OPEN_ROUTES, ApiServer, route_table
from tests.serve.conftest import SCRIPTED_ID, Api, run_api
from tests.support.engine_router import EngineRouter, TestModel, served
from tests.support.poll import until
from tests.support.scripted_engine import ENGINE_KEY, scripted_engine

KEY = "client-key-for-strata"
CHAT = {"model": SCRIPTED_ID, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
ROUTES = [
    ("GET", "/health"), ("GET", "/"),
    ("GET", "/v1/models"), ("GET", "/v1/models/{model}"), ("POST", "/v1/chat/completions"),
    ("POST", "/v1/completions"), ("POST", "/v1/embeddings"), ("POST", "/v1/responses"), ("POST", "/v1/rerank"),
    ("POST", "/rerank"), ("POST", "/v1/images/generations"), ("POST", "/v1/audio/transcriptions"),
    ("POST", "/v1/messages"), ("POST", "/v1/messages/count_tokens"),
    ("GET", "/api/tags"), ("POST", "/api/show"), ("POST", "/api/chat"), ("POST", "/api/generate"),
    ("POST", "/api/embed"), ("POST", "/api/embeddings"), ("GET", "/api/ps"), ("GET", "/api/version"),
    ("POST", "/api/pull"), ("POST", "/api/copy"), ("DELETE", "/api/delete"), ("GET", "/metrics"),
]


def scripted_router(base_url: str, test_model: Path, **kw: object) -> EngineRouter:
    return EngineRouter([TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({"openai"}),
                                   base_url=base_url, api_key=ENGINE_KEY),
                         TestModel(served("embedder", KIND_EMBEDDING, test_model), frozenset({"embeddings"}),
                                   base_url=base_url, api_key=ENGINE_KEY)], **kw)  # type: ignore[arg-type]


def _refusal_shape(path: str, body: dict) -> bool:  # type: ignore[type-arg]
    if path.startswith("/api/"):
        return body == {"error": "Invalid or missing API key."}
    if path.startswith("/v1/messages"):
        return body == {"type": "error", "error": {"type": "authentication_error",
                                                   "message": "Invalid or missing API key."}}
    return body["error"]["type"] == "authentication_error" and body["error"]["code"] == "invalid_api_key"


def test_every_route_refuses_a_missing_or_wrong_key(qasync_loop: asyncio.AbstractEventLoop, test_model: Path) -> None:
    """Walks the app's own route table, so a route added later is checked too."""
    with scripted_engine() as engine:
        async def body(api: Api) -> None:
            table = route_table(api.server.app)
            assert sorted(table) == sorted(ROUTES)  # the table as documented (README, report)
            open_routes = [(m, p) for m, p in table if (m, p) in OPEN_ROUTES]
            assert sorted(open_routes) == [("GET", "/"), ("GET", "/health")]
            refused = 0
            for method, path in table:
                if (method, path) in OPEN_ROUTES:
                    continue
                url = api.base + path.replace("{model}", "x")
                for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "wrong"},
                                {"Authorization": f"Basic {KEY}"}):
                    r = await api.http.request(method, url, headers=headers, json=CHAT if method == "POST" else None)
                    assert r.status_code == 401, (method, path, headers)
                    assert _refusal_shape(path, r.json()), (path, r.json())
                    refused += 1
            assert api.server.counters.unauthorized == refused
            assert engine.requests == []  # nothing reached the engine
            # Unknown paths are refused before they are looked up; with the key, a 404 in the path's API shape.
            assert (await api.http.get(api.base + "/api/push")).status_code == 401
            ok = {"Authorization": f"Bearer {KEY}"}
            r = await api.http.post(api.base + "/api/push", headers=ok, json={})
            assert r.status_code == 404 and r.json() == {"error": "No POST /api/push here."}
            # A server with no library to manage (this router) says so on the library's routes.
            r = await api.http.post(api.base + "/api/pull", headers=ok, json={"model": "hf.co/a/b"})
            assert r.status_code == 501 and "does not manage a model library" in r.json()["error"]
            r = await api.http.get(api.base + "/v1/chat/completions", headers={"x-api-key": KEY})
            assert r.status_code == 405 and r.headers["Allow"] == "POST"
            assert r.json()["error"]["message"] == "No GET /v1/chat/completions here."
            r = await api.http.get(api.base + "/v1/nothing", headers=ok)  # a path, not a model, is missing
            assert r.status_code == 404 and r.json()["error"]["code"] is None
            assert (await api.http.get(api.base + "/health")).json() == {"status": "ok"}
            # Either header carries the key.
            for headers in (ok, {"x-api-key": KEY}):
                assert (await api.http.get(api.base + "/v1/models", headers=headers)).status_code == 200
            assert engine.requests == []

        run_api(scripted_router(engine.base_url, test_model), body, api_key=KEY, loop=qasync_loop)


def test_a_key_header_with_bytes_that_are_not_utf8_is_a_401(test_model: Path) -> None:
    """A Latin-1 byte in ``Authorization`` or ``x-api-key`` was a 500 (and a traceback in the log)
    raised before the key was compared; it is a wrong key like any other."""
    with scripted_engine() as engine:
        async def body(api: Api) -> None:
            for header in (b"Authorization: Bearer caf\xe9-" + KEY.encode(), b"x-api-key: \xff\xfe" + KEY.encode()):
                reader, writer = await asyncio.open_connection("127.0.0.1", api.server.port)
                writer.write(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + header + b"\r\nConnection: close\r\n\r\n")
                answer = await reader.read()
                writer.close()
                assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
                assert b"invalid_api_key" in answer
            assert api.server.counters.unauthorized == 2
            assert engine.requests == []

        run_api(scripted_router(engine.base_url, test_model), body, api_key=KEY)


def test_an_engine_that_died_is_a_502_that_names_neither_its_port_nor_the_http_library(test_model: Path) -> None:
    """The 502 quoted httpx ("All connection attempts failed", "Server disconnected without sending
    a response") and the engine's internal address; a client can act on neither."""
    import socket

    with socket.socket() as hold:  # a port nothing answers on: the engine died and its port closed
        hold.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{hold.getsockname()[1]}"
    port = dead.rsplit(":", 1)[1]

    async def body(api: Api) -> None:
        ok = {"Authorization": f"Bearer {KEY}"}
        for path, payload in (("/v1/chat/completions", CHAT), ("/api/chat", {**CHAT, "stream": False})):
            r = await api.http.post(api.base + path, headers=ok, json=payload)
            assert r.status_code == 502, r.text
            text = r.text
            assert "could not be reached" in text and port not in text and "127.0.0.1" not in text
            assert "connection attempts" not in text.lower() and "httpx" not in text.lower()

    run_api(scripted_router(dead, test_model), body, api_key=KEY)


def test_not_on_loopback_needs_a_key() -> None:
    with pytest.raises(ServerError, match="without an API key"):
        ApiServer(EngineRouter([]), host="0.0.0.0", port=0)
    with pytest.raises(ServerError, match="without an API key"):
        ApiServer(EngineRouter([]), host="192.168.1.20", port=0, api_key="")


def test_busy_is_a_503_with_retry_after_in_each_api(test_model: Path) -> None:
    with scripted_engine("endless") as engine:
        async def body(api: Api) -> None:
            hold = {"Authorization": f"Bearer {KEY}"}
            async with api.http.stream("POST", api.base + "/v1/chat/completions", headers=hold,
                                       json={**CHAT, "stream": True}) as running:
                assert running.status_code == 200  # this one holds the only slot
                async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=KEY, max_retries=0) as oc:
                    with pytest.raises(openai.APIStatusError) as err:
                        await oc.chat.completions.create(model=SCRIPTED_ID, messages=CHAT["messages"], max_tokens=4)
                    assert err.value.status_code == 503 and err.value.response.headers["Retry-After"] == "3"
                    assert err.value.body["code"] == "server_busy"  # type: ignore[index]
                    with pytest.raises(openai.APIStatusError) as err:  # any model, any kind: no slot
                        await oc.embeddings.create(model="embedder", input="x")
                    assert err.value.status_code == 503
                async with anthropic.AsyncAnthropic(base_url=api.base, api_key=KEY, max_retries=0) as ac:
                    with pytest.raises(anthropic.APIStatusError) as aerr:
                        await ac.messages.create(model=SCRIPTED_ID, max_tokens=4, messages=CHAT["messages"])
                    assert aerr.value.status_code == 503 and aerr.value.response.headers["Retry-After"] == "3"
                    assert aerr.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
                async with ollama.AsyncClient(host=api.base, headers=hold) as lc:
                    with pytest.raises(ollama.ResponseError) as lerr:
                        await lc.chat(model=SCRIPTED_ID, messages=CHAT["messages"])
                    assert lerr.value.status_code == 503 and "slot" in lerr.value.error
            # The client left: the engine's stream is closed too, and the slot is free again.
            await until(lambda: api.server.counters.active == 0, 10)  # the server has seen it leave
            await until(lambda: engine.endless_left == 1, 10)  # ... and closed the engine's stream
            engine.script = "text"
            r = await api.http.post(api.base + "/api/chat", headers=hold,
                                    json={"model": SCRIPTED_ID, "messages": CHAT["messages"], "stream": False})
            assert r.status_code == 200 and r.json()["message"]["content"] == "It is sunny in Paris."
            c = api.server.counters
            assert (c.total, c.completed, c.failed, c.active) == (6, 1, 5, 0)

        run_api(scripted_router(engine.base_url, test_model, max_busy=1, retry_after=2.5), body, api_key=KEY)


def test_a_body_too_large_is_a_413_in_each_api(test_model: Path) -> None:
    big = "word " * 30_000  # 150 KB
    with scripted_engine() as engine:
        async def body(api: Api) -> None:
            async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=KEY, max_retries=0) as oc:
                with pytest.raises(openai.APIStatusError) as err:
                    await oc.chat.completions.create(model=SCRIPTED_ID, max_tokens=4,
                                                     messages=[{"role": "user", "content": big}])
                assert err.value.status_code == 413 and err.value.body["code"] == "request_too_large"  # type: ignore[index]
            async with anthropic.AsyncAnthropic(base_url=api.base, api_key=KEY, max_retries=0) as ac:
                with pytest.raises(anthropic.APIStatusError) as aerr:
                    await ac.messages.create(model=SCRIPTED_ID, max_tokens=4, messages=[{"role": "user", "content": big}])
                assert aerr.value.status_code == 413
                assert aerr.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
            async with ollama.AsyncClient(host=api.base, headers={"Authorization": f"Bearer {KEY}"}) as lc:
                with pytest.raises(ollama.ResponseError) as lerr:
                    await lc.generate(model=SCRIPTED_ID, prompt=big)
                assert lerr.value.status_code == 413

            # Without a length up front (chunked), the limit holds while reading.
            async def pieces():  # type: ignore[no-untyped-def]
                for _ in range(20):
                    yield b" " * 8192

            r = await api.http.post(api.base + "/v1/chat/completions", content=pieces(),
                                    headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
            assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
            assert engine.requests == []

        run_api(scripted_router(engine.base_url, test_model), body, api_key=KEY,
                limits=ServerLimits(max_body_bytes=64 * 1024))


async def _read_until_closed(reader: asyncio.StreamReader, limit_s: float) -> bytes:
    data = b""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            chunk = await asyncio.wait_for(reader.read(4096), 0.2)
        except TimeoutError:
            continue
        except ConnectionError:
            return data
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"the server kept the connection open for {limit_s} s")


def test_slow_clients_are_dropped_and_do_not_hold_the_server(qasync_loop: asyncio.AbstractEventLoop,
                                                             test_model: Path) -> None:
    with scripted_engine() as engine:
        async def body(api: Api) -> None:
            port = api.server.port
            # One connection carries request after request (keep-alive).
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(3):
                writer.write(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() + b"\r\n\r\n")
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" not in head
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                assert json.loads(await reader.readexactly(length))["object"] == "list"
            writer.close()
            # Slowloris: a head that never ends, one header line every 100 ms.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")

            async def trickle() -> None:
                try:
                    for i in range(600):
                        writer.write(b"X-Slow-%d: y\r\n" % i)
                        await writer.drain()
                        await asyncio.sleep(0.1)
                except ConnectionError:
                    return

            trickling = asyncio.ensure_future(trickle())
            # Meanwhile other clients are served.
            for _ in range(3):
                r = await api.http.get(api.base + "/v1/models", headers={"Authorization": f"Bearer {KEY}"})
                assert r.status_code == 200
            assert await _read_until_closed(reader, 30.0) == b""  # dropped without an answer
            trickling.cancel()
            await asyncio.gather(trickling, return_exceptions=True)
            writer.close()

            # A connection that opens and says nothing is closed too.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert await _read_until_closed(reader, 30.0) == b""
            writer.close()

            # A body that stops halfway: 408, in the API's shape.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /api/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode()
                         + b"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\": ")
            answer = await _read_until_closed(reader, 30.0)
            writer.close()
            head, _, rest = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408")
            assert json.loads(rest) == {"error": "The request body did not arrive in time."}

            # A header line over the limit is refused by the parser.
            r = await api.http.get(api.base + "/v1/models", headers={"Authorization": f"Bearer {KEY}",
                                                                     "X-Big": "b" * 20_000})
            assert r.status_code in (400, 431)
            assert engine.requests == []

        run_api(scripted_router(engine.base_url, test_model), body, api_key=KEY, loop=qasync_loop,
                limits=ServerLimits(header_timeout_s=1.0, body_timeout_s=1.0))


def test_stop_lets_streams_finish_then_ends_the_rest_cleanly(qasync_loop: asyncio.AbstractEventLoop,
                                                             test_model: Path) -> None:
    with scripted_engine("slow") as slow, scripted_engine("endless") as endless:
        router = EngineRouter([
            TestModel(served("slow", KIND_TEXT, test_model), frozenset({"openai"}), base_url=slow.base_url,
                      api_key=ENGINE_KEY),
            TestModel(served("endless", KIND_TEXT, test_model), frozenset({"openai"}), base_url=endless.base_url,
                      api_key=ENGINE_KEY)])

        async def main() -> None:
            async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(30.0, read=None)) as http:
                # A stream that ends within the grace period finishes whole.
                server = ApiServer(router, port=0)
                await server.start()
                base = f"http://127.0.0.1:{server.port}"
                async with openai.AsyncOpenAI(base_url=base + "/v1", api_key="x", max_retries=0) as oc:
                    stream = await oc.chat.completions.create(model="slow", messages=CHAT["messages"], stream=True)
                    first = await stream.__anext__()
                    stopping = asyncio.ensure_future(server.stop(grace_s=10.0))
                    await asyncio.sleep(0.05)
                    # While stopping: no new connections...
                    with pytest.raises(httpx.ConnectError):
                        await http.get(base + "/health")
                    rest = [c async for c in stream]
                    assert [c.choices[0].delta.content for c in [first, *rest] if c.choices and c.choices[0].delta.content
                            ] == [f"p{i} " for i in range(10)]
                    await stopping
                assert not server.running and server.counters.completed == 1

                # A stream still running at the deadline ends with an error event and a proper end.
                server = ApiServer(router, port=0)
                await server.start()
                base = f"http://127.0.0.1:{server.port}"
                async with httpx.AsyncClient(trust_env=False, timeout=10.0) as client:
                    idle = await client.get(base + "/health")  # a keep-alive connection left idle
                    assert idle.status_code == 200
                    lines: list[str] = []
                    async with client.stream("POST", base + "/v1/chat/completions",
                                             json={**CHAT, "model": "endless", "stream": True}) as resp:
                        it = resp.aiter_lines()
                        lines.append(await it.__anext__())
                        stopping = asyncio.ensure_future(server.stop(grace_s=0.3))
                        lines += [line async for line in it]  # ends: the body is complete, no protocol error
                    await stopping
                events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
                assert events[-1] == {"error": {"message": "Strata's server is stopping.", "type": "server_error",
                                                "param": None, "code": "server_busy"}}
                assert len(events) > 2
                counters = server.counters
                assert (counters.total, counters.failed, counters.active) == (1, 1, 0)
                await until(lambda: endless.endless_left == 1, 10)  # the engine's stream was closed as well
                with pytest.raises(httpx.ConnectError):
                    await http.get(base + "/health")

        qasync_loop.run_until_complete(main())


class _BrokenRouter(EngineRouter):
    """A router with a bug: borrowing raises something that is no StrataError."""

    def borrow(self, model_id: str, *, kind: str | None = None, keep_alive: float | None = None):  # type: ignore[no-untyped-def, override]
        raise RuntimeError("boom")


def test_a_bug_is_still_an_answer_in_the_apis_shape(test_model: Path) -> None:
    async def body(api: Api) -> None:
        async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key="x", max_retries=0) as oc:
            with pytest.raises(openai.InternalServerError, match=r"Internal error in Strata: RuntimeError: boom"):
                await oc.chat.completions.create(model=SCRIPTED_ID, messages=CHAT["messages"])
        async with ollama.AsyncClient(host=api.base) as lc:
            with pytest.raises(ollama.ResponseError) as err:
                await lc.chat(model=SCRIPTED_ID, messages=CHAT["messages"])
            assert err.value.status_code == 500 and err.value.error == "Internal error in Strata: RuntimeError: boom"
        assert api.server.counters.failed == 2

    run_api(_BrokenRouter([TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({"openai"}),
                                     base_url="http://127.0.0.1:9")]), body)


def test_without_a_key_web_pages_of_other_sites_are_refused(test_model: Path) -> None:
    """A page in the user's browser may post to 127.0.0.1, or rebind its own name to it (DNS
    rebinding): the Origin and Host headers give both away."""
    with scripted_engine("text") as engine:
        async def body(api: Api) -> None:
            post = {"model": SCRIPTED_ID, "messages": CHAT["messages"], "stream": False}
            r = await api.http.post(api.base + "/api/chat", json=post, headers={"Host": f"evil.example:{api.server.port}"})
            assert r.status_code == 403 and "Host header" in r.json()["error"]
            r = await api.http.post(api.base + "/v1/chat/completions", json=CHAT,
                                    headers={"Origin": "https://evil.example"})
            assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"
            r = await api.http.post(api.base + "/v1/messages", json={**CHAT, "max_tokens": 4},
                                    headers={"Origin": "https://evil.example"})
            assert r.status_code == 403 and r.json()["error"]["type"] == "permission_error"
            assert engine.requests == []
            # Apps on this computer pass, a browser front-end served from it too.
            for headers in ({}, {"Origin": "http://localhost:3000"}, {"Host": f"localhost:{api.server.port}"},
                            {"Origin": "http://[::1]:8080"}):
                r = await api.http.post(api.base + "/api/chat", json=post, headers=headers)
                assert r.status_code == 200, headers
            assert len(engine.requests) == 4

        run_api(scripted_router(engine.base_url, test_model), body)


def test_browser_front_ends_allowed_to_call_may_read_the_answers(test_model: Path) -> None:
    """A chat front-end served from this computer (http://localhost:3000) was let through but could
    not read a thing: no preflight answer (405) and no Access-Control-Allow-Origin on replies."""
    with scripted_engine("text") as engine:
        async def body(api: Api) -> None:
            page = {"Origin": "http://localhost:3000"}
            asked = {**page, "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "authorization, content-type"}
            r = await api.http.options(api.base + "/v1/chat/completions", headers=asked)
            assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "http://localhost:3000"
            assert "POST" in r.headers["access-control-allow-methods"]
            assert r.headers["access-control-allow-headers"] == "authorization, content-type"
            r = await api.http.post(api.base + "/v1/chat/completions", json={**CHAT, "stream": True}, headers=page)
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://localhost:3000"
            r = await api.http.get(api.base + "/api/tags", headers=page)
            assert r.headers["access-control-allow-origin"] == "http://localhost:3000"
            # Other sites' pages: refused, and told nothing they could read.
            evil = {**asked, "Origin": "https://evil.example"}
            r = await api.http.options(api.base + "/v1/chat/completions", headers=evil)
            assert r.status_code == 403 and "access-control-allow-origin" not in r.headers
            r = await api.http.get(api.base + "/api/tags")  # no Origin (an app): no CORS headers
            assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
            # Ollama's clients check the server is up with HEAD / (and GET /) before anything else.
            assert (await api.http.head(api.base + "/")).status_code == 200
            assert (await api.http.get(api.base + "/")).text == "Ollama is running"

        run_api(scripted_router(engine.base_url, test_model), body)


def test_with_a_key_any_page_may_ask_and_only_the_key_lets_it_in(test_model: Path) -> None:
    with scripted_engine("text") as engine:
        async def body(api: Api) -> None:
            page = {"Origin": "https://my-frontend.example"}
            asked = {**page, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
            r = await api.http.options(api.base + "/v1/chat/completions", headers=asked)  # browsers send no key here
            assert r.status_code == 204 and r.headers["access-control-allow-origin"] == page["Origin"]
            r = await api.http.post(api.base + "/v1/chat/completions", json=CHAT, headers=page)
            assert r.status_code == 401
            r = await api.http.post(api.base + "/v1/chat/completions", json=CHAT,
                                    headers={**page, "Authorization": f"Bearer {KEY}"})
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == page["Origin"]

        run_api(scripted_router(engine.base_url, test_model), body, api_key=KEY)
