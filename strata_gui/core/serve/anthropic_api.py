"""The Anthropic Messages API: passed through to an engine that speaks it, translated otherwise.

llama-server speaks ``/v1/messages`` itself (``"anthropic"`` in :attr:`Upstream.apis`), and then
the request goes to it unchanged. An engine that speaks only OpenAI chat completions gets the
request translated here, both ways:

- request: ``system`` → a system message; ``text``/``image`` blocks → content parts;
  ``tool_use`` blocks → ``tool_calls``; ``tool_result`` blocks → ``tool`` messages (right after
  the assistant's calls, as OpenAI requires); ``thinking`` blocks → ``reasoning_content``;
  ``tools``/``tool_choice``/``stop_sequences``/``thinking`` → their OpenAI or llama-server fields.
- reply: ``reasoning_content`` → a ``thinking`` block, ``content`` → a ``text`` block,
  ``tool_calls`` → ``tool_use`` blocks; ``finish_reason`` → ``stop_reason``
  (stop → end_turn, length → max_tokens, tool_calls → tool_use); usage → input/output tokens.
  Streams become Anthropic's events: ``message_start``, ``content_block_start`` / ``_delta`` /
  ``_stop`` per block (``thinking_delta``, ``text_delta``, ``input_json_delta``),
  ``message_delta`` (stop reason, usage) and ``message_stop``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from strata_gui.core.serve.router import API_ANTHROPIC, API_OPENAI, KIND_TEXT
from strata_gui.core.serve.translate import post_json, stream
from strata_gui.core.serve.wire import (
    SSE_TYPE,
    ApiError,
    Flavor,
    Meter,
    Route,
    context,
    json_response,
    obj,
    read_json,
    relay,
)

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _fail(message: str) -> ApiError:
    return ApiError(400, message)


def _text_of(value: Any, what: str) -> str:
    """A string, or the text of a list of text blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if not isinstance(block, Mapping) or block.get("type") != "text" or not isinstance(block.get("text"), str):
                raise _fail(f"{what} may hold only text blocks.")
            parts.append(block["text"])
        return "".join(parts)
    raise _fail(f"{what} must be a string or a list of text blocks.")


def _image_part(block: Mapping[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        url = f"data:{source.get('media_type') or 'image/png'};base64,{source.get('data') or ''}"
    elif isinstance(source, Mapping) and source.get("type") == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise _fail("An image block needs a base64 or url source.")
    return {"type": "image_url", "image_url": {"url": url}}


def _parts_content(parts: list[dict[str, Any]]) -> Any:
    """Text-only content as one string (every chat template takes that), else the parts."""
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _tool_result(block: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(block.get("tool_use_id"), str):
        raise _fail("A tool_result block needs its tool_use_id.")
    content = block.get("content")
    if content is None:
        value: Any = ""
    elif isinstance(content, str):
        value = content
    elif isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, Mapping) and c.get("type") == "text":
                parts.append({"type": "text", "text": str(c.get("text") or "")})
            elif isinstance(c, Mapping) and c.get("type") == "image":
                parts.append(_image_part(c))
            else:
                raise _fail("A tool_result may hold text and image blocks.")
        value = _parts_content(parts)
    else:
        raise _fail("A tool_result's content must be a string or a list of blocks.")
    if block.get("is_error") and isinstance(value, str):
        value = f"Error: {value}"
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": value}


def as_openai_chat(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Anthropic ``system`` + ``messages`` → OpenAI messages."""
    out: list[dict[str, Any]] = []
    if body.get("system"):
        out.append({"role": "system", "content": _text_of(body["system"], "system")})
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _fail("messages: a non-empty list is required.")
    for m in messages:
        if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
            raise _fail("Each message needs a role of user or assistant.")
        role, content = m["role"], m.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        if not isinstance(content, list):
            raise _fail("A message's content must be a string or a list of blocks.")
        parts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        reasoning = ""
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "text":
                parts.append({"type": "text", "text": str(block.get("text") or "")})
            elif kind == "image":
                parts.append(_image_part(block))
            elif kind == "tool_use" and role == "assistant":
                if not isinstance(block.get("name"), str):
                    raise _fail("A tool_use block needs a name.")
                calls.append({"id": str(block.get("id") or f"toolu_{len(calls)}"), "type": "function",
                              "function": {"name": block["name"], "arguments": json.dumps(block.get("input") or {})}})
            elif kind == "tool_result" and role == "user":
                results.append(_tool_result(block))
            elif kind == "thinking" and role == "assistant":
                reasoning += str(block.get("thinking") or "")
            elif kind == "redacted_thinking":
                continue  # encrypted for Anthropic's models only
            else:
                raise _fail(f"Content blocks of type {kind!r} are not supported in {role} messages here.")
        out.extend(results)  # tool results answer the previous assistant turn: they come first
        if parts or calls or reasoning:
            msg: dict[str, Any] = {"role": role, "content": _parts_content(parts) if parts else ""}
            if calls:
                msg["tool_calls"] = calls
            if reasoning:
                msg["reasoning_content"] = reasoning
            out.append(msg)
    return out


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise _fail("tools must be a list.")
    out = []
    for t in tools:
        if not isinstance(t, Mapping) or not isinstance(t.get("name"), str) or t.get("type") not in (None, "custom"):
            raise _fail("Only custom tools (name, description, input_schema) are supported here.")
        out.append({"type": "function", "function": {"name": t["name"], "description": t.get("description") or "",
                                                     "parameters": t.get("input_schema") or {"type": "object"}}})
    return out


def _tool_choice(tc: Any, out: dict[str, Any]) -> None:
    if not isinstance(tc, Mapping):
        raise _fail("tool_choice must be an object.")
    kind = tc.get("type")
    if kind == "auto":
        out["tool_choice"] = "auto"
    elif kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool" and isinstance(tc.get("name"), str):
        out["tool_choice"] = {"type": "function", "function": {"name": tc["name"]}}
    else:
        raise _fail("tool_choice type must be auto, any, tool or none.")
    if tc.get("disable_parallel_tool_use"):
        out["parallel_tool_calls"] = False


def chat_body(body: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """An Anthropic Messages request → an OpenAI chat completion request."""
    out: dict[str, Any] = {"model": body.get("model"), "messages": as_openai_chat(body), "stream": stream,
                           "max_tokens": body["max_tokens"]}
    for key in ("temperature", "top_p", "top_k"):
        if body.get(key) is not None:
            out[key] = body[key]
    if body.get("stop_sequences"):
        out["stop"] = body["stop_sequences"]
    if body.get("tools"):
        out["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        _tool_choice(body["tool_choice"], out)
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping):
        if thinking.get("type") == "disabled":
            out["reasoning_effort"] = "none"
            out["chat_template_kwargs"] = {"enable_thinking": False}
        elif thinking.get("type") == "enabled" and isinstance(thinking.get("budget_tokens"), int):
            out["thinking_budget_tokens"] = thinking["budget_tokens"]
    if stream:
        out["stream_options"] = {"include_usage": True}
    return out


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return {"arguments": text}  # what the model wrote, kept rather than lost


def _usage(meter: Meter) -> dict[str, int]:
    t, u = meter.timings, meter.usage
    prompt = u.get("prompt_tokens", t.get("prompt_n", 0))
    output = u.get("completion_tokens", t.get("predicted_n", 0))
    return {"input_tokens": int(prompt or 0), "output_tokens": int(output or 0)}


def message_of(answer: Mapping[str, Any], model: str, meter: Meter) -> dict[str, Any]:
    """A non-streamed OpenAI answer → an Anthropic message."""
    choices = answer.get("choices") or [{}]
    choice = obj(choices[0])
    message = obj(choice.get("message"))
    content: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        content.append({"type": "thinking", "thinking": message["reasoning_content"], "signature": ""})
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id") or f"toolu_{secrets.token_hex(8)}",
                        "name": fn.get("name") or "", "input": _arguments(fn.get("arguments") or "")})
    return {"id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": _STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn"),
            "stop_sequence": None, "usage": _usage(meter)}


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: ".encode() + json.dumps({"type": name, **data}).encode() + b"\n\n"


class AnthropicStream:
    """Engine chunks → Anthropic stream events; one content block open at a time."""

    content_type = SSE_TYPE

    def __init__(self, model: str) -> None:
        self._model = model
        self._index = -1
        self._open: str | None = None  # "thinking", "text" or "tool:<openai index>"
        self._finish: Any = None

    def start(self) -> bytes:
        message: dict[str, Any] = {"id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant", "model": self._model,
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 0, "output_tokens": 0}}
        return _event("message_start", {"message": message})

    def _switch(self, block: str, start: Mapping[str, Any]) -> bytes:
        if self._open == block:
            return b""
        out = self._close()
        self._index += 1
        self._open = block
        return out + _event("content_block_start", {"index": self._index, "content_block": start})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _event("content_block_stop", {"index": self._index})

    def _delta(self, delta: Mapping[str, Any]) -> bytes:
        return _event("content_block_delta", {"index": self._index, "delta": delta})

    def feed(self, chunk: Mapping[str, Any]) -> bytes:
        choices = chunk.get("choices") or []
        if not choices or not isinstance(choices[0], Mapping):
            return b""
        choice = choices[0]
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]
        delta = obj(choice.get("delta"))
        out = b""
        if delta.get("reasoning_content"):
            out += self._switch("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._delta({"type": "thinking_delta", "thinking": delta["reasoning_content"]})
        if delta.get("content"):
            out += self._switch("text", {"type": "text", "text": ""})
            out += self._delta({"type": "text_delta", "text": delta["content"]})
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            fn = call.get("function") or {}
            block = f"tool:{call.get('index') or 0}"
            if self._open != block:
                out += self._switch(block, {"type": "tool_use", "id": call.get("id") or f"toolu_{secrets.token_hex(8)}",
                                            "name": fn.get("name") or "", "input": {}})
            if fn.get("arguments"):
                out += self._delta({"type": "input_json_delta", "partial_json": fn["arguments"]})
        return out

    def finish(self, meter: Meter) -> bytes:
        reason = _STOP_REASONS.get(self._finish or "stop", "end_turn")
        return (self._close()
                + _event("message_delta", {"delta": {"stop_reason": reason, "stop_sequence": None},
                                           "usage": _usage(meter)})
                + _event("message_stop", {}))


async def _checked(request: web.Request) -> tuple[bytes, dict[str, Any], str]:
    ctx = context(request)
    raw, body = await read_json(request, ctx)
    model = ctx.pick_model(body, KIND_TEXT)
    if not isinstance(body.get("messages"), list):
        raise _fail("messages: Field required (a list of messages).")
    return raw, body, model


async def messages(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    raw, body, model = await _checked(request)
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _fail("max_tokens: Field required (a positive integer).")
    want_stream = body.get("stream") is True
    async with ctx.borrow(model, kind=KIND_TEXT) as up:
        if API_ANTHROPIC in up.apis:
            return await relay(request, up, "/v1/messages", raw, stream=want_stream, flavor=Flavor.ANTHROPIC)
        if API_OPENAI not in up.apis:
            raise ApiError(400, f"The engine serving {up.model.id} speaks neither the Messages API nor chat "
                                "completions.", "unsupported")
        oa = chat_body(body, stream=want_stream)
        meter = Meter(ctx.clock)
        if want_stream:
            return await stream(request, up, "/v1/chat/completions", oa, AnthropicStream(model), Flavor.ANTHROPIC,
                                meter)
        answer = await post_json(request, up, "/v1/chat/completions", oa, meter)
        ctx.record(meter.request(request.path, 200, up, stream=False))
        return json_response(message_of(answer, model, meter))


async def count_tokens(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    raw, _body, model = await _checked(request)
    async with ctx.borrow(model, kind=KIND_TEXT) as up:
        if API_ANTHROPIC not in up.apis:
            raise ApiError(400, f"The engine serving {up.model.id} cannot count tokens for the Messages API.",
                           "unsupported")
        return await relay(request, up, "/v1/messages/count_tokens", raw, stream=False, flavor=Flavor.ANTHROPIC,
                           record=False)


def routes() -> list[Route]:
    """(method, path, handler, runs a model) for each Anthropic route."""
    return [
        ("POST", "/v1/messages", messages, True),
        ("POST", "/v1/messages/count_tokens", count_tokens, True),
    ]
