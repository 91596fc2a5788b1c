"""The plain-HTTP transport that carries every request to the engines on this computer: requests and
streamed answers as httpx's own transport gives them, connections reused and dropped as they should
be, and every failure as the httpx error the rest of Strata handles. Servers are real sockets on
loopback that misbehave on purpose."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable

import httpx
import pytest

from strata_gui.core.plainhttp import DISCONNECTED, PlainHttpTransport
from strata_gui.core.transfer import TlsContext, loopback_client

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """An HTTP/1.1 server on loopback whose behaviour each test writes; counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
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


async def read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    """One request's line and body (Content-Length bodies); None when the client closed."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    lines = head.decode().split("\r\n")
    length = next((int(v) for k, _, v in (line.partition(": ") for line in lines[1:]) if k.lower() == "content-length"),
                  0)
    return lines[0], await reader.readexactly(length) if length else b""


def answer(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers every request on the connection with its request line and body echoed."""
    while True:
        try:
            req = await read_request(reader)
        except asyncio.IncompleteReadError:
            return
        if req is None:
            return
        writer.write(answer(json.dumps({"line": req[0], "body": req[1].decode()}).encode(),
                            extra="Content-Type: application/json\r\n"))
        await writer.drain()


def client(**kwargs: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=PlainHttpTransport(**kwargs), trust_env=False)  # type: ignore[arg-type]


def test_requests_and_answers_as_httpx_gives_them_and_one_connection_serves_them_all() -> None:
    async def body() -> None:
        async with Server(keep_alive) as server, client() as http:
            got = await http.get(server.url + "/health?x=1")
            assert got.status_code == 200 and got.json() == {"line": "GET /health?x=1 HTTP/1.1", "body": ""}
            assert got.http_version == "HTTP/1.1" and got.reason_phrase == "OK"
            assert got.headers["content-type"] == "application/json"
            posted = await http.post(server.url + "/v1/chat/completions", json={"messages": ["hi"]})
            assert json.loads(posted.json()["body"]) == {"messages": ["hi"]}

            async def chunks() -> object:
                yield b"part one, "
                yield b"part two"

            streamed = await http.post(server.url + "/upload", content=chunks())  # chunked request body
            assert streamed.status_code == 200
            assert server.connections == 1  # kept alive and reused

    asyncio.run(body())


def test_a_streamed_answer_arrives_piece_by_piece() -> None:
    """As llama-server streams tokens: each event is readable before the next one is written."""
    release = asyncio.Event()

    async def sse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(3):
            event = f"data: token {i}\n\n".encode()
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await release.wait()
            release.clear()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def body() -> None:
        async with Server(sse) as server, client() as http, http.stream("GET", server.url + "/stream") as resp:
            seen = []
            async for line in resp.aiter_lines():
                if line:
                    seen.append(line)
                    release.set()  # the server writes the next event only now
            assert seen == ["data: token 0", "data: token 1", "data: token 2"]

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_reply_stopped_midway_closes_its_connection_and_the_next_request_gets_a_new_one() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        req = await read_request(reader)
        if req and req[0].startswith("GET /stream"):
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            while True:
                writer.write(b"6\r\ntoken \r\n")
                await writer.drain()
                await asyncio.sleep(0.01)
        writer.write(answer(b"fine"))
        await writer.drain()
        await keep_alive(reader, writer)

    async def body() -> None:
        async with Server(endless) as server, client() as http:
            async with http.stream("GET", server.url + "/stream") as resp:
                async for _chunk in resp.aiter_bytes():
                    break  # Stop
            after = await http.get(server.url + "/health")
            assert after.text == "fine"
            assert server.connections == 2

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_connection_the_server_dropped_while_idle_is_not_reused() -> None:
    async def one_per_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"once"))  # keep-alive implied by HTTP/1.1, then closed anyway
        await writer.drain()

    async def body() -> None:
        async with Server(one_per_connection) as server, client() as http:
            assert (await http.get(server.url + "/a")).text == "once"
            await asyncio.sleep(0.05)  # the server's close has arrived
            assert (await http.get(server.url + "/b")).text == "once"
            assert server.connections == 2

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_request_on_a_connection_the_server_closes_at_that_moment_is_sent_again() -> None:
    """The keep-alive race: the server reads the next request and closes without an answer."""

    async def closes_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"first"))
        await writer.drain()
        await read_request(reader)  # the reused connection's request: dropped unanswered

    async def body() -> None:
        async with Server(closes_the_second) as server, client() as http:
            assert (await http.get(server.url + "/a")).text == "first"
            assert (await http.post(server.url + "/b", json={})).text == "first"  # on a new connection
            assert server.connections == 2

    asyncio.run(asyncio.wait_for(body(), 10))


def test_an_expired_idle_connection_is_not_reused() -> None:
    now = [0.0]

    async def body() -> None:
        async with Server(keep_alive) as server, client(keepalive_expiry=2.0, clock=lambda: now[0]) as http:
            await http.get(server.url + "/a")
            now[0] = 2.5
            await http.get(server.url + "/b")
            assert server.connections == 2

    asyncio.run(asyncio.wait_for(body(), 10))


def test_connection_close_from_the_server_is_honoured() -> None:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"bye", extra="Connection: close\r\n"))
        await writer.drain()
        await asyncio.sleep(0.5)  # keeps the socket open: only the header says it is done

    async def body() -> None:
        async with Server(closing) as server, client() as http:
            await http.get(server.url + "/a")
            await http.get(server.url + "/b")
            assert server.connections == 2

    asyncio.run(asyncio.wait_for(body(), 10))


@pytest.mark.parametrize(("behaviour", "error", "text"), [
    ("silent", httpx.ReadTimeout, ""),
    ("garbage", httpx.RemoteProtocolError, ""),
    ("hang-up", httpx.RemoteProtocolError, DISCONNECTED),
    ("cut-body", httpx.RemoteProtocolError, ""),
])
def test_a_misbehaving_server_gives_the_httpx_error_strata_handles(behaviour: str, error: type[Exception],
                                                                    text: str) -> None:
    async def bad(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        if behaviour == "silent":
            await asyncio.sleep(5)
        elif behaviour == "garbage":
            writer.write(b"this is not HTTP at all\r\n\r\n")
        elif behaviour == "cut-body":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part of it")
        await writer.drain()

    async def body() -> None:
        async with Server(bad) as server, client() as http:
            with pytest.raises(error) as caught:
                await http.get(server.url + "/x", timeout=httpx.Timeout(5.0, read=0.3))
            assert text in str(caught.value)
            assert caught.value.request.url.path == "/x"  # type: ignore[attr-defined]

    asyncio.run(asyncio.wait_for(body(), 10))


def test_nobody_listening_is_a_connect_error_and_https_is_refused() -> None:
    async def body() -> None:
        async with Server(keep_alive) as server:
            url = server.url
        async with client() as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(url + "/health")
            with pytest.raises(httpx.UnsupportedProtocol):
                await http.get("https://127.0.0.1:1/")

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_cancelled_request_leaves_nothing_open() -> None:
    async def body() -> None:
        held: list[asyncio.StreamWriter] = []

        async def never_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            held.append(writer)
            await read_request(reader)
            await reader.read()  # until the client goes away
            assert reader.at_eof()

        async with Server(never_answers) as server, client() as http:
            task = asyncio.create_task(http.get(server.url + "/slow"))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.1)
            assert held and held[0].is_closing()  # the server saw the client close the socket

    asyncio.run(asyncio.wait_for(body(), 10))


def test_an_engine_request_imports_neither_httpcore_nor_anyio() -> None:
    """What the transport is for: the first request to an engine without ~65 ms of imports."""
    code = (
        "import asyncio, sys, http.server, threading\n"
        "from strata_gui.core.transfer import TlsContext, loopback_client\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers()\n"
        "        self.wfile.write(b'ok')\n"
        "    def log_message(self, *a): pass\n"
        "srv = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
        "threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
        "async def main():\n"
        "    c = loopback_client(TlsContext(), trust_env=False)\n"
        "    r = await c.get(f'http://127.0.0.1:{srv.server_address[1]}/health')\n"
        "    await c.aclose()\n"
        "    return r.text\n"
        "print(asyncio.run(main()), 'httpcore' in sys.modules, 'anyio._backends._asyncio' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["ok", "False", "False"]


def test_the_app_client_routes_https_to_httpx_and_http_to_this_transport() -> None:
    async def body() -> None:
        async with Server(keep_alive) as server:
            http = loopback_client(TlsContext(), trust_env=False)
            try:
                assert (await http.get(server.url + "/x")).status_code == 200
                plain = http._transport._plain._inner  # type: ignore[attr-defined]
                assert isinstance(plain, PlainHttpTransport)
                assert http._transport._tls._inner is None  # type: ignore[attr-defined]
            finally:
                await http.aclose()

    asyncio.run(asyncio.wait_for(body(), 10))


def test_bytes_a_server_sent_on_an_idle_connection_are_never_read_as_the_next_answer() -> None:
    """A server that says "408 Request Timeout" on an idle connection before closing it: that
    connection was reused and its 408 read as the answer to the next request."""

    async def times_out_idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"first"))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(answer(b"", status="408 Request Timeout", extra="Connection: close\r\n"))
        await writer.drain()
        await asyncio.sleep(1)  # closes only later: the connection still looks open

    async def body() -> None:
        async with Server(times_out_idle) as server, client() as http:
            assert (await http.get(server.url + "/a")).text == "first"
            await asyncio.sleep(0.2)  # the 408 has arrived
            second = await http.get(server.url + "/b")
            assert (second.status_code, second.text) == (200, "first") and server.connections == 2

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_switch_to_another_protocol_is_an_error_not_a_hang() -> None:
    """After "101 Switching Protocols" h11 has no more HTTP to give: the transport spun on it for
    ever at full CPU, and no timeout could fire."""

    async def switches(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(2)

    async def body() -> None:
        async with Server(switches) as server, client() as http:
            with pytest.raises(httpx.RemoteProtocolError, match="another protocol"):
                await http.get(server.url + "/ws", headers={"Upgrade": "websocket", "Connection": "Upgrade"})

    asyncio.run(asyncio.wait_for(body(), 5))


def test_a_body_that_cannot_be_sent_twice_is_not_sent_again() -> None:
    """The keep-alive race with a streamed upload: the generator is used up by the first try, so
    the request fails with the connection's error instead of httpx's StreamConsumed (a RuntimeError)."""

    async def closes_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"first"))
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")  # the second request's head: dropped unanswered

    async def chunks() -> object:
        yield b"part"

    async def body() -> None:
        async with Server(closes_the_second) as server, client() as http:
            assert (await http.get(server.url + "/a")).text == "first"
            with pytest.raises(httpx.TransportError):
                await http.post(server.url + "/b", content=chunks())

    asyncio.run(asyncio.wait_for(body(), 10))


def test_the_trace_extension_hears_when_the_request_was_sent() -> None:
    """Chat uses httpx's ``trace`` extension to learn that the engine has the request (it starts its
    "waiting for the first token" state then); this transport never called it."""
    heard: list[str] = []

    async def trace(name: str, info: dict[str, object]) -> None:
        assert isinstance(info["request"], httpx.Request)
        heard.append(name)

    async def body() -> None:
        async with Server(keep_alive) as server, client() as http:
            await http.post(server.url + "/v1/chat/completions", json={}, extensions={"trace": trace})

    asyncio.run(asyncio.wait_for(body(), 10))
    assert heard == [f"http11.{step}.{when}" for step in ("send_request_headers", "send_request_body",
                                                          "receive_response_headers") for when in ("started", "complete")]


def test_closing_the_client_ends_replies_still_streaming() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:
            writer.write(b"6\r\ntoken \r\n")
            await writer.drain()
            await asyncio.sleep(0.01)

    async def body() -> None:
        async with Server(endless) as server:
            http = client()
            async with http.stream("GET", server.url + "/stream") as resp:
                pieces = resp.aiter_bytes()
                await pieces.__anext__()
                await http.aclose()
                with pytest.raises(httpx.TransportError):
                    for _ in range(1000):
                        await pieces.__anext__()

    asyncio.run(asyncio.wait_for(body(), 10))


def test_a_long_response_head_in_pieces_is_read_as_httpx_reads_it() -> None:
    """h11's own limit on an incomplete head is 16 KiB; httpx's transport allows 100 KiB (a remote
    engine behind a proxy that adds long headers)."""

    async def big_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        head = b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 20_000 + b"\r\nContent-Length: 2\r\n\r\nok"
        writer.write(head[:10_000])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(head[10_000:])
        await writer.drain()

    async def body() -> None:
        async with Server(big_head) as server, client() as http:
            got = await http.get(server.url + "/")
            assert got.text == "ok" and len(got.headers["x-long"]) == 20_000

    asyncio.run(asyncio.wait_for(body(), 10))


def test_an_answer_sent_before_the_upload_ended_is_given_as_httpx_gives_it() -> None:
    """A server that refuses a body midway ("413") and closes: the answer, not a write error."""

    async def refuses(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer(b"too large", status="413 Payload Too Large", extra="Connection: close\r\n"))
        await writer.drain()
        writer.transport.pause_reading() if hasattr(writer.transport, "pause_reading") else None
        await asyncio.sleep(0.5)

    async def body() -> None:
        async with Server(refuses) as server, client() as http:
            try:
                got = await http.post(server.url + "/upload", content=b"x" * 20_000_000)
            except httpx.ReadError:
                return  # the reset reached the socket before the answer: what httpx's transport gives then
            assert (got.status_code, got.text) == (413, "too large")

    asyncio.run(asyncio.wait_for(body(), 10))
