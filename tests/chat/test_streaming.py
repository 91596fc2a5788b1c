"""Streaming at the engine's pace: the service batches streamed text into few events."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from strata_gui.core.chat.service import ChatEvent, ChatService, MessageDelta, default_supervisor_factory
from strata_gui.core.chat.store import COMPLETE, ConversationStore
from strata_gui.core.paths import AppPaths
from strata_gui.core.runtime.client import ChatClient, ChatReply, DeltaCallback, SamplingParams
from tests.runtime.sse_server import sse_server
from tests.support.settings import settings_service


class LoopbackEngine:
    """A remote engine (the service's seam for endpoints it does not manage) on a loopback server."""

    label = "loopback"

    def __init__(self, http: httpx.AsyncClient, base: str) -> None:
        self._client = ChatClient(http, base)

    async def stream_chat(self, messages: Sequence[Mapping[str, Any]], sampling: SamplingParams | None = None,
                          on_delta: DeltaCallback | None = None) -> ChatReply:
        return await self._client.stream_chat(messages, sampling, on_delta)


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
            svc = ChatService(ConversationStore(paths.database_file).open(), default_supervisor_factory(http),
                              http, settings_service(), delta_interval=interval)
            svc.set_remote(LoopbackEngine(http, base))
            loop = asyncio.get_running_loop()

            def on_event(event: ChatEvent) -> None:
                if isinstance(event, MessageDelta):
                    deltas.append(event)
                    times.append(loop.time())

            svc.subscribe(on_event)
            try:
                reply = await svc.send(svc.new_conversation().id, "count")
            finally:
                await svc.aclose()
        assert reply.status == COMPLETE and reply.content == "".join(f"t{i} " for i in range(40))
        assert "".join(d.text for d in deltas) == reply.content
        assert deltas[0].text == "t0 "
        assert 4 <= len(deltas) <= 10, [d.text for d in deltas]
        gaps = [b - a for a, b in itertools.pairwise(times[:-1])]  # the last is sent as the reply ends
        assert all(gap >= interval * 0.9 for gap in gaps), gaps

    with sse_server("bursts") as (base, _requests):
        asyncio.run(main(base))
