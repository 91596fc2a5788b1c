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


def chunk(content: str | None = None, finish: str | None = None, *, reasoning: str | None = None,
          tool_calls: list[dict[str, Any]] | None = None, **extra: Any) -> bytes:
    delta: dict[str, Any] = {} if content is None else {"content": content}
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra}
    return f"data: {json.dumps(body)}\n\n".encode()


def call_piece(index: int, arguments: str, *, name: str | None = None, call_id: str | None = None) -> dict[str, Any]:
    """One ``delta.tool_calls`` entry as llama-server streams it (id, type and name on the first)."""
    item: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if name is not None:
        item["function"]["name"] = name
        item["id"] = call_id or f"call-{index}"
        item["type"] = "function"
    return item


# What the pinned llama-server sends when its chat-format parser rejects the model's text
# (reproduced with the gpt-oss and functionary-v3.2 templates on a random-weight model).
FORMAT_FAILURE = {"code": 500, "message": "The model produced output that does not match the expected peg-native"
                  " format", "type": "server_error"}


SCRIPTS: dict[str, list[bytes]] = {
    "ok": [
        b": ping\n\n",
        chunk("Hel"),
        b": another comment\n\n",
        chunk("lo"),
        b"data: \n\n",  # an event with empty data: the SSE rules say it is not dispatched
        b"data:\r\n\r\n",
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
    # Lone CRs end the lines (the SSE standard allows CRLF, LF or CR): a comment, one event's data on
    # two lines, a read that ends on the CR ending a line and one that ends between the two CRs of
    # an event's end.
    "cr-only": [
        b": ping\r\r",
        chunk("Hel").replace(b"\n", b"\r"),
        b'data: {"choices": [{"index": 0,\rdata: "delta": {"content": "lo"}}]}\r',
        PAUSE,
        b"\r" + chunk(" w").replace(b"\n", b"\r")[:-1],
        PAUSE,
        b"\r" + chunk("orld").replace(b"\n", b"\r"),
        chunk(None, "stop").replace(b"\n", b"\r"),
        b"data: [DONE]\r\r",
    ],
    # A server that leaves the thinking in the text (reasoning_format "none", remote engines), the
    # tags cut across reads and chunks: "<thi" + "nk>", "</th" + "ink>".
    "think-tags": [
        chunk("\n<thi"), PAUSE, chunk("nk>\nLet me"), chunk(" see.</th"), PAUSE, chunk("ink>\n\n"),
        chunk("Hello"), chunk(" <b>there</b>"), chunk(None, "stop"), b"data: [DONE]\n\n",
    ],
    # The prompt opened the thinking: only the closing tag arrives.
    "think-close-only": [
        chunk("Hmm"), chunk(", fine.</"), chunk("think>\n\nYes."), chunk(None, "stop"), b"data: [DONE]\n\n",
    ],
    # llama-server's own split: reasoning_content, then content.
    "reasoning": [
        chunk(None, reasoning="\nThinking"), chunk(None, reasoning=" hard"), chunk("\n\nDone"), chunk("."),
        chunk(None, "stop", timings={"prompt_n": 4, "predicted_n": 4, "predicted_per_second": 40.0}),
        b"data: [DONE]\n\n",
    ],
    # Two tool calls, arguments in pieces, the second's pieces interleaved with the first's.
    "tool-calls": [
        chunk(None, tool_calls=[call_piece(0, "", name="get_weather", call_id="a1")]),
        chunk(None, tool_calls=[call_piece(0, '{"ci')]),
        chunk(None, tool_calls=[call_piece(1, '{"q": ', name="search", call_id="b2")]),
        chunk(None, tool_calls=[call_piece(0, 'ty": "Pa'), call_piece(1, '"x"}')]),
        chunk(None, tool_calls=[call_piece(0, 'ris"}')]),
        chunk(None, "tool_calls"), b"data: [DONE]\n\n",
    ],
    # A server that gives its calls no ids, or the same one twice (some OpenAI-compatible servers).
    "tool-calls-without-ids": [
        chunk(None, tool_calls=[{"index": 0, "function": {"name": "add", "arguments": '{"a": 1}'}}]),
        chunk(None, tool_calls=[{"index": 1, "function": {"name": "echo", "arguments": '{"t": "x"}'}}]),
        chunk(None, tool_calls=[{"index": 2, "id": "same", "function": {"name": "add", "arguments": "{}"}}]),
        chunk(None, tool_calls=[{"index": 3, "id": "same", "function": {"name": "echo", "arguments": "{}"}}]),
        chunk(None, "tool_calls"), b"data: [DONE]\n\n",
    ],
    # The parser gives up after some thinking and answer text: an error event, no [DONE].
    "format-failure": [
        chunk(None, reasoning="Thinking"), chunk("Half an ans"), chunk("wer"),
        f"data: {json.dumps({'error': FORMAT_FAILURE})}\n\n".encode(),
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
        if script in ("unauthorized", "format-failure-http"):
            # The parse fails on the first result: llama-server answers with an HTTP error.
            status, error = ((401, {"code": 401, "message": "Invalid API Key", "type": "authentication_error"})
                             if script == "unauthorized" else (500, FORMAT_FAILURE))
            payload = json.dumps({"error": error}).encode()
            self.send_response(status)
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
    thread = threading.Thread(target=server.serve_forever, name="sse-server", kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
