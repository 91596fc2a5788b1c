"""Hostile tool calls and tool servers (issue 47) in the app's chat: real widgets offscreen, the composed
core, real MCP servers (the SDK's, over stdio), and the model's stream from the loopback server.
"""

from __future__ import annotations

from strata_gui.core.chat import COMPLETE
from strata_gui.core.runtime import MAX_ARGUMENT_DEPTH
from tests.chat.test_chat_page_reasoning import AppPage, _conversation, _tool_servers, app_page  # noqa: F401
from tests.chat.test_hostile_tool_calls import NESTED
from tests.chat.test_tool_loop import Endpoint
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
