"""Reading the conversation in view ahead, while the user types its next message.

While the chat's engine is loaded and idle, it reads that conversation (system prompt, tools,
history, and the header of the next user message) ahead: the next reply's prompt processing then
starts from the engine's cache, so its first token comes sooner (after a restart, a long
conversation is read while the message is written, not after it is sent). It never loads an
engine and never delays a reply: one sent meanwhile waits for the read of its own conversation,
whose work it needs, or cancels the read of another.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import httpx

from strata_gui.core.base.errors import StrataError
from strata_gui.core.pool import EnginePool, PooledEngine
from strata_gui.core.runtime.client import ChatClient, RequestOptions

from .conversations import Conversations
from .engine import ChatEngine
from .first_token import FirstTokens
from .model import ChatModel
from .records import Conversation
from .request import RequestBuilder, for_template
from .store import ConversationStore
from .tool_loop import ToolLoop

log = logging.getLogger(__name__)


class ReadAhead:
    """Reads the next request of the conversation in view into the chat's idle engine.

    Args:
        pool: Where the engine is leased for the read (only when it is ready and idle).
        http: Shared HTTP client for the chat API.
        store: The conversations.
        conversations: The history a reply would send.
        chat_model: The model (its template, whether it sees images), or the remote endpoint that
            answers instead (nothing is read ahead then).
        engine: The chat's engine (whether one is loaded and idle).
        tool_loop: The tools a reply would offer.
        first_tokens: A reply waiting for its first token is never delayed by a read.
        requests: What a reply in a conversation would ask of the engine.

    Attributes:
        last_held: Prompt tokens the last read left in the engine (None: none read yet).
    """

    def __init__(self, pool: EnginePool, http: httpx.AsyncClient, store: ConversationStore,
                 conversations: Conversations, chat_model: ChatModel, engine: ChatEngine, tool_loop: ToolLoop,
                 first_tokens: FirstTokens, requests: RequestBuilder) -> None:
        self.pool = pool
        self.store = store
        self.conversations = conversations
        self.chat_model = chat_model
        self.engine = engine
        self.tool_loop = tool_loop
        self.first_tokens = first_tokens
        self.last_held: int | None = None
        self._http = http
        self.requests = requests
        self._viewed: int | None = None  # the conversation in view
        self._reading: asyncio.Task[None] | None = None  # the read in flight
        self._reading_for: int | None = None  # ... and its conversation
        self._read_key: tuple[int, str] | None = None  # what the engine was last given (engine serial, request)
        self._read_again = False

    def view(self, conversation_id: int | None) -> None:
        """The conversation the user has in view (None: none), whose next message comes next; read
        ahead when the engine is idle (off with ``Settings.read_ahead``). Call it again when the
        conversation's system prompt or settings change."""
        self._viewed = conversation_id
        self.soon()

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The read in flight, if any (or the last one, done)."""
        return self._reading

    @property
    def reading(self) -> bool:
        """A read ahead is in flight."""
        return self._reading is not None and not self._reading.done()

    async def settled(self) -> None:
        """Return once no read ahead is in flight (tests, benchmarks)."""
        reading = self._reading
        if reading is not None:
            await asyncio.wait([reading])

    def soon(self) -> None:
        """Read the conversation in view ahead now if the engine can take it (the engine just
        loaded, the conversation changed); a read of it in flight reads once more after."""
        conv_id = self._viewed
        previous = self._reading if self._reading is not None and not self._reading.done() else None
        if previous is not None:
            if self._reading_for == conv_id:
                self._read_again = True  # it changed meanwhile (say its system prompt): once more after
                return
            previous.cancel()  # another conversation's: the new read starts once it has let go
        self._reading = None
        self._read_again = False
        if conv_id is None or self.chat_model.remote is not None or not self.chat_model.settings.read_ahead:
            return
        if not self.engine.ready or self.first_tokens.awaiting:
            # Nothing to read into now (the chat calls again once it is loaded). Checked before
            # making a task: this runs from widgets too, also inside a task's processEvents.
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._reading_for = conv_id
        self._reading = task = loop.create_task(self._read_ahead(conv_id, previous), name="strata-chat-read-ahead")

        def ended(_task: asyncio.Task[None]) -> None:
            if self._reading is task and self._read_again and not task.cancelled():
                self._reading = None
                self.soon()

        task.add_done_callback(ended)

    async def _read_ahead(self, conversation_id: int, previous: asyncio.Task[None] | None) -> None:
        try:
            if previous is not None:
                await asyncio.wait([previous])  # its lease is given back as it ends
            await self._read_now(conversation_id)
        except Exception:  # an optimisation: its failure must not reach anyone (the reply reads its prompt)
            log.warning("reading conversation %s ahead failed", conversation_id, exc_info=True)

    async def _request(self, conv: Conversation) -> tuple[list[dict[str, Any]], RequestOptions] | None:
        """What a reply in ``conv`` would send now (None: nothing to read ahead)."""
        try:
            template = await self.chat_model.template_info()
            options = await self.tool_loop.read_ahead_options(template, for_template(self.requests.options(conv), template))
            if options is None:
                return None
            history = self.conversations.history(conv, with_images=self.chat_model.accepts_images,
                                                 with_reasoning=template is not None and template.keeps_past_reasoning)
        except (StrataError, OSError):
            log.debug("nothing read ahead for conversation %s", conv.id, exc_info=True)
            return None
        if any(not isinstance(m.get("content"), str) for m in history):
            return None  # images go in a request's parts, not in a prompt read ahead
        return history, options

    async def _read_now(self, conversation_id: int) -> None:
        # (A reply sent since the task was made waits for it: see before_request.)
        engine = self.engine.running_engine
        # Another app's request on a slot beside it is no reason to wait; the chat's own reply is.
        if engine is None or not engine.ready or engine.holders.get(self.engine.USER):
            return
        conv = self.store.conversation(conversation_id)
        if conv is None:
            return
        request = await self._request(conv)
        if request is None:
            return
        history, options = request
        key = (engine.serial, json.dumps([history, options.to_request(), conv.sampling.to_json()],
                                         sort_keys=True, default=str))
        if key == self._read_key:
            return
        held = await self._read_into(engine, conv, history, options)
        if held is not None:
            self._read_key = key
            self.last_held = held
            log.debug("read ahead conversation %s: the engine holds %s prompt tokens", conversation_id, held)

    async def _read_into(self, engine: PooledEngine, conv: Conversation, history: list[dict[str, Any]],
                         options: RequestOptions) -> int | None:
        """Have ``engine`` read the prompt, if the pool lends it at once (None: it did not)."""
        lease = await self.pool.lease_now(engine, self.engine.USER)
        if lease is None:
            return None
        try:
            client = ChatClient(self._http, lease.base_url, lease.api_key or None)
            return await client.read_ahead(history, sampling=conv.sampling, options=options)
        finally:
            lease.release()

    async def before_request(self, conversation_id: int) -> None:
        """A reply is about to be sent in ``conversation_id``: a read ahead of it is waited for (the
        request continues from its cache), one of another conversation is stopped."""
        reading, self._reading = self._reading, None
        self._read_key = None  # the reply changes what the engine holds
        if reading is None or reading.done():
            return
        if self._reading_for != conversation_id:
            reading.cancel()
        # wait(), not the task itself: how the read ended (cancelled, failed) is not this reply's;
        # Stop while waiting still cancels the reply (wait() raises then, the read goes on).
        await asyncio.wait([reading])

    async def aclose(self) -> None:
        """Stop the read in flight."""
        reading, self._reading = self._reading, None
        if reading is not None and not reading.done():
            reading.cancel()
            with contextlib.suppress(BaseException):
                await reading
