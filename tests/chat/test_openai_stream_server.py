"""The replaying llama-server stand-in serves the real captures byte for byte and scripts in their shape."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from tests.support import openai_stream_server as oss
from tests.support.template_zoo import parse_sse, result_of

CAPTURES = sorted(p.stem for p in oss.STREAMS.glob("*.sse"))
INDEX: dict[str, Any] = json.loads((oss.STREAMS / "index.json").read_text(encoding="utf-8"))


def _post(url: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
    with httpx.Client(trust_env=False, timeout=30) as client, client.stream(
            "POST", url + "/v1/chat/completions", json={"stream": True, "messages": [], **(body or {})}) as r:
        return r.status_code, b"".join(r.iter_raw())


def test_every_capture_is_described_in_the_index() -> None:
    assert len(CAPTURES) >= 10
    assert set(CAPTURES) == set(INDEX) - {"_about"}
    assert INDEX["_about"]["engine"].startswith("version:")


@pytest.mark.parametrize("name", [n for n in CAPTURES if INDEX[n]["status"] == 200])
def test_a_capture_is_replayed_byte_for_byte(name: str) -> None:
    with oss.openai_stream_server(oss.replay(name)) as server:
        status, raw = _post(server.url)
    assert status == 200
    assert raw == oss.capture_path(name).read_bytes()


def test_the_captures_show_what_their_names_say() -> None:
    def result(name: str) -> Any:
        return result_of(INDEX[name]["status"], oss.capture_path(name).read_bytes())

    assert result("reasoning-only").kinds == ["reasoning_content"]
    assert result("reasoning-then-content").kinds == ["reasoning_content", "content"]
    # With some seeds the end tag forced by the reasoning budget leaks into the answer.
    assert result("reasoning-budget-leaks-end-tag").text().startswith("</think>")
    assert result("reasoning-then-content-harmony").kinds == ["reasoning_content", "content"]
    calls = result("tool-calls")
    assert calls.finish == "tool_calls" and calls.tool_calls() and calls.done
    assert all(json.loads(c["arguments"])["city"] is not None for c in calls.tool_calls())
    broken = result("tool-call-then-parse-error")
    assert broken.tool_calls() and broken.events[-1] == {"error": oss.PARSE_ERROR} and not broken.done
    assert result("parse-error").events[1:] == [{"error": oss.PARSE_ERROR}]
    late = result("parse-error-after-text")
    assert late.kinds == ["reasoning_content"] and late.events[-1] == {"error": oss.PARSE_ERROR}
    assert json.loads(result("json-object").text()) is not None
    assert result("exceeds-context").errors[0]["error"]["type"] == "exceed_context_size_error"
    assert result("sampler-init-failure").errors == [{"error": {
        "code": 400, "message": "Failed to initialize samplers: std::exception", "type": "invalid_request_error"}}]


def _shape(event: Any) -> Any:
    """Keys (in order) and value types, recursively: what a client's parser depends on."""
    if isinstance(event, dict):
        return [(k, _shape(v)) for k, v in event.items()]
    if isinstance(event, list):
        return [_shape(v) for v in event[:1]]
    return type(event).__name__


def _captured(name: str, predicate: Any) -> Any:
    return next(e for e in parse_sse(oss.capture_path(name).read_bytes()) if e != "[DONE]" and predicate(e))


def _delta(e: Any) -> dict[str, Any]:
    return e["choices"][0]["delta"] if e.get("choices") else {}


def test_scripted_chunks_have_the_captured_shape() -> None:
    made = {"role": oss.ChunkMaker().role(), "content": oss.ChunkMaker().chunk({"content": "x"}),
            "reasoning": oss.ChunkMaker().chunk({"reasoning_content": "x"}),
            "final": oss.ChunkMaker().final("stop", 3, 4)}
    real = {"role": _captured("reasoning-only", lambda e: "role" in _delta(e)),
            "content": _captured("json-schema", lambda e: bool(_delta(e).get("content"))),
            "reasoning": _captured("reasoning-only", lambda e: bool(_delta(e).get("reasoning_content"))),
            "final": _captured("json-object", lambda e: e.get("timings"))}
    for kind, chunk in made.items():
        assert _shape(parse_sse(chunk)[0]) == _shape(real[kind]), kind
    script = oss.tool_calls([("get_weather", '{"city":"Oslo"}')], pieces=3)
    first, *rest = [parse_sse(p)[0] for p in script.parts if isinstance(p, bytes) and b"tool_calls" in p
                    and b"timings" not in p]
    assert _shape(first) == _shape(_captured("tool-calls", lambda e: (_delta(e).get("tool_calls") or [{}])[0].get("id")))
    assert _shape(rest[0]) == _shape(_captured(
        "tool-calls", lambda e: _delta(e).get("tool_calls") and "id" not in _delta(e)["tool_calls"][0]))
    assert len(first["choices"][0]["delta"]["tool_calls"][0]["id"]) == 32
    assert parse_sse(oss.parse_failure_after(2).parts[-1]) == parse_sse(oss.capture_path("parse-error").read_bytes())[1:]


def test_scripted_streams_add_up() -> None:
    with oss.openai_stream_server(oss.reasoning_then_content(200, 5), oss.tool_calls(
            [("get_weather", '{"city":"Oslo"}'), ("get_time", '{"zone":"CET"}')], pieces=4),
            oss.parse_failure_after(3)) as server:
        thinking = result_of(*_post(server.url))
        calls = result_of(*_post(server.url))
        failed = result_of(*_post(server.url))
        again = result_of(*_post(server.url))  # the last script repeats
        assert len(server.requests) == 4
    assert thinking.kinds == ["reasoning_content", "content"] and thinking.done and thinking.finish == "stop"
    assert thinking.text("reasoning_content").count(" ") == 200
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.tool_calls()] == [
        ("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "CET"})]
    assert calls.finish == "tool_calls"
    for result in (failed, again):
        assert result.text() == "c0 c1 c2 " and result.events[-1] == {"error": oss.PARSE_ERROR}
        assert not result.done


def test_plain_answers_errors_and_non_streamed_requests() -> None:
    with oss.openai_stream_server(oss.http_error(400, "request (9000 tokens) exceeds the available context size "
                                                      "(4096 tokens), try increasing it", "exceed_context_size_error"),
                                  oss.reasoning_then_content(2, 2)) as server, \
            httpx.Client(trust_env=False, timeout=30) as client:
        refused = client.post(server.url + "/v1/chat/completions", json={"stream": True, "messages": []})
        whole = client.post(server.url + "/v1/chat/completions", json={"messages": []}).json()
        assert client.get(server.url + "/health").json() == {"status": "ok"}
        assert client.get(server.url + "/nowhere").status_code == 404
    assert refused.status_code == 400 and refused.json()["error"]["type"] == "exceed_context_size_error"
    assert whole["choices"][0]["message"] == {"role": "assistant", "content": "c0 c1 ",
                                              "reasoning_content": "r0 r1 "}


def test_slots_show_decoding_while_the_stream_is_silent() -> None:
    captured = oss.captured_slots()
    with oss.openai_stream_server(oss.busy_silence(3.0)) as server, \
            httpx.Client(trust_env=False, timeout=30) as client:
        assert client.get(server.url + "/slots").json() == captured["idle"]
        seen: list[int] = []
        got: dict[str, tuple[int, bytes]] = {}
        worker = threading.Thread(target=lambda: got.setdefault("r", _post(server.url)))
        worker.start()
        try:
            deadline = time.monotonic() + 10
            while len(seen) < 3 and time.monotonic() < deadline:
                slot = client.get(server.url + "/slots").json()[0]
                if slot["is_processing"] and (not seen or slot["next_token"][0]["n_decoded"] > seen[-1]):
                    seen.append(slot["next_token"][0]["n_decoded"])
                    assert set(slot) == set(captured["busy"][0])
                time.sleep(0.1)
        finally:
            worker.join()
        assert client.get(server.url + "/slots").json() == captured["idle"]
    assert len(seen) == 3 and seen == sorted(seen)
    assert result_of(*got["r"]).text() == "c0 c1 c2 "


def test_closing_the_server_ends_a_silent_stream() -> None:
    outcome: list[object] = []

    def read(url: str) -> None:
        try:
            outcome.append(_post(url))
        except httpx.HTTPError as exc:
            outcome.append(exc)

    with oss.openai_stream_server(oss.busy_silence(600.0)) as server:
        worker = threading.Thread(target=read, args=(server.url,))
        worker.start()
        while not server.requests:
            time.sleep(0.01)
    worker.join()
    # The reply was cut off after the role chunk: the chunked body never ended.
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.RemoteProtocolError)
