"""The one engine client: the engine's key on every request, the keep-alive race answered by sending
once more (never a request that must not run twice), a reply left early closing its connection,
and every connection failure as core's ServerError with a hint. Servers are real sockets on
loopback that misbehave on purpose."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable

import httpx
import pytest

from strata_gui.core.base.errors import ServerError
from strata_gui.core.net.transfer import loopback_client
from strata_gui.core.runtime.engine_http import EngineHttp

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """An HTTP/1.1 server on loopback whose behaviour each test writes; counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.heads: list[str] = []
        self.server: asyncio.AbstractServer | None = None
        self.url = ""

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def read_request(self, reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
        """One request's line and body (Content-Length bodies); None when the client closed."""
        head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
        if not head:
            return None
        self.heads.append(head.decode())
        lines = head.decode().split("\r\n")
        length = next((int(v) for k, _, v in (line.partition(": ") for line in lines[1:])
                       if k.lower() == "content-length"), 0)
        return lines[0], await reader.readexactly(length) if length else b""


def answer(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 20))


def test_every_request_carries_the_engines_key_and_reads_json() -> None:
    server: Server

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (req := await server.read_request(reader)) is not None:
            writer.write(answer(json.dumps({"line": req[0], "body": req[1].decode()}).encode(),
                                extra="Content-Type: application/json\r\n"))
            await writer.drain()

    async def body() -> None:
        nonlocal server
        async with Server(echo) as server, loopback_client() as http:
            engine = EngineHttp(http, server.url + "/", "k3y")
            assert engine.base_url == server.url
            assert await engine.get_json("/props", timeout=5.0) == {"line": "GET /props HTTP/1.1", "body": ""}
            resp = await engine.post("/completion", json={"n_predict": 0}, timeout=5.0)
            assert resp.json()["body"] == '{"n_predict":0}'
            assert len(server.heads) == 2 and all("authorization: bearer k3y" in h.lower() for h in server.heads)
            assert server.connections == 1  # one kept-alive connection served both
            await EngineHttp(http, server.url).get("/x", timeout=5.0)  # an engine without a key
            assert "authorization" not in server.heads[-1].lower()

    run(body)


def test_a_request_on_a_connection_the_engine_closes_at_that_moment_is_sent_again() -> None:
    """The keep-alive race: the engine reads the next request and closes without an answer."""
    server: Server

    async def closes_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(answer(b"first"))
        await writer.drain()
        await server.read_request(reader)  # the reused connection's request: dropped unanswered

    async def body() -> None:
        nonlocal server
        async with Server(closes_the_second) as server, loopback_client() as http:
            engine = EngineHttp(http, server.url)
            assert (await engine.get("/a", timeout=5.0)).text == "first"
            assert (await engine.post("/b", json={}, timeout=5.0)).text == "first"  # on a new connection
            assert server.connections == 2
            # A request that must not run twice (an image job) is not sent again.
            with pytest.raises(ServerError, match="stopped answering") as caught:
                await engine.post("/job", json={}, timeout=5.0, resend=False)
            assert server.connections == 2 and server.heads[-1].startswith("POST /job")
            assert isinstance(caught.value.__cause__, httpx.RemoteProtocolError | httpx.ReadError)

    run(body)


def test_a_request_dropped_on_a_new_connection_is_not_sent_again() -> None:
    """Only the keep-alive race is answered by sending again: on a connection opened for the
    request, the engine had it and broke off (a crash), and a second POST could run it twice."""
    server: Server

    async def drops_every_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)  # read, then closed unanswered

    async def body() -> None:
        nonlocal server
        async with Server(drops_every_request) as server, loopback_client() as http:
            engine = EngineHttp(http, server.url)
            with pytest.raises(ServerError, match="stopped answering"):
                await engine.post("/v1/chat/completions", json={"messages": []}, timeout=5.0)
            assert server.connections == 1 and len(server.heads) == 1  # sent once

    run(body)


def test_a_reply_left_early_closes_its_connection_and_the_next_request_gets_a_new_one() -> None:
    server: Server

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        req = await server.read_request(reader)
        if req and req[0].startswith("POST /stream"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            while True:
                writer.write(b"e\r\ndata: token\r\r\n\r\n")
                await writer.drain()
                await asyncio.sleep(0.01)
        writer.write(answer(b"fine"))
        await writer.drain()

    async def body() -> None:
        nonlocal server
        async with Server(endless) as server, loopback_client() as http:
            engine = EngineHttp(http, server.url)
            async with engine.stream("/stream", json={}) as reply:
                assert reply.content_type == "text/event-stream"
                async for events in reply.events():
                    assert [e.data for e in events][:1] == [b"token"]
                    break  # Stop
            assert (await engine.get("/health", timeout=5.0)).text == "fine"
            assert server.connections == 2

    run(body)


def test_the_trace_extension_hears_when_the_request_was_sent() -> None:
    server: Server
    heard: list[str] = []
    heard_before_the_answer: list[str] = []
    sent = asyncio.Event()

    async def slow_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        with contextlib.suppress(TimeoutError):  # never heard: the assertion below says so
            await asyncio.wait_for(sent.wait(), 10)
        heard_before_the_answer.extend(heard)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async def trace(name: str, _info: object) -> None:
        if name.endswith("send_request_body.complete"):
            heard.append(name)
            sent.set()

    async def body() -> None:
        nonlocal server
        async with Server(slow_answer) as server, loopback_client() as http, \
                EngineHttp(http, server.url).stream("/v1/chat/completions", json={},
                                                    extensions={"trace": trace}) as reply:
            assert reply.status_code == 200 and await reply.read() == b""
        assert heard == heard_before_the_answer == ["http11.send_request_body.complete"]

    run(body)


@pytest.mark.parametrize(("behaviour", "message", "hint"), [
    ("silent", "did not answer in time", None),
    ("garbage", "stopped answering", "probably crashed"),
    ("hang-up", "stopped answering", "probably crashed"),
    ("cut-body", "stopped answering", "probably crashed"),
    ("nobody", "Could not reach the engine at http://127.0.0.1:", "may have stopped"),
])
def test_a_failing_engine_is_a_server_error_with_a_hint(behaviour: str, message: str, hint: str | None) -> None:
    server: Server

    async def bad(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        if behaviour == "silent":
            await asyncio.sleep(5)
        elif behaviour == "garbage":
            writer.write(b"this is not HTTP at all\r\n\r\n")
        elif behaviour == "cut-body":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part of it")
        await writer.drain()

    async def body() -> None:
        nonlocal server
        async with Server(bad) as server:
            url = server.url
            if behaviour == "nobody":
                server.server.close()  # type: ignore[union-attr]
                await server.server.wait_closed()  # type: ignore[union-attr]
            async with loopback_client() as http:
                with pytest.raises(ServerError) as caught:
                    await EngineHttp(http, url).get("/x", timeout=httpx.Timeout(5.0, read=0.3))
        assert message in caught.value.message
        assert (hint is None and caught.value.hint is None) or (hint and hint in (caught.value.hint or ""))
        assert caught.value.details

    run(body)


def test_a_body_that_breaks_mid_stream_is_a_server_error() -> None:
    server: Server

    async def breaks(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 1000\r\n\r\n"
                     b"data: one\n\n")
        await writer.drain()
        await asyncio.sleep(0.1)

    async def body() -> None:
        nonlocal server
        got: list[bytes] = []
        async with Server(breaks) as server, loopback_client() as http:
            with pytest.raises(ServerError, match="stopped answering"):
                async with EngineHttp(http, server.url).stream("/v1/chat/completions", json={}) as reply:
                    async for events in reply.events():
                        got.extend(e.data for e in events)
        assert got == [b"one"]

    run(body)
