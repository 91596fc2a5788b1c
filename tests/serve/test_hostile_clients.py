"""Clients that attack the local API itself: half-sent requests by the hundred, broken chunked
bodies, huge chunks, web pages of other sites. Each builds its hostile input with raw sockets over
loopback (or real HTTP clients), against the real server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from strata_gui.core.serve.records import ServerLimits
from tests.serve.conftest import SCRIPTED_ID, Api, run_api
from tests.support.engine_router import EngineRouter, TestModel, served
from tests.support.scripted_engine import ENGINE_KEY, scripted_engine

KEY = "client-key-for-strata"
ROOT = Path(__file__).resolve().parents[2]
HALF_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed this client socket (EOF or reset), without blocking."""
    try:
        return sock.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="the file limit is a POSIX resource limit")
def test_hundreds_of_half_sent_requests_do_not_keep_a_keyed_client_out() -> None:
    """300 half-sent request heads against a server that may open 256 files: the keyed request is
    still served at once (the oldest half-sent ones make room), the server keeps no more than its
    cap open, and the rest are closed by the head time-out."""
    header_timeout = 60.0  # longer than the client waits below: only the cap can let it in
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.limited_server", "256", str(header_timeout), KEY],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    socks: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        port, cap = (int(x) for x in proc.stdout.readline().split())
        assert cap == 128  # half the 256 files
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(HALF_HEAD)  # ... and never the blank line that ends the head
            socks.append(s)
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(30.0)) as http:
            r = http.get(f"http://127.0.0.1:{port}/v1/models", headers={"Authorization": f"Bearer {KEY}"})
        assert r.status_code == 200 and r.json()["object"] == "list"
        # The server closed the oldest to stay within its cap; the newest are still open (the
        # head time-out has not come), so it was the cap that let the keyed client in.
        deadline = time.monotonic() + 10.0
        while sum(not _closed_by_server(s) for s in socks) > cap and time.monotonic() < deadline:
            time.sleep(0.1)
        still_open = [s for s in socks if not _closed_by_server(s)]
        assert 0 < len(still_open) <= cap
        assert all(_closed_by_server(s) for s in socks[:300 - cap])  # the oldest went first
    finally:
        for s in socks:
            s.close()
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Too many open files" not in err, err


def _raw(port: int, parts: list[bytes], pause: float = 0.3) -> bytes:
    """Send ``parts`` with a pause between them (so the server has started on the request), then
    read the answer until the server closes the connection or 30 s pass."""
    with socket.create_connection(("127.0.0.1", port), timeout=30.0) as s:
        for i, part in enumerate(parts):
            if i:
                time.sleep(pause)
            try:
                s.sendall(part)
            except ConnectionError:
                break
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionError:
                return data
            except TimeoutError as exc:
                raise AssertionError(f"no end of the answer in 30 s: {data[:300]!r}") from exc
            if not chunk:
                return data
            data += chunk


def _router(base_url: str, test_model: Path) -> EngineRouter:
    from strata_gui.core.serve.router import KIND_TEXT

    return EngineRouter([TestModel(served(SCRIPTED_ID, KIND_TEXT, test_model), frozenset({"openai"}),
                                   base_url=base_url, api_key=ENGINE_KEY)])


def test_malformed_and_huge_chunked_bodies_get_an_answer_and_no_traceback(
        test_model: Path, caplog: pytest.LogCaptureFixture) -> None:
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + KEY.encode()
            + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    caplog.set_level(logging.DEBUG)
    with scripted_engine("text") as engine:
        async def body(api: Api) -> None:
            port = api.server.port

            def ask(parts: list[bytes]) -> tuple[bytes, bytes]:
                answer = _raw(port, parts)
                status, _, rest = answer.partition(b"\r\n\r\n")
                return status.split(b"\r\n")[0], rest

            # A negative chunk size in the packet of the head: the parser refuses the request.
            status, rest = await asyncio.to_thread(ask, [head + b"-5\r\nhello\r\n0\r\n\r\n"])
            assert status.startswith((b"HTTP/1.1 400", b"HTTP/1.0 400")), (status, rest)
            # Once the handler reads the body, and after a good chunk: aiohttp's C parser leaves the
            # body open (no public way to see its error), so the body time-out answers, in the API's
            # shape, and the server goes on.
            # (The three at once: each waits for the body time-out.)
            cases = ([head, b"-5\r\nhello\r\n0\r\n\r\n"], [head, b'1\r\n{\r\n', b"-5\r\n"], [head, b"zz\r\n"])
            answers = await asyncio.gather(*(asyncio.to_thread(ask, parts) for parts in cases))
            for parts, (status, rest) in zip(cases, answers, strict=True):
                assert status == b"HTTP/1.1 408 Request Timeout", (parts, status, rest)
                assert json.loads(rest)["error"]["code"] == "request_timeout"
            # A 300 MB chunk: refused with 413 once the limit is read, not after 300 MB.
            huge = [head + b"%x\r\n" % (300 * 1024 * 1024)] + [b" " * (1024 * 1024)] * 4
            status, rest = await asyncio.to_thread(lambda: ask(huge))
            assert status == b"HTTP/1.1 413 Request Entity Too Large"
            assert json.loads(rest)["error"]["code"] == "request_too_large"
            assert engine.requests == []
            # The server still serves.
            r = await api.http.post(api.base + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                                    json={"model": SCRIPTED_ID, "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 200

        run_api(_router(engine.base_url, test_model), body, api_key=KEY,
                limits=ServerLimits(max_body_bytes=1024 * 1024, body_timeout_s=2.0))
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    assert any("refused a malformed request" in r.getMessage() for r in caplog.records)


def test_a_sandboxed_page_origin_null_is_refused_without_a_key(test_model: Path) -> None:
    """A page of any site can run in a sandboxed frame, whose requests say ``Origin: null``: without
    a key that is a cross-site request like any other; loopback names, with the port, pass."""
    with scripted_engine("text") as engine:
        async def body(api: Api) -> None:
            chat = {"model": SCRIPTED_ID, "messages": [{"role": "user", "content": "hi"}]}
            r = await api.http.post(api.base + "/v1/chat/completions", json=chat, headers={"Origin": "null"})
            assert r.status_code == 403 and "Origin" in r.json()["error"]["message"]
            assert engine.requests == []
            port = api.server.port
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "localhost"):
                r = await api.http.post(api.base + "/v1/chat/completions", json=chat, headers={"Host": host})
                assert r.status_code == 200, host
            for host in (f"127.0.0.1.evil.example:{port}", f"localhost.evil.example:{port}", ""):
                r = await api.http.post(api.base + "/v1/chat/completions", json=chat, headers={"Host": host})
                assert r.status_code == 403, host

        run_api(_router(engine.base_url, test_model), body)
