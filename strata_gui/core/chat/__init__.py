"""Conversations: the SQLite store and the chat session logic (engine fallback included)."""

from strata_gui.core.chat.service import (
    ChatEvent,
    ChatService,
    EngineStatus,
    MessageAdded,
    MessageDelta,
    MessageUpdated,
    Notice,
    PlanChanged,
)
from strata_gui.core.chat.store import FAILED, INTERRUPTED, STOPPED, STREAMING, Message

__all__ = [
    "FAILED",
    "INTERRUPTED",
    "STOPPED",
    "STREAMING",
    "ChatEvent",
    "ChatService",
    "EngineStatus",
    "Message",
    "MessageAdded",
    "MessageDelta",
    "MessageUpdated",
    "Notice",
    "PlanChanged",
]
