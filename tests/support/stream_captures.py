"""Records real llama-server answers from zoo models into ``tests/data/chat/streams/``.

Each capture is the response body exactly as the pinned CPU llama-server sent it (``<name>.sse``),
described in ``index.json`` (template, vocabulary, request, HTTP status and headers, engine
version). ``slots.json`` holds ``GET /slots`` answers taken while the engine was idle and while it
was decoding. Run ``python -m tests.support.template_zoo --capture``; the replaying server is
``tests/support/openai_stream_server.py``.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support import engines
from tests.support import template_zoo as zoo


def _kinds(*kinds: str) -> Callable[[zoo.StreamResult], bool]:
    return lambda r: r.status == 200 and r.kinds == list(kinds) and not r.errors


def _json_reply(r: zoo.StreamResult) -> bool:
    return r.status == 200 and r.finish == "stop" and zoo.is_json(r.text())


def _status(code: int) -> Callable[[zoo.StreamResult], bool]:
    return lambda r: r.status == code


@dataclass(frozen=True)
class Capture:
    """One request to record: which template, what body, why it is interesting, what it must show.

    The engine's output is not repeatable run to run (threads, grammar resampling), so the capture
    tries seeds until ``want`` holds and records the seed it used.
    """

    name: str
    template: str
    body: dict[str, Any]
    note: str
    want: Callable[[zoo.StreamResult], bool]
    engine_ctx: int = zoo.ENGINE_CTX


_WEATHER = {"tools": [zoo.WEATHER_TOOL], "tool_choice": "required"}

_HARMONY_THEN_FINAL = ('root ::= "<|channel|>analysis<|message|>" [a-z ]{10,20} '
                      '"<|end|><|start|>assistant<|channel|>final<|message|>" [a-z ]{5,15}')
_HARMONY_BROKEN = 'root ::= "<|channel|>analysis<|message|>" [a-z ]{10,20} "<|end|>" [a-z ]{5,15}'

CAPTURES: tuple[Capture, ...] = (
    Capture("reasoning-only", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            {**zoo.basic_request(max_tokens=16)},
            "The prompt opens <think>; random weights never close it: reasoning_content until length.",
            want=_kinds("reasoning_content")),
    Capture("reasoning-then-content", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            {**zoo.basic_request(max_tokens=24), "thinking_budget_tokens": 8},
            "The engine's reasoning budget forces </think> after 8 tokens; the rest arrives as content.",
            want=lambda r: _kinds("reasoning_content", "content")(r) and not r.text().startswith("</think>")),
    Capture("reasoning-budget-leaks-end-tag", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            {**zoo.basic_request(max_tokens=24), "thinking_budget_tokens": 8},
            "The same request with another seed: here the forced '</think>' arrives as the first content "
            "delta (seen with some seeds only).",
            want=lambda r: _kinds("reasoning_content", "content")(r) and r.text().startswith("</think>")),
    Capture("reasoning-then-content-harmony", "openai-gpt-oss-120b",
            {**zoo.basic_request(max_tokens=60), "grammar": _HARMONY_THEN_FINAL},
            "A grammar makes the model write gpt-oss's analysis channel, then its final channel: "
            "reasoning_content deltas, then content deltas.",
            want=_kinds("reasoning_content", "content")),
    Capture("reasoning-format-none", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
            {**zoo.basic_request(max_tokens=12), "reasoning_format": "none"},
            "reasoning_format none: the thinking arrives as content (the opening <think> is in the prompt).",
            want=_kinds("content")),
    Capture("tool-calls", "CohereForAI-c4ai-command-r-plus-tool_use",
            {**zoo.basic_request(max_tokens=120), **_WEATHER},
            "tool_choice required: complete calls (often two: parallel calls), arguments streamed in pieces, "
            "finish_reason tool_calls.",
            want=lambda r: r.kinds == ["tool_calls"] and r.finish == "tool_calls" and r.done),
    Capture("tool-call-then-parse-error", "CohereForAI-c4ai-command-r-plus-tool_use",
            {**zoo.basic_request(max_tokens=120), **_WEATHER},
            "tool_choice required: the grammar forces one complete call, its arguments streamed in pieces; "
            "what the model writes after it fails the chat parser: an error event ends the stream.",
            want=lambda r: bool(r.tool_calls()) and bool(r.errors) and not r.done),
    Capture("tool-call", "google-gemma-4-31B-it",
            {**zoo.basic_request(max_tokens=48), **_WEATHER},
            "tool_choice required: Gemma 4's grammar opens the call at once; arguments stream in pieces "
            "until max_tokens (finish_reason length).",
            want=lambda r: r.kinds == ["tool_calls"] and len(r.tool_calls()) == 1),
    Capture("tool-call-after-text", "Qwen-Qwen3-0.6B",
            {**zoo.basic_request(max_tokens=120), **_WEATHER, "logit_bias": [["<tool_call>", 20], ["\n", 20]]},
            "Qwen3's required grammar allows text before <tool_call>\\n; a logit bias makes the model open "
            "the call soon. The text before the call arrives as content, then tool_calls deltas.",
            want=_kinds("content", "tool_calls")),
    Capture("json-object", "GLM-4.6",
            {**zoo.basic_request(max_tokens=48), "response_format": {"type": "json_object"}},
            "response_format json_object: a grammar-constrained JSON reply as content.",
            want=_json_reply),
    Capture("json-schema", "Qwen-Qwen2.5-7B-Instruct",
            {**zoo.basic_request(max_tokens=64), "response_format": {
                "type": "json_schema", "json_schema": {"name": "city", "schema": zoo.CITY_SCHEMA}}},
            "response_format json_schema.",
            want=_json_reply),
    Capture("parse-error", "openai-gpt-oss-120b",
            {**zoo.basic_request(max_tokens=24)},
            "gpt-oss output must start with a harmony channel; random text fails the peg-native parser "
            "right after the role chunk: HTTP 200, then an error event, then the stream ends (no [DONE]).",
            want=lambda r: r.status == 200 and not r.kinds and bool(r.errors) and not r.done),
    Capture("parse-error-after-text", "openai-gpt-oss-120b",
            {**zoo.basic_request(max_tokens=60), "grammar": _HARMONY_BROKEN},
            "A valid analysis channel (reasoning_content deltas), then text outside any channel: the "
            "parse error arrives mid-stream after the reasoning.",
            want=lambda r: r.kinds == ["reasoning_content"] and bool(r.errors) and not r.done),
    Capture("exceeds-context", "CohereForAI-c4ai-command-r-plus-tool_use",
            {**zoo.basic_request(max_tokens=8)},
            "A prompt longer than the context: HTTP 400 with exceed_context_size_error (engine run with -c 256).",
            engine_ctx=256,
            want=_status(400)),
    Capture("sampler-init-failure", "microsoft-Phi-3.5-mini-instruct",
            {**zoo.basic_request(max_tokens=16), "response_format": {"type": "json_object"}},
            "Any grammar (response_format, tools) with Phi-3.5's real SentencePiece vocabulary: the engine "
            "derives the generation prompt 'assistant|>\\n' and its grammar prefill fails: HTTP 400.",
            want=_status(400)),
)


def _engine_version(exe: Path) -> str:
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30)
    return (done.stdout + done.stderr).strip().splitlines()[0]


def _record(base: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    with httpx.Client(trust_env=False, timeout=120) as client, \
            client.stream("POST", base + "/v1/chat/completions", json={"stream": True, **body}) as r:
        raw = b"".join(r.iter_raw())
        headers = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "transfer-encoding",
                                                                       "server", "content-length")}
        return r.status_code, headers, raw


def capture_slots(exe: Path) -> dict[str, Any]:
    """``/slots`` idle, then three times while a long reply decodes (its n_decoded grows)."""
    model = zoo.zoo_model("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")
    extra = [*zoo.ENGINE_ARGS, "--alias", model.name]
    with engines.running_server(exe, model.ensure(), ctx=zoo.ENGINE_CTX, extra=extra) as base:
        idle = httpx.get(base + "/slots", timeout=10).json()
        done = threading.Event()

        def generate() -> None:
            try:
                zoo.stream_chat(base, {**zoo.basic_request(max_tokens=3000)})
            finally:
                done.set()

        worker = threading.Thread(target=generate)
        worker.start()
        busy: list[Any] = []
        try:
            while len(busy) < 3 and not done.is_set():
                time.sleep(0.25)
                slot = httpx.get(base + "/slots", timeout=10).json()[0]
                if slot.get("is_processing") and slot["next_token"][0]["n_decoded"] > (
                        busy[-1]["next_token"][0]["n_decoded"] if busy else 0):
                    busy.append(slot)
        finally:
            worker.join()
    return {"template": model.name, "engine_args": extra, "request": zoo.basic_request(max_tokens=3000),
            "idle": idle, "busy": busy}


def capture_all(out: Path) -> None:
    """Record every :data:`CAPTURES` entry and the slots into ``out``."""
    exe = engines.locate().cpu_server
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {"_about": {"engine": _engine_version(exe), "zoo_version": zoo.ZOO_VERSION,
                                        "generated_by": "python -m tests.support.template_zoo --capture"}}
    for cap in CAPTURES:
        model = zoo.zoo_model(cap.template)
        extra = [*zoo.ENGINE_ARGS, "--alias", model.name]
        with engines.running_server(exe, model.ensure(), ctx=cap.engine_ctx, extra=extra) as base:
            for seed in range(1, 25):
                body = {**cap.body, "seed": seed}
                status, headers, raw = _record(base, body)
                result = zoo.result_of(status, raw)
                if cap.want(result):
                    break
            else:
                raise RuntimeError(f"{cap.name}: no seed gave the stream it is meant to show")
        (out / f"{cap.name}.sse").write_bytes(raw)
        index[cap.name] = {"template": cap.template, "vocab": model.vocab, "engine_ctx": cap.engine_ctx,
                           "engine_args": extra, "request": {"stream": True, **body}, "status": status,
                           "headers": headers, "note": cap.note}
        print(f"{cap.name}: HTTP {status}, {len(raw)} bytes, seed {seed}", flush=True)
    slots = capture_slots(exe)
    (out / "slots.json").write_text(json.dumps(slots, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
