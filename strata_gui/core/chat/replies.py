"""A streaming reply as it arrives: the pieces gathered, batched to about one event per frame,
saved about once a second, and counted when it is cut short.

:class:`ReplyBuffer` knows nothing of the service that streams it: it reports through a
:class:`ReplySink` (the clock, the pacing, where events and partial saves go, the first piece).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from strata_gui.core.runtime.client import (
    ANSWER,
    THINKING,
    ReplyStats,
    StreamPiece,
    counted_rate,
)
from strata_gui.core.runtime.engine import EngineSpec

from .events import ChatEvent, MessageDelta

DELTA_INTERVAL = 0.016  # s: one frame at 60 Hz; streamed text reaches listeners at most this often
YIELD_S = 0.001  # s: a turn of the loop that lets it serve timers and input: under qasync a 0 s sleep
# runs before Qt's other timers (it chains with the work before and after it, one long busy stretch)


class ReplySink(Protocol):
    """What a :class:`ReplyBuffer` reports to (the :class:`~strata_gui.core.chat.streaming.ReplyStreamer`)."""

    @property
    def delta_interval(self) -> float:
        """Shortest time between two :class:`MessageDelta` events of one reply (s)."""
        ...

    @property
    def save_interval(self) -> float:
        """Time between two saves of a reply being written (s)."""
        ...

    def now(self) -> float:
        """The monotonic clock the reply is timed by."""
        ...

    def emit(self, event: ChatEvent) -> None:
        """Tell the chat's listeners."""
        ...

    def first_piece(self) -> None:
        """The reply's first piece arrived (its time to first token is over)."""
        ...

    def save_partial(self, message_id: int, text: str, thinking: str) -> None:
        """Save the reply's text so far (a failure is the sink's to report: the reply goes on)."""
        ...


@dataclass(frozen=True)
class ReplyTarget:
    """Where a reply runs, and what an engine failure makes of it.

    Attributes:
        engine: The engine's label (kept in the reply's statistics).
        backend: Its backend ("cpu", "vulkan", ..., "remote").
        ran_on: What the saved reply says it ran on.
        broken: The status of a reply the engine failed (INTERRUPTED: it may be retried).
        broken_reason: The finish reason kept with such a reply.
        spec: The local engine that runs it (None: a remote one).
        model: The local model that answers (None: a remote one's).
    """

    engine: str
    backend: str
    ran_on: str
    broken: str
    broken_reason: str
    spec: EngineSpec | None = None
    model: Path | None = None

    def stats(self, stats: ReplyStats, reason: str) -> ReplyStats:
        """``stats`` marked as ended for ``reason`` here."""
        stats.finish_reason, stats.engine, stats.backend = reason, self.engine, self.backend
        return stats


class ReplyBuffer:
    """Collects a streaming reply, forwards it in batches, saves it about once per interval.

    Pieces arrive once per token (hundreds per second); listeners (the chat page's repaint, the
    CLI's print) need the text at most once per frame. The first piece goes out at once (time to
    first token is what the user waits for); later ones are sent together when ``delta_interval``
    has passed since the last event, by a timer when none arrives to carry them. Thinking and
    answer are kept apart; tool-call pieces only move the counter (the calls are saved whole).
    """

    __slots__ = ("_first", "_first_answer", "_interval", "_last", "_last_emit", "_last_save", "_sent", "_sent_thinking",
                 "_sink", "_started", "_think_first", "_timer", "decoded", "last_seen", "message_id", "pieces",
                 "prompt", "received", "thinking", "thinking_tokens", "tokens", "tool")

    def __init__(self, message_id: int, sink: ReplySink) -> None:
        now = sink.now()
        self.message_id = message_id
        self.pieces: list[str] = []  # the answer
        self.thinking: list[str] = []
        self.tokens = 0  # of every kind, as the pieces count them (the engine's count where it sends one)
        self.thinking_tokens = 0  # the thinking's share of them
        self.received = 0  # pieces of every kind
        self.decoded = 0  # the most the engine said it had generated while nothing arrived (/slots)
        self.tool = ""  # the function a tool call being written names
        self.prompt: int | None = None  # the prompt's tokens in the context (None: the engine does not say)
        self._sink = sink
        self._interval = sink.delta_interval
        self._last_save = now
        self._started = now
        self.last_seen = now  # when the last piece arrived (the request's start before the first)
        self._first: float | None = None
        self._first_answer: float | None = None
        self._think_first: float | None = None
        self._last: float | None = None
        self._sent = 0  # answer pieces already emitted
        self._sent_thinking = 0
        self._last_emit = -math.inf
        self._timer: asyncio.TimerHandle | None = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def thinking_text(self) -> str:
        return "".join(self.thinking).strip()

    def add(self, piece: StreamPiece) -> None:
        kind = piece[0]
        if kind == ANSWER:
            self.pieces.append(piece[1])
            if self._first_answer is None:
                self._first_answer = self._sink.now()
        elif kind == THINKING:
            self.thinking.append(piece[1])
            self.thinking_tokens = piece[2]
            if self._think_first is None:
                self._think_first = self._sink.now()
        else:
            self.tool = piece[5]
            if self._first_answer is None:
                self._first_answer = self._sink.now()
        self.tokens = piece[3]
        if piece[6] is not None:
            self.prompt = piece[6]
        self.received += 1
        sink = self._sink
        now = sink.now()
        if self._first is None:
            self._first = now
            sink.first_piece()
        self._last = self.last_seen = now
        if self._timer is None:
            wait = self._last_emit + self._interval - now
            if wait <= 0:
                self._emit(now)
            else:
                self._timer = asyncio.get_running_loop().call_later(wait, self.flush)
        if now - self._last_save >= sink.save_interval:
            self._last_save = now
            sink.save_partial(self.message_id, self.text, self.thinking_text)

    def flush(self) -> None:
        """Emit what was not sent yet (the timer's callback, and before the reply is finished)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sent < len(self.pieces) or self._sent_thinking < len(self.thinking):
            self._emit(self._sink.now())

    async def complete(self) -> None:
        """The engine finished: send the last text as complete, then give the loop a turn, so the
        reply's end is painted before it is saved and its statistics are shown (that work, in the
        same busy stretch, delayed the last paint and made the end the stream's longest stall)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._emit(self._sink.now(), complete=True)
        await asyncio.sleep(YIELD_S)

    def _emit(self, now: float, *, complete: bool = False) -> None:
        pieces, sent = self.pieces, self._sent
        text = pieces[-1] if sent == len(pieces) - 1 else "".join(pieces[sent:])
        self._sent = len(pieces)
        thinking = ""
        if self._sent_thinking < len(self.thinking):
            thinking = "".join(self.thinking[self._sent_thinking:])
            self._sent_thinking = len(self.thinking)
        self._last_emit = now
        context = self.prompt + self.tokens if self.prompt is not None else 0
        self._sink.emit(MessageDelta(self.message_id, text, complete, thinking, self.tokens, self.tool, context))

    def shown(self) -> tuple[str, str]:
        """The answer and thinking sent to listeners so far (what the next delta goes on from)."""
        return "".join(self.pieces[:self._sent]), "".join(self.thinking[:self._sent_thinking]).strip()

    def counted_stats(self) -> ReplyStats:
        """Statistics of a reply cut short (Stop, a format failure): the engine's final timings
        never arrive, so the last count the live counter showed is kept (the engine's, per chunk
        or from ``/slots`` while nothing arrived; never fewer) and the reply is timed here."""
        n = max(self.tokens, self.decoded)
        stats = ReplyStats(predicted_n=n)
        first, last = self._first, self._last
        if first is not None:
            stats.ttft_s = first - self._started
        if self._first_answer is not None:
            stats.answer_s = self._first_answer - self._started
        if self.thinking:
            stats.thinking_n = self.thinking_tokens or len(self.thinking)
            if self._think_first is not None:
                end = self._first_answer if self._first_answer is not None else last
                if end is not None:
                    stats.thinking_s = end - self._think_first
        if first is not None and last is not None:
            stats.decode_tps = counted_rate(self.tokens, self.received, last - first)
        return stats
