"""A loopback server that speaks llama-server's streaming chat exactly: real captures and scripted variants.

The real engine cannot be made to do some things on purpose (think for 200 tokens and then answer,
fail its chat-format parser after some text, stay silent while busy), so this server replays the
byte streams captured from the pinned llama-server (``tests/data/chat/streams/*.sse``, recorded
by ``python -m tests.support.template_zoo --capture``) and builds variants in the same shape: the
same JSON keys in the same order, compact separators, non-ASCII unescaped, chunked transfer
encoding, an error as a ``data: {"error": ...}`` event followed by the end of the stream (no
``[DONE]``). ``GET /slots`` answers with a slot captured from the real engine whose
``next_token[0].n_decoded`` grows while a scripted reply is being "generated".

Usage::

    with openai_stream_server(reasoning_then_content(200, 5)) as server:
        client.post(server.url + "/v1/chat/completions", json={...})
        server.requests  # the request bodies received
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STREAMS = Path(__file__).resolve().parents[1] / "data" / "chat" / "streams"
PARSE_ERROR = {"code": 500, "message": "The model produced output that does not match the expected peg-native format",
               "type": "server_error"}
MODEL = "zoo-model.gguf"
FINGERPRINT = "b0-unknown"


@dataclass(frozen=True)
class Pause:
    """In a script: wait this long before the next part (the engine is busy; nothing is sent)."""

    seconds: float
    decoding: bool = True  # /slots shows tokens being decoded meanwhile


Part = bytes | Pause


@dataclass
class Script:
    """What one request gets: the parts of an SSE body, or a plain HTTP answer.

    Attributes:
        parts: SSE bytes to send (each in its own chunk) and pauses between them.
        status: The HTTP status (an error status sends ``body`` instead of a stream).
        body: JSON for a non-200 answer.
        tokens: How many tokens the "engine" decodes over the script (for ``/slots``).
    """

    parts: list[Part]
    status: int = 200
    body: dict[str, Any] | None = None
    tokens: int = 0


# --------------------------------------------------------------------------- llama-server's shapes


def _dumps(value: Any) -> str:
    # llama-server's nlohmann::json dump: compact, UTF-8 as is.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def event(payload: Any) -> bytes:
    """One SSE event as llama-server writes it: ``data: <json>`` and a blank line."""
    return f"data: {payload if isinstance(payload, str) else _dumps(payload)}\n\n".encode()


DONE = b"data: [DONE]\n\n"


@dataclass
class ChunkMaker:
    """Builds ``chat.completion.chunk`` events with the key order of the pinned llama-server."""

    model: str = MODEL
    id: str = "chatcmpl-zooScriptedStream0000000000000"
    created: int = 1796380000

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body: dict[str, Any] = {"choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
                                "created": self.created, "id": self.id, "model": self.model,
                                "system_fingerprint": FINGERPRINT, "object": "chat.completion.chunk"}
        body.update(extra)
        return event(body)

    def role(self) -> bytes:
        return self.chunk({"role": "assistant", "content": None})

    def final(self, finish: str, prompt_n: int = 11, predicted_n: int = 1) -> bytes:
        return self.chunk({}, finish, timings=timings(prompt_n, predicted_n))


def timings(prompt_n: int, predicted_n: int) -> dict[str, Any]:
    """A ``timings`` object in llama-server's shape (CPU-like figures)."""
    prompt_ms = prompt_n * 0.33
    predicted_ms = predicted_n * 1.3
    return {"cache_n": 0, "prompt_n": prompt_n, "prompt_ms": prompt_ms,
            "prompt_per_token_ms": prompt_ms / max(prompt_n, 1),
            "prompt_per_second": 1000 * prompt_n / prompt_ms if prompt_ms else 0.0,
            "predicted_n": predicted_n, "predicted_ms": predicted_ms,
            "predicted_per_token_ms": predicted_ms / max(predicted_n, 1),
            "predicted_per_second": 1000 * predicted_n / predicted_ms if predicted_ms else 0.0}


# --------------------------------------------------------------------------- captures


def capture_path(name: str) -> Path:
    return STREAMS / f"{name}.sse"


def capture_events(name: str) -> list[bytes]:
    """The events of a captured stream, each with its own trailing blank line, bytes as sent."""
    raw = capture_path(name).read_bytes()
    return [part + b"\n\n" for part in raw.split(b"\n\n") if part]


def replay(name: str, pause: float = 0.0) -> Script:
    """A captured stream, sent event by event (``pause`` seconds apart)."""
    parts: list[Part] = []
    for ev in capture_events(name):
        parts.append(ev)
        if pause:
            parts.append(Pause(pause))
    tokens = sum(1 for ev in capture_events(name) if b'"delta":{"' in ev and b'"role"' not in ev)
    return Script(parts, tokens=tokens)


def captured_slots() -> dict[str, Any]:
    """``GET /slots`` answers captured from the real engine: ``idle`` and a ``busy`` series."""
    data: dict[str, Any] = json.loads((STREAMS / "slots.json").read_text(encoding="utf-8"))
    return data


# --------------------------------------------------------------------------- scripted variants


def reasoning_then_content(reasoning_tokens: int, content_tokens: int, *, pause: float = 0.0,
                           maker: ChunkMaker | None = None) -> Script:
    """Thinking for N tokens, then an answer, as llama-server streams a reasoning model."""
    m = maker or ChunkMaker()
    parts: list[Part] = [m.role()]
    for i in range(reasoning_tokens):
        parts.append(m.chunk({"reasoning_content": f"r{i} "}))
        if pause:
            parts.append(Pause(pause))
    for i in range(content_tokens):
        parts.append(m.chunk({"content": f"c{i} "}))
    parts += [m.final("stop", predicted_n=reasoning_tokens + content_tokens + 1), DONE]
    return Script(parts, tokens=reasoning_tokens + content_tokens)


def tool_calls(calls: Sequence[tuple[str, str]], *, pieces: int = 4, content: str = "",
               maker: ChunkMaker | None = None) -> Script:
    """Tool calls with their arguments streamed in ``pieces`` parts each (llama-server's deltas).

    The first delta of a call carries ``index``, ``id``, ``type``, ``function.name`` and the first
    piece of ``function.arguments``; later deltas carry ``index`` and an arguments piece only.
    """
    m = maker or ChunkMaker()
    parts: list[Part] = [m.role()]
    if content:
        parts.append(m.chunk({"content": content}))
    tokens = 0
    for index, (name, arguments) in enumerate(calls):
        step = max(1, -(-len(arguments) // pieces))
        chunks = [arguments[i:i + step] for i in range(0, len(arguments), step)] or [""]
        call_id = f"zooToolCall{index}".ljust(32, "0")  # the engine's ids: 32 random letters and digits
        parts.append(m.chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                              "function": {"name": name, "arguments": chunks[0]}}]}))
        for piece in chunks[1:]:
            parts.append(m.chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        tokens += len(chunks) + 2
    parts += [m.final("tool_calls", predicted_n=tokens), DONE]
    return Script(parts, tokens=tokens)


def parse_failure_after(content_tokens: int, *, reasoning_tokens: int = 0, maker: ChunkMaker | None = None) -> Script:
    """Some text, then the chat-format parse error mid-stream, exactly as the engine sends it."""
    m = maker or ChunkMaker()
    parts: list[Part] = [m.role()]
    parts += [m.chunk({"reasoning_content": f"r{i} "}) for i in range(reasoning_tokens)]
    parts += [m.chunk({"content": f"c{i} "}) for i in range(content_tokens)]
    parts.append(event({"error": PARSE_ERROR}))  # and the stream ends: no [DONE]
    return Script(parts, tokens=reasoning_tokens + content_tokens + 1)


def busy_silence(seconds: float, then_content: int = 3, *, maker: ChunkMaker | None = None) -> Script:
    """The role chunk, then nothing visible for ``seconds`` while ``/slots`` shows tokens decoding."""
    m = maker or ChunkMaker()
    parts: list[Part] = [m.role(), Pause(seconds)]
    parts += [m.chunk({"content": f"c{i} "}) for i in range(then_content)]
    parts += [m.final("stop", predicted_n=then_content), DONE]
    return Script(parts, tokens=max(1, int(seconds * 50)) + then_content)


def http_error(status: int, message: str, kind: str) -> Script:
    """A plain error answer (``{"error": {code, message, type}}``) instead of a stream."""
    return Script([], status=status, body={"error": {"code": status, "message": message, "type": kind}})


# --------------------------------------------------------------------------- the server


@dataclass
class _State:
    scripts: list[Script]
    requests: list[dict[str, Any]] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    decoding_since: float | None = None
    decoded_before: int = 0
    rate: float = 50.0  # tokens/s shown by /slots while decoding
    busy_task: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_script(self) -> Script:
        with self.lock:
            return self.scripts.pop(0) if len(self.scripts) > 1 else self.scripts[0]

    def n_decoded(self) -> int:
        with self.lock:
            if self.decoding_since is None:
                return self.decoded_before
            return self.decoded_before + int((time.monotonic() - self.decoding_since) * self.rate)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llama.cpp"
    sys_version = ""

    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def version_string(self) -> str:
        return "llama.cpp"

    def _json(self, status: int, body: Any) -> None:
        payload = _dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"status": "ok"})
        elif self.path == "/slots":
            self._json(200, self._slots())
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "llamacpp"}]})
        else:
            self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

    def _slots(self) -> list[dict[str, Any]]:
        slots = captured_slots()
        with self.state.lock:
            busy = self.state.decoding_since is not None
        if not busy:
            return list(slots["idle"])
        slot = json.loads(json.dumps(slots["busy"][-1]))
        decoded = self.state.n_decoded()
        token = slot["next_token"][0]
        token["n_remain"] = max(0, token["n_remain"] + token["n_decoded"] - decoded)
        token["n_decoded"] = decoded
        return [slot]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.state.requests.append(body)
        if self.path not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
            return
        script = self.state.next_script()
        if script.status != 200:
            self._json(script.status, script.body)
            return
        if not body.get("stream"):
            self._json(200, _aggregate(script))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Accel-Buffering", "no")
        self.end_headers()
        with self.state.lock:
            self.state.decoding_since = time.monotonic()
            self.state.decoded_before = 0
        # One reply per connection, like the existing test servers: closing it ends the body.
        self.close_connection = True
        try:
            for part in script.parts:
                if isinstance(part, Pause):
                    if self.state.stopping.wait(part.seconds):
                        return
                    continue
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a cancelled request)
        finally:
            with self.state.lock:
                self.state.decoded_before = script.tokens
                self.state.decoding_since = None


def _aggregate(script: Script) -> dict[str, Any]:
    """The non-streamed answer a script's stream adds up to."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    finish = None
    for part in script.parts:
        if isinstance(part, Pause) or part == DONE:
            continue
        data = json.loads(part.decode()[6:])
        if "error" in data:
            return data
        for choice in data.get("choices", []):
            finish = choice.get("finish_reason") or finish
            for key, value in (choice.get("delta") or {}).items():
                if key in ("content", "reasoning_content") and value:
                    message[key] = message.get(key, "") + value
    return {"choices": [{"finish_reason": finish, "index": 0, "message": message}], "object": "chat.completion",
            "model": MODEL}


class StreamServer:
    """A running server: its base URL, the request bodies it got, and a way to queue scripts."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"

    @property
    def _state(self) -> _State:
        return self._server.state  # type: ignore[attr-defined,no-any-return]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._state.requests

    def queue(self, *scripts: Script) -> None:
        """Answer the next requests with these scripts (the last one repeats)."""
        with self._state.lock:
            self._state.scripts[:] = list(scripts)


@contextmanager
def openai_stream_server(*scripts: Script) -> Iterator[StreamServer]:
    """Serve ``scripts`` (one per request, the last repeating) on a loopback port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = False
    server.block_on_close = True
    server.state = _State(list(scripts) or [reasoning_then_content(3, 3)])  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="openai-stream-server", kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield StreamServer(server)
    finally:
        server.state.stopping.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join()
