"""Conversations: the SQLite store and the chat session logic (engine fallback included)."""

from strata_gui.core.chat.images import MAX_IMAGE_BYTES, ChatImage
from strata_gui.core.chat.service import (
    ChatEvent,
    ChatService,
    EngineStatus,
    EngineSwitchOffer,
    MessageAdded,
    MessageDelta,
    MessageUpdated,
    Notice,
    PlanChanged,
)
from strata_gui.core.chat.store import COMPLETE, FAILED, INTERRUPTED, STOPPED, STREAMING, Message

__all__ = [
    "COMPLETE",
    "FAILED",
    "INTERRUPTED",
    "MAX_IMAGE_BYTES",
    "STOPPED",
    "STREAMING",
    "ChatEvent",
    "ChatImage",
    "ChatService",
    "EngineStatus",
    "EngineSwitchOffer",
    "Message",
    "MessageAdded",
    "MessageDelta",
    "MessageUpdated",
    "Notice",
    "PlanChanged",
]
