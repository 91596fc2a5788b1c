"""Engines speak plain HTTP on loopback: their requests never load the CA bundle, and a server
that is idle can load what its first request to an engine needs ahead of it."""

from __future__ import annotations

import asyncio
import http.server
import ssl
import sys
import threading
from collections.abc import Iterator

import pytest

from strata_gui.core.transfer import PlainOrTlsTransport, TlsContext, loopback_client, prepare_loopback


@pytest.fixture
def local_server() -> Iterator[str]:
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_plain_request_never_loads_the_certificates(local_server: str) -> None:
    made: list[ssl.SSLContext] = []

    def make() -> ssl.SSLContext:
        made.append(ssl.create_default_context())
        return made[-1]

    async def body() -> None:
        client = loopback_client(TlsContext(make), trust_env=False)
        try:
            resp = await client.get(local_server + "/health")
            assert resp.status_code == 200 and resp.text == "ok"
        finally:
            await client.aclose()

    asyncio.run(body())
    assert made == []


def test_prepare_makes_the_plain_transport_and_its_connection_layer() -> None:
    async def body() -> None:
        client = loopback_client(TlsContext(), trust_env=False)
        try:
            transport = client._transport
            assert isinstance(transport, PlainOrTlsTransport) and transport._plain._inner is None
            prepare_loopback(client)
            assert transport._plain._inner is not None and transport._tls._inner is None
            assert "h11" in sys.modules
        finally:
            await client.aclose()

    asyncio.run(body())
