"""ChatPage with real widgets (offscreen), a real qasync loop, SQLite and the real CPU engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication

from strata_gui.core.chat.records import COMPLETE, STOPPED, STREAMING, Message
from strata_gui.core.chat.service import (
    ChatEvent,
    ChatService,
    MessageDelta,
    MessageUpdated,
)
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.runtime.client import ReplyStats, SamplingParams
from strata_gui.core.serve.service import ServeService
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.chat.markdown import split_segments
from strata_gui.ui.chat.message_widget import CodeBlock, MessageWidget, TextBlock
from strata_gui.ui.pages.chat_page import BACKFILL_DELAY_MS, FIRST_SCREEN, FRAME_S, PAGE_SIZE, ChatPage
from tests.chat.conftest import until
from tests.runtime.conftest import cpu_spec, rocm_without_libraries
from tests.support import engines as _engines
from tests.support.pool import library_router, real_pool
from tests.support.settings import settings_service

Engines = _engines.TestEngines


async def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll inside one loop run (qasync callbacks must not fire between separate runs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
def page_env(qtbot, qasync_loop: asyncio.AbstractEventLoop, test_model: Path) -> Iterator[tuple]:  # type: ignore[no-untyped-def]
    paths = AppPaths.from_environment()
    paths.ensure()
    http = httpx.AsyncClient(trust_env=False)
    service = ChatService(ConversationStore(paths.database_file).open(), real_pool(http), http,
                          settings_service(context_size=1024, last_model=str(test_model)))
    bridge = AsyncBridge()
    errors: list = []
    bridge.error_occurred.connect(errors.append)
    page = ChatPage(service, bridge)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    try:
        yield page, service, qasync_loop, errors
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(service.aclose())
        qasync_loop.run_until_complete(service.pool.aclose())
        qasync_loop.run_until_complete(http.aclose())


def _short(service: ChatService, conv_id: int, max_tokens: int) -> None:
    service.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=max_tokens, seed=5))


@pytest.mark.engine
def test_the_context_meter_counts_the_prompt_and_the_reply_while_it_streams(page_env, test_engines: Engines) -> None:  # type: ignore[no-untyped-def]
    """Issue 48 item 13: the meter read 0 during a stream (a new conversation) and left the prompt out
    until the reply had ended. While the reply streams it reads the prompt the engine holds and the
    tokens generated so far, and ends on the figure the finished reply measured."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    conv_id = page.new_conversation()
    service.store.update_settings(conv_id, system_prompt="You answer questions about rivers. " * 20,
                                  sampling=SamplingParams(max_tokens=40, seed=5))
    page.open_conversation(conv_id)
    assert page.context_meter.format() == "Context: 0 / 1,024 tokens"
    live: list[tuple[int, int]] = []  # (the meter's figure, the tokens generated) as each piece showed

    def on_event(event: object) -> None:  # after the page's own handler (subscribed before)
        if isinstance(event, MessageDelta) and not event.complete:
            live.append((page.context_meter.value(), event.tokens))

    service.events.subscribe(on_event)
    loop.run_until_complete(page.send_text("Name a long river.").wait())
    assert not errors
    reply = list(page.message_widgets.values())[-1].message
    assert reply.status == COMPLETE
    prompt = (reply.stats.prompt_n or 0) + (reply.stats.cache_n or 0)
    assert prompt > 100  # the system prompt is in it
    assert live and all(used >= prompt + tokens for used, tokens in live)  # the prompt, then each token
    assert [used for used, _t in live] == sorted(used for used, _t in live)
    final = service.context_used(conv_id)
    assert final >= live[-1][0] and page.context_meter.format() == f"Context: {final:,} / 1,024 tokens"


@pytest.mark.engine
def test_enter_sends_and_the_reply_streams_with_stats(page_env, test_engines: Engines, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    page.on_shown()
    assert page.stack.currentWidget() is page.empty_state
    assert "No model" not in page.model_label.text()
    conv_id = page.new_conversation()
    _short(service, conv_id, 24)
    page.open_conversation(conv_id)
    qtbot.keyClicks(page.input, "first line")
    qtbot.keyClick(page.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(page.input, "second line")
    assert page.input.toPlainText() == "first line\nsecond line"
    qtbot.keyClick(page.input, Qt.Key.Key_Return)
    assert page.is_busy
    handle = page.reply_handle
    assert handle is not None
    seen: list[tuple[str, bool, str]] = []

    async def shown_then_done() -> None:
        # The text leaves the input as it shows in the conversation (once the request is sent).
        await until(lambda: bool(page.message_widgets))
        seen.append((page.input.toPlainText(), page.stop_button.isVisibleTo(page),
                     next(iter(page.message_widgets.values())).text))
        await handle.wait()

    loop.run_until_complete(shown_then_done())
    assert seen == [("", True, "first line\nsecond line")]
    assert not errors
    widgets = list(page.message_widgets.values())
    assert [w.message.role for w in widgets] == ["user", "assistant"]
    reply = widgets[1]
    assert reply.message.status == COMPLETE and reply.text and reply.blocks
    assert "24 tokens" in reply.stats.text() and "decode" in reply.stats.text() and "CPU" in reply.stats.text()
    assert "ready" in page.engine_state.text()
    assert page.context_meter.value() > 24 and "/ 1,024 tokens" in page.context_meter.format()
    assert page.conversation_list.item(0).text() == "first line second line"
    assert reply.regenerate_button.isVisibleTo(page) and page.send_button.isVisibleTo(page)

    # Regenerate replaces the reply; Edit & resend rewrites the question and answers again.
    first_reply_id = reply.message.id
    loop.run_until_complete(page.regenerate().wait())
    ids = sorted(page.message_widgets)
    assert len(ids) == 2 and ids[1] != first_reply_id
    page.begin_edit(ids[0])
    assert page.input.toPlainText() == "first line\nsecond line" and page.edit_hint.isVisibleTo(page)
    page.input.setPlainText("edited question")
    qtbot.keyClick(page.input, Qt.Key.Key_Return)
    loop.run_until_complete(page.reply_handle.wait())
    msgs = service.store.messages(conv_id)
    assert [(m.role, m.status) for m in msgs] == [("user", COMPLETE), ("assistant", COMPLETE)]
    assert msgs[0].content == "edited question" and page.message_widgets[msgs[0].id].text == "edited question"
    assert sorted(page.message_widgets) == [m.id for m in msgs]


def _looks(page: ChatPage) -> list[tuple[object, ...]]:
    """What the user sees of each message bubble."""
    return [(w.objectName(), w.role.text(), w.text, w.stats.text(), w.edit_button.isVisibleTo(page),
             w.regenerate_button.isVisibleTo(page), w.copy_button.isEnabled(),
             [(type(b).__name__, b.toHtml() if isinstance(b, TextBlock) else b.code.text(), b.height())
              for b in w.blocks])
            for w in page.message_widgets.values()]


@pytest.mark.engine
def test_bubbles_prepared_ahead_look_like_bubbles_built_for_the_conversation(  # type: ignore[no-untyped-def]
        page_env, test_engines: Engines) -> None:
    """While idle the page prepares a bubble per role, so a send only fills them in (time to first
    token): the conversation looks the same as when it is opened again."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    page.on_shown()
    conv_id = page.new_conversation()
    _short(service, conv_id, 12)
    loop.run_until_complete(wait_until(lambda: page.spares_ready, timeout=5.0))
    handle = page.send_text("A **bold** question, long enough to wrap over more than one line of the bubble "
                            "when the page is as wide as this one, and then some more words.")
    assert handle is not None
    loop.run_until_complete(handle.wait())
    assert not errors and not page.spares_ready  # the send took them
    loop.run_until_complete(asyncio.sleep(0.1))  # laid out and painted
    sent = _looks(page)
    page.open_conversation(conv_id)
    loop.run_until_complete(asyncio.sleep(0.1))
    assert _looks(page) == sent
    assert [row[1] for row in sent] == ["You", "Assistant"] and sent[0][4] and sent[1][5]
    # And they are prepared again for the next message, once the reply is over.
    loop.run_until_complete(wait_until(lambda: page.spares_ready, timeout=5.0))


@pytest.mark.engine
def test_stop_keeps_partial_reply(page_env, test_engines: Engines) -> None:  # type: ignore[no-untyped-def]
    page, service, loop, _ = page_env
    service.set_plan([cpu_spec(test_engines)])
    conv_id = page.new_conversation()
    _short(service, conv_id, 900)
    handle = page.send_text("tell me a long story")

    async def scenario() -> None:
        # Enough pieces for a decode rate (fewer make none: MIN_RATE_PIECES).
        await wait_until(lambda: any(w.message.role == "assistant" and len(w.text) > 80
                                     for w in page.message_widgets.values()))
        page.stop()
        await handle.wait()

    loop.run_until_complete(scenario())
    assert handle.was_cancelled
    reply = next(w for w in page.message_widgets.values() if w.message.role == "assistant")
    assert reply.message.status == STOPPED and reply.text and "Stopped" in reply.stats.text()
    # Said once, with what was generated up to the Stop (the engine's final timings never came).
    footer = reply.stats.text().replace("\u2060", "").replace("\u00a0", " ")  # as read: the units are kept whole
    assert footer.count("Stopped") == 1 and "stopped" not in footer, footer
    n = reply.message.stats.predicted_n
    assert n is not None and n > 0 and f"{n} tokens" in footer and "tok/s" in footer and "CPU" in footer
    assert service.store.message(reply.message.id).content == reply.text


@pytest.mark.engine
def test_a_reply_waiting_for_its_engine_says_why_in_its_bubble(page_env, test_engines: Engines) -> None:  # type: ignore[no-untyped-def]
    """Another app holds the engine's only slot: the reply's bubble says it waits, and for what;
    once the slot is free the reply streams, and the line is gone before its first text."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    conv_id = page.new_conversation()
    _short(service, conv_id, 8)
    page.open_conversation(conv_id)
    seen_at_first_text: list[bool] = []

    def on_event(event: ChatEvent) -> None:
        if isinstance(event, MessageDelta) and event.text and not seen_at_first_text:
            widget = page.message_widgets.get(event.message_id)
            seen_at_first_text.append(widget is not None and widget.waiting is not None
                                      and widget.waiting.isVisibleTo(page))

    service.events.subscribe(on_event)

    async def scenario() -> MessageWidget:
        await service.ensure_engine()
        engine = service.running_engine
        assert engine is not None and engine.slots == 1
        lease = await service.pool.lease_now(engine, "api")  # another app's request, being answered
        assert lease is not None
        try:
            handle = page.send_text("Hello")
            assert handle is not None

            def waiting_reply() -> MessageWidget | None:
                return next((w for w in page.message_widgets.values() if w.message.role == "assistant"
                             and w.waiting is not None and w.waiting.isVisibleTo(page)), None)

            await wait_until(lambda: waiting_reply() is not None)
            reply = waiting_reply()
            assert reply is not None and reply.message.status == STREAMING and not reply.text
            assert reply.waiting is not None
            assert reply.waiting.text() == f"Waiting: 1 request ahead for {engine.model.name}"
        finally:
            lease.release()
        await handle.wait()
        return reply

    reply = loop.run_until_complete(scenario())
    assert not errors
    assert reply.message.status == COMPLETE and reply.text
    assert reply.waiting is not None and not reply.waiting.isVisibleTo(page) and page.waiting_text == ""
    assert seen_at_first_text == [False]  # gone once the request was served, before any text


@pytest.mark.engine
def test_the_chat_page_and_an_openai_client_stream_from_one_model_at_the_same_time(  # type: ignore[no-untyped-def]
        page_env, test_engines: Engines, test_model: Path) -> None:
    """The chat page streams a long reply; another program asks the same model through the local API
    with the real OpenAI client, and its reply streams while the page's still grows (two slots)."""
    page, service, loop, errors = page_env
    service.settings_service.override(parallel_slots=2, serve_port=0)
    service.set_plan([cpu_spec(test_engines)])
    serve = ServeService(service.settings_service, FileSecretStore(AppPaths.from_environment().config_dir / "s.json"),
                         library_router(service))
    conv_id = page.new_conversation()
    _short(service, conv_id, 1000)
    page.open_conversation(conv_id)

    def reply_text() -> str:
        return next((w.text for w in page.message_widgets.values() if w.message.role == "assistant"), "")

    async def scenario() -> tuple[int, int, list[str]]:
        url = await serve.start()
        try:
            handle = page.send_text("Tell me a long story")
            assert handle is not None
            await wait_until(lambda: len(reply_text()) > 20)
            api_text: list[str] = []
            shown_at_api_first = -1
            async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
                stream = await client.chat.completions.create(
                    model=test_model.stem, messages=[{"role": "user", "content": "Say hi"}], max_tokens=8, stream=True)
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        if shown_at_api_first < 0:
                            shown_at_api_first = len(reply_text())
                            assert handle.is_running  # the page's reply still streams
                        api_text.append(chunk.choices[0].delta.content)
            await handle.wait()
            return shown_at_api_first, len(reply_text()), api_text
        finally:
            await serve.stop()

    at_first, at_end, api_text = loop.run_until_complete(scenario())
    assert not errors and api_text
    assert 20 < at_first < at_end  # the page's reply kept growing after the other program's first token
    assert service.pool.starts == 1 and [e.slots for e in service.pool.engines()] == [2]


@pytest.mark.engine
def test_deleting_the_conversation_being_answered_stops_the_reply_first(page_env, test_engines: Engines) -> None:  # type: ignore[no-untyped-def]
    """It showed "Internal error in Strata: AssertionError" and the engine wrote on to the end."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    keep = page.new_conversation()
    conv_id = page.new_conversation()
    _short(service, conv_id, 900)
    handle = page.send_text("tell me a long story")

    async def scenario() -> None:
        await wait_until(lambda: any(w.message.role == "assistant" and len(w.text) > 20
                                     for w in page.message_widgets.values()))
        page.delete_conversation(conv_id)
        await handle.wait()
        await wait_until(lambda: service.store.conversation(conv_id) is None)

    loop.run_until_complete(scenario())
    assert handle.was_cancelled and not errors
    assert [c.id for c in service.store.conversations("")] == [keep]
    assert page.conversation_id is None and page.stack.currentWidget() is page.empty_state


@pytest.mark.engine
def test_a_conversation_opened_again_mid_reply_shows_the_reply_without_a_gap(page_env, test_engines: Engines) -> None:  # type: ignore[no-untyped-def]
    """Opened again, the reply was rebuilt from its last save (up to a second old) and the new text
    appended after it: words in between were missing until the reply ended."""
    page, service, loop, errors = page_env
    service.streamer.save_interval = 5.0  # a save long ago: the gap is as wide as it gets
    service.set_plan([cpu_spec(test_engines)])
    other = page.new_conversation()
    conv_id = page.new_conversation()
    _short(service, conv_id, 900)
    handle = page.send_text("tell me a long story")
    seen: list[str] = []
    running: list[bool] = []

    def reply_text() -> str:
        return next((w.text for w in page.message_widgets.values() if w.message.role == "assistant"), "")

    async def scenario() -> None:
        await wait_until(lambda: len(reply_text()) > 20)
        page.open_conversation(other)
        await asyncio.sleep(0.03)  # more of the reply arrives meanwhile
        page.open_conversation(conv_id)
        await asyncio.sleep(0.05)
        seen.append(reply_text())
        running.append(handle.is_running)
        await handle.wait()

    loop.run_until_complete(scenario())
    final = service.store.messages(conv_id)[-1].content
    assert running == [True]  # looked at while the reply was still being written
    assert not errors and len(seen[0]) > 20 and final.startswith(seen[0]), (seen[0][-60:], final[:200])


@pytest.mark.engine
def test_fallback_notice_and_retry_button(page_env, test_engines: Engines, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page, service, loop, errors = page_env
    service.set_plan([rocm_without_libraries(test_engines, tmp_path), cpu_spec(test_engines)])
    # The header follows the new plan at once: it announces the first engine.
    assert page.engine_state.text() == "Engine: ROCm (starts with your first message)"
    conv_id = page.new_conversation()
    _short(service, conv_id, 4)
    loop.run_until_complete(page.send_text("hi").wait())
    assert not errors
    assert page.notice.isVisibleTo(page)
    assert "library it needs was not found" in page.notice.text.text()
    assert page.notice.text.text().endswith("Continuing on CPU.")
    assert page.notice.details_button.isVisibleTo(page)
    assert page.retry_button.isVisibleTo(page) and page.retry_button.text() == "Retry ROCm"
    # The header no longer claims the announced engine: it names the one that answered.
    assert page.engine_state.text() == "● CPU engine ready, instead of ROCm (see the notice above)"
    assert len(page.message_widgets) == 2


def test_long_conversation_opens_one_page_at_a_time(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, _, _ = page_env
    conv = service.store.create_conversation("Long")
    service.store.add_messages(conv.id, [("user" if i % 2 == 0 else "assistant", f"message **{i}**")
                                         for i in range(5000)])
    page.on_shown()
    page.open_conversation(conv.id)
    # The newest screenful is built at once, the rest of the page above it over the next loop turns.
    assert len(page.message_widgets) == FIRST_SCREEN and page.earlier_button.isVisibleTo(page)
    qtbot.waitUntil(lambda: len(page.message_widgets) == PAGE_SIZE)
    order = [page.messages_layout.itemAt(i).widget() for i in range(1, PAGE_SIZE + 1)]
    assert [w.text for w in order] == [f"message **{i}**" for i in range(5000 - PAGE_SIZE, 5000)]
    page.load_earlier()
    assert len(page.message_widgets) == 2 * PAGE_SIZE
    order = [page.messages_layout.itemAt(i).widget() for i in range(1, 2 * PAGE_SIZE + 1)]
    assert [w.text for w in order][:2] == [f"message **{5000 - 2 * PAGE_SIZE}**",
                                          f"message **{5001 - 2 * PAGE_SIZE}**"]


def test_showing_earlier_messages_while_the_page_is_still_being_built(page_env, qtbot) -> None:  # type: ignore[no-untyped-def]
    page, service, _, _ = page_env
    conv = service.store.create_conversation("Long")
    service.store.add_messages(conv.id, [("user", f"message {i}") for i in range(500)])
    page.open_conversation(conv.id)
    page.load_earlier()  # the rest of the first page first, then the page before it, each once
    order = [page.messages_layout.itemAt(i).widget() for i in range(1, 2 * PAGE_SIZE + 1)]
    assert [w.text for w in order] == [f"message {i}" for i in range(500 - 2 * PAGE_SIZE, 500)]
    other = service.store.create_conversation("Other")
    service.store.add_messages(conv.id, [("user", "x")])
    page.open_conversation(conv.id)
    page.open_conversation(other.id)  # a half-built page is dropped, not finished into the next one
    # The dropped page's next step was due BACKFILL_DELAY_MS after it opened: a timer started
    # now with that delay fires after it.
    after_the_step: list[bool] = []
    QTimer.singleShot(BACKFILL_DELAY_MS, lambda: after_the_step.append(True))
    qtbot.waitUntil(lambda: bool(after_the_step))
    assert page.message_widgets == {}


def test_rename_delete_and_search(page_env) -> None:  # type: ignore[no-untyped-def]
    page, service, _, _ = page_env
    a = service.store.create_conversation("Alpha")
    b = service.store.create_conversation("Beta")
    service.store.add_message(b.id, "user", "about zebras")
    page.on_shown()
    assert page.conversation_list.count() == 2
    page.rename_conversation(a.id, "Gamma")
    # A title that looks like HTML reads as written, in the list and in its tooltip.
    odd = "<h1>BIG</h1> why does <br> break my page?"
    page.rename_conversation(b.id, odd)
    [item] = [page.conversation_list.item(i) for i in range(page.conversation_list.count())
              if page.conversation_list.item(i).text() == odd]
    from PySide6.QtGui import QTextDocument

    shown = QTextDocument()
    shown.setHtml(item.toolTip())
    assert shown.toPlainText() == odd
    page.rename_conversation(b.id, "Beta")
    page.search.setText("zebra")
    # A hit shows its title, and under it the passage that matched (full-text search).
    assert [page.conversation_list.item(i).text().split("\n")[0]
            for i in range(page.conversation_list.count())] == ["Beta"]
    page.search.clear()
    page.open_conversation(b.id)
    page.delete_conversation(b.id)
    assert [page.conversation_list.item(i).text() for i in range(page.conversation_list.count())] == ["Gamma"]
    assert page.stack.currentWidget() is page.empty_state


def test_settings_panel_saves_per_conversation(page_env) -> None:  # type: ignore[no-untyped-def]
    page, service, _, _ = page_env
    conv_id = page.new_conversation()
    page.settings_panel.temperature.setValue(0.7)
    page.settings_panel.top_k.setValue(40)
    page.settings_panel.system_prompt.setPlainText("Be kind.")
    conv = service.store.conversation(conv_id)
    assert conv.sampling.temperature == pytest.approx(0.7) and conv.sampling.top_k == 40
    assert conv.sampling.top_p is None and conv.system_prompt == "Be kind."


def test_markdown_code_blocks_render_and_copy(qtbot) -> None:  # type: ignore[no-untyped-def]
    text = "Here:\n\n```python\nprint('hi')\n```\n\nDone *now*."
    assert [s.kind for s in split_segments(text)] == ["text", "code", "text"]
    msg = Message(1, 1, "assistant", text, COMPLETE, 0.0, stats=ReplyStats(predicted_n=5, finish_reason="stop"))
    w = MessageWidget(msg)
    qtbot.addWidget(w)
    code = [b for b in w.blocks if isinstance(b, CodeBlock)]
    assert len(code) == 1 and code[0].lang.text() == "python"
    code[0].copy_button.click()
    assert QGuiApplication.clipboard().text() == "print('hi')"
    # Streaming: an open fence is shown as a code block that grows; earlier segments are reused.
    w2 = MessageWidget(Message(2, 1, "assistant", "", "streaming", 0.0))
    qtbot.addWidget(w2)
    w2.append("Intro\n\n```\nline1")
    w2.render_text()
    intro = w2.blocks[0]
    w2.append("\nline2")
    w2.render_text()
    assert w2.blocks[0] is intro and isinstance(w2.blocks[1], CodeBlock)
    assert w2.blocks[1].code.text() == "line1\nline2"


class PaintLog(QObject):
    """Records each paint of a message's text block, with the length of the text it showed."""

    def __init__(self, widget: MessageWidget) -> None:
        super().__init__()
        self.widget = widget
        self.paints: list[tuple[float, int]] = []

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints.append((asyncio.get_running_loop().time(), len(self.widget.rendered_text)))
        return False


@pytest.mark.engine
def test_first_text_is_rendered_at_once_then_at_most_once_per_frame(  # type: ignore[no-untyped-def]
        page_env, test_engines: Engines) -> None:
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    conv_id = page.new_conversation()
    service.store.update_settings(conv_id, sampling=SamplingParams(max_tokens=300, seed=7, temperature=1.0))
    shown_at_first_delta: list[tuple[str, str]] = []
    logs: list[PaintLog] = []
    painted_when_saved: list[int] = []

    def on_event(event: ChatEvent) -> None:  # subscribed after the page: it sees what the page did
        if isinstance(event, MessageUpdated) and event.message.status == COMPLETE:
            painted_when_saved.append(logs[0].paints[-1][1] if logs[0].paints else 0)
        if isinstance(event, MessageDelta) and not shown_at_first_delta:
            widget = page.message_widgets[event.message_id]
            shown_at_first_delta.append((widget.rendered_text, event.text))
            log = PaintLog(widget)
            widget.blocks[0].viewport().installEventFilter(log)
            logs.append(log)

    service.events.subscribe(on_event)
    handle = page.send_text("Write a long story")
    assert handle is not None
    started = loop.time()
    loop.run_until_complete(handle.wait())
    reply = page.message_widgets[max(page.message_widgets)]
    assert not errors and reply.message.status == COMPLETE and reply.rendered_text == reply.text
    # The end of the reply is painted promptly after it arrived.
    loop.run_until_complete(wait_until(lambda: bool(logs[0].paints) and logs[0].paints[-1][1] == len(reply.text),
                                       timeout=1.0))
    duration = loop.time() - started
    service.events.unsubscribe(on_event)
    # The whole reply was on screen before it was saved and its statistics shown (that work waits).
    assert painted_when_saved == [len(reply.text)]
    # The first text was rendered by the event that brought it (painted on the next loop turn).
    (shown, first), = shown_at_first_delta
    assert shown == first
    # It streamed visibly, and no more renders were painted than frames passed.
    painted = sorted({length for _t, length in logs[0].paints})
    assert len(painted) >= 2
    assert len(painted) <= duration / FRAME_S + 2


def test_the_answer_after_a_thinking_is_shown_at_once(page_env) -> None:  # type: ignore[no-untyped-def]
    """Renders of a long thinking are spaced out; the answer's first text does not wait for the next one."""
    page, service, _, _ = page_env
    conv = service.store.create_conversation("Thinking")
    service.store.add_message(conv.id, "user", "Why?")
    reply = service.store.add_message(conv.id, "assistant", "", status=STREAMING)
    page.open_conversation(conv.id)
    widget = page.message_widgets[reply.id]
    service.announcer.emit(MessageDelta(reply.id, "", False, "Let me think. " * 50, 50, ""))
    service.announcer.emit(MessageDelta(reply.id, "", False, "More thinking.", 53, ""))  # waits for the next frame
    assert widget.rendered_text == ""
    service.announcer.emit(MessageDelta(reply.id, "The answer", False, "", 55, ""))
    assert widget.rendered_text == "The answer"


@pytest.mark.engine
def test_opening_a_conversation_reads_it_ahead_and_the_reply_says_its_prompt_was_cached(  # type: ignore[no-untyped-def]
        page_env, test_engines: Engines, qtbot) -> None:
    """As after a restart: the engine is loaded, the user opens an old conversation the engine has
    never seen and types; the reply's statistics say its history came from the engine's cache."""
    page, service, loop, errors = page_env
    service.set_plan([cpu_spec(test_engines)])
    page.on_shown()
    conv = service.new_conversation()
    _short(service, conv.id, 4)
    service.store.update_settings(conv.id, system_prompt="You answer questions about rivers. " * 10)
    service.store.add_messages(conv.id, [("user", "Where do rivers start? " * 20),
                                         ("assistant", "Most rivers start in hills, from springs and rain. " * 10)])
    loop.run_until_complete(service.ensure_engine())  # loaded, nothing in view yet
    assert service.last_read_ahead is None

    async def click_it() -> None:  # as a click: while the event loop runs
        page.open_conversation(conv.id)
        await wait_until(lambda: service.last_read_ahead is not None)

    loop.run_until_complete(click_it())
    held = service.last_read_ahead
    assert held is not None and held > 100
    qtbot.keyClicks(page.input, "And where do they end?")
    qtbot.keyClick(page.input, Qt.Key.Key_Return)
    handle = page.reply_handle
    assert handle is not None
    loop.run_until_complete(handle.wait())
    assert not errors
    reply = list(page.message_widgets.values())[-1]
    assert reply.message.status == COMPLETE
    assert f"{reply.message.stats.cache_n:,} of " in reply.stats.text()
    assert reply.message.stats.cache_n is not None and reply.message.stats.cache_n >= held - 2
