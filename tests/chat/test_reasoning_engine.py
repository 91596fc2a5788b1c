"""Thinking, format failures and a tool call on the real CPU engine with real templates.

- The R1-style model (Qwen2's real vocabulary, the DeepSeek-R1-Distill template, whose generation
  prompt opens ``<think>``): every token is thinking. It streams live, is saved apart from the
  answer, has a time to first token, and Stop keeps it; nothing blames the engine.
- Functionary v3.2: random text fails its chat format (the engine's "peg-native" error): the reply
  is kept, nothing falls back, and "Retry without format parsing" reloads the model's engine with
  ``--skip-chat-parsing`` and answers. Forced (``tool_choice: "required"``, with the tokens of
  "all" banned) it writes a real tool call, which runs through the chat's approval and a real
  MCP server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import ChatFormatError
from strata_gui.core.chat.records import (
    COMPLETE,
    FORMAT_FAILED,
    OUTPUT_SCHEMA,
    STOPPED,
    TOOL_ALLOWED,
    StructuredOutput,
    ThinkingSettings,
)
from strata_gui.core.chat.service import ChatEvent, ChatService, ChatTools, MessageDelta, Notice, ToolApproval
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.tools import Decision, McpHost, MemoryApprovals, ToolPolicy, parse_mcp_servers
from tests.chat.conftest import run_with_service
from tests.runtime.conftest import cpu_spec, functionary_model, r1_model  # noqa: F401 (fixtures)
from tests.support import engines as _engines
from tests.support.mcp_servers import stdio_entry

Engines = _engines.TestEngines
pytestmark = pytest.mark.engine
# Functionary v3.2's grammar lets a forced reply open with text (">>>all") before the call; random
# weights take either path. Banning the tokens that spell "all" leaves the tool call the only one.
ONLY_TOOL_CALLS = {"logit_bias": [["a", False], ["al", False], ["all", False]]}


def _limit(svc: ChatService, conv_id: int, max_tokens: int, seed: int = 1) -> None:
    svc.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=max_tokens, seed=seed))


def test_r1_thinking_streams_live_is_saved_apart_and_stop_keeps_it(test_engines: Engines, r1_model: Path) -> None:  # noqa: F811
    async def body(svc: ChatService, events: list[ChatEvent]) -> None:
        conv = svc.new_conversation()
        _limit(svc, conv.id, 24)
        reply = await svc.send(conv.id, "Hello")
        deltas = [e for e in events if isinstance(e, MessageDelta)]
        assert reply.status == COMPLETE and reply.content == ""
        assert reply.thinking and reply.thinking == "".join(d.thinking for d in deltas).strip()
        assert all(d.text == "" for d in deltas) and deltas[-1].tokens == 24
        s = reply.stats
        assert s.ttft_s is not None and s.thinking_n == 24 and s.answer_s is None and s.thinking_s is not None
        assert s.finish_reason == "length" and s.extra["output_limit"] == 24
        assert "stopped at the output limit (24 tokens)" in s.summary(with_reason=False)
        assert not [e for e in events if isinstance(e, Notice)]

        # Stop in the middle of a long think: what arrived is kept, the engine serves on.
        _limit(svc, conv.id, 3000)
        engine = svc.running_engine
        events.clear()
        task = asyncio.create_task(svc.send(conv.id, "Think long"))
        while sum(len(e.thinking) for e in events if isinstance(e, MessageDelta)) < 40:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        stopped = svc.store.messages(conv.id)[-1]
        assert stopped.status == STOPPED and stopped.thinking and stopped.content == ""
        assert stopped.stats.ttft_s is not None and stopped.stats.thinking_n
        assert svc.running_engine is engine and engine is not None and engine.ready
        assert not [e for e in events if isinstance(e, Notice)]

    run_with_service([cpu_spec(test_engines)], r1_model, body)


def test_the_live_counter_counts_what_the_final_statistics_count(test_engines: Engines, r1_model: Path) -> None:  # noqa: F811
    """Thinking off, a JSON schema: the engine generates tokens its grammar's text holds back (no
    piece carries them). The live counter follows the engine's own count, so it ends on the final
    figure (it read 23 pieces, then "31 tokens"), and a reply cut at its limit says the limit."""
    async def body(svc: ChatService, events: list[ChatEvent]) -> None:
        conv = svc.new_conversation()
        schema = {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}}, "required": ["city"]}
        svc.store.update_settings(conv.id, thinking=ThinkingSettings(enabled=False),
                                  structured_output=StructuredOutput(OUTPUT_SCHEMA, json.dumps(schema)))
        _limit(svc, conv.id, 20)
        reply = await svc.send(conv.id, "Where?")
        live = [e.tokens for e in events if isinstance(e, MessageDelta) and e.message_id == reply.id]
        assert live == sorted(live) and live[-1] == reply.stats.predicted_n == 20
        assert "20 tokens generated" in reply.stats.summary()

    run_with_service([cpu_spec(test_engines)], r1_model, body)


def test_r1_in_the_cli_thinking_on_stderr_and_reasoning_in_json(test_engines: Engines, r1_model: Path,  # noqa: F811
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    base = ["chat", "-m", str(r1_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "1024", "--seed", "1"]
    assert run_command([*base, "--max-tokens", "16", "--json", "Hello"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reply"] == "" and data["reasoning"] and data["tool_calls"] == []
    assert data["stats"]["ttft_s"] is not None and data["stats"]["thinking_n"] == 16
    assert data["stats"]["finish_reason"] == "length" and data["notices"] == []

    assert run_command([*base, "--max-tokens", "16", "Hello"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == ""  # the answer (none: random weights never close the thinking)
    assert data["reasoning"][:20] in err  # the same thinking (same seed), on standard error
    assert "thought 16 tokens in" in err and "stopped at the output limit (16 tokens)" in err

    # --think off: the template's thinking switch closes the thinking at once; the text is the answer.
    assert run_command([*base, "--max-tokens", "8", "--think", "off", "--json", "Hello"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reply"] and data["reasoning"] == "" and data["stats"]["thinking_n"] is None


def test_a_format_failure_is_kept_and_retry_without_parsing_answers(test_engines: Engines,
                                                                   functionary_model: Path) -> None:  # noqa: F811
    async def body(svc: ChatService, events: list[ChatEvent]) -> None:
        conv = svc.new_conversation()
        _limit(svc, conv.id, 20)
        with pytest.raises(ChatFormatError) as caught:
            await svc.send(conv.id, "Hello")
        assert caught.value.message == "The model's output did not match its chat format."
        failed = svc.store.messages(conv.id)[-1]
        assert failed.status == FORMAT_FAILED and failed.ran_on == "local:CPU"
        engine = svc.running_engine
        assert engine is not None and engine.ready and "--skip-chat-parsing" not in engine.server.command
        assert not [e for e in events if isinstance(e, Notice)]  # no fallback, no "engine stopped"

        reply = await svc.retry_without_format_parsing(conv.id)
        assert reply.status == COMPLETE and reply.content and reply.stats.predicted_n == 20
        again = svc.running_engine
        assert again is not None and again is not engine and "--skip-chat-parsing" in again.server.command
        assert [m.status for m in svc.store.messages(conv.id)] == [COMPLETE, COMPLETE]  # the failed one replaced
        assert not [e for e in events if isinstance(e, Notice)]
        # Issue 48 item 7: the retry is one time; the next reply parses again (the lasting switch is
        # the model's load option), so this model's output fails its format again.
        with pytest.raises(ChatFormatError):
            await svc.send(conv.id, "Hello again")
        parsed = svc.running_engine
        assert parsed is not None and "--skip-chat-parsing" not in parsed.server.command
        assert svc.chat_model.model_options().chat_parsing

    run_with_service([cpu_spec(test_engines)], functionary_model, body)


def test_the_cli_names_the_format_failure_and_no_chat_parsing_answers(test_engines: Engines,
                                                                     functionary_model: Path,  # noqa: F811
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    base = ["chat", "-m", str(functionary_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "1024",
            "--seed", "1", "--max-tokens", "12"]
    from strata_gui.cli import main

    assert main([*base, "Hello"]) == 1
    err = capsys.readouterr().err
    assert "error: The model's output did not match its chat format." in err
    assert "--no-chat-parsing" in err
    assert not any(blame in err.lower() for blame in ("engine stopped", "engine failed", "crash", "interrupted"))
    assert main([*base, "--no-chat-parsing", "--json", "Hello"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reply"] and data["stats"]["predicted_n"] == 12


def test_the_real_engines_tool_call_runs_through_approval_and_mcp(test_engines: Engines,
                                                                  functionary_model: Path) -> None:  # noqa: F811
    """Functionary, forced to call a tool: a real ``tool_calls`` stream from the engine, asked about,
    run on a real MCP server, its result sent back in the template's own tool turn."""
    asked: list[ToolApproval] = []

    async def approve(approval: ToolApproval) -> Decision:
        asked.append(approval)
        return Decision.ALLOW_ONCE

    async def body(svc: ChatService, events: list[ChatEvent]) -> None:
        host = McpHost(parse_mcp_servers({"mcpServers": {"tools": stdio_entry(only=["weather"])}}))
        svc.tools = lambda: ChatTools(host, ToolPolicy(MemoryApprovals()))
        svc.approver = approve
        svc.tool_choice = "required"
        svc.request_extra = dict(ONLY_TOOL_CALLS)
        try:
            conv = svc.new_conversation()
            _limit(svc, conv.id, 200)
            try:
                await svc.send(conv.id, "What is the weather in Paris?")
            except ChatFormatError:
                pass  # the model's words after the result: random weights, whatever its format says
            msgs = svc.store.messages(conv.id)
        finally:
            await host.aclose()
        calls = msgs[1].tool_calls
        assert calls and msgs[1].stats.finish_reason == "tool_calls"
        for call in calls:  # the model may call it more than once in one step
            city = json.loads(call.arguments)["city"]
            assert call.name == "weather" and city in ("Paris", "Rome")
            assert call.status == TOOL_ALLOWED and call.result == f"Sunny in {city}, 21 °C"
        assert [a.request.tool for a in asked][:len(calls)] == ["weather"] * len(calls)
        results = msgs[2:2 + len(calls)]
        assert [(m.role, m.tool_call_id, m.content) for m in results] == [("tool", c.id, c.result) for c in calls]
        # The engine took the history with the results in the template's tool turn and went on.
        assert msgs[2 + len(calls)].role == "assistant"

    run_with_service([cpu_spec(test_engines)], functionary_model, body, context_size=2048)


def _prompt_tokens_of_a_second_turn(model: Path, engines: Engines, keep_reasoning: bool) -> tuple[int, str]:
    """Two turns on ``model``; the engine's count of the second turn's prompt, and the first reply's thinking."""
    from strata_gui.core.models.chat_template import read_chat_template, template_capabilities

    async def template(path: Path) -> Any:
        text = read_chat_template(path)
        return template_capabilities(text) if text and keep_reasoning else None

    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[int, str]:
        svc.chat_model.template = template
        conv = svc.new_conversation()
        _limit(svc, conv.id, 16)
        first = await svc.send(conv.id, "Hello")
        second = await svc.send(conv.id, "And then?")
        return (second.stats.prompt_n or 0) + (second.stats.cache_n or 0), first.thinking

    return run_with_service([cpu_spec(engines)], model, body)


def test_past_thinking_goes_back_only_where_the_template_keeps_it(test_engines: Engines,
                                                                  r1_model: Path) -> None:  # noqa: F811
    """Bielik's template renders earlier turns' reasoning: the second prompt holds the first reply's
    thinking. R1's drops it: the chat does not send it, and the prompt is the same either way."""
    from tests.support import template_zoo as zoo

    bielik = zoo.zoo_model("Bielik-11B-v3.0-Instruct")
    assert bielik.capabilities.keeps_past_reasoning and bielik.capabilities.opens_thinking
    kept, thinking = _prompt_tokens_of_a_second_turn(bielik.ensure(), test_engines, keep_reasoning=True)
    dropped, _ = _prompt_tokens_of_a_second_turn(bielik.ensure(), test_engines, keep_reasoning=False)
    assert thinking and kept >= dropped + 16  # the 16 thinking tokens of the first reply, and its turn
    r1_with, _ = _prompt_tokens_of_a_second_turn(r1_model, test_engines, keep_reasoning=True)
    r1_without, _ = _prompt_tokens_of_a_second_turn(r1_model, test_engines, keep_reasoning=False)
    assert r1_with == r1_without
