"""Every chat template of the pinned llama.cpp source, loaded by the real CPU engine and streamed.

One engine start per template (``tests/support/template_zoo.py`` writes the models once into
``~/.cache/strata-dev/zoo-<version>/``). The plain request must stream text or thinking; a template
whose prompt opens the thinking block must stream ``reasoning_content``; the thinking switch the
template reader names must turn that into ``content``. Where a template genuinely cannot work with a
random-weight model (its chat format demands a structure random text never has) the test asserts
the engine's exact failure. ``zoo_model`` yields ``ZooCase(name, path, capabilities)`` so later
tests (through the app's chat service) can reuse the loop: ``test_every_template_through_the_apps_chat``
does, through the composed app's chat service and a real chat page (about a minute for all of them).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.models.chat_template import TemplateCapabilities, read_chat_template
from tests.support import engines
from tests.support import template_zoo as zoo

pytestmark = pytest.mark.engine

# The engine's answer to a chat-format parse failure: HTTP 200, then this event, then the end of
# the stream (no ``data: [DONE]``).
PARSE_ERROR = {"error": {"code": 500, "message": "The model produced output that does not match the expected "
                                                 "peg-native format", "type": "server_error"}}

# Templates whose format random text cannot satisfy, and why.
PARSE_FAILURES: dict[str, str] = {
    "openai-gpt-oss-120b": "harmony: the reply must start with <|channel|>analysis or <|channel|>final",
    "llm-jp-llm-jp-4.1-8b-thinking": "harmony, as gpt-oss",
    "meetkai-functionary-medium-v3.2": "the reply must start with a recipient line ('all\\n' or a function name)",
    "muse-glimmer": "ATEM: the reply must start with a channel (' to=self<|message|>', ' to=user...')",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": "the reply must be <|START_THINKING|>... or "
                                                     "<|START_RESPONSE|>...",
}

# Templates whose prompt can open the thinking block but does not by default, and why.
OPENS_ONLY_WHEN_ASKED: dict[str, str] = {
    "MiniMax-M3": "thinking_mode defaults to adaptive: no <mm:think> in the prompt",
    "tencent-Hy3": "reasoning_effort defaults to no_think",
    "llama-cpp-rwkv-world": "the engine's parser finds no reasoning block in this template: the text after "
                            "' <think>' arrives as content",
}

# Templates whose "thinking off" value does not give plain content, and why.
THINKING_OFF_FAILS: dict[str, str] = {
    "Cohere2MoE": "reasoning=false closes the thinking block in the prompt; random text then fails the "
                  "format (a response must open <|START_RESPONSE|>)",
}


@dataclass(frozen=True)
class ZooCase:
    """One template of the zoo: its name (the test id), its model file and what it supports."""

    name: str
    path: Path
    capabilities: TemplateCapabilities


def _names() -> list[str]:
    try:
        return [m.name for m in zoo.zoo_models()]
    except FileNotFoundError:
        return ["<pinned llama.cpp source missing: run scripts/test-engines.sh>"]


@pytest.fixture(params=_names())
def zoo_model(request: pytest.FixtureRequest, test_engines: engines.TestEngines) -> Iterator[ZooCase]:
    """Each template of the pinned source as a :class:`ZooCase` (the model is written on first use)."""
    model = zoo.zoo_model(request.param)
    yield ZooCase(model.name, model.ensure(), model.capabilities)


def _plain(base: str) -> zoo.StreamResult:
    return zoo.stream_chat(base, zoo.basic_request(max_tokens=16))


def test_every_template_loads_and_streams(zoo_model: ZooCase, test_engines: engines.TestEngines) -> None:
    caps = zoo_model.capabilities
    # The model carries the template the reader read.
    assert read_chat_template(zoo_model.path) == zoo.zoo_model(zoo_model.name).template
    with zoo.serving(zoo.zoo_model(zoo_model.name), test_engines.cpu_server) as base:
        result = _plain(base)
        assert result.status == 200
        if zoo_model.name in PARSE_FAILURES:
            # Only the role chunk, then the error event, and the stream ends.
            assert result.events == [result.events[0], PARSE_ERROR]
            assert result.events[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
            assert result.raw.endswith(b"\n\n") and b"[DONE]" not in result.raw
            return
        assert result.errors == [] and result.done
        assert result.finish in ("length", "stop")
        expected = ("reasoning_content" if caps.opens_thinking and zoo_model.name not in OPENS_ONLY_WHEN_ASKED
                    else "content")
        _starts_with(result, expected)
        if expected == "reasoning_content" and caps.thinking_toggle:
            _thinking_off_gives_content(base, zoo_model.name, caps)


def _thinking_off_gives_content(base: str, name: str, caps: TemplateCapabilities) -> None:
    body: dict[str, Any] = {**zoo.basic_request(max_tokens=16),
                            "chat_template_kwargs": {caps.thinking_toggle: caps.thinking_off}}
    off = zoo.stream_chat(base, body)
    if name in THINKING_OFF_FAILS:
        assert off.events[-1] == PARSE_ERROR
        return
    assert off.errors == []
    _starts_with(off, "content")


def _starts_with(result: zoo.StreamResult, kind: str) -> None:
    """The reply is ``kind`` first; random text may close or open a thinking block later (rarely)."""
    assert result.kinds[:1] == [kind]
    assert set(result.kinds) <= {"content", "reasoning_content"}
    assert result.text(kind)


def _refusals() -> list[tuple[str, str]]:
    """(template, what it refuses) for every refusal the template reader reports."""
    try:
        models = zoo.zoo_models()
    except FileNotFoundError:
        return []
    out = []
    for model in models:
        caps = model.capabilities
        out += [(model.name, kind) for kind, present in (
            ("alternating_roles", caps.alternating_roles), ("tool_call_id_length", caps.tool_call_id_length),
            ("single_tool_call", caps.single_tool_call), ("no_system_role", not caps.system_role)) if present]
    return out


def _raised(template: str, words: str) -> str:
    """The template's own message for a refusal (its ``raise_exception`` text containing ``words``)."""
    for m in re.finditer(r"raise_exception\(\s*(['\"])(.*?)\1\s*\)", template):
        if words in m.group(2):
            return m.group(2)
    raise AssertionError(f"no raise_exception about {words!r}")


@pytest.mark.parametrize(("name", "refusal"), _refusals(), ids=str)
def test_what_the_reader_says_a_template_refuses_the_engine_refuses(
        name: str, refusal: str, test_engines: engines.TestEngines) -> None:
    model = zoo.zoo_model(name)
    caps = model.capabilities
    bad: list[dict[str, Any]] | None
    if refusal == "alternating_roles":
        bad, good = [*zoo.HELLO, {"role": "user", "content": "Still there?"}], zoo.HELLO
        words = "alternate"
    elif refusal == "tool_call_id_length":
        # The engine makes 32-character ids; these templates take only their own length.
        bad, good = zoo.tool_history(), zoo.tool_history(id_length=caps.tool_call_id_length or 0)
        words = f"length {caps.tool_call_id_length}"
    elif refusal == "single_tool_call":
        bad, good = zoo.tool_history(calls=2), zoo.tool_history(calls=1)
        words = "single tool-calls"
    else:
        # The engine folds a system message into the first user turn for these templates.
        bad, good = None, [{"role": "system", "content": "Be brief."}, *zoo.HELLO]
        words = ""
    with zoo.serving(model, test_engines.cpu_server) as base:
        if bad is not None:
            refused = zoo.stream_chat(base, {**zoo.basic_request(max_tokens=4), "messages": bad})
            assert refused.status in (400, 500)
            message = refused.errors[0]["error"]["message"]
            assert message.endswith("Error: Jinja Exception: " + _raised(model.template, words))
        accepted = zoo.stream_chat(base, {**zoo.basic_request(max_tokens=4), "messages": good})
        assert accepted.status == 200 and accepted.done and accepted.kinds == ["content"]


# -- every template through the composed app's chat ------------------------------------------------

def test_every_template_through_the_apps_chat(zoo_model: ZooCase, test_engines: engines.TestEngines,
                                              qtbot: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    """The app's own path, for every template: the composed core (``build_app_services``) loads the
    model on the real CPU engine, a message goes through its chat service into a real chat page, the
    text or thinking arrives and is shown, the statistics are filled, and Stop keeps what arrived.
    A template random text cannot satisfy gets the plain-words format message, not an engine error."""
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.chat import COMPLETE, FORMAT_FAILED, STOPPED, MessageDelta
    from strata_gui.core.config.services import build_services
    from strata_gui.core.runtime.client import SamplingParams
    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.pages.chat_page import ChatPage
    from tests.runtime.conftest import cpu_spec

    base = build_services()
    base.settings_service.update(context_size=zoo.ENGINE_CTX, parallel_slots=1)
    app = build_app_services(base)
    bridge = AsyncBridge()
    errors: list[Any] = []
    bridge.error_occurred.connect(errors.append)
    page = ChatPage(app.chat, bridge, load_options=app.load_options)
    qtbot.addWidget(page)
    page.resize(900, 700)
    page.show()
    chat = app.chat
    chat.set_model(zoo_model.path)
    chat.set_plan([cpu_spec(test_engines)])

    async def scenario() -> None:
        conv_id = page.new_conversation()
        chat.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=16, seed=7))
        handle = page.send_text("Hello, who are you?")
        assert handle is not None
        await handle.wait()
        reply = list(page.message_widgets.values())[-1]
        msg = reply.message
        if zoo_model.name in PARSE_FAILURES:
            assert msg.status == FORMAT_FAILED and handle.error is not None
            assert handle.error.message == "The model's output did not match its chat format."
            assert reply.notice is not None and reply.notice.isVisibleTo(page)
            assert reply.retry_unparsed_button is not None and reply.retry_unparsed_button.isVisibleTo(page)
            assert not errors and page.notice.isHidden()  # no banner, nothing about the engine
            return
        assert handle.error is None, handle.error
        assert msg.status == COMPLETE and (msg.content.strip() or msg.thinking)
        if msg.content.strip():
            assert reply.rendered_text == msg.content and reply.blocks
        if msg.thinking:
            assert reply.thinking_block is not None and reply.thinking_block.text.strip() == msg.thinking
        s = msg.stats
        assert s.ttft_s is not None and s.prefill_tps and s.decode_tps and s.engine == "CPU"
        assert s.predicted_n == 16 or s.finish_reason == "stop"
        assert "TTFT" in reply.stats.text()

        # Stop keeps what arrived, of either kind.
        chat.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=2000, seed=7))
        deltas: list[MessageDelta] = []
        unsubscribe = chat.events.subscribe(lambda e: deltas.append(e) if isinstance(e, MessageDelta) else None)
        handle = page.send_text("Tell me more")
        assert handle is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while sum(len(d.text) + len(d.thinking) for d in deltas) < 8 and handle.is_running:
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        page.stop()
        await handle.wait()
        unsubscribe()
        stopped = chat.store.messages(conv_id)[-1]
        assert stopped.status == STOPPED and (stopped.content or stopped.thinking)
        assert stopped.stats.ttft_s is not None and not errors

    try:
        qasync_loop.run_until_complete(scenario())
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(app.aclose())
