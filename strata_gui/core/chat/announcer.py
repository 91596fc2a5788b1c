"""How the chat's parts tell the listeners: one :class:`~strata_gui.core.base.events.Listeners` list, and
the new messages of a reply held back until its request has left for the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from strata_gui.core.base.events import Listeners

from .events import ChatEvent, MessageAdded
from .records import Message

# s: new messages are announced at the latest this long after a send (a slow connection to a
# remote engine must not keep the user's message off the screen)
ANNOUNCE_WAIT = 0.03


class ChatAnnouncer:
    """Delivers the chat's events; a held message is always announced before anything else.

    Building a reply's widgets takes milliseconds that the engine can spend on the prompt
    meanwhile (time to first token): a reply's messages (the user's and the new reply) are held
    until its request is sent (:meth:`announce`), and any other event announces them first.

    Attributes:
        listeners: Who hears the chat's events (on the loop's thread).
    """

    def __init__(self) -> None:
        self.listeners: Listeners[ChatEvent] = Listeners()
        self._held: list[Message] = []  # saved messages whose MessageAdded waits for the request

    def emit(self, event: ChatEvent) -> None:
        """Deliver ``event``, after the held messages' :class:`MessageAdded`."""
        if self._held:
            self.announce()  # listeners hear of a message before anything else about it
        self.listeners.emit(event)

    def hold(self, messages: Iterable[Message]) -> asyncio.TimerHandle:
        """Announce ``messages`` later: at :meth:`announce`, before the next event, or after
        :data:`ANNOUNCE_WAIT` at the latest (the returned timer: cancel it once they are announced)."""
        self._held += messages
        return asyncio.get_running_loop().call_later(ANNOUNCE_WAIT, self.announce)

    def announce(self) -> None:
        """Emit the :class:`MessageAdded` events held back until the reply's request left."""
        pending, self._held = self._held, []
        for message in pending:
            self.listeners.emit(MessageAdded(message))
