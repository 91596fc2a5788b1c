"""The Ollama API, translated to the engine's OpenAI API.

Ollama clients (the ``ollama`` library, Open WebUI, editors' plug-ins) list models with
``/api/tags``, chat with ``/api/chat`` and embed with ``/api/embed``; replies stream as NDJSON
(one JSON object a line) unless ``"stream": false``. What maps to what:

- ``options`` → the OpenAI/llama-server sampling fields (``num_predict`` → ``max_tokens``,
  ``num_keep`` → ``n_keep``, the rest by the same name). Load-time options (``num_ctx``,
  ``num_gpu``, ``num_thread``...) are the engine owner's business and are ignored.
- ``format``: ``"json"`` → ``response_format: json_object``; a JSON schema → ``json_schema``.
- ``think``: false turns thinking off (``reasoning_effort: none`` and the template's
  ``enable_thinking: false``), a level ("low"/"medium"/"high") → ``reasoning_effort``; the
  engine's ``reasoning_content`` comes back as ``thinking``.
- ``tools`` are OpenAI's shape already; tool calls come back with their arguments as objects,
  and ``tool`` messages are matched to the calls they answer (OpenAI needs the call's id).
- ``images`` (base64) → ``image_url`` parts with a ``data:`` URL.
- ``keep_alive`` (seconds or a Go duration like ``"5m"``; negative: forever) goes to the router;
  a request with no prompt or no messages only loads the model, or unloads it with ``keep_alive: 0``.

Ollama itself has no authentication; here the server's API key is required on these routes too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ModelError
from strata_gui.core.models.gguf_meta import LongArray, read_header
from strata_gui.core.pool.engine import LONGEST_IDLE_S
from strata_gui.core.serve.router import (
    API_EMBEDDINGS,
    API_OPENAI,
    KEEP_FOREVER,
    KIND_EMBEDDING,
    KIND_TEXT,
    ServedModel,
)
from strata_gui.core.serve.translate import post_json, single, stream
from strata_gui.core.serve.wire import (
    NDJSON_TYPE,
    ApiError,
    Flavor,
    Meter,
    Route,
    ServeContext,
    context,
    json_response,
    obj,
    read_json,
)

# The Ollama release whose API these routes follow (think, tools, /api/embed with dimensions);
# clients read it to decide which fields they may send.
OLLAMA_VERSION = "0.12.0"

# Ollama option → OpenAI / llama-server request field.
_OPTIONS = {
    "temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "min_p": "min_p", "typical_p": "typical_p",
    "seed": "seed", "stop": "stop", "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
    "repeat_penalty": "repeat_penalty", "repeat_last_n": "repeat_last_n", "mirostat": "mirostat",
    "mirostat_tau": "mirostat_tau", "mirostat_eta": "mirostat_eta", "num_keep": "n_keep",
}
_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_THINK_LEVELS = ("low", "medium", "high")


# --------------------------------------------------------------------------- requests

def parse_keep_alive(value: Any) -> float | None:
    """Ollama's ``keep_alive`` in seconds: a number of seconds or a Go duration (``"5m"``, ``"1h30m"``);
    negative means forever (:data:`KEEP_FOREVER`); absent or "" means the router's default."""
    if value is None or value == "":
        return None
    seconds: float
    if isinstance(value, bool):
        raise ApiError(400, "keep_alive must be a duration like \"5m\" or a number of seconds.")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        sign = -1.0 if text.startswith("-") else 1.0
        text = text.lstrip("+-")
        try:
            seconds = sign * float(text)
        except ValueError:
            parts = _DURATION_RE.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ApiError(400, f"keep_alive {value!r} is not a duration like \"5m\" or \"1h30m\".") from None
            seconds = sign * sum(float(n) * _UNIT_S[u] for n, u in parts)
    else:
        raise ApiError(400, "keep_alive must be a duration like \"5m\" or a number of seconds.")
    if math.isnan(seconds):
        raise ApiError(400, "keep_alive is not a number.")
    # Negative means forever, as does anything past what a timer can wait (and a date can show).
    return KEEP_FOREVER if seconds < 0 or seconds >= LONGEST_IDLE_S else seconds


def sampling_fields(options: Any) -> dict[str, Any]:
    """The OpenAI/llama-server fields for Ollama ``options`` (load-time options are ignored)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ApiError(400, "options must be an object.")
    out: dict[str, Any] = {}
    for key, value in options.items():
        if value is None:
            continue
        if key == "num_predict":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ApiError(400, "options.num_predict must be an integer.")
            if value >= 0:  # -1: until the end of the context, -2: fill it; both are the engine's default
                out["max_tokens"] = value
        elif key in _OPTIONS:
            out[_OPTIONS[key]] = value
    return out


def response_format(fmt: Any) -> dict[str, Any] | None:
    """``format`` → ``response_format``: "json" → any JSON object, a schema → that schema."""
    if fmt is None or fmt == "":
        return None
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, Mapping):
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": dict(fmt)}}
    raise ApiError(400, "format must be \"json\" or a JSON schema object.")


def think_fields(think: Any) -> dict[str, Any]:
    """``think`` → the engine's reasoning fields."""
    if think is None or think is True:
        return {}
    if think is False:
        return {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": False}}
    if isinstance(think, str) and think in _THINK_LEVELS:
        return {"reasoning_effort": think}
    raise ApiError(400, "think must be true, false, \"low\", \"medium\" or \"high\".")


def _image_url(data: Any) -> dict[str, Any]:
    if not isinstance(data, str):
        raise ApiError(400, "images must be base64 strings.")
    try:
        head = base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4), validate=False)[:12]
    except (binascii.Error, ValueError) as exc:
        raise ApiError(400, "An image is not valid base64.") from exc
    mime = ("image/png" if head.startswith(b"\x89PNG") else "image/jpeg" if head.startswith(b"\xff\xd8")
            else "image/gif" if head.startswith(b"GIF8") else "image/webp" if head[8:12] == b"WEBP"
            else "image/png")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _content(text: str, images: Any) -> Any:
    if not images:
        return text
    if not isinstance(images, list):
        raise ApiError(400, "images must be a list of base64 strings.")
    return [{"type": "text", "text": text}, *(_image_url(i) for i in images)]


def as_openai_chat(messages: Any) -> list[dict[str, Any]]:
    """Ollama messages → OpenAI messages (tool calls get ids; tool results are matched to them)."""
    if not isinstance(messages, list):
        raise ApiError(400, "messages must be a list.")
    out: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (call id, function name) not answered yet
    n = 0
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise ApiError(400, "Each message must be an object with a role.")
        role = m["role"]
        text = m.get("content") or ""
        if not isinstance(text, str):
            raise ApiError(400, "A message's content must be a string.")
        msg: dict[str, Any] = {"role": role, "content": _content(text, m.get("images"))}
        if role == "assistant":
            calls = []
            asked = m.get("tool_calls") or []
            if not isinstance(asked, list):
                raise ApiError(400, "tool_calls must be a list.")
            for call in asked:
                fn = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    raise ApiError(400, "A tool call needs a function with a name.")
                call_id = call.get("id") if isinstance(call.get("id"), str) else f"call_{n}"
                n += 1
                args = fn.get("arguments") or {}
                calls.append({"id": call_id, "type": "function",
                              "function": {"name": fn["name"],
                                           "arguments": args if isinstance(args, str) else json.dumps(args)}})
                pending.append((call_id, fn["name"]))
            if calls:
                msg["tool_calls"] = calls
            if isinstance(m.get("thinking"), str) and m["thinking"]:
                msg["reasoning_content"] = m["thinking"]
        elif role == "tool":
            name = m.get("tool_name") or m.get("name")
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str):
                match = next((p for p in pending if p[1] == name), pending[0] if pending else None)
                call_id = match[0] if match else f"call_{n}"
            pending = [p for p in pending if p[0] != call_id]
            msg["tool_call_id"] = call_id
            if isinstance(name, str):
                msg["name"] = name
        out.append(msg)
    return out


def chat_body(body: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """An Ollama ``/api/chat`` request → an OpenAI chat completion request."""
    out: dict[str, Any] = {"model": body.get("model"), "messages": as_openai_chat(body.get("messages") or []),
                           "stream": stream}
    return _common(out, body, stream)


def _common(out: dict[str, Any], body: Mapping[str, Any], stream: bool) -> dict[str, Any]:
    out.update(sampling_fields(body.get("options")))
    out.update(think_fields(body.get("think")))
    fmt = response_format(body.get("format"))
    if fmt is not None:
        out["response_format"] = fmt
    tools = body.get("tools")
    if tools:
        if not isinstance(tools, list):
            raise ApiError(400, "tools must be a list.")
        out["tools"] = tools
    if stream:
        out["stream_options"] = {"include_usage": True}
    return out


def generate_body(body: Mapping[str, Any], *, stream: bool) -> tuple[str, dict[str, Any]]:
    """An Ollama ``/api/generate`` request → (engine path, OpenAI body): a chat completion with the
    model's template, or with ``raw`` a plain completion of the prompt as written."""
    prompt = body.get("prompt") or ""
    if not isinstance(prompt, str):
        raise ApiError(400, "prompt must be a string.")
    if body.get("suffix"):
        raise ApiError(400, "suffix (fill-in-the-middle) is not supported here; send the model's FIM prompt "
                            "with raw: true.")
    if body.get("template"):
        raise ApiError(400, "A custom template is not supported here: the model's own chat template is used "
                            "(or none with raw: true).")
    if body.get("raw"):
        out: dict[str, Any] = {"model": body.get("model"), "prompt": prompt, "stream": stream}
        return "/v1/completions", _common(out, body, stream)
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": _content(prompt, body.get("images"))})
    out = {"model": body.get("model"), "messages": messages, "stream": stream}
    return "/v1/chat/completions", _common(out, body, stream)


# --------------------------------------------------------------------------- answers

def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def digest(m: ServedModel) -> str:
    """A stable name for this version of the file (path, size, mtime): hashing the weights themselves
    would read gigabytes per listing."""
    return hashlib.sha256(f"{m.path}\0{m.size_bytes}\0{m.modified}".encode()).hexdigest()


def details(m: ServedModel) -> dict[str, Any]:
    d = m.details
    return {"parent_model": "", "format": d.get("format", "gguf"), "family": d.get("family", ""),
            "families": list(d.get("families") or ([d["family"]] if d.get("family") else [])),
            "parameter_size": d.get("parameter_size", ""), "quantization_level": d.get("quantization_level", "")}


def _done_reason(finish: Any) -> str:
    return "length" if finish == "length" else "stop"


def _ns(ms: Any) -> int | None:
    return int(ms * 1_000_000) if isinstance(ms, (int, float)) else None


def final_stats(meter: Meter, load_s: float, total_s: float) -> dict[str, Any]:
    """The durations and counts of Ollama's last object (nanoseconds)."""
    t, u = meter.timings, meter.usage
    stats: dict[str, Any] = {"total_duration": int(total_s * 1e9), "load_duration": int(load_s * 1e9)}
    prompt = t.get("prompt_n", u.get("prompt_tokens"))
    if prompt is not None:
        stats["prompt_eval_count"] = prompt
    if _ns(t.get("prompt_ms")) is not None:
        stats["prompt_eval_duration"] = _ns(t.get("prompt_ms"))
    evals = t.get("predicted_n", u.get("completion_tokens"))
    if evals is not None:
        stats["eval_count"] = evals
    if _ns(t.get("predicted_ms")) is not None:
        stats["eval_duration"] = _ns(t.get("predicted_ms"))
    return stats


class _ToolCalls:
    """OpenAI tool-call pieces (arguments streamed in parts) gathered into Ollama tool calls."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}

    def add(self, deltas: Any) -> None:
        for d in deltas or []:
            if not isinstance(d, Mapping):
                continue
            call = self._calls.setdefault(int(d.get("index") or 0), {"name": "", "arguments": ""})
            fn = d.get("function") or {}
            if isinstance(fn.get("name"), str) and fn["name"]:
                call["name"] = fn["name"]
            if isinstance(fn.get("arguments"), str):
                call["arguments"] += fn["arguments"]

    def ollama(self) -> list[dict[str, Any]]:
        return [{"function": {"name": c["name"], "arguments": _arguments(c["arguments"])}}
                for _i, c in sorted(self._calls.items())]


def _arguments(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"arguments": text}  # what the model wrote, kept rather than lost
    return value if isinstance(value, dict) else {"value": value}


class OllamaStream:
    """Engine chunks → Ollama NDJSON objects (``/api/chat`` messages or ``/api/generate`` responses)."""

    content_type = NDJSON_TYPE

    def __init__(self, model: str, *, generate: bool, thinking: bool, load_s: float, started: float,
                 clock: Any) -> None:
        self._model, self._generate, self._thinking = model, generate, thinking
        self._load_s, self._started, self._clock = load_s, started, clock
        self._tools = _ToolCalls()
        self._finish: Any = None

    def start(self) -> bytes:
        return b""

    def _line(self, text: str, thinking: str, tool_calls: list[dict[str, Any]] | None = None) -> bytes:
        item: dict[str, Any] = {"model": self._model, "created_at": now_iso()}
        if self._generate:
            item["response"] = text
            if thinking:
                item["thinking"] = thinking
        else:
            msg: dict[str, Any] = {"role": "assistant", "content": text}
            if thinking:
                msg["thinking"] = thinking
            if tool_calls:
                msg["tool_calls"] = tool_calls
            item["message"] = msg
        item["done"] = False
        return json.dumps(item).encode() + b"\n"

    def feed(self, chunk: Mapping[str, Any]) -> bytes:
        choices = chunk.get("choices") or []
        if not choices or not isinstance(choices[0], Mapping):
            return b""
        choice = choices[0]
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]
        delta = obj(choice.get("delta"))
        text = delta.get("content") or choice.get("text") or ""
        thinking = (delta.get("reasoning_content") or "") if self._thinking else ""
        if delta.get("tool_calls"):
            self._tools.add(delta["tool_calls"])
        if not text and not thinking:
            return b""
        return self._line(text, thinking)

    def finish(self, meter: Meter) -> bytes:
        out = b""
        calls = self._tools.ollama()
        if calls and not self._generate:
            out += self._line("", "", calls)
        last: dict[str, Any] = {"model": self._model, "created_at": now_iso()}
        if self._generate:
            last["response"] = ""
        else:
            last["message"] = {"role": "assistant", "content": ""}
        last.update(done=True, done_reason=_done_reason(self._finish),
                    **final_stats(meter, self._load_s, self._clock() - self._started))
        return out + json.dumps(last).encode() + b"\n"


def whole_reply(model: str, answer: Mapping[str, Any], meter: Meter, *, generate: bool, thinking: bool,
                load_s: float, total_s: float) -> dict[str, Any]:
    """A non-streamed engine answer → Ollama's one object."""
    choices = answer.get("choices") or [{}]
    choice = obj(choices[0])
    message = obj(choice.get("message"))
    text = message.get("content") or choice.get("text") or ""
    reasoning = (message.get("reasoning_content") or "") if thinking else ""
    item: dict[str, Any] = {"model": model, "created_at": now_iso()}
    if generate:
        item["response"] = text
        if reasoning:
            item["thinking"] = reasoning
    else:
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning:
            msg["thinking"] = reasoning
        tools = _ToolCalls()
        tools.add([{"index": i, **c} for i, c in enumerate(message.get("tool_calls") or []) if isinstance(c, Mapping)])
        calls = tools.ollama()
        if calls:
            msg["tool_calls"] = calls
        item["message"] = msg
    item.update(done=True, done_reason=_done_reason(choice.get("finish_reason")),
               **final_stats(meter, load_s, total_s))
    return item


# --------------------------------------------------------------------------- routes

def _model_name(ctx: ServeContext, body: Mapping[str, Any], kind: str | None) -> str:
    key = "model" if body.get("model") or not body.get("name") else "name"  # "name": older clients
    return ctx.pick_model(body, kind, key)


async def _load_or_unload(request: web.Request, ctx: ServeContext, model: str, keep_alive: float | None,
                          kind: str, *, generate: bool, ndjson: bool) -> web.Response:
    """Ollama's empty request: load the model (or unload it with keep_alive 0) and say which."""
    if keep_alive == 0:
        if ctx.find(model) is None:
            raise ApiError(404, f"model '{model}' not found", "not_found")
        await ctx.router.unload(model)
        reason = "unload"
    else:
        async with ctx.borrow(model, kind=kind, keep_alive=keep_alive):
            pass
        reason = "load"
    item: dict[str, Any] = {"model": model, "created_at": now_iso()}
    if generate:
        item["response"] = ""
    else:
        item["message"] = {"role": "assistant", "content": ""}
    item.update(done=True, done_reason=reason)
    return single(item, ndjson=ndjson)


async def _complete(request: web.Request, *, generate: bool) -> web.StreamResponse:
    ctx = context(request)
    started = ctx.clock()
    _raw, body = await read_json(request, ctx)
    model = _model_name(ctx, body, KIND_TEXT)
    want_stream = body.get("stream", True) is not False
    keep_alive = parse_keep_alive(body.get("keep_alive"))
    thinking = body.get("think") is not False
    empty = not (body.get("prompt") or body.get("images")) if generate else not body.get("messages")
    if empty:
        return await _load_or_unload(request, ctx, model, keep_alive, KIND_TEXT, generate=generate,
                                     ndjson=want_stream)
    if generate:
        path, oa = generate_body(body, stream=want_stream)
    else:
        path, oa = "/v1/chat/completions", chat_body(body, stream=want_stream)
    async with ctx.borrow(model, kind=KIND_TEXT, keep_alive=keep_alive, needs=API_OPENAI) as up:
        load_s = ctx.clock() - started
        meter = Meter(ctx.clock)
        if want_stream:
            translator = OllamaStream(model, generate=generate, thinking=thinking, load_s=load_s, started=started,
                                      clock=ctx.clock)
            return await stream(request, up, path, oa, translator, Flavor.OLLAMA, meter)
        answer = await post_json(request, up, path, oa, meter)
        reply = whole_reply(model, answer, meter, generate=generate, thinking=thinking, load_s=load_s,
                            total_s=ctx.clock() - started)
        ctx.record(meter.request(request.path, 200, up, stream=False))
        return json_response(reply)


async def chat(request: web.Request) -> web.StreamResponse:
    return await _complete(request, generate=False)


async def generate(request: web.Request) -> web.StreamResponse:
    return await _complete(request, generate=True)


def _normalized(vector: Sequence[float], dims: int | None) -> list[float]:
    v = list(vector[:dims] if dims else vector)
    if dims:
        norm = math.sqrt(sum(x * x for x in v))
        if norm > 0:
            v = [x / norm for x in v]
    return v


async def embed(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    started = ctx.clock()
    _raw, body = await read_json(request, ctx)
    model = _model_name(ctx, body, KIND_EMBEDDING)
    keep_alive = parse_keep_alive(body.get("keep_alive"))
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if inputs is None:
        inputs = []
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise ApiError(400, "input must be a string or a list of strings.")
    dims = body.get("dimensions")
    if dims is not None and (not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0):
        raise ApiError(400, "dimensions must be a positive integer.")
    if not inputs:
        return await _load_or_unload(request, ctx, model, keep_alive, KIND_EMBEDDING, generate=True, ndjson=False)
    async with ctx.borrow(model, kind=KIND_EMBEDDING, keep_alive=keep_alive, needs=API_EMBEDDINGS) as up:
        load_s = ctx.clock() - started
        meter = Meter(ctx.clock)
        answer = await post_json(request, up, "/v1/embeddings",
                                 {"model": model, "input": inputs, "encoding_format": "float"}, meter)
        vectors = _vectors(answer, len(inputs))
        ctx.record(meter.request(request.path, 200, up, stream=False))
    usage = meter.usage
    out: dict[str, Any] = {"model": model, "embeddings": [_normalized(v, dims) for v in vectors],
                           "total_duration": int((ctx.clock() - started) * 1e9), "load_duration": int(load_s * 1e9)}
    if isinstance(usage.get("prompt_tokens"), int):
        out["prompt_eval_count"] = usage["prompt_tokens"]
    return json_response(out)


def _vectors(answer: Mapping[str, Any], count: int) -> list[list[float]]:
    data = answer.get("data")
    if not isinstance(data, list) or len(data) != count:
        raise ApiError(502, "The engine's embeddings answer is not what was asked.", "upstream")
    rows = sorted((d for d in data if isinstance(d, Mapping)), key=lambda d: int(d.get("index") or 0))
    return [list(r.get("embedding") or []) for r in rows]


async def embeddings_legacy(request: web.Request) -> web.StreamResponse:
    """The old ``/api/embeddings``: one prompt, one vector, not normalised (as Ollama answered it)."""
    ctx = context(request)
    _raw, body = await read_json(request, ctx)
    model = _model_name(ctx, body, KIND_EMBEDDING)
    keep_alive = parse_keep_alive(body.get("keep_alive"))
    prompt = body.get("prompt") or ""
    if not isinstance(prompt, str):
        raise ApiError(400, "prompt must be a string.")
    if not prompt:
        async with ctx.borrow(model, kind=KIND_EMBEDDING, keep_alive=keep_alive):
            return json_response({"embedding": []})
    async with ctx.borrow(model, kind=KIND_EMBEDDING, keep_alive=keep_alive, needs=API_EMBEDDINGS) as up:
        meter = Meter(ctx.clock)
        # embd_normalize -1: llama-server's raw vector, as Ollama's legacy endpoint gave.
        answer = await post_json(request, up, "/v1/embeddings",
                                 {"model": model, "input": [prompt], "encoding_format": "float",
                                  "embd_normalize": -1}, meter)
        vector = _vectors(answer, 1)[0]
        ctx.record(meter.request(request.path, 200, up, stream=False))
    return json_response({"embedding": vector})


async def tags(request: web.Request) -> web.Response:
    router = context(request).router
    await router.refresh()
    models = router.models()
    return json_response({"models": [
        {"name": m.id, "model": m.id, "modified_at": _iso(m.modified), "size": m.size_bytes, "digest": digest(m),
         "details": details(m)} for m in models]})


def model_info(m: ServedModel) -> dict[str, Any]:
    d = m.details
    info: dict[str, Any] = {}
    family = d.get("family")
    if family:
        info["general.architecture"] = family
    if d.get("parameter_count"):
        info["general.parameter_count"] = d["parameter_count"]
    if family and d.get("context_length"):
        info[f"{family}.context_length"] = d["context_length"]
    return info


async def show(request: web.Request) -> web.Response:
    """Template, parameters, details and ``model_info`` (the GGUF header's keys, its long arrays as
    null as Ollama sends them without ``verbose``)."""
    ctx = context(request)
    _raw, body = await read_json(request, ctx)
    await ctx.router.refresh()
    name = _model_name(ctx, body, None)
    m = ctx.find(name)
    if m is None:
        raise ApiError(404, f"model '{name}' not found", "not_found")
    caps = list(m.details.get("capabilities") or [])
    info, template = await run_blocking(header_info, m, name="strata-serve-show")
    context_length = m.details.get("context_length")
    parameters = f"num_ctx {context_length}" if context_length else ""
    return json_response({
        "modelfile": f"# Served by Strata\nFROM {m.id}\n", "parameters": parameters, "template": template,
        "details": details(m), "model_info": info, "capabilities": caps, "modified_at": _iso(m.modified),
    })


def header_info(m: ServedModel) -> tuple[dict[str, Any], str]:
    """``(model_info, chat template)`` from the model's GGUF header (blocking: reads the file); a
    model that has none (a safetensors image model) is described by its details."""
    try:
        meta = read_header(m.path)
    except ModelError:
        return model_info(m), ""
    info: dict[str, Any] = {}
    for key, value in meta.fields.items():
        if key.startswith("tokenizer.chat_template"):
            continue  # the template is its own field
        info[key] = None if isinstance(value, LongArray) else _plain(value)
    template = meta.get("tokenizer.chat_template")
    return info, template if isinstance(template, str) else ""


def _plain(value: Any) -> Any:
    """A header value as JSON can carry it."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


async def ps(request: web.Request) -> web.Response:
    now = time.time()
    out = []
    for lm in context(request).router.loaded():
        m = lm.model
        entry: dict[str, Any] = {"name": m.id, "model": m.id, "size": lm.memory_bytes, "digest": digest(m),
                                 "details": details(m), "size_vram": lm.gpu_memory_bytes}
        if lm.expires_in_s is not None and math.isfinite(lm.expires_in_s):
            entry["expires_at"] = _iso(now + lm.expires_in_s)
        loaded_with = lm.context_length or m.details.get("context_length")  # what it runs with, else trained
        if loaded_with:
            entry["context_length"] = loaded_with
        out.append(entry)
    return json_response({"models": out})


async def version(_request: web.Request) -> web.Response:
    return json_response({"version": OLLAMA_VERSION})


def routes() -> list[Route]:
    """(method, path, handler, runs a model) for each Ollama route."""
    return [
        ("GET", "/api/tags", tags, False),
        ("POST", "/api/show", show, False),
        ("POST", "/api/chat", chat, True),
        ("POST", "/api/generate", generate, True),
        ("POST", "/api/embed", embed, True),
        ("POST", "/api/embeddings", embeddings_legacy, True),
        ("GET", "/api/ps", ps, False),
        ("GET", "/api/version", version, False),
    ]
