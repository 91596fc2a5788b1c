"""A small OpenAI-style server that streams without llama.cpp's ``timings`` (like vLLM/SGLang).

It replies to ``/v1/models`` and streams ``/v1/chat/completions`` as SSE with a final ``usage``
chunk only, so the client must measure TTFT and tokens/s itself.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORDS = ["Hello", " from", " a", " remote", " server", "."]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "org/Model-7B", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found", "code": 404}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if getattr(self.server, "echo_auth", False):
            # Servers that quote the request in their error (a proxy, a debug build) echo the key.
            self._json(500, {"error": {"message": f"cannot serve request with Authorization: "
                                                  f"{self.headers.get('Authorization', '')}", "code": 500}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        words = getattr(self.server, "words", WORDS)
        for i, word in enumerate(words):
            chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "org/Model-7B",
                     "choices": [{"index": 0, "delta": {"content": word},
                                  "finish_reason": "stop" if i == len(words) - 1 else None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.01)
        tokens = getattr(self.server, "completion_tokens", None) or len(words)
        usage = {"id": "c1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": tokens,
                                                        "total_tokens": 9 + tokens}}
        self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def openai_like_server(*, echo_auth: bool = False, words: list[str] | None = None,
                       completion_tokens: int | None = None) -> Iterator[str]:
    """Serve on a free loopback port; with ``echo_auth`` every chat request fails with a 500 whose
    message quotes the request's Authorization header (the key). ``words`` are the streamed
    pieces (JSON-escaped as sent, so a lone surrogate arrives as ``\\ud83d``), 10 ms apart;
    ``completion_tokens`` what the final usage says (default: one per piece)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.echo_auth = echo_auth  # type: ignore[attr-defined]
    server.words = words or WORDS  # type: ignore[attr-defined]
    server.completion_tokens = completion_tokens  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="remote-test-server", kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
