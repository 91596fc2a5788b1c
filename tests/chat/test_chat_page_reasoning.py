"""The chat page with thinking, tool calls, format failures and JSON replies: real widgets offscreen,
the composed app's core (``build_app_services``), the real CPU engine with real templates, real MCP
servers, and the loopback stream server where the real engine cannot do it (a whole tool round trip).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PySide6.QtCore import Qt

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.chat import (
    COMPLETE,
    FORMAT_FAILED,
    OUTPUT_SCHEMA,
    STOPPED,
    MessageDelta,
    StructuredOutput,
    ThinkingSettings,
)
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.tools import Decision, McpServerConfig, parse_mcp_servers
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.chat.message_widget import CodeBlock, MessageWidget
from strata_gui.ui.chat.reply_parts import ToolResultView
from strata_gui.ui.pages.chat_page import ChatPage
from tests.chat.test_tool_loop import Endpoint
from tests.runtime.conftest import cpu_spec, functionary_model, r1_model  # noqa: F401 (fixtures)
from tests.support import engines as _engines
from tests.support.mcp_servers import hang_calls, stdio_entry
from tests.support.openai_stream_server import openai_stream_server, reasoning_then_content, tool_calls

Engines = _engines.TestEngines


async def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def words(text: str) -> list[str]:
    """The text's words (a text view writes random text's line breaks its own way)."""
    return text.split()


class AppPage:
    """The composed core and a chat page over it, as the app wires them."""

    def __init__(self, app: AppServices, page: ChatPage, errors: list[Any], loop: asyncio.AbstractEventLoop) -> None:
        self.app, self.page, self.errors, self.loop = app, page, errors, loop

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def widgets(self) -> list[MessageWidget]:
        return list(self.page.message_widgets.values())


@pytest.fixture
def app_page(qtbot: Any, qasync_loop: asyncio.AbstractEventLoop) -> Iterator[AppPage]:
    app = build_app_services(build_services())
    bridge = AsyncBridge()
    errors: list[Any] = []
    bridge.error_occurred.connect(errors.append)
    page = ChatPage(app.chat, bridge, load_options=app.load_options, tools=lambda: (app.tool_servers, app.tools))
    qtbot.addWidget(page)
    page.resize(1000, 800)
    page.show()
    try:
        yield AppPage(app, page, errors, qasync_loop)
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(app.aclose())


def _conversation(env: AppPage, max_tokens: int, seed: int = 1, **settings: Any) -> int:
    conv_id = env.page.new_conversation()
    env.app.chat.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=max_tokens, seed=seed), **settings)
    env.page.open_conversation(conv_id)
    return conv_id


@pytest.mark.engine
def test_r1_thinking_streams_live_in_the_app_and_stop_keeps_it(app_page: AppPage, test_engines: Engines,
                                                               r1_model: Path) -> None:  # noqa: F811
    env, page = app_page, app_page.page
    env.app.chat.set_model(r1_model)
    env.app.chat.set_plan([cpu_spec(test_engines)])
    _conversation(env, 600)
    live: list[tuple[str, bool, str, str]] = []

    def on_delta(event: object) -> None:
        if isinstance(event, MessageDelta) and not live:
            reply = page.message_widgets.get(event.message_id)
            if reply is not None and reply.thinking_block is not None and reply.counter.isVisibleTo(page):
                page._flush_renders()
                block = reply.thinking_block
                live.append((block.toggle.text(), block.expanded, reply.counter.text(), block.view.toPlainText()))

    env.app.chat.events.subscribe(on_delta)
    handle = page.send_text("Hello")
    assert handle is not None
    env.run(handle.wait())
    # While it thought: the block open and growing, its header counting, the counter under the reply.
    ((header, expanded, counter, shown),) = live
    assert header.startswith("Thinking…") and "tokens" in header and expanded
    assert counter.startswith("Generating…") and shown.strip()
    _user, reply = env.widgets()
    block = reply.thinking_block
    assert block is not None and reply.message.status == COMPLETE and reply.text == ""
    assert block.text.strip() == reply.message.thinking and words(block.view.toPlainText()) == words(block.text)
    # A reply that is only thinking stays open; its header says how long and how much.
    assert block.toggle.text().startswith("Thought for ") and block.toggle.text().endswith("· 600 tokens")
    assert block.expanded
    stats = reply.stats.text()
    assert "TTFT" in stats and "thought 600 tokens" in stats and "stopped at the output limit (600 tokens)" in stats
    assert reply.counter.isHidden()
    block.copy()
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == reply.message.thinking
    assert not env.errors and page.notice.isHidden()

    # Stop in a long think keeps what arrived; nothing blames the engine.
    _conversation(env, 3000)
    handle = page.send_text("Think for a long time")
    assert handle is not None

    async def stop_when_thinking() -> None:
        await wait_until(lambda: any(w.thinking_block is not None and len(w.thinking_text) > 40
                                     for w in env.widgets()))
        page.stop()
        await handle.wait()

    env.run(stop_when_thinking())
    reply = env.widgets()[-1]
    assert reply.message.status == STOPPED and reply.message.thinking and reply.thinking_block is not None
    assert words(reply.thinking_block.view.toPlainText()) == words(reply.message.thinking)
    assert reply.stats.text().startswith("Stopped.") and "TTFT" in reply.stats.text()
    assert not env.errors and page.notice.isHidden() and "ready" in page.engine_state.text()


@pytest.mark.engine
def test_thinking_controls_follow_the_template_and_reach_the_engine(app_page: AppPage, test_engines: Engines,
                                                                   r1_model: Path, test_model: Path) -> None:  # noqa: F811
    env, page = app_page, app_page.page
    panel = page.load_options_panel
    assert panel is not None
    env.app.chat.set_model(test_model)
    page.set_model(test_model)
    panel.activate(True)
    env.run(panel.ensure_template().wait())  # type: ignore[union-attr]
    form = panel._form
    assert not form.isRowVisible(panel.thinking) and not form.isRowVisible(panel.thinking_budget)  # plain ChatML
    env.app.chat.set_model(r1_model)
    page.set_model(r1_model)
    env.run(panel.ensure_template().wait())  # type: ignore[union-attr]
    assert form.isRowVisible(panel.thinking) and form.isRowVisible(panel.thinking_budget)
    assert not form.isRowVisible(panel.effort)  # the R1 template has no effort levels
    panel.thinking.setCurrentIndex(panel.thinking.findData("off"))  # saved for the model at once
    assert env.app.load_options.options(r1_model).thinking == "off"
    env.app.chat.set_plan([cpu_spec(test_engines)])
    _conversation(env, 8)
    handle = page.send_text("Hello")
    assert handle is not None
    env.run(handle.wait())
    reply = env.widgets()[-1]
    assert reply.message.status == COMPLETE and reply.text and reply.thinking_block is None  # an answer, no thinking
    panel.activate(False)


@pytest.mark.engine
def test_a_format_failure_says_so_and_retry_without_parsing_answers(app_page: AppPage, test_engines: Engines,
                                                                   functionary_model: Path) -> None:  # noqa: F811
    env, page = app_page, app_page.page
    env.app.chat.set_model(functionary_model)
    env.app.chat.set_plan([cpu_spec(test_engines)])
    conv_id = _conversation(env, 16)
    handle = page.send_text("Hello")
    assert handle is not None
    env.run(handle.wait())
    reply = env.widgets()[-1]
    assert reply.message.status == FORMAT_FAILED
    assert reply.notice is not None and reply.notice.isVisibleTo(page)
    assert reply.notice.text().startswith("The model's output did not match its chat format")
    button = reply.retry_unparsed_button
    assert button is not None and button.isVisibleTo(page)
    # No banner, nothing about the engine: the reply says what happened.
    assert not env.errors and page.notice.isHidden() and "failed" not in page.engine_state.text()
    engine = env.app.chat.running_engine
    assert engine is not None and engine.ready

    tip = button.toolTip()
    button.click()
    assert page.reply_handle is not None
    env.run(page.reply_handle.wait())
    msgs = env.app.chat.store.messages(conv_id)
    assert [m.status for m in msgs] == [COMPLETE, COMPLETE] and msgs[-1].content
    assert [w.message.id for w in env.widgets()] == [m.id for m in msgs]
    again = env.app.chat.running_engine
    assert again is not None and "--skip-chat-parsing" in again.server.command
    # Issue 48 item 7: a one-time retry, as its name says; the lasting switch is Load options' own
    # control, left as it was.
    assert "once" in tip and "Read thinking and tool calls" in tip
    assert env.app.load_options.options(functionary_model).chat_parsing is True
    panel = page.load_options_panel
    assert panel is not None and panel.chat_parsing.isChecked()
    assert panel.chat_parsing.text() == "Read thinking and tool calls (chat-format parsing)"
    assert not env.errors


@pytest.mark.engine
def test_a_json_schema_reply_is_shown_indented_and_checked(app_page: AppPage, test_engines: Engines,
                                                          r1_model: Path) -> None:  # noqa: F811
    env, page = app_page, app_page.page
    env.app.chat.set_model(r1_model)
    env.app.chat.set_plan([cpu_spec(test_engines)])
    schema = {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["city", "n"], "additionalProperties": False}
    conv_id = _conversation(env, 300, seed=2, thinking=ThinkingSettings(enabled=False))
    # The reply format as the user sets it in the conversation's settings.
    panel = page.settings_panel
    panel.output_mode.setCurrentIndex(panel.output_mode.findData(OUTPUT_SCHEMA))
    panel.schema.setPlainText("{not json")
    assert panel.schema_problem.text().startswith("The schema is not valid JSON")
    panel.schema.setPlainText(json.dumps(schema))
    assert panel.schema_problem.text() == ""
    conv = env.app.chat.store.conversation(conv_id)
    assert conv is not None and conv.structured_output == StructuredOutput(OUTPUT_SCHEMA, json.dumps(schema))
    handle = page.send_text("Where?")
    assert handle is not None
    env.run(handle.wait())
    reply = env.widgets()[-1]
    assert reply.message.status == COMPLETE
    (code,) = reply.blocks
    assert isinstance(code, CodeBlock) and code.lang.text() == "json"
    value = json.loads(reply.message.content)
    assert code.code.text() == json.dumps(value, indent=2, ensure_ascii=False)
    assert reply.check is not None and reply.check.text() == "✓ Valid JSON that follows the schema."
    assert not env.errors


def _tool_servers(env: AppPage, entries: dict[str, Any]) -> list[McpServerConfig]:
    """Servers added through the Tools panel, as a user imports an mcpServers JSON."""
    panel = env.page.show_tools(True)
    assert panel is not None
    added = panel.import_json(json.dumps({"mcpServers": entries}))
    shown = {panel.servers.item(i).data(Qt.ItemDataRole.UserRole): panel.servers.item(i).checkState()
             for i in range(panel.servers.count())}
    assert all(shown[name] == Qt.CheckState.Checked for name in entries)  # on for chats once added
    assert panel.report.text() == "Imported: " + ", ".join(entries)
    return added


def test_a_tool_round_trip_in_the_app_with_approval_denial_crash_and_hang(app_page: AppPage, qtbot: Any) -> None:
    """The model (a stream in llama-server's exact format) calls add, echo, crash, hang in turn; the
    user allows, denies, allows, allows; each call is shown with its arguments, each result folded;
    the crash and the hang are reported in the conversation; the model answers at the end."""
    env, page = app_page, app_page.page
    _tool_servers(env, {"tools": stdio_entry(timeout=1.5)})
    panel = page.tools_panel
    assert panel is not None
    env.run(panel.check().wait())
    assert panel.report.text().startswith("tools: add, echo, fail, crash, hang")
    scripts = [tool_calls([("add", '{"a": 2, "b": 3}')]), tool_calls([("echo", '{"text": "hi"}')]),
               tool_calls([("crash", "{}")]), tool_calls([("hang", "{}")]), reasoning_then_content(2, 3)]
    answers = iter(["allow_once", "deny", "always", "allow_once"])
    asked: list[tuple[str, str, str]] = []

    with openai_stream_server(*scripts) as server:
        env.app.chat.set_remote(Endpoint(env.app.local_http, server.url))
        conv_id = _conversation(env, 200)
        handle = page.send_text("Use your tools")
        assert handle is not None

        async def answer_each() -> None:
            while handle.is_running:
                for message_id, call_id in page.pending_approvals:
                    widget = page.message_widgets[message_id]
                    box = widget.tool_boxes[call_id]
                    if not box.asking:
                        await asyncio.sleep(0.02)
                        continue
                    asked.append((box.record.name, box.arguments.text(), box.question.text()))
                    button = {"allow_once": box.allow_button, "deny": box.deny_button,
                              "always": box.always_button}[next(answers)]
                    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
                await asyncio.sleep(0.02)

        env.run(answer_each())
        requests = server.requests
    assert handle.error is None, handle.error
    assert [name for name, _args, _q in asked] == ["add", "echo", "crash", "hang"]
    assert json.loads(asked[0][1]) == {"a": 2, "b": 3} and asked[0][2].startswith("Run add of the tool server tools?")
    widgets = env.widgets()
    assert [w.message.role for w in widgets] == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                                                 "assistant", "tool", "assistant"]
    results = [w.result_view for w in widgets if w.result_view is not None]
    assert all(isinstance(r, ToolResultView) and not r.view.isVisibleTo(page) for r in results)  # folded
    heads = [r.toggle.text() for r in results if r is not None]
    assert heads[0] == "Result of add (tools)"
    assert heads[1] == "echo was not run: you denied it"
    assert heads[2] == "crash failed: The tool server 'tools' stopped during the call of 'crash'."
    assert heads[3].startswith("hang failed: The tool '") and "did not finish within 1.5 s" in heads[3]
    first = results[0]
    assert first is not None
    first.toggle.click()
    assert first.view.isVisibleTo(page) and first.view.toPlainText() == "5"
    states = [box.state.text() for w in widgets for box in w.tool_boxes.values()]
    assert states[0].startswith("done in") and states[1:] == ["denied", "failed", "failed"]
    final = widgets[-1]
    assert final.message.status == COMPLETE and final.text == "c0 c1 c2 " and final.thinking_block is not None
    assert env.app.tool_servers.always_allowed() == {"tools": ["crash"]}  # "Always allow this tool", kept
    assert len(requests) == 5 and not env.errors and not page.pending_approvals
    assert env.app.chat.store.count_messages(conv_id) == 10


def test_stop_while_a_tool_waits_for_approval_or_runs(app_page: AppPage) -> None:
    env, page = app_page, app_page.page
    _tool_servers(env, {"tools": stdio_entry(only=["hang"])})
    hang = tool_calls([("hang", "{}")])
    with openai_stream_server(hang, hang, reasoning_then_content(0, 2)) as server:
        env.app.chat.set_remote(Endpoint(env.app.local_http, server.url))
        _conversation(env, 50)
        handle = page.send_text("hang")
        assert handle is not None

        async def stop_while_asked() -> None:
            await wait_until(lambda: bool(page.pending_approvals))
            page.stop()
            await handle.wait()

        env.run(stop_while_asked())
        assert handle.was_cancelled and not page.pending_approvals
        reply = env.widgets()[1]
        (box,) = reply.tool_boxes.values()
        # Stop is not a failure: the call's header said "failed" (issue 48), and so does no header here.
        assert not box.asking and box.state.text() == "stopped"
        assert "failed" not in page.engine_state.text()

        handle = page.send_text("hang again")
        assert handle is not None

        async def stop_while_running() -> None:
            await wait_until(lambda: bool(page.pending_approvals))
            message_id, call_id = page.pending_approvals[0]
            page.answer_tool_call(message_id, call_id, Decision.ALLOW_ONCE.value)
            await wait_until(lambda: page.message_widgets[message_id].tool_boxes[call_id].state.text() == "running…")
            await wait_until(lambda: hang_calls(env.app.base.paths.log_dir) == 1)  # the call runs on the server
            page.stop()
            await handle.wait()

        env.run(stop_while_running())
        assert handle.was_cancelled
        tool = env.widgets()[-1]
        assert tool.result_view is not None and tool.result_view.toggle.text() == "hang was stopped"
        (box,) = env.widgets()[-2].tool_boxes.values()
        assert box.state.text() == "stopped"
    assert not env.errors


def test_tool_servers_are_added_imported_switched_and_removed_in_the_panel(app_page: AppPage) -> None:
    env, page = app_page, app_page.page
    panel = page.show_tools(True)
    assert panel is not None and page.tools_toggle.isChecked()
    assert panel.servers.count() == 0 and "No tool servers yet" in panel.report.text()
    (config,) = parse_mcp_servers({"mcpServers": {"files": {"url": "http://127.0.0.1:9/mcp",
                                                            "headers": {"Authorization": "Bearer sk-secret"}}}})
    panel.add(config)
    _tool_servers(env, {"tools": stdio_entry(only=["add"])})
    assert [panel.servers.item(i).text() for i in range(panel.servers.count())] == [
        "files  (address: http://127.0.0.1:9/mcp)", f"tools  (command: {stdio_entry()['command']})"]
    stored = (env.app.base.paths.config_dir / "mcp_servers.json").read_text()
    assert "sk-secret" not in stored  # the header's value is in the key store
    panel.servers.item(0).setCheckState(Qt.CheckState.Unchecked)
    assert [s.enabled for s in env.app.tool_servers.servers()] == [False, True]
    env.run(panel.check().wait())
    assert panel.report.text() == "tools: add"
    panel.servers.setCurrentRow(0)
    panel.remove_current()
    assert [s.name for s in env.app.tool_servers.servers()] == ["tools"] and panel.servers.count() == 1
    page.show_tools(False)
    assert panel.isHidden() and not page.tools_toggle.isChecked()


def test_a_reply_that_goes_silent_while_the_engine_works_says_so(app_page: AppPage) -> None:
    from tests.support.openai_stream_server import busy_silence

    env, page = app_page, app_page.page
    chat = env.app.chat
    chat.streamer.watch_interval, chat.streamer.silence_notice_s = 0.05, 0.5  # 1 s and 15 s in the app
    seen: list[tuple[str, str]] = []
    # A client of its own, closed before the server stops: the server's threads wait on the
    # connections the progress requests (GET /slots) keep alive.
    http = httpx.AsyncClient(trust_env=False)
    with openai_stream_server(busy_silence(1.5, then_content=3)) as server:
        chat.set_remote(Endpoint(http, server.url))
        _conversation(env, 50)
        handle = page.send_text("hello")
        assert handle is not None

        async def watch() -> None:
            while handle.is_running:
                reply = env.widgets()[-1] if env.widgets() else None
                if reply is not None and reply.notice is not None and reply.notice.isVisibleTo(page) and not seen:
                    seen.append((reply.notice.text(), reply.counter.text()))
                await asyncio.sleep(0.02)

        env.run(watch())
        env.run(http.aclose())
    ((notice, counter),) = seen
    assert notice.startswith("The engine has generated ") and "but nothing has arrived for" in notice
    assert counter.startswith("Generating… ") and not counter.startswith("Generating… 0 ")
    reply = env.widgets()[-1]
    assert reply.message.status == COMPLETE and reply.text == "c0 c1 c2 "
    assert reply.notice is not None and reply.notice.isHidden() and reply.counter.isHidden()
