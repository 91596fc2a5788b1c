"""A loopback engine speaking llama-server's OpenAI chat API with scripted replies.

Used where the real engine cannot be made to do something on purpose with a random-weight model:
think (``reasoning_content``), call a tool (``tool_calls`` with arguments in pieces), stream
forever (to stop a server under it), fail mid-stream. It records every request it receives,
headers included, so tests can check what the local API sent to the engine.

Each reply is picked by ``engine.script`` (a name in :data:`REPLIES`); replies honour ``stream``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENGINE_KEY = "engine-only-key"  # what the engine accepts; clients of the local API never know it


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
TIMINGS = {"prompt_n": 11, "prompt_ms": 5.0, "prompt_per_second": 2200.0, "predicted_n": 7, "predicted_ms": 14.0,
           "predicted_per_second": 500.0, "cache_n": 0}

# name -> (stream chunks, whole message, finish reason)
REPLIES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]] = {
    "thinking": (
        [_chunk({"role": "assistant", "content": None}),
         _chunk({"reasoning_content": "Let me think"}), _chunk({"reasoning_content": " about it."}),
         _chunk({"content": "Hello"}), _chunk({"content": " there"})],
        {"role": "assistant", "content": "Hello there", "reasoning_content": "Let me think about it."},
        "stop",
    ),
    "tool": (
        [_chunk({"role": "assistant", "content": None}),
         _chunk({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function",
                                 "function": {"name": "get_weather", "arguments": ""}}]}),
         _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
         _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]})],
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_abc", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        "tool_calls",
    ),
    "text": (
        [_chunk({"role": "assistant", "content": None}), _chunk({"content": "It is sunny"}),
         _chunk({"content": " in Paris."})],
        {"role": "assistant", "content": "It is sunny in Paris."},
        "stop",
    ),
}


@dataclass
class ScriptedEngine:
    """What a running scripted engine received, and what it answers next."""

    base_url: str = ""
    script: str = "thinking"
    requests: list[dict[str, Any]] = field(default_factory=list)  # bodies
    headers: list[dict[str, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    endless_sent: int = 0
    # Endless streams whose client left (a write failed): the event that proves a stream was closed.
    endless_left: int = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    engine: ScriptedEngine

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _event(self, body: Any) -> None:
        data = b"data: " + (body if isinstance(body, bytes) else json.dumps(body).encode()) + b"\n\n"
        self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data))
        self.wfile.flush()

    def do_POST(self) -> None:
        engine = self.engine
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        engine.requests.append(body)
        engine.headers.append({k.lower(): v for k, v in self.headers.items()})
        if self.headers.get("Authorization") != f"Bearer {ENGINE_KEY}":
            self._send_json(401, {"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}})
            return
        if self.path != "/v1/chat/completions":
            self._send_json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
            return
        script = engine.script
        if not body.get("stream"):
            _chunks, message, finish = REPLIES[script]
            self._send_json(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
                                  "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                  "usage": USAGE, "timings": TIMINGS})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if script == "endless":  # a piece every 20 ms until the client leaves or the test ends
                self._event(_chunk({"role": "assistant", "content": None}))
                try:
                    while not engine.stop.is_set():
                        self._event(_chunk({"content": "la "}))
                        engine.endless_sent += 1
                        time.sleep(0.02)
                except (BrokenPipeError, ConnectionResetError):
                    engine.endless_left += 1
                return
            if script == "slow":  # ten pieces 50 ms apart, then a proper end
                self._event(_chunk({"role": "assistant", "content": None}))
                for i in range(10):
                    self._event(_chunk({"content": f"p{i} "}))
                    time.sleep(0.05)
                self._event(_chunk({}, "stop"))
                self._event(b"[DONE]")
            elif script == "midstream-error":
                self._event(_chunk({"content": "partial"}))
                self._event({"error": {"code": 500, "message": "llama_decode failed", "type": "server_error"}})
            else:
                chunks, _message, finish = REPLIES[script]
                for c in chunks:
                    self._event(c)
                last = _chunk({}, finish)
                last["timings"] = TIMINGS
                self._event(last)
                if (body.get("stream_options") or {}).get("include_usage"):
                    self._event({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                                 "usage": USAGE, "timings": TIMINGS})
                self._event(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client left (what the endless script waits for)


@contextmanager
def scripted_engine(script: str = "thinking") -> Iterator[ScriptedEngine]:
    """Run a scripted engine on a loopback port until the block ends."""
    engine = ScriptedEngine(script=script)
    handler = type("Handler", (_Handler,), {"engine": engine})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, name="scripted-engine", kwargs={"poll_interval": 0.05})
    thread.start()
    engine.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield engine
    finally:
        engine.stop.set()
        server.shutdown()
        server.server_close()
        thread.join()
