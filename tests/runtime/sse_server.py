"""A loopback server speaking llama-server's streaming chat format, with scripted faults.

Used where the real engine cannot be made to misbehave on purpose: comment lines between
events, an error event mid-stream, a refused API key, a connection dropped mid-reply.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PAUSE = b""  # in a script: wait a moment, so the next part arrives in a read of its own


def chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra}
    return f"data: {json.dumps(body)}\n\n".encode()


SCRIPTS: dict[str, list[bytes]] = {
    "ok": [
        b": ping\n\n",
        chunk("Hel"),
        b": another comment\n\n",
        chunk("lo"),
        chunk(None, "stop", timings={"prompt_n": 5, "cache_n": 2, "prompt_per_second": 1000.0,
                                     "predicted_n": 2, "predicted_per_second": 50.0}),
        b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}\n\n',
        b"data: [DONE]\n\n",
    ],
    "midstream-error": [
        chunk("partial"),
        b'data: {"error": {"code": 500, "message": "llama_decode failed", "type": "server_error"}}\n\n',
    ],
    "drop": [chunk("partial")],
    # JSON allows U+2028/U+2029/U+0085 unescaped in strings, and llama-server sends them so.
    "unicode-separators": [
        'data: {"choices": [{"index": 0, "delta": {"content": "a\u2028b"}, "finish_reason": null}]}\n\n'.encode(),
        'data: {"choices": [{"index": 0, "delta": {"content": "c\u2029d\u0085e"}, "finish_reason": null}]}\n\n'
        .encode(),
        chunk(None, "stop"),
        b"data: [DONE]\n\n",
    ],
    # Events cut anywhere by the network: inside a UTF-8 character, inside the JSON, between CR and
    # LF; CRLF line ends; one event's data on two lines; several events in one read.
    "split-crlf": [
        'data: {"choices": [{"index": 0, "delta": {"content": "ét'.encode()[:-2],
        PAUSE,
        'data: {"choices": [{"index": 0, "delta": {"content": "ét'.encode()[-2:]
        + b'\\u00e9"}, "finish_reason": null}]}\r',
        PAUSE,
        b"\n\r\n",
        b'data: {"choices": [{"index": 0,\r\ndata: "delta": {"content": " \xe2\x80\xa8ok"}}]}\r\n\r\n'
        + chunk(" two") + chunk(None, "stop"),
        PAUSE,
        b"data: [DONE]\r\n\r\n",
    ],
    # 40 tokens in four bursts: each burst arrives in one read, as when the engine outpaces the loop.
    "bursts": [part for burst in range(4)
               for part in (b"".join(chunk(f"t{i} ") for i in range(burst * 10, burst * 10 + 10)), PAUSE)]
    + [chunk(None, "stop"), b"data: [DONE]\n\n"],
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(body)  # type: ignore[attr-defined]
        script = self.server.script  # type: ignore[attr-defined]
        if script == "unauthorized":
            payload = json.dumps({"error": {"code": 401, "message": "Invalid API Key",
                                            "type": "authentication_error"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for part in SCRIPTS[script]:
            if part == PAUSE:
                time.sleep(0.05)
                continue
            self.wfile.write(part)
            self.wfile.flush()
        self.close_connection = True


@contextmanager
def sse_server(script: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``script`` on a loopback port; yield (base URL, received request bodies)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = False
    server.script = script  # type: ignore[attr-defined]
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="sse-server")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
