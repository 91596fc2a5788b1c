"""Screenshots of the chat's thinking, tool calls and JSON replies in the real app, on an X display.

The app is the real one (``compose``) with a real MCP tool server (the SDK's, ``weather`` only); the
model's side is the loopback server streaming llama-server's exact deltas, scripted with readable
words (a random-weight model's words are not), so the picture shows what a reasoning model that
calls tools looks like. Saves ``chat-approval``, ``chat-tools`` and ``chat-json`` PNGs.

``python -m tests.support.chat_shot OUT_DIR [theme]`` with ``DISPLAY`` set and ``QT_QPA_PLATFORM=xcb``
(``tests/chat/test_chat_shot.py`` runs it under Xvfb; the README's pictures are its output).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.support.mcp_servers import stdio_entry
from tests.support.openai_stream_server import DONE, ChunkMaker, Part, Pause, Script, openai_stream_server


def _words(text: str) -> list[str]:
    out = []
    for i, word in enumerate(text.split(" ")):
        out.append(word if i == 0 else " " + word)
    return out


def thinking_then(thinking: str, *, answer: str = "", call: tuple[str, str] | None = None) -> Script:
    """A reasoning model's reply: its thinking, then an answer or a tool call, word by word."""
    m = ChunkMaker()
    parts: list[Part] = [m.role()]
    for w in _words(thinking):  # a model thinking at ~25 words a second
        parts += [m.chunk({"reasoning_content": w}), Pause(0.04)]
    if call is not None:
        name, arguments = call
        parts.append(m.chunk({"tool_calls": [{"index": 0, "id": "call0weather".ljust(32, "0"), "type": "function",
                                              "function": {"name": name, "arguments": arguments}}]}))
        parts.append(m.final("tool_calls", prompt_n=212, predicted_n=len(_words(thinking)) + 12))
    else:
        for w in _words(answer):
            parts += [m.chunk({"content": w}), Pause(0.02)]
        parts.append(m.final("stop", prompt_n=268, predicted_n=len(_words(thinking)) + len(_words(answer))))
    parts.append(DONE)
    return Script(parts, tokens=60)


SCRIPTS = [
    thinking_then("The user wants the weather in Paris. I have a weather tool that takes a city, and Paris is one "
                  "of the cities it knows, so I will call it instead of guessing.",
                  call=("weather", '{"city": "Paris"}')),
    thinking_then("The tool says it is sunny and 21 °C. That answers the question; I can add a short suggestion.",
                  answer="It is **sunny in Paris**, 21 °C. A good afternoon for a walk along the Seine."),
    thinking_then("They want JSON with the city and the temperature as a number.",
                  answer='{"city": "Paris", "temperature_c": 21, "sky": "sunny"}'),
]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"},
                                           "sky": {"enum": ["sunny", "cloudy", "rain"]}},
          "required": ["city", "temperature_c"]}


def main() -> int:
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from strata_gui.app import UiHooks, apply_theme, compose
    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.chat import OUTPUT_SCHEMA, StructuredOutput
    from strata_gui.core.config.services import build_services
    from strata_gui.ui.bridge import AsyncBridge
    from strata_gui.ui.event_loop import new_event_loop

    out = Path(sys.argv[1])
    theme = sys.argv[2] if len(sys.argv) > 2 else "light"
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication([sys.argv[0]])
    app.setQuitOnLastWindowClosed(False)
    apply_theme(app, theme)
    loop = new_event_loop(app)
    services = build_app_services(build_services())
    bridge = AsyncBridge()
    ui = compose(services, bridge, app, UiHooks(open_path=lambda _p: None, choose_folder=lambda: None,
                                                    choose_model=lambda: None, save_path=lambda _n: None))
    window, chat = ui.window, ui.pages.chat
    window.resize(1280, 860)
    window.move(0, 0)
    window.show()

    def shoot(name: str) -> None:
        geo = window.frameGeometry()
        path = out / f"{name}-{theme}.png"
        QGuiApplication.primaryScreen().grabWindow(0, 0, 0, geo.width(), geo.height()).save(str(path))
        print(path, flush=True)

    async def scenario(url: str) -> None:
        services.tool_servers.import_json(json.dumps({"mcpServers": {"tools": stdio_entry(only=["weather"])}}))
        endpoint = services.remote.add("reasoning-model", url, model="scripted")
        window.show_page(chat)
        chat.refresh_run_on()
        chat.use_remote(endpoint.id)
        chat.new_conversation()
        handle = chat.send_text("What's the weather in Paris?")
        assert handle is not None
        while not chat.pending_approvals:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        shoot("chat-approval")
        message_id, call_id = chat.pending_approvals[0]
        chat.answer_tool_call(message_id, call_id, "allow_once")
        await handle.wait()
        await asyncio.sleep(0.3)
        for widget in chat.message_widgets.values():  # open the tool's result, as a reader would
            if widget.result_view is not None:
                widget.result_view.set_expanded(True)
        answer = list(chat.message_widgets.values())[-1]  # and the answer's thinking
        if answer.thinking_block is not None:
            answer.thinking_block.set_expanded(True)
        await asyncio.sleep(0.6)
        shoot("chat-tools")

        conv = chat.new_conversation()
        services.chat.store.update_settings(conv, structured_output=StructuredOutput(OUTPUT_SCHEMA,
                                                                                     json.dumps(SCHEMA)))
        chat.open_conversation(conv)
        chat.settings_toggle.setChecked(True)
        handle = chat.send_text("The weather in Paris as JSON, please.")
        assert handle is not None
        await handle.wait()
        await asyncio.sleep(0.8)
        shoot("chat-json")
        await bridge.shutdown()
        await services.aclose()
        window.close()

    with openai_stream_server(*SCRIPTS) as server, loop:
        loop.run_until_complete(scenario(server.url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
