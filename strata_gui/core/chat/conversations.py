"""Conversations, apart from running replies: what is saved, what is sent, what to answer again.

:class:`Conversations` owns the store's view of a chat: new conversations and their titles, the
history sent to an engine (system prompt, kept turns, images as OpenAI content parts), which
messages a regenerate or an edit replaces, and how full the context is. It never talks to an
engine; :class:`~strata_gui.core.chat.service.ChatService` runs the replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP

from .images import ChatImage
from .records import FAILED, FORMAT_FAILED, Conversation, Message
from .store import ConversationStore

DEFAULT_TITLE = "New chat"
# ModelResume.outcome
MODEL_KEPT = "kept"  # the conversation's model is the chat's (or it has none, or replies go to a remote engine)
MODEL_SWITCHED = "switched"  # the chat switched to the conversation's model
MODEL_MISSING = "missing"  # the conversation's model is no longer on disk: the chat's stays
UNSENT = (FAILED, FORMAT_FAILED)  # replies that never go back to the model (no answer, or broken output)


@dataclass(frozen=True)
class ModelResume:
    """What reopening a conversation did to the chat's model.

    Attributes:
        outcome: :data:`MODEL_KEPT`, :data:`MODEL_SWITCHED` or :data:`MODEL_MISSING`.
        model: The model the conversation was last answered with.
        current: The model the chat answers with now.
    """

    outcome: str
    model: Path | None = None
    current: Path | None = None


class Conversations:
    """The chat's conversations in the store.

    Args:
        store: Where conversations and messages are kept.
    """

    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    def new(self, title: str = DEFAULT_TITLE, *, model: str = "") -> Conversation:
        return self.store.create_conversation(title, model=model)

    def remember_model(self, conversation: Conversation, model: Path) -> None:
        """Keep ``model`` as the one the conversation was last answered with (reopening it selects it again)."""
        if conversation.model != str(model):
            self.store.update_settings(conversation.id, model=str(model))

    def resume(self, conversation_id: int, current: Path | None, *, remote: bool = False) -> ModelResume:
        """What reopening the conversation does to the chat's model ``current``: a reopened chat goes
        on with its own model; when that file is gone, ``current`` stays and the outcome says so.
        Replies going to a remote engine (``remote``) leave the local model as it is."""
        conv = self.get(conversation_id)
        if not conv.model or remote or Path(conv.model) == current:
            return ModelResume(MODEL_KEPT, current, current)
        wanted = Path(conv.model)
        return ModelResume(MODEL_SWITCHED if wanted.is_file() else MODEL_MISSING, wanted, current)

    def get(self, conversation_id: int) -> Conversation:
        """The conversation, or a clear error when it was deleted meanwhile."""
        conv = self.store.conversation(conversation_id)
        if conv is None:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "This conversation no longer exists."))
        return conv

    def add_user_message(self, conversation_id: int, text: str, images: Sequence[ChatImage] = ()) -> Message:
        """Save the user's message; the first one names a new conversation."""
        conv = self.get(conversation_id)
        if conv.title == DEFAULT_TITLE and self.store.count_messages(conv.id) == 0:
            title = " ".join(text.split())[:48] or (images[0].name if images else "") or DEFAULT_TITLE
            self.store.rename(conv.id, title)
        return self.store.add_message(conv.id, "user", text, images=images)

    def drop_replies_to_last_question(self, conversation_id: int) -> None:
        """Regenerate: delete what came after the last user message.

        Raises:
            ChatError: There is no user message to answer.
        """
        msgs = self.store.messages(conversation_id)
        last_user = next((m for m in reversed(msgs) if m.role == "user"), None)
        if last_user is None:
            raise ChatError(QT_TRANSLATE_NOOP("Core", "There is no message to answer yet."))
        # the answer is kept, not deleted: the user can switch back to it (‹ 1/2 ›)
        self.store.shelve_replies(conversation_id, last_user.id)

    def _last_question(self, conversation_id: int) -> Message | None:
        return next((m for m in reversed(self.store.messages(conversation_id, limit=50)) if m.role == "user"), None)

    def answer_choice(self, conversation_id: int) -> tuple[int, int]:
        """Which answer to the last question is shown and how many there are: (1-based index, count).

        (1, 1) when it was answered once; the live answer counts even while it streams.
        """
        question = self._last_question(conversation_id)
        if question is None:
            return 1, 1
        kept = self.store.reply_versions(conversation_id, question.id)
        live = next((m for m in self.store.messages(conversation_id, limit=50) if m.id > question.id), None)
        if live is None:
            return max(1, len(kept)), max(1, len(kept))
        made = [at for _id, at in kept]
        index = sum(1 for at in made if at <= live.created_at) + 1
        return index, len(kept) + 1

    def switch_answer(self, conversation_id: int, step: int) -> bool:
        """Show the previous (``step`` -1) or next (+1) answer to the last question; False when there is none."""
        question = self._last_question(conversation_id)
        if question is None:
            return False
        kept = self.store.reply_versions(conversation_id, question.id)
        if not kept:
            return False
        index, count = self.answer_choice(conversation_id)
        target = index + step
        if not 1 <= target <= count:
            return False
        # the kept versions around the live one, in the order they were made
        version_id = kept[target - 1][0] if target < index else kept[target - 2][0]
        self.store.restore_version(conversation_id, question.id, version_id)
        return True

    def edit(self, message_id: int, text: str) -> int:
        """Replace a user message's text and drop everything after it; returns its conversation.

        Raises:
            ChatError: It is not the user's message (or is gone).
        """
        msg = self.store.message(message_id)
        if msg is None or msg.role != "user":
            raise ChatError(QT_TRANSLATE_NOOP("Core", "Only your own messages can be edited."))
        self.store.update_message(message_id, content=text)
        self.store.delete_messages_from(msg.conversation_id, message_id + 1)
        self.store.drop_versions(msg.conversation_id, message_id)  # they answered the old text
        return msg.conversation_id

    def history(self, conversation: Conversation, upto: int | None = None, *,
                with_images: bool = False, with_reasoning: bool = False) -> list[dict[str, Any]]:
        """Messages sent to the engine: system prompt, then every kept turn before ``upto``.

        A message with images becomes OpenAI content parts (its text, then each image as a
        ``data:`` URL) when ``with_images``; otherwise only its text is sent, so a conversation
        with pictures can go on with a text-only model. A reply's tool calls go with it, each
        followed by its ``tool`` result (a call without a result, say one stopped before it was
        answered, is left out: templates refuse an unanswered call). A reply's thinking is sent
        back (``reasoning_content``) only ``with_reasoning``: most templates drop earlier turns'
        reasoning, and some break on it; those that keep it ask for it. A reply that only thought
        keeps its (empty) turn either way.
        """
        out: list[dict[str, Any]] = []
        if conversation.system_prompt.strip():
            out.append({"role": "system", "content": conversation.system_prompt})
        messages = [m for m in self.store.messages(conversation.id) if upto is None or m.id < upto]
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        offered: set[str] = set()  # calls sent so far: a result must follow its call
        for m in messages:
            if m.status in UNSENT:
                continue
            if m.role == "tool":
                if m.tool_call_id in offered:
                    item: dict[str, Any] = {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
                    if m.tool_name:
                        item["name"] = m.tool_name  # some templates name the tool beside its result
                    out.append(item)
                continue
            if m.role == "assistant":
                calls = [c.call().to_openai() for c in m.tool_calls if c.id in answered]
                reasoning = m.thinking if with_reasoning else ""
                if not (m.content or calls or m.thinking):
                    continue  # nothing came (a reply stopped before its first token)
                # A reply that only thought still takes its turn: templates that want turns to
                # alternate refuse two user messages in a row.
                item = {"role": "assistant", "content": m.content}
                if calls:
                    item["tool_calls"] = calls
                    offered.update(c["id"] for c in calls)
                if reasoning:
                    item["reasoning_content"] = reasoning
                out.append(item)
                continue
            if m.images and with_images:
                parts: list[dict[str, object]] = [{"type": "text", "text": m.content}] if m.content else []
                parts += [im.content_part() for im in m.images]
                out.append({"role": m.role, "content": parts})
            else:
                out.append({"role": m.role, "content": m.content})
        return out

    def context_used(self, conversation_id: int) -> int:
        """Tokens the conversation filled at its last measured reply (0 when unknown).

        A stopped reply only counts its own pieces (the engine's prompt count never arrived), so it
        is passed over for the last reply the engine measured in full.
        """
        recent = self.store.messages(conversation_id, limit=20)
        for m in reversed(recent):
            if m.role == "assistant" and m.stats.prompt_n is not None and m.stats.context_used:
                return int(m.stats.context_used)
        # Only stopped replies so far: what they generated is at least in the context (the meter
        # read "0 / 4,096" for a whole session of stopped replies).
        for m in reversed(recent):
            if m.role == "assistant" and m.stats.context_used:
                return int(m.stats.context_used)
        return 0
