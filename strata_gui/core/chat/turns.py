"""A turn of a conversation: the user's message saved (or an earlier one answered again), then the
model's reply streamed through the tool loop, announced as its request leaves for the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.base.texts import well_formed
from strata_gui.core.runtime.client import ReplyStats, RequestOptions

from .announcer import ChatAnnouncer
from .conversations import Conversations
from .events import MessageAdded
from .first_token import FirstTokens
from .images import ChatImage
from .model import ChatModel
from .read_ahead import ReadAhead
from .records import STOPPED, Conversation, Message
from .request import RequestBuilder, for_template
from .streaming import ReplyStreamer
from .tool_loop import ToolLoop

if TYPE_CHECKING:
    from strata_gui.core.documents import DocumentContext, DocumentService


class Turns:
    """Sends messages and answers them.

    Args:
        conversations: The conversations (messages saved, edited, answered again).
        chat_model: The model that answers (its template, whether it sees images).
        requests: What a reply asks of the engine.
        streamer: Creates and settles the reply's messages.
        tool_loop: Streams the reply, round after round of tool calls.
        read_ahead: A read ahead of the conversation is waited for (or stopped) before a request.
        announcer: Tells the chat's listeners; holds the new messages until the request left.
        first_tokens: Counts the replies waiting for their first token.
    """

    def __init__(self, conversations: Conversations, chat_model: ChatModel, requests: RequestBuilder,
                 streamer: ReplyStreamer, tool_loop: ToolLoop, read_ahead: ReadAhead, announcer: ChatAnnouncer,
                 first_tokens: FirstTokens) -> None:
        self.conversations = conversations
        self.chat_model = chat_model
        self.requests = requests
        self.streamer = streamer
        self.tool_loop = tool_loop
        self.read_ahead = read_ahead
        self.announcer = announcer
        self.first_tokens = first_tokens
        # Attached documents (their passages go with each question), and the context they must fit.
        self.documents: DocumentService | None = None
        self.context_size: Callable[[], int] = lambda: chat_model.context_size

    async def send(self, conversation_id: int, text: str, on_progress: ProgressCallback | None = None, *,
                   images: Sequence[ChatImage] = ()) -> Message:
        """Save the user's message (with its images), then stream the reply into a new assistant message.

        Raises:
            ChatError: Images were given but the model has no vision projector (nothing is saved).
        """
        if images:
            self.chat_model.check_images_accepted()
        user = self.conversations.add_user_message(conversation_id, well_formed(text), images)
        return await self._reply(conversation_id, on_progress, user)

    async def regenerate(self, conversation_id: int, on_progress: ProgressCallback | None = None) -> Message:
        """Answer the last user message again; the earlier answer is kept (:meth:`Conversations.switch_answer`)."""
        self.conversations.drop_replies_to_last_question(conversation_id)
        return await self._reply(conversation_id, on_progress)

    async def edit_and_resend(self, message_id: int, text: str,
                              on_progress: ProgressCallback | None = None) -> Message:
        """Replace a user message's text, drop everything after it, and answer again."""
        conversation_id = self.conversations.edit(message_id, well_formed(text))
        return await self._reply(conversation_id, on_progress)

    async def retry_without_format_parsing(self, conversation_id: int,
                                           on_progress: ProgressCallback | None = None) -> Message:
        """Answer the last question again, this once, with the engine's chat-format parsing off
        (llama-server's ``--skip-chat-parsing``): the model's text then arrives as written, its
        thinking split here when it opens with ``<think>``. The model's engine is reloaded with
        that flag (the pool swaps it in); the next reply parses again. The lasting switch is the
        model's load option (``chat_parsing``).

        Raises:
            ChatError: Replies go to a remote engine (its chat format is the server's to change),
                or no model is chosen.
        """
        with self.chat_model.without_format_parsing():
            return await self.regenerate(conversation_id, on_progress)

    async def _reply(self, conversation_id: int, on_progress: ProgressCallback | None,
                     user: Message | None = None) -> Message:
        """Stream a new reply (answering tool calls on the way); ``user`` (just saved) and the
        reply are announced with it."""
        try:
            conv = self.conversations.get(conversation_id)
            if self.chat_model.remote is None and self.chat_model.path is not None:
                self.conversations.remember_model(conv, self.chat_model.path)
            options = self.requests.options(conv)  # a bad schema fails here, before anything is saved
            sources = await self._sources(conv, user)
            reply = self.streamer.new_reply(conv, sources=sources)
        except BaseException:
            if user is not None:
                self.announcer.emit(MessageAdded(user))
            raise
        # Held back until the request is sent: building a reply's widgets takes milliseconds
        # that the engine can spend on the prompt meanwhile (time to first token).
        deadline = self.announcer.hold(m for m in (user, reply) if m is not None)
        if sources is not None:
            self.streamer.sources[conv.id] = sources
        try:
            with self.first_tokens.awaiting_reply():
                return await self._converse(conv, reply, options, on_progress)
        finally:
            self.streamer.sources.pop(conv.id, None)
            deadline.cancel()
            self.announcer.announce()

    async def _sources(self, conv: Conversation, user: Message | None) -> DocumentContext | None:
        """The passages of the conversation's documents that go with its last question (None when
        it has no documents)."""
        if self.documents is None:
            return None
        question = user.content if user is not None else next(
            (m.content for m in reversed(self.conversations.store.messages(conv.id)) if m.role == "user"), "")
        return await self.documents.context_for(conv.id, question, self.context_size())

    async def _converse(self, conv: Conversation, reply: Message, options: RequestOptions,
                        on_progress: ProgressCallback | None) -> Message:
        """Ready the request (spelled as the model's template reads it; a read ahead of it waited
        for), then let the tool loop stream the reply and answer its calls."""
        try:
            template = await self.chat_model.template_info()
            if self.chat_model.remote is None:
                await self.read_ahead.before_request(conv.id)
        except asyncio.CancelledError:
            self.streamer.finish(reply.id, "", STOPPED, ReplyStats(finish_reason="stopped"))
            raise
        return await self.tool_loop.converse(conv, reply, for_template(options, template), on_progress, template)
