"""The chat's tool loop, thinking and progress through the real chat service, real MCP servers (the
official SDK, over stdio) and an engine stream in llama-server's exact delta format.

A random-weight model answers a tool result with text its chat format rejects, so a whole round
trip (call, result, answer) cannot come from the real engine: the loopback server streams what the
real one streams for each step (``tests/support/openai_stream_server.py``, built from captures of
the pinned llama-server). The real engine's own tool call goes through the same loop in
``test_reasoning_engine.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from strata_gui.core.base.errors import ChatFormatError
from strata_gui.core.chat.records import (
    COMPLETE,
    FORMAT_FAILED,
    INTERRUPTED,
    STOPPED,
    TOOL_ALLOWED,
    TOOL_DENIED,
    TOOL_ERROR,
    TOOL_RUNNING,
    TOOL_STOPPED,
    Message,
    ThinkingSettings,
    ToolCallRecord,
)
from strata_gui.core.chat.service import (
    ChatEvent,
    ChatService,
    ChatTools,
    MessageAdded,
    MessageDelta,
    MessageUpdated,
    Notice,
    ReplyProgress,
    ToolApproval,
)
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime.client import ChatClient, ChatReply
from strata_gui.core.tools import Decision, McpHost, MemoryApprovals, ToolPolicy, parse_mcp_servers
from tests.support.mcp_servers import hang_calls, stdio_entry
from tests.support.openai_stream_server import (
    ChunkMaker,
    Pause,
    Script,
    busy_silence,
    openai_stream_server,
    parse_failure_after,
    reasoning_then_content,
    tool_calls,
)
from tests.support.poll import until
from tests.support.pool import real_pool
from tests.support.settings import settings_service

T = TypeVar("T")


class Endpoint:
    """The loopback stream server as a remote engine (the service's seam for engines it does not
    manage), progress from its ``/slots`` included."""

    label = "loopback"

    def __init__(self, http: httpx.AsyncClient, base: str) -> None:
        self._client = ChatClient(http, base)

    async def stream(self, messages: Any, **kw: Any) -> ChatReply:
        return await self._client.stream(messages, **kw)

    async def decoded_tokens(self) -> int | None:
        return await self._client.decoded_tokens()


class Approvals:
    """Answers tool calls as a user would, recording what was asked."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[ToolApproval] = []

    async def __call__(self, approval: ToolApproval) -> Decision:
        self.asked.append(approval)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def run_chat(base: str, body: Callable[[ChatService, list[ChatEvent]], Awaitable[T]], *,
             servers: dict[str, Any] | None = None, log_dir: Path | None = None, **service_args: Any) -> T:
    """A chat service answering through ``base``, with the MCP test server as its tools."""
    async def main() -> T:
        paths = AppPaths.from_environment()
        paths.ensure()
        configs = parse_mcp_servers({"mcpServers": servers if servers is not None else {"tools": stdio_entry()}})
        host = McpHost(configs, log_dir=log_dir or paths.log_dir, call_timeout=60)
        tools = ChatTools(host, ToolPolicy(MemoryApprovals()))
        async with httpx.AsyncClient(trust_env=False) as http:
            pool = real_pool(http)
            svc = ChatService(ConversationStore(paths.database_file).open(), pool, http, settings_service(),
                              tools=lambda: tools, **service_args)
            svc.set_remote(Endpoint(http, base))
            events: list[ChatEvent] = []
            svc.events.subscribe(events.append)
            try:
                return await body(svc, events)
            finally:
                await host.aclose()
                await svc.aclose()
                await pool.aclose()

    return asyncio.run(main())


def roles(svc: ChatService, conv_id: int) -> list[str]:
    return [m.role for m in svc.store.messages(conv_id)]


def calls(svc: ChatService, conv_id: int) -> list[ToolCallRecord]:
    return [c for m in svc.store.messages(conv_id) for c in m.tool_calls]


@pytest.fixture
def weather_answer() -> Iterator[Any]:
    with openai_stream_server(tool_calls([("add", '{"a": 2, "b": 3}')]), reasoning_then_content(2, 3)) as server:
        yield server


def test_a_tool_round_trip_asks_runs_stores_and_answers(weather_answer: Any) -> None:
    server = weather_answer
    approvals = Approvals(Decision.ALLOW_ONCE)

    async def body(svc: ChatService, events: list[ChatEvent]) -> Message:
        svc.approver = approvals
        conv = svc.new_conversation()
        return await svc.send(conv.id, "What is 2 + 3?")

    final = run_chat(server.url, body)
    # The user was asked, with the model's arguments, and the result went back to the model.
    assert [(a.request.server, a.request.tool, dict(a.request.arguments)) for a in approvals.asked] == \
        [("tools", "add", {"a": 2, "b": 3})]
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]][:2] == ["add", "echo"] and first["tool_choice"] == "auto"
    sent = second["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    call = sent[1]["tool_calls"][0]
    assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'} and call["type"] == "function"
    assert sent[2] == {"role": "tool", "tool_call_id": call["id"], "content": "5", "name": "add"}
    # The loop ends with the model's answer; everything is kept in order.
    assert final.status == COMPLETE and final.content == "c0 c1 c2 " and final.thinking == "r0 r1"
    assert final.stats.thinking_n == 2 and final.stats.ttft_s is not None and final.stats.answer_s is not None
    conv_id = final.conversation_id
    ctx = AppPaths.from_environment().database_file
    with ConversationStore(ctx) as store:
        msgs = store.messages(conv_id)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]
    (record,) = msgs[1].tool_calls
    assert (record.name, record.status, record.result) == ("add", TOOL_ALLOWED, "5") and record.duration_s
    assert (msgs[2].content, msgs[2].tool_call_id, msgs[2].tool_name) == ("5", record.id, "add")
    assert msgs[2].settings["outcome"] == "ok" and msgs[2].settings["server"] == "tools"


def test_denied_crashing_and_hanging_tools_are_reported_and_the_chat_goes_on(tmp_path: Path) -> None:
    """One reply: the user denies ``echo``; ``crash`` kills its server mid-call; ``hang`` runs past
    its server's time limit. Each becomes a result the model reads, and the model still answers."""
    scripts = [tool_calls([("echo", '{"text": "hi"}')]), tool_calls([("crash", "{}")]),
               tool_calls([("hang", "{}")]), reasoning_then_content(0, 2)]
    approvals = Approvals(Decision.DENY, Decision.ALLOW_ONCE, Decision.ALLOW_ONCE)
    seen: list[tuple[str, str]] = []

    async def body(svc: ChatService, events: list[ChatEvent]) -> Message:
        svc.approver = approvals
        svc.events.subscribe(lambda e: seen.extend((c.name, c.status) for c in e.message.tool_calls)
                      if isinstance(e, MessageUpdated) else None)
        return await svc.send(svc.new_conversation().id, "use your tools")

    with openai_stream_server(*scripts) as server:
        final = run_chat(server.url, body, servers={"tools": stdio_entry(timeout=1.5)}, log_dir=tmp_path)
        requests = server.requests
    assert final.status == COMPLETE and final.content == "c0 c1 "
    with ConversationStore(AppPaths.from_environment().database_file) as store:
        msgs = store.messages(final.conversation_id)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    echo, crash, hang = (m.tool_calls[0] for m in msgs if m.tool_calls)
    assert (echo.status, echo.result) == (TOOL_DENIED, "The user did not allow the tool 'echo' to run.")
    assert crash.status == TOOL_ERROR and crash.result == "The tool server 'tools' stopped during the call of 'crash'."
    assert hang.status == TOOL_ERROR and "did not finish within 1.5 s" in (hang.result or "")
    outcomes = [m.settings["outcome"] for m in msgs if m.role == "tool"]
    assert outcomes == ["denied", "crashed", "timed_out"]
    assert "crash tool: exiting now" in msgs[4].settings.get("details", "")  # the server's last words
    # A denied call never showed as running; the allowed ones did, before their result.
    assert ("echo", TOOL_RUNNING) not in seen and ("crash", TOOL_RUNNING) in seen and ("hang", TOOL_RUNNING) in seen
    # The model read every result.
    last = requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == [echo.result, crash.result, hang.result]


def test_stop_cancels_a_running_tool_and_keeps_the_conversation_consistent() -> None:
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[list[Message], list[Any]]:
        svc.approver = Approvals(Decision.ALLOW_ONCE)
        conv = svc.new_conversation()
        task = asyncio.create_task(svc.send(conv.id, "hang please"))
        while not any(c.status == TOOL_RUNNING for c in calls(svc, conv.id)):
            await asyncio.sleep(0.02)
        await until(lambda: hang_calls(AppPaths.from_environment().log_dir) == 1)  # the call is on the server now
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return svc.store.messages(conv.id), svc.history(svc.store.conversation(conv.id))  # type: ignore[arg-type]

    with openai_stream_server(tool_calls([("hang", "{}")]), reasoning_then_content(0, 2)) as server:
        msgs, history = run_chat(server.url, body)
        assert len(server.requests) == 1  # nothing was sent after Stop
    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    (record,) = msgs[1].tool_calls
    assert record.status == TOOL_STOPPED and record.result == "Stopped by the user before the tool finished."
    assert msgs[2].settings == {"outcome": "stopped"}
    # The next request is a valid conversation: the call and its (stopped) result go together.
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]


def test_stop_while_the_first_of_two_calls_waits_answers_both() -> None:
    """The second call stayed "waiting for your answer" for ever, and the first, never run, read
    "Stopped by the user before the tool finished"."""
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[list[Message], list[Any]]:
        asked = asyncio.Event()

        async def never_answers(_approval: ToolApproval) -> Decision:
            asked.set()
            await asyncio.Event().wait()
            return Decision.DENY

        svc.approver = never_answers
        conv = svc.new_conversation()
        task = asyncio.create_task(svc.send(conv.id, "add then echo"))
        await asyncio.wait_for(asked.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return svc.store.messages(conv.id), svc.history(svc.store.conversation(conv.id))  # type: ignore[arg-type]

    script = tool_calls([("add", '{"a": 1, "b": 2}'), ("echo", '{"text": "hi"}')])
    with openai_stream_server(script) as server:
        msgs, history = run_chat(server.url, body)
    assert [(c.name, c.status, c.result) for c in msgs[1].tool_calls] == [
        ("add", TOOL_STOPPED, "Not run: stopped by the user."), ("echo", TOOL_STOPPED, "Not run: stopped by the user.")]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool"]  # every call answered


def test_a_model_that_calls_tools_past_the_limit_is_told_and_nothing_waits() -> None:
    """Asked for words in the last round, a model (a remote server that ignores tool_choice "none")
    called again: the reply ended empty with its call "waiting for your answer" and no word why."""
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[Message, list[Message], list[Any]]:
        svc.approver = Approvals(Decision.ALWAYS)
        conv = svc.new_conversation()
        done = await svc.send(conv.id, "add forever")
        return done, svc.store.messages(conv.id), [e for e in events if isinstance(e, Notice)]

    scripts = [tool_calls([("add", '{"a": 1, "b": 1}')]) for _ in range(3)]
    with openai_stream_server(*scripts) as server:
        done, msgs, notices = run_chat(server.url, body, max_tool_rounds=2)
        assert len(server.requests) == 3
    (last,) = done.tool_calls
    assert last.status == TOOL_ERROR and "limit of 2 rounds" in last.result
    assert [m.role for m in msgs][-2:] == ["assistant", "tool"] and msgs[-1].content == last.result
    assert len(notices) == 1 and "limit of 2 rounds" in notices[0].text


def test_a_reply_stopped_after_a_lone_closing_tag_keeps_the_thinking_apart() -> None:
    """The prompt opened the thinking, so only "</think>" streams: a reply stopped after it was saved
    with its thinking and the tag as the answer (and sent back to the model as what it said)."""
    m = ChunkMaker()
    parts: list[Any] = [m.role(), m.chunk({"content": "Okay, a greeting"}), m.chunk({"content": ".</think>\n\n"}),
                        m.chunk({"content": "Hello"})]
    for i in range(200):
        parts += [m.chunk({"content": f" w{i}"}), Pause(0.01)]

    async def body(svc: ChatService, events: list[ChatEvent]) -> Message:
        conv = svc.new_conversation()
        task = asyncio.create_task(svc.send(conv.id, "hi"))
        while "Hello" not in "".join(e.text for e in events if isinstance(e, MessageDelta)):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return svc.store.messages(conv.id)[-1]

    with openai_stream_server(Script(parts, tokens=200)) as server:
        reply = run_chat(server.url, body, servers={})
    assert reply.status == STOPPED and reply.thinking == "Okay, a greeting."
    assert reply.content.startswith("Hello") and "</think>" not in reply.content


def test_a_remote_reply_broken_off_midway_is_kept_and_sent_back() -> None:
    """It was saved as "No reply" and left out of the next request, while the error said the
    partial reply was kept."""
    m = ChunkMaker()
    broken = Script([m.role(), m.chunk({"content": "Here is a long"}), m.chunk({"content": " partial answer"})])

    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[Message, list[Any]]:
        conv = svc.new_conversation()
        with pytest.raises(Exception, match="stopped answering"):
            await svc.send(conv.id, "hello")
        reply = svc.store.messages(conv.id)[-1]
        return reply, svc.history(svc.store.conversation(conv.id))  # type: ignore[arg-type]

    with openai_stream_server(broken) as server:
        reply, history = run_chat(server.url, body, servers={})
    assert reply.status == INTERRUPTED and reply.content == "Here is a long partial answer"
    assert history[-1] == {"role": "assistant", "content": "Here is a long partial answer"}


def test_always_allow_asks_once_and_no_approver_means_nothing_runs() -> None:
    scripts = [tool_calls([("add", '{"a": 1, "b": 1}')]), tool_calls([("add", '{"a": 2, "b": 2}')]),
               reasoning_then_content(0, 1), tool_calls([("write", '{"path": "/tmp/x", "text": "y"}')]),
               reasoning_then_content(0, 1)]
    approvals = Approvals(Decision.ALWAYS)

    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[list[ToolCallRecord], list[ToolCallRecord]]:
        svc.approver = approvals
        conv = svc.new_conversation()
        await svc.send(conv.id, "add twice")
        first = calls(svc, conv.id)
        svc.approver = None  # a caller that cannot ask: nothing runs unasked
        await svc.send(conv.id, "write a file")
        return first, calls(svc, conv.id)[len(first):]

    with openai_stream_server(*scripts) as server:
        first, second = run_chat(server.url, body)
    assert len(approvals.asked) == 1
    assert [(c.status, c.result) for c in first] == [(TOOL_ALLOWED, "2"), (TOOL_ALLOWED, "4")]
    assert [(c.name, c.status) for c in second] == [("write", TOOL_DENIED)]
    assert not Path("/tmp/x").exists() or Path("/tmp/x").read_text() != "y"


def test_tool_server_that_cannot_start_is_a_notice_and_the_reply_goes_on(tmp_path: Path) -> None:
    broken = {"missing": {"command": str(tmp_path / "no-such-program")}, "tools": stdio_entry(only=["add"])}

    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[Message, list[str]]:
        reply = await svc.send(svc.new_conversation().id, "hi")
        return reply, [e.text for e in events if isinstance(e, Notice)]

    with openai_stream_server(reasoning_then_content(0, 2)) as server:
        reply, notices = run_chat(server.url, body, servers=broken)
        offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert reply.status == COMPLETE and offered == ["add"]
    assert len(notices) == 1 and "missing" in notices[0] and "was not found" in notices[0]


def test_thinking_streams_apart_with_a_live_count_and_stop_keeps_it() -> None:
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[Message, list[MessageDelta]]:
        conv = svc.new_conversation()
        task = asyncio.create_task(svc.send(conv.id, "think"))
        while sum(len(e.thinking) for e in events if isinstance(e, MessageDelta)) < 30:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return svc.store.messages(conv.id)[-1], [e for e in events if isinstance(e, MessageDelta)]

    with openai_stream_server(reasoning_then_content(400, 5, pause=0.005)) as server:
        reply, deltas = run_chat(server.url, body, servers={})
    assert reply.status == STOPPED and reply.content == ""
    assert reply.thinking == "".join(d.thinking for d in deltas).strip() and reply.thinking.startswith("r0 r1 ")
    counts = [d.tokens for d in deltas]
    assert counts == sorted(counts) and counts[-1] >= 10
    s = reply.stats
    assert s.finish_reason == "stopped" and s.ttft_s is not None and s.answer_s is None
    assert s.thinking_n == counts[-1] and s.thinking_s is not None


def test_silence_while_the_engine_generates_is_announced_with_its_count() -> None:
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[Message, list[ReplyProgress]]:
        reply = await svc.send(svc.new_conversation().id, "hello")
        return reply, [e for e in events if isinstance(e, ReplyProgress)]

    with openai_stream_server(busy_silence(1.2, then_content=3)) as server:
        reply, progress = run_chat(server.url, body, servers={}, watch_interval=0.05, silence_notice_s=0.5)
    assert reply.status == COMPLETE and reply.content == "c0 c1 c2 "
    assert progress and all(p.message_id == reply.id for p in progress)
    decoded = [p.decoded for p in progress]
    assert decoded == sorted(decoded) and decoded[-1] > 0  # type: ignore[type-var,operator]
    quiet, loud = [p for p in progress if not p.silent], [p for p in progress if p.silent]
    assert quiet and loud and max(p.silent_s for p in quiet) < 0.5 <= min(p.silent_s for p in loud)
    assert "nothing has arrived for" in loud[0].text and f"{loud[0].tokens:,} tokens" in loud[0].text


def test_a_reply_stopped_while_nothing_arrives_keeps_the_count_it_showed() -> None:
    """The counter moved on with the engine's count while nothing streamed ("Generating… 854
    tokens"); Stop then kept the pieces' count ("448 tokens"). The stopped reply keeps the last
    count shown, never a smaller one."""
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[Message, int]:
        conv = svc.new_conversation()
        task = asyncio.create_task(svc.send(conv.id, "hello"))
        await until(lambda: any(isinstance(e, ReplyProgress) and e.tokens >= 10 for e in events))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        shown = max(e.tokens for e in events if isinstance(e, ReplyProgress))
        return svc.store.messages(conv.id)[-1], shown

    with openai_stream_server(busy_silence(60, then_content=3)) as server:
        reply, shown = run_chat(server.url, body, servers={}, watch_interval=0.05)
    assert reply.status == STOPPED and shown >= 10
    assert reply.stats.predicted_n is not None and reply.stats.predicted_n >= shown
    assert reply.stats.decode_tps is None  # one piece: no rate


def test_a_format_failure_keeps_everything_and_blames_nobody() -> None:
    async def body(svc: ChatService, events: list[ChatEvent]) -> tuple[BaseException, Message, list[ChatEvent]]:
        conv = svc.new_conversation()
        with pytest.raises(ChatFormatError) as caught:
            await svc.send(conv.id, "hello")
        return caught.value, svc.store.messages(conv.id)[-1], events

    with openai_stream_server(parse_failure_after(3, reasoning_tokens=2)) as server:
        exc, reply, events = run_chat(server.url, body, servers={})
    assert exc.message == "The model's output did not match its chat format." and "peg-native" in (exc.details or "")
    assert reply.status == FORMAT_FAILED and reply.content == "c0 c1 c2 " and reply.thinking == "r0 r1"
    assert reply.stats.finish_reason == "chat format" and reply.stats.ttft_s is not None
    assert not [e for e in events if isinstance(e, Notice)]
    assert not any(isinstance(e, MessageAdded) and e.message.role == "tool" for e in events)


def test_thinking_settings_reach_the_request_and_old_thinking_stays_home() -> None:
    async def body(svc: ChatService, events: list[ChatEvent]) -> None:
        conv = svc.new_conversation()
        svc.store.update_settings(conv.id, thinking=ThinkingSettings(enabled=True, effort="high", budget=64))
        await svc.send(conv.id, "one")
        await svc.send(conv.id, "two")

    with openai_stream_server(reasoning_then_content(2, 2)) as server:
        run_chat(server.url, body, servers={})
        first, second = server.requests
    assert first["chat_template_kwargs"] == {"enable_thinking": True} and first["reasoning_effort"] == "high"
    assert first["thinking_budget_tokens"] == 64 and first["max_tokens"] == 8192
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant == [{"role": "assistant", "content": "c0 c1 "}]  # no reasoning_content
    assert json.dumps(second).count("r0") == 0


def test_thinking_is_spelled_the_way_each_template_reads_it() -> None:
    from strata_gui.core.chat.service import for_template
    from strata_gui.core.models.chat_template import TemplateCapabilities
    from strata_gui.core.runtime.client import RequestOptions

    def body(options: RequestOptions, caps: TemplateCapabilities | None) -> dict[str, Any]:
        return for_template(options, caps).to_request()

    qwen3 = TemplateCapabilities(thinking=True, thinking_toggle="enable_thinking", thinking_off=False)
    off, on = RequestOptions(thinking=False), RequestOptions(thinking=True, effort="high")
    assert body(off, qwen3) == off.to_request() == {"chat_template_kwargs": {"enable_thinking": False},
                                                    "reasoning_effort": "none"}
    assert body(on, None) == on.to_request()
    mode = TemplateCapabilities(thinking=True, thinking_toggle="thinking_mode", thinking_off="disabled")
    assert body(off, mode) == {"chat_template_kwargs": {"thinking_mode": "disabled"}, "reasoning_effort": "none"}
    assert body(on, mode) == {"reasoning_effort": "high"}  # "on" is the template's own default mode
    budget = TemplateCapabilities(thinking=True, thinking_toggle="thinking_budget", thinking_off=0)
    assert body(off, budget)["chat_template_kwargs"] == {"thinking_budget": 0}
    switch = TemplateCapabilities(thinking=True, thinking_toggle="thinking", thinking_off=False,
                                  effort="thinking_effort", effort_levels=("low", "high"))
    assert body(on, switch) == {"chat_template_kwargs": {"thinking": True, "thinking_effort": "high"}}
    gpt_oss = TemplateCapabilities(thinking=True, effort="reasoning_effort", effort_levels=("medium",))
    assert body(on, gpt_oss) == on.to_request()
    effort_only = TemplateCapabilities(thinking=True, thinking_toggle="enable_thinking", thinking_off=False,
                                       effort="reasoning_strength")
    assert body(on, effort_only) == {"chat_template_kwargs": {"reasoning_strength": "high", "enable_thinking": True}}
