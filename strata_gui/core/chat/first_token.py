"""Which replies still wait for their first token, and what waits for them.

Background work that can wait (the app's start-up checks, reading a conversation ahead) keeps out
of the way of a reply's first token: on 2 cores it held the first token of a message sent at once
back by ~50 ms. :class:`FirstTokens` counts the replies sent whose first token has not arrived,
and lets that work wait until none does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

# s after a reply's first token before work that waits for it runs (the app's start-up checks):
# time for the token to be painted first.
FIRST_TOKEN_SETTLE_S = 0.03

# The mark of the reply a task is answering: [True] until its first token arrived (a tool round's
# reply shares its question's mark). Set by FirstTokens.awaiting_reply, read where the pieces arrive.
_PENDING: ContextVar[list[bool] | None] = ContextVar("strata_first_token_pending", default=None)


class FirstTokens:
    """The replies waiting for their first token.

    Attributes:
        prefetch: Called (on a later loop turn) with the model of a local reply once its first token
            is in: what can be read while the rest streams (the decode ceiling). None: nothing.
        prefetch_model: The model the reply being answered runs (set when an engine takes it).
    """

    def __init__(self) -> None:
        self.prefetch: Callable[[Path], None] | None = None
        self.prefetch_model: Path | None = None
        self._awaiting = 0  # replies sent whose first token has not arrived
        self._all_in: asyncio.Event | None = None  # set while no reply awaits its first token

    @property
    def awaiting(self) -> int:
        """Replies sent whose first token has not arrived yet."""
        return self._awaiting

    @contextmanager
    def awaiting_reply(self) -> Iterator[None]:
        """Count the reply answered inside the block (in this task) until its first token, or its end."""
        pending = [True]
        entered = _PENDING.set(pending)
        self._awaiting += 1
        if self._all_in is not None:
            self._all_in.clear()
        try:
            yield
        finally:
            _PENDING.reset(entered)
            self._arrived(pending, prefetch=False)  # ended without a token (or had one)

    def arrived(self) -> None:
        """The first token of the reply this task answers arrived (only the first call per reply counts)."""
        self._arrived(_PENDING.get(), prefetch=True)

    def _arrived(self, pending: list[bool] | None, *, prefetch: bool) -> None:
        if pending is None or not pending[0]:
            return
        pending[0] = False
        self._awaiting = max(0, self._awaiting - 1)
        model, self.prefetch_model = self.prefetch_model, None
        loop = asyncio.get_running_loop()
        if prefetch and model is not None and self.prefetch is not None:
            loop.call_soon(self.prefetch, model)
        if self._awaiting == 0 and self._all_in is not None:
            loop.call_later(FIRST_TOKEN_SETTLE_S, self._settle)

    def _settle(self) -> None:
        if self._awaiting == 0 and self._all_in is not None:
            self._all_in.set()

    async def all_in(self) -> None:
        """Return once no reply waits for its first token (and that token had time to be painted)."""
        if self._all_in is None:
            self._all_in = asyncio.Event()
            if self._awaiting == 0:
                self._all_in.set()
        await self._all_in.wait()
