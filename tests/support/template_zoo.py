"""The chat-template zoo: one small random-weight GGUF per real chat template of the pinned llama.cpp.

Every ``models/templates/*.jinja`` of the pinned llama.cpp source becomes a llama-architecture
model (2 layers, width 64, tied ``Q4_0`` embedding) carrying that template in
``tokenizer.chat_template`` and the real vocabulary its model family uses where the source ships
it (:data:`VOCABS`), so the real CPU ``llama-server --jinja`` loads it in about a second and
parses its output with the template's own chat format. The markers the template writes in a
special-token shape (``<|im_start|>``, ``<think>``, ``<tool_call>``, ``[THINK]``, ...) become
single tokens where the vocabulary lacks them, as they are in the real models.

Models are written lazily into ``~/.cache/strata-dev/zoo-<ZOO_VERSION>/`` (``STRATA_DEV_CACHE``
moves it), one file per template, named by a hash of the zoo version, the vocabulary file, the
template and the model shape, so a changed template or vocabulary gets a new file. All 71 take
about 0.55 GB and 40 s to write on 2 cores; ``--write`` also removes files of older versions.

Vocabulary per template family (``ggml-vocab-<name>.gguf`` of the pinned source):

============================  =============  ==================================================
templates                     vocab          why
============================  =============  ==================================================
Qwen2.5, QwQ, Qwen3,          qwen2          the Qwen2 BPE tokenizer these models use
Qwen3-Coder, MiMo-VL,
R1-Distill-Qwen
Qwen3.5                       qwen35         its own pre-tokenizer
Llama 3.x, Hermes 2 Pro/3,    llama-bpe      Llama 3 tokenizer (Llama 3 based models, and
firefunction v2,                             SmolLM3, which uses it)
functionary v3.1/v3.2,
R1-Distill-Llama, SmolLM3
DeepSeek V3.1/V3.2/V4,        deepseek-llm   the DeepSeek BPE family (same ``<｜…｜>`` special
llama-cpp DeepSeek R1                        tokens; the V3 vocabulary itself is not shipped)
Command R+, R7B, Cohere2MoE   command-r      Cohere's tokenizer
Gemma 2, Gemma 4              gemma-4        the Gemma family's (Gemma 2's own is not shipped)
Phi-3.5                       phi-3          Phi-3's (SentencePiece) tokenizer
gpt-oss                       gpt-2          OpenAI's BPE family (o200k_harmony is not shipped)
Granite 3.3                   starcoder      Granite 3.x extends the StarCoder tokenizer
everything else               gpt-2          their tokenizer is not in the pinned source; a
                                             byte-level BPE like theirs (see FALLBACK_VOCAB)
============================  =============  ==================================================

Also a script: ``python -m tests.support.template_zoo --survey`` runs every model through the
real engine and writes ``tests/data/chat/zoo-findings.json``; ``--capture`` records the real
SSE byte streams in ``tests/data/chat/streams/``; ``--write`` only writes the models.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.models.chat_template import TemplateCapabilities, template_capabilities
from tests.support import engines, gguf_model

ZOO_VERSION = 1
REPO = Path(__file__).resolve().parents[2]
FINDINGS = REPO / "tests" / "data" / "chat" / "zoo-findings.json"
STREAMS = REPO / "tests" / "data" / "chat" / "streams"

# Engine arguments for zoo models: some templates' system prompts alone take ~1,400 tokens with a
# 32k vocabulary (Devstral, GigaChat), so 512 is too small; one slot keeps the KV cache tiny.
ENGINE_CTX = 4096
ENGINE_ARGS = ["-np", "1"]

# Where the model's own tokenizer is not shipped. Not llama-spm: a SentencePiece vocabulary adds a
# space before the first word, so the engine's grammar prefill of the generation prompt
# (``<|im_start|> assistant`` vs ``<|im_start|>assistant``) fails every response_format/tools
# request with "Failed to initialize samplers" -- a failure the real (byte-level BPE) models of
# these templates do not have. GPT-2's is the byte-level BPE most of them descend from.
FALLBACK_VOCAB = "gpt-2"

_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"Qwen3\.5", "qwen35"),
    (r"Qwen-Qwen2\.5|Qwen-QwQ|Qwen-Qwen3-|Qwen3-Coder|MiMo-VL|R1-Distill-Qwen", "qwen2"),
    (r"meta-llama-Llama-3|Hermes-2-Pro-Llama-3|Hermes-3-Llama-3|firefunction-v2|functionary-medium-v3"
     r"|R1-Distill-Llama|SmolLM3", "llama-bpe"),
    (r"DeepSeek-V3|DeepSeek-V4|llama-cpp-deepseek-r1", "deepseek-llm"),
    (r"CohereForAI-c4ai-command-r|Cohere2MoE", "command-r"),
    (r"gemma-", "gemma-4"),
    (r"Phi-3", "phi-3"),
    (r"gpt-oss", "gpt-2"),
    (r"granite-3\.", "starcoder"),
)

# Markers in a special-token shape: <|x|>, <｜x｜>, Gemma 4's <|x> and <x|>, Mistral's [X] and [/X],
# and the XML-ish thinking and tool-call tags.
_MARKER = re.compile(
    r"<\|[^|<>\s'\"{}]{1,40}\|>|<｜[^｜<>\s'\"]{1,40}｜>|<\|[a-z_]{1,30}>|<[a-z_]{1,30}\|>"
    r"|\[/?[A-Z][A-Z_]{1,24}\]|</?[a-z_:]*(?:think|tool_call)[a-z_:]*>")


def vocab_for(template_name: str) -> str:
    """The vocabulary file a template's zoo model uses (see the table in the module docstring)."""
    for pattern, vocab in _FAMILIES:
        if re.search(pattern, template_name):
            return vocab
    return FALLBACK_VOCAB


def template_markers(template: str, caps: TemplateCapabilities) -> tuple[str, ...]:
    """Strings the template writes in a special-token shape, plus its reasoning markers."""
    found = dict.fromkeys(m.group(0) for m in _MARKER.finditer(template))
    for tag in caps.thinking_tags or ():
        if not re.search(r"\s", tag) and len(tag) <= 40 and "|>" not in tag[2:-2]:
            found.setdefault(tag)
    return tuple(found)


def templates_dir() -> Path:
    """``models/templates`` of the pinned llama.cpp source."""
    return engines.locate_source() / "models" / "templates"


def cache_dir() -> Path:
    """Where zoo models are written (created on first use)."""
    return engines.CACHE / f"zoo-{ZOO_VERSION}"


@dataclass(frozen=True)
class ZooModel:
    """One template of the pinned source and the random-weight model that carries it.

    Attributes:
        name: The template's file name without ``.jinja`` (the test id).
        template_path: The ``.jinja`` file.
        vocab: The ``ggml-vocab-<vocab>.gguf`` it uses.
    """

    name: str
    template_path: Path
    vocab: str

    @property
    def template(self) -> str:
        return self.template_path.read_text(encoding="utf-8")

    @property
    def capabilities(self) -> TemplateCapabilities:
        return template_capabilities(self.template)

    @property
    def spec(self) -> gguf_model.ModelSpec:
        return gguf_model.ModelSpec(
            name=f"Strata Zoo {self.name}", vocab=self.vocab, chat_template=self.template,
            added_tokens=template_markers(self.template, self.capabilities), tie_embeddings=True,
            embedding_type="Q4_0",
        )

    @property
    def path(self) -> Path:
        """The model's file in the cache (see :meth:`ensure`)."""
        spec = self.spec
        vocab_file = gguf_model.vocab_path(self.vocab)
        digest = hashlib.sha256()
        for part in (str(ZOO_VERSION), self.vocab, str(vocab_file.stat().st_size), repr(spec)):
            digest.update(part.encode() + b"\0")
        return cache_dir() / f"{self.name}-{self.vocab}-{digest.hexdigest()[:12]}.gguf"

    def ensure(self) -> Path:
        """Write the model unless the cache has it; return its path (safe for parallel writers)."""
        path = self.path
        if path.exists():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            gguf_model.write_model(tmp, self.spec)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path


def zoo_models() -> list[ZooModel]:
    """Every template of the pinned source, sorted by name (models are not written here)."""
    return [ZooModel(p.stem, p, vocab_for(p.stem)) for p in sorted(templates_dir().glob("*.jinja"))]


def zoo_model(name: str) -> ZooModel:
    """The zoo entry of one template (``Qwen-Qwen3-0.6B``)."""
    for model in zoo_models():
        if model.name == name:
            return model
    raise KeyError(name)


@contextmanager
def serving(model: ZooModel, exe: Path | None = None) -> Iterator[str]:
    """The real CPU llama-server on ``model``'s zoo file (``--alias`` its name); yields its base URL."""
    exe = exe or engines.locate().cpu_server
    extra = [*ENGINE_ARGS, "--alias", model.name]
    with engines.running_server(exe, model.ensure(), ctx=ENGINE_CTX, extra=extra) as base:
        yield base


# --------------------------------------------------------------------------- streaming


@dataclass
class StreamResult:
    """What one streamed ``/v1/chat/completions`` request returned.

    Attributes:
        status: The HTTP status.
        raw: The bytes exactly as the server sent them.
        events: The ``data:`` payloads (parsed JSON; ``[DONE]`` as the string).
        kinds: Delta fields that carried something (``content``, ``reasoning_content``, ``tool_calls``).
        finish: The last ``finish_reason``.
        errors: Error payloads (``{"error": {...}}`` events, or the body of a non-200 answer).
        done: The stream ended with ``data: [DONE]``.
    """

    status: int
    raw: bytes
    events: list[Any] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    finish: str | None = None
    errors: list[Any] = field(default_factory=list)
    done: bool = False

    def text(self, kind: str = "content") -> str:
        """The concatenated ``kind`` deltas."""
        return "".join(
            c["delta"].get(kind) or "" for e in self.events if isinstance(e, dict)
            for c in e.get("choices", []) if isinstance(c.get("delta"), dict))

    def tool_calls(self) -> list[dict[str, Any]]:
        """Tool calls assembled from their streamed pieces (``[{id, name, arguments}]``)."""
        calls: dict[int, dict[str, Any]] = {}
        for e in self.events:
            if not isinstance(e, dict):
                continue
            for c in e.get("choices", []):
                for tc in (c.get("delta") or {}).get("tool_calls") or []:
                    call = calls.setdefault(tc.get("index", 0), {"id": None, "name": "", "arguments": ""})
                    call["id"] = tc.get("id") or call["id"]
                    fn = tc.get("function") or {}
                    call["name"] += fn.get("name") or ""
                    call["arguments"] += fn.get("arguments") or ""
        return [calls[i] for i in sorted(calls)]


def parse_sse(raw: bytes) -> list[Any]:
    """The ``data:`` payloads of an SSE byte stream (comments and other fields skipped)."""
    out: list[Any] = []
    for block in re.split(rb"\r?\n\r?\n", raw):
        data = [line[5:].lstrip(b" ") for line in re.split(rb"\r?\n", block) if line.startswith(b"data:")]
        if not data:
            continue
        payload = b"\n".join(data).decode("utf-8")
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def stream_chat(base: str, body: dict[str, Any], timeout: float = 120.0) -> StreamResult:
    """POST a streamed chat request; keep the exact bytes and what they say."""
    body = {"stream": True, **body}
    with httpx.Client(trust_env=False, timeout=timeout) as client, \
            client.stream("POST", base + "/v1/chat/completions", json=body) as r:
        raw = b"".join(r.iter_raw())
        status = r.status_code
    return result_of(status, raw)


def result_of(status: int, raw: bytes) -> StreamResult:
    """What an answer's status and body say (see :class:`StreamResult`)."""
    result = StreamResult(status, raw)
    if status != 200:
        try:
            result.errors.append(json.loads(raw))
        except ValueError:
            result.errors.append(raw.decode("utf-8", "replace"))
        return result
    result.events = parse_sse(raw)
    kinds: list[str] = []
    for e in result.events:
        if e == "[DONE]":
            result.done = True
            continue
        if "error" in e:
            result.errors.append(e)
        for c in e.get("choices", []):
            for k, v in (c.get("delta") or {}).items():
                if v and k != "role" and k not in kinds:
                    kinds.append(k)
            result.finish = c.get("finish_reason") or result.finish
    result.kinds = kinds
    return result


HELLO = [{"role": "user", "content": "Hello, who are you?"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name",
                                                                    "maxLength": 12}},
                       "required": ["city"]},
    },
}
CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                                "population": {"type": "integer"}},
               "required": ["city", "population"], "additionalProperties": False}


def tool_history(calls: int = 1, id_length: int = 32, answered: bool = True) -> list[dict[str, Any]]:
    """A turn that called ``get_weather`` ``calls`` times, the results, (the answer), a new question.

    Ids are made as llama-server makes them (32 letters and digits) unless ``id_length`` says
    otherwise; ``answered`` False leaves out the assistant's answer after the results.
    """
    ids = [(f"{i}" + "Ab" * 20)[:id_length] for i in range(calls)]
    assistant = {"role": "assistant", "content": "", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
        for i in ids]}
    results = [{"role": "tool", "tool_call_id": i, "content": '{"celsius": 4}'} for i in ids]
    answer = [{"role": "assistant", "content": "It is 4 degrees in Oslo."}] if answered else []
    return [*HELLO, assistant, *results, *answer, {"role": "user", "content": "And tomorrow?"}]


def basic_request(max_tokens: int = 24, seed: int = 7) -> dict[str, Any]:
    """The zoo's plain chat request: one user turn, a few tokens, a fixed seed."""
    return {"messages": HELLO, "max_tokens": max_tokens, "seed": seed}


# --------------------------------------------------------------------------- survey


def _summary(result: StreamResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": result.status, "kinds": result.kinds, "finish": result.finish,
                           "done": result.done}
    if result.errors:
        out["errors"] = result.errors
    for kind in ("content", "reasoning_content"):
        text = result.text(kind)
        if text:
            out[f"{kind}_chars"] = len(text)
    calls = result.tool_calls()
    if calls:
        out["tool_calls"] = [{"name": c["name"], "arguments": c["arguments"][:200],
                              "id_length": len(c["id"] or "")} for c in calls]
        out["tool_call_deltas"] = sum(
            len((c.get("delta") or {}).get("tool_calls") or []) for e in result.events if isinstance(e, dict)
            for c in e.get("choices", []))
    return out


def survey_requests(caps: TemplateCapabilities) -> dict[str, dict[str, Any]]:
    """The requests the survey sends to one model, by label."""
    base = basic_request()
    requests: dict[str, dict[str, Any]] = {"plain": base}
    if caps.tools:
        requests["tools_required"] = {**base, "max_tokens": 64, "tools": [WEATHER_TOOL], "tool_choice": "required"}
    requests["json_object"] = {**base, "max_tokens": 48, "response_format": {"type": "json_object"}}
    requests["json_schema"] = {**base, "max_tokens": 64, "response_format": {
        "type": "json_schema", "json_schema": {"name": "city", "schema": CITY_SCHEMA}}}
    if caps.thinking:
        requests["reasoning_format_none"] = {**base, "reasoning_format": "none"}
        requests["reasoning_effort_none"] = {**base, "reasoning_effort": "none"}
    # Conversations a template may refuse (it raises; the engine answers with an error).
    if caps.alternating_roles:
        requests["two_user_turns"] = {**base, "messages": [*HELLO, {"role": "user", "content": "Are you there?"}]}
    if not caps.system_role:
        requests["system_message"] = {**base, "messages": [{"role": "system", "content": "Be brief."}, *HELLO]}
    if caps.tool_calls:
        requests["tool_history"] = {**base, "messages": tool_history()}
    if caps.tool_call_id_length:
        requests["tool_history_short_ids"] = {**base, "messages": tool_history(id_length=caps.tool_call_id_length)}
    if caps.alternating_roles and caps.tool_calls:
        requests["tool_results_then_user"] = {**base, "messages": tool_history(
            id_length=caps.tool_call_id_length or 32, answered=False)}
    if caps.single_tool_call:
        requests["two_tool_calls_history"] = {**base, "messages": tool_history(calls=2)}
    if caps.thinking_toggle:
        requests["thinking_off"] = {**base, "chat_template_kwargs": {caps.thinking_toggle: caps.thinking_off}}
        if caps.thinking_toggle != "enable_thinking":
            requests["enable_thinking_false"] = {**base, "chat_template_kwargs": {"enable_thinking": False}}
    for level in caps.effort_levels[:3] if caps.effort else ():
        requests[f"effort_{level}"] = {**base, "reasoning_effort": level}
        if caps.effort != "reasoning_effort":
            requests[f"kwarg_{caps.effort}_{level}"] = {**base, "chat_template_kwargs": {caps.effort: level}}
    return requests


def survey_model(model: ZooModel, exe: Path) -> dict[str, Any]:
    """Load one zoo model in the real engine and send it the survey's requests."""
    caps = model.capabilities
    record: dict[str, Any] = {"vocab": model.vocab, "file_mb": None, "capabilities": _caps_json(caps)}
    path = model.ensure()
    record["file_mb"] = round(path.stat().st_size / 1e6, 1)
    started = time.monotonic()
    try:
        with serving(model, exe) as base:
            record["load_s"] = round(time.monotonic() - started, 2)
            props = httpx.get(base + "/props", timeout=10).json()
            record["engine_caps"] = sorted(k.removeprefix("supports_") for k, v in
                                           props.get("chat_template_caps", {}).items() if v)
            record["requests"] = {}
            for label, body in survey_requests(caps).items():
                result = stream_chat(base, body)
                record["requests"][label] = _summary(result)
                if label.startswith("json") and result.status == 200:
                    record["requests"][label]["json_valid"] = is_json(result.text())
    except (RuntimeError, TimeoutError) as exc:
        record["load_error"] = str(exc)[-1500:]
    return record


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _caps_json(caps: TemplateCapabilities) -> dict[str, Any]:
    """The fields that differ from a template that supports nothing special."""
    default = TemplateCapabilities()
    return {f.name: list(v) if isinstance(v, tuple) else v for f in fields(caps)
            if (v := getattr(caps, f.name)) != getattr(default, f.name) or type(v) is not type(getattr(default, f.name))}


def run_survey(names: list[str] | None = None, out: Path = FINDINGS) -> dict[str, Any]:
    """Survey every zoo model (or ``names``) and write the findings JSON."""
    exe = engines.locate().cpu_server
    findings: dict[str, Any] = json.loads(out.read_text()) if names and out.exists() else {}
    models = [m for m in zoo_models() if not names or m.name in names]
    meta = findings.setdefault("_about", {})
    meta.update({"engine": _engine_version(exe), "zoo_version": ZOO_VERSION, "engine_ctx": ENGINE_CTX,
                 "engine_args": ENGINE_ARGS, "request": basic_request(),
                 "generated_by": "python -m tests.support.template_zoo --survey"})
    templates = findings.setdefault("templates", {})
    for model in models:
        t = time.monotonic()
        templates[model.name] = survey_model(model, exe)
        print(f"{model.name}: {time.monotonic() - t:.1f}s "
              f"{json.dumps({k: v.get('kinds') or v.get('errors') for k, v in templates[model.name].get('requests', {}).items()})[:300]}",
              flush=True)
    findings["templates"] = dict(sorted(templates.items()))
    findings["summary"] = summarize(findings["templates"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(findings, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return findings


def summarize(templates: dict[str, Any]) -> dict[str, Any]:
    """Which templates load, what each request kind streamed, and which ones failed how."""
    summary: dict[str, Any] = {
        "templates": len(templates),
        "loaded": sorted(n for n, t in templates.items() if "load_error" not in t),
        "load_errors": {n: t["load_error"] for n, t in templates.items() if "load_error" in t},
    }
    by_request: dict[str, dict[str, list[str]]] = {}
    for name, record in templates.items():
        for label, r in record.get("requests", {}).items():
            if r["status"] != 200:
                outcome = f"HTTP {r['status']}: {r['errors'][0].get('error', {}).get('message', '')}"
            elif r.get("errors"):
                outcome = "error event: " + r["errors"][0]["error"]["message"]
            else:
                outcome = "+".join(r["kinds"]) or "nothing visible"
            by_request.setdefault(label, {}).setdefault(outcome, []).append(name)
    summary["outcomes"] = {label: dict(sorted(o.items())) for label, o in sorted(by_request.items())}
    return summary


def _engine_version(exe: Path) -> str:
    import subprocess

    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30)
    return (done.stdout + done.stderr).strip().splitlines()[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="The chat-template zoo of the pinned llama.cpp source.")
    ap.add_argument("--write", action="store_true", help="write every zoo model into the cache")
    ap.add_argument("--survey", action="store_true", help="run every model in the engine, write findings")
    ap.add_argument("--capture", action="store_true", help="record real SSE streams into tests/data/chat/streams")
    ap.add_argument("--only", nargs="*", help="template names (default: all)")
    args = ap.parse_args(argv)
    if args.write:
        total = 0
        for model in zoo_models():
            if args.only and model.name not in args.only:
                continue
            t = time.monotonic()
            size = model.ensure().stat().st_size
            total += size
            print(f"{model.name:48s} {model.vocab:13s} {size / 1e6:6.1f} MB {time.monotonic() - t:5.1f}s")
        print(f"total {total / 1e9:.2f} GB in {cache_dir()}")
        if not args.only:
            current = {m.path for m in zoo_models()}
            for stale in cache_dir().glob("*.gguf"):
                if stale not in current:
                    stale.unlink()
                    print(f"removed stale {stale.name}")
    if args.survey:
        run_survey(args.only)
    if args.capture:
        from tests.support import stream_captures

        stream_captures.capture_all(STREAMS)


if __name__ == "__main__":
    sys.exit(main())
