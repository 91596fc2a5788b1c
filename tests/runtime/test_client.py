"""ChatClient: real llama-server streaming and stop; scripted faults on a loopback SSE server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_gui.core.base.errors import ChatError, ServerError
from strata_gui.core.runtime.client import READ_AHEAD_MARKER, ChatClient, SamplingParams
from tests.runtime.sse_server import sse_server
from tests.support import engines as _engines

Engines = _engines.TestEngines
HELLO = [{"role": "user", "content": "Say hello"}]


@pytest.mark.engine
def test_streams_a_reply_with_stats_from_the_real_engine(test_engines: Engines, test_model: Path) -> None:
    async def scenario(base: str) -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            client = ChatClient(http, base)
            pieces: list[str] = []
            reply = await client.stream_chat(HELLO, SamplingParams(max_tokens=24, seed=1), pieces.append)
            assert len(pieces) > 1 and "".join(pieces) == reply.text
            s = reply.stats
            assert s.predicted_n == 24 and s.finish_reason == "length"
            assert s.prompt_n and s.prompt_n > 3
            assert s.decode_tps and s.prefill_tps and s.ttft_s is not None and s.total_s >= s.ttft_s
            assert s.context_used == s.prompt_n + (s.cache_n or 0) + 24
            assert "tokens" in s.summary()

    with _engines.running_server(test_engines.cpu_server, test_model) as base:
        asyncio.run(scenario(base))


@pytest.mark.engine
def test_stop_closes_the_stream_and_frees_the_slot(test_engines: Engines, test_model: Path) -> None:
    async def scenario(base: str) -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            client = ChatClient(http, base)
            got: list[str] = []
            first = asyncio.Event()

            def on_delta(text: str) -> None:
                got.append(text)
                if len(got) >= 10:
                    first.set()

            task = asyncio.create_task(client.stream_chat(HELLO, SamplingParams(max_tokens=1500), on_delta))
            await first.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            n_at_stop = len(got)
            busy = True
            for _ in range(100):
                slots = (await http.get(base + "/slots")).json()
                busy = any(s["is_processing"] for s in slots)
                if not busy:
                    break
                await asyncio.sleep(0.05)
            assert not busy, "the engine kept generating after Stop"
            assert len(got) == n_at_stop

    with _engines.running_server(test_engines.cpu_server, test_model, extra=["-c", "2048"]) as base:
        asyncio.run(scenario(base))


def test_comment_lines_usage_and_timings() -> None:
    async def scenario(base: str, requests: list) -> None:  # type: ignore[type-arg]
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await ChatClient(http, base, api_key="k").stream_chat(HELLO, SamplingParams(temperature=0.5))
        assert reply.text == "Hello"
        assert reply.stats.finish_reason == "stop"
        assert reply.stats.context_used == 9 and reply.stats.decode_tps == 50.0
        assert requests[0]["stream_options"] == {"include_usage": True}
        assert requests[0]["temperature"] == 0.5 and "top_k" not in requests[0]

    with sse_server("ok") as (base, requests):
        asyncio.run(scenario(base, requests))


def test_unicode_line_separators_inside_a_reply_are_text() -> None:
    """A random (or real) model can emit U+2028: it is part of the reply, not the end of an SSE line."""
    async def scenario(base: str) -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await ChatClient(http, base).stream_chat(HELLO)
        assert reply.text == "a\u2028bc\u2029d\u0085e"

    with sse_server("unicode-separators") as (base, _requests):
        asyncio.run(scenario(base))


def test_events_cut_anywhere_by_the_network_read_whole() -> None:
    """Reads that end inside a character, a JSON object or a CRLF pair, CRLF line ends and an
    event whose data spans two lines still give the reply's exact text, one piece per event."""
    async def scenario(base: str) -> None:
        pieces: list[str] = []
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await ChatClient(http, base).stream_chat(HELLO, None, pieces.append)
        assert pieces == ["\u00e9t\u00e9", " \u2028ok", " two"]
        assert reply.text == "\u00e9t\u00e9 \u2028ok two" and reply.stats.finish_reason == "stop"

    with sse_server("split-crlf") as (base, _requests):
        asyncio.run(scenario(base))


def test_lone_cr_line_ends_are_read_as_the_sse_standard_says() -> None:
    """A server whose lines end with CR alone (a comment, data on two lines, reads that end on a
    CR) streams the same reply as one that ends them with LF."""
    async def scenario(base: str) -> None:
        pieces: list[str] = []
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await ChatClient(http, base).stream_chat(HELLO, None, pieces.append)
        assert pieces == ["Hel", "lo", " w", "orld"]
        assert reply.text == "Hello world" and reply.stats.finish_reason == "stop"

    with sse_server("cr-only") as (base, _requests):
        asyncio.run(scenario(base))


@pytest.mark.parametrize(("script", "error", "text"), [
    ("midstream-error", ServerError, "llama_decode failed"),
    ("unauthorized", ChatError, "rejected the API key"),
    ("drop", ServerError, "stopped answering in the middle"),
])
def test_errors_are_translated(script: str, error: type, text: str) -> None:
    async def scenario(base: str) -> tuple[list[str], BaseException | None]:
        pieces: list[str] = []
        async with httpx.AsyncClient(trust_env=False) as http:
            try:
                await ChatClient(http, base).stream_chat(HELLO, None, pieces.append)
            except (ServerError, ChatError) as exc:
                return pieces, exc
        return pieces, None

    with sse_server(script) as (base, _):
        pieces, exc = asyncio.run(scenario(base))
    assert pieces == ([] if script == "unauthorized" else ["partial"])  # partial text is delivered first
    assert isinstance(exc, error) and text in exc.message


def test_unreachable_engine_is_a_server_error() -> None:
    from tests.support.engines import free_port

    async def scenario() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            with pytest.raises(ServerError, match="Could not reach"):
                await ChatClient(http, f"http://127.0.0.1:{free_port()}").stream_chat(HELLO)

    asyncio.run(scenario())


@pytest.mark.engine
def test_read_ahead_fills_the_real_engines_cache_for_the_next_request(test_engines: Engines,
                                                                      test_model: Path) -> None:
    history = [{"role": "system", "content": "You are a geography teacher. " * 15},
               {"role": "user", "content": "Name three long rivers. " * 8},
               {"role": "assistant", "content": "The Nile, the Amazon and the Yangtze. " * 6}]

    async def scenario(base: str) -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            client = ChatClient(http, base)
            held = await client.read_ahead(history, sampling=SamplingParams(max_tokens=4, seed=1))
            assert held is not None and held > 100
            reply = await client.stream_chat([*history, {"role": "user", "content": "And the longest?"}],
                                             SamplingParams(max_tokens=4, seed=1))
            assert reply.stats.cache_n is not None and reply.stats.cache_n >= held - 2
            assert reply.stats.prompt_n is not None and reply.stats.prompt_n < 30
            # The same history again: everything is cached already.
            assert await client.read_ahead(history, sampling=SamplingParams(max_tokens=4, seed=1)) == held

    with _engines.running_server(test_engines.cpu_server, test_model) as base:
        asyncio.run(scenario(base))


def test_read_ahead_answers_none_where_the_server_cannot_and_the_chat_goes_on() -> None:
    """An older llama-server (no /apply-template: its 404 as llama-server words it), and no server
    at all: nothing is read, nothing is raised, the next request streams as always."""
    from tests.support import openai_stream_server as oss

    async def scenario(base: str) -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            client = ChatClient(http, base)
            assert await client.read_ahead(HELLO) is None
            reply = await client.stream_chat(HELLO)
            assert reply.text
            with socket_closed() as gone:
                assert await ChatClient(http, gone).read_ahead(HELLO) is None

    with oss.openai_stream_server(oss.reasoning_then_content(3, 3)) as server:
        asyncio.run(scenario(server.url))


def socket_closed() -> contextlib.AbstractContextManager[str]:
    """The URL of a loopback port nobody listens on."""
    import socket

    @contextlib.contextmanager
    def closed() -> Iterator[str]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        yield f"http://127.0.0.1:{port}"

    return closed()


@pytest.mark.parametrize("how", ["closed", "reset"])
def test_read_ahead_is_sent_again_when_the_engine_closes_the_connection_without_answering(how: str) -> None:
    """llama-server closes the connection after each streamed reply; the read-ahead that follows a
    reply can go out on it just as it closes and get no answer at all (seen in CI: the cache was
    left cold). Such a request was never read, so it is sent once more. (Only there: a request
    dropped on a connection opened for it is not sent again, tests/runtime/test_engine_http.py.)"""
    import json
    import socket
    import struct
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []
    resets: list[Any] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(self.path)
            if len(seen) == 2:  # the second request, on the kept-alive connection, meets its close: no answer
                if how == "reset":  # closed at once with no FIN first: a reset, httpx's ReadError
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    resets.append(self.connection)
                self.close_connection = True
                return
            answer = ({"prompt": "<sys>history</sys><user>" + READ_AHEAD_MARKER}
                      if self.path == "/apply-template" else {"timings": {"prompt_n": 40, "cache_n": 200}})
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        def shutdown_request(self, request: Any) -> None:
            if request in resets:
                request.close()  # no shutdown(SHUT_WR): its FIN would read as a plain close
            else:
                super().shutdown_request(request)

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()

    async def scenario() -> int | None:
        async with httpx.AsyncClient(trust_env=False) as http:
            return await ChatClient(http, f"http://127.0.0.1:{server.server_address[1]}").read_ahead(HELLO)

    try:
        assert asyncio.run(scenario()) == 240
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["/apply-template", "/completion", "/completion"]
