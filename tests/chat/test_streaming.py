"""Streaming at the engine's pace: few text events, and growing text appended without re-parsing."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest

from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.chat.service import (
    ChatEvent,
    ChatService,
    MessageAdded,
    MessageDelta,
)
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.runtime.client import ChatClient, ChatReply
from strata_gui.ui.chat.markdown import Segment, plain_extension
from strata_gui.ui.chat.message_widget import TextBlock
from tests.runtime.sse_server import sse_server
from tests.support.pool import real_pool
from tests.support.settings import settings_service


class LoopbackEngine:
    """A remote engine (the service's seam for endpoints it does not manage) on a loopback server."""

    label = "loopback"

    def __init__(self, http: httpx.AsyncClient, base: str) -> None:
        self._client = ChatClient(http, base)

    async def stream(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> ChatReply:
        return await self._client.stream(messages, **kw)


def test_text_events_are_batched_and_the_first_token_goes_out_alone() -> None:
    """40 tokens in 4 bursts: listeners get far fewer events than tokens, never two within the
    interval (but the last, sent as the reply ends), the first token at once, and all the text."""
    interval = 0.02
    times: list[float] = []
    deltas: list[MessageDelta] = []

    async def main(base: str) -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        async with httpx.AsyncClient(trust_env=False) as http:
            svc = ChatService(ConversationStore(paths.database_file).open(), real_pool(http),
                              http, settings_service(), delta_interval=interval)
            svc.set_remote(LoopbackEngine(http, base))
            loop = asyncio.get_running_loop()

            def on_event(event: ChatEvent) -> None:
                if isinstance(event, MessageDelta):
                    deltas.append(event)
                    times.append(loop.time())

            svc.events.subscribe(on_event)
            try:
                reply = await svc.send(svc.new_conversation().id, "count")
            finally:
                await svc.aclose()
                await svc.pool.aclose()
        assert reply.status == COMPLETE and reply.content == "".join(f"t{i} " for i in range(40))
        assert "".join(d.text for d in deltas) == reply.content
        assert deltas[0].text == "t0 "
        assert 4 <= len(deltas) <= 10, [d.text for d in deltas]
        gaps = [b - a for a, b in itertools.pairwise(times[:-1])]  # the last is sent as the reply ends
        assert all(gap >= interval * 0.9 for gap in gaps), gaps

    with sse_server("bursts") as (base, _requests):
        asyncio.run(main(base))


class SlowToConnectEngine(LoopbackEngine):
    """A remote engine whose connection takes a while to open (a slow network)."""

    async def stream(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> ChatReply:
        await asyncio.sleep(0.5)
        return await super().stream(messages, **kw)


@pytest.mark.parametrize("engine", [LoopbackEngine, SlowToConnectEngine])
def test_the_users_message_is_announced_once_sent_or_soon_if_the_engine_is_slow_to_reach(engine: type) -> None:
    """New messages are announced after the request left (widget work overlaps the engine's), but a
    remote engine slow to reach does not keep the user's message off the screen meanwhile."""
    added: list[tuple[float, str]] = []
    first_text: list[float] = []

    async def main(base: str) -> None:
        paths = AppPaths.from_environment()
        paths.ensure()
        async with httpx.AsyncClient(trust_env=False) as http:
            svc = ChatService(ConversationStore(paths.database_file).open(), real_pool(http),
                              http, settings_service())
            svc.set_remote(engine(http, base))
            loop = asyncio.get_running_loop()

            def on_event(event: ChatEvent) -> None:
                if isinstance(event, MessageAdded):
                    added.append((loop.time() - sent, event.message.role))
                elif isinstance(event, MessageDelta) and not first_text:
                    first_text.append(loop.time() - sent)

            svc.events.subscribe(on_event)
            conv = svc.new_conversation()
            sent = loop.time()
            try:
                await svc.send(conv.id, "hello")
            finally:
                await svc.aclose()
                await svc.pool.aclose()

    with sse_server("ok") as (base, _requests):
        asyncio.run(main(base))
    assert [role for _t, role in added] == ["user", "assistant"]
    assert added[-1][0] <= first_text[0]
    assert added[-1][0] < 0.25  # well before the slow engine is reached (0.5 s)


MARKDOWN = (
    "Plain words, then  double  spaces and trailing   \nA second line of the same paragraph.\n\n"
    "New paragraph **bold** then plain words, _under_ and *emph*; _foo_bar and *foo.*bar stay literal.\n\n"
    "- item one\n- item two continues\n  with a lazy line\n\n1. first\n2. second and more\n\n# Heading words\n\n"
    "A [link](http://a.b) and [y](ur\nl) and &amp; &am and http://a.b/c and www.example.com and a@b.c and a\\*b.\n\n"
    "> quote words\nlazy continuation words\n\n<div>\nhtml words\n</div>\n\n| a | b |\n|---|---|\n| c | d words |\n\n"
    "Some ``code`` and *open emphasis words* done.\n\n    indented code\n\ntext\n===\n\n"
    "Hard break  \nafter it (parens) \"quotes\" don't. 君LY연 placingзне prod через uniqu\u3000beh   "
)


@pytest.mark.parametrize("seed", range(8))
def test_a_reply_rendered_while_it_streams_looks_like_the_same_reply_rendered_at_once(qtbot, seed: int) -> None:  # type: ignore[no-untyped-def]
    """Streamed text is appended without re-parsing when that cannot change the rendering: after
    every piece, in whatever pieces the text arrives, the document equals a fresh render."""
    rnd = random.Random(seed)
    streamed, fresh = TextBlock(""), TextBlock("")
    qtbot.addWidget(streamed)
    qtbot.addWidget(fresh)
    end = 0
    while end < len(MARKDOWN):
        end = min(len(MARKDOWN), end + rnd.randint(1, 12))
        streamed.set_segment(Segment("text", MARKDOWN[:end]))
        fresh.setMarkdown(MARKDOWN[:end])
        assert streamed.document().toHtml() == fresh.document().toHtml(), repr(MARKDOWN[:end][-40:])


@pytest.mark.parametrize("text", [
    "In C++, std::vector<int> v; and a <b>bold</b> claim.",
    "Put it in a <div> then style it.",
    "Wrap text in <script>alert(1)</script> tags?",
])
def test_what_looks_like_html_is_shown_as_written(qtbot, text: str) -> None:  # type: ignore[no-untyped-def]
    """Replies about code mention tags: read as HTML, everything from the "tag" on vanished."""
    block = TextBlock(text)
    qtbot.addWidget(block)
    assert block.toPlainText() == text


def test_only_plain_words_on_the_last_line_are_appended() -> None:
    assert plain_extension("The keeper", "The keeper climbed  ") == " climbed"
    assert plain_extension("The keeper  ", "The keeper  climbed") == "  climbed"  # held spaces go out
    assert plain_extension("a **bold** ", "a **bold** word") is None  # would take the bold format
    assert plain_extension("_foo_", "_foo_bar") is None  # the closing _ no longer closes
    assert plain_extension("[y](ur", "[y](url)") is None
    assert plain_extension("see www", "see www.example") is None
    assert plain_extension("1", "1. item") is None
    assert plain_extension("para\n", "para\nnext") is None  # a new line may start a new block
