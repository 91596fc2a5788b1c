"""Hostile tool calls and tool servers (issue 47) in the app's chat: real widgets offscreen, the composed
core, real MCP servers (the SDK's, over stdio), and the model's stream from the loopback server.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from strata_gui.core.chat import COMPLETE
from strata_gui.core.runtime import MAX_ARGUMENT_DEPTH
from tests.chat.test_chat_page_reasoning import AppPage, _conversation, _tool_servers, app_page  # noqa: F401
from tests.chat.test_hostile_tool_calls import NESTED
from tests.chat.test_tool_loop import Endpoint
from tests.support.hostile_mcp_server import entry
from tests.support.mcp_servers import stdio_entry
from tests.support.openai_stream_server import openai_stream_server, reasoning_then_content, tool_calls


def test_nested_arguments_are_refused_in_the_conversation_and_the_reply_goes_on(app_page: AppPage) -> None:  # noqa: F811
    env, page = app_page, app_page.page
    _tool_servers(env, {"tools": stdio_entry(only=["echo"])})
    arguments = '{"text": ' + NESTED + "}"
    with openai_stream_server(tool_calls([("echo", arguments)]), reasoning_then_content(0, 3)) as server:
        env.app.chat.set_remote(Endpoint(env.app.local_http, server.url))
        conv_id = _conversation(env, 50)
        handle = page.send_text("go")
        assert handle is not None
        env.run(handle.wait())
    assert handle.error is None and not env.errors and not page.pending_approvals  # nobody is asked
    call_reply, tool, answer = env.widgets()[1:]
    (box,) = call_reply.tool_boxes.values()
    assert box.state.text() == "failed" and box.arguments.text().startswith('{"text": [[[[')
    assert len(box.arguments.text()) < 2100  # shown as written, cut
    assert tool.result_view is not None
    assert tool.result_view.toggle.text() == (f"echo failed: The tool arguments are nested more than "
                                              f"{MAX_ARGUMENT_DEPTH} levels deep; they were not used.")
    assert answer.message.status == COMPLETE and answer.text == "c0 c1 c2 "
    assert env.app.chat.store.count_messages(conv_id) == 4


def test_escapes_and_markup_in_tool_names_and_results_are_shown_as_text(app_page: AppPage) -> None:  # noqa: F811
    """The question and the result show what the server sent, as text: control characters visible, a
    name holding HTML not drawn as HTML, a bidi override not reordering the question."""
    env, page = app_page, app_page.page
    wipe = "<b>wipe</b>\x1b[8m\u202e"
    _tool_servers(env, {"h": entry(tools=["peek", wipe], suffix="\x1b[8m\u202e")})
    panel = page.tools_panel
    assert panel is not None
    env.run(panel.check().wait())
    assert panel.report.text() == "h: peek, <b>wipe</b>\\x1b[8m\\u202e"  # the server's own names, as text
    assert panel.report.textFormat() == Qt.TextFormat.PlainText
    scripts = [tool_calls([("peek", "{}")]), tool_calls([("b_wipe_b_8m", "{}")]), reasoning_then_content(0, 1)]
    questions: list[tuple[str, str]] = []
    with openai_stream_server(*scripts) as server:
        env.app.chat.set_remote(Endpoint(env.app.local_http, server.url))
        _conversation(env, 50)
        handle = page.send_text("go")
        assert handle is not None

        async def answer_each() -> None:
            while handle.is_running:
                for message_id, call_id in page.pending_approvals:
                    box = page.message_widgets[message_id].tool_boxes[call_id]
                    if box.asking:
                        questions.append((box.title.text(), box.question.text()))
                        page.answer_tool_call(message_id, call_id, "allow_once")
                await asyncio.sleep(0.02)

        env.run(answer_each())
    assert handle.error is None and not env.errors
    shown_wipe = "<b>wipe</b>\\x1b[8m\\u202e"
    assert questions[1] == ("Tool call: b_wipe_b_8m", f"Run b_wipe_b_8m of the tool server h?\nEcho for {shown_wipe}")
    for box in (b for w in env.widgets() for b in w.tool_boxes.values()):
        assert box.title.textFormat() == box.question.textFormat() == Qt.TextFormat.PlainText
    results = [w.result_view for w in env.widgets() if w.result_view is not None]
    assert [r.toggle.text() for r in results] == ["Result of peek (h)", "Result of b_wipe_b_8m (h)"]
    assert results[0].view.toPlainText() == "peek ran: \\x1b[8m\\u202e"
    results[0].copy()  # Copy takes what the server sent
    assert QGuiApplication.clipboard().text() == "peek ran: \x1b[8m\u202e"
