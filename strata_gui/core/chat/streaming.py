"""Streaming one reply into a saved message, on the chat's engine or a remote one, and settling it.

Whatever arrived is kept however the stream ends: Stop, the engine failing (the reply is then
interrupted, and sent afresh when the pool's fallback loop moves to the next engine), or the
engine's chat-format parser rejecting the model's output. While nothing streams, the engine is
asked how far it is (:class:`ReplyProgress`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata_gui.core.base import texts
from strata_gui.core.base.errors import ChatError, ChatFormatError, ServerError, StorageError, StrataError
from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.runtime.client import ChatClient, ChatReply, ReplyStats, RequestOptions, split_lone_close
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import ProcessEnded

from .announcer import ChatAnnouncer
from .conversations import Conversations
from .engine import ChatEngine
from .events import ChatEvent, MessageUpdated, ReplyClient, ReplyProgress, TemplateInfo
from .first_token import FirstTokens
from .model import ChatModel
from .records import (
    COMPLETE,
    FAILED,
    FORMAT_FAILED,
    INTERRUPTED,
    OUTPUT_OFF,
    STOPPED,
    STREAMING,
    Conversation,
    Message,
    ToolCallRecord,
)
from .replies import DELTA_INTERVAL, ReplyBuffer, ReplyTarget
from .store import ConversationStore

if TYPE_CHECKING:
    from strata_gui.core.documents import DocumentContext

log = logging.getLogger(__name__)

# (engine that answered, model, the reply's statistics) → the ceilings and shares to keep with them.
LimitSource = Callable[[EngineSpec | None, Path, ReplyStats], Awaitable[dict[str, Any]]]
WATCH_INTERVAL = 1.0  # s between looks at the engine's progress while nothing streams
SILENCE_NOTICE_S = 15.0  # s of the engine generating with nothing arriving before the reply says so


def with_passages(history: list[dict[str, Any]], sources: DocumentContext) -> None:
    """Put the documents' numbered passages before the last question of ``history`` (in place; the
    saved message keeps the user's words)."""
    from strata_gui.core.documents import with_sources

    for item in reversed(history):
        if item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            item["content"] = with_sources(content, sources)
        elif isinstance(content, list):
            parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
            question = parts[0].get("text", "") if parts else ""
            rest = [p for p in content if p not in parts[:1]]
            item["content"] = [{"type": "text", "text": with_sources(str(question), sources)}, *rest]
        return


class ReplyStreamer:
    """Streams replies into saved assistant messages (a :class:`~strata_gui.core.chat.replies.ReplySink`).

    Args:
        store: Where the replies are saved.
        conversations: The history each request sends.
        chat_model: The model that answers, or the remote endpoint that answers instead.
        engine: The chat's engine along its plan (where a local reply runs).
        announcer: Tells the chat's listeners.
        first_tokens: Counts the replies waiting for their first token.
        clock: Monotonic clock (save throttling, delta batching, statistics of a stopped reply).
        save_interval: Seconds between saves of a reply that is streaming.
        delta_interval: Shortest time between two :class:`MessageDelta` events of a streaming
            reply (the text in between is batched): about one display frame.
        watch_interval: Seconds between looks at the engine's progress while nothing streams.
        silence_notice_s: After this long with the engine generating and nothing arriving, the
            reply says so (:class:`ReplyProgress`).

    Attributes:
        limits: A local reply → its ceilings and shares (``"limit"``: decode against memory,
            ``"prefill_limit"``: prefill against arithmetic); None: not shown.
    """

    def __init__(self, store: ConversationStore, conversations: Conversations, chat_model: ChatModel,
                 engine: ChatEngine, announcer: ChatAnnouncer, first_tokens: FirstTokens, *, clock: Callable[[], float],
                 save_interval: float = 1.0, delta_interval: float = DELTA_INTERVAL,
                 watch_interval: float = WATCH_INTERVAL, silence_notice_s: float = SILENCE_NOTICE_S) -> None:
        self.store = store
        self.conversations = conversations
        self.chat_model = chat_model
        self.engine = engine
        self.first_tokens = first_tokens
        self.clock = clock
        self.save_interval = save_interval
        self.delta_interval = delta_interval
        self.watch_interval = watch_interval
        self.silence_notice_s = silence_notice_s
        self.limits: LimitSource | None = None
        self._announcer = announcer
        # Per conversation, the documents' passages its question goes with (set for one turn).
        self.sources: dict[int, DocumentContext] = {}
        self._replies: dict[int, Message] = {}  # replies being written, as they were created
        self._live: dict[int, ReplyBuffer] = {}  # their text so far

    # -- what the reply buffers report (ReplySink) ---------------------------------------------------
    def now(self) -> float:
        """The clock replies are timed by."""
        return self.clock()

    def emit(self, event: ChatEvent) -> None:
        """Tell the chat's listeners."""
        self._announcer.emit(event)

    def first_piece(self) -> None:
        """The first piece of the reply this task answers arrived."""
        self.first_tokens.arrived()

    def save_partial(self, message_id: int, text: str, thinking: str) -> None:
        """Save a reply being written; a failure is logged and the reply goes on (saved at its end)."""
        try:
            self.store.update_message(message_id, content=text, thinking=thinking)
        except StorageError as exc:  # a full disk, a lock held elsewhere
            log.warning("could not save the reply being written: %s", exc.message)

    # -- one reply ----------------------------------------------------------------------------------
    def new_reply(self, conv: Conversation, *, sources: DocumentContext | None = None) -> Message:
        """Save an empty streaming assistant message in ``conv`` with the settings it is asked with
        (and the documents' passages it is given: ``documents``, read back with the reply)."""
        settings: dict[str, Any] = {"system_prompt": conv.system_prompt, "sampling": conv.sampling.to_json(),
                                    "model": str(self.chat_model.path or "")}
        sources = sources or self.sources.get(conv.id)
        if sources is not None:
            settings["documents"] = sources.record()
        remote = self.chat_model.remote
        if remote is not None:
            settings["model"] = remote.label
        if conv.structured_output.mode != OUTPUT_OFF:
            settings["output"] = conv.structured_output.to_json()
        reply = self.store.add_message(conv.id, "assistant", "", status=STREAMING, settings=settings)
        self._replies[reply.id] = reply
        return reply

    def live_reply(self, message: Message) -> Message:
        """``message`` as shown now if it is a reply being written (its saved copy is up to a second
        behind: a conversation opened again mid-reply showed a gap before the new text), else as is."""
        buffer = self._live.get(message.id)
        if buffer is None:
            return message
        text, thinking = buffer.shown()
        return dataclasses.replace(message, content=text, thinking=thinking)

    async def stream(self, conv: Conversation, reply: Message, options: RequestOptions,
                     on_progress: ProgressCallback | None, template: TemplateInfo | None) -> Message:
        """Stream one request's reply into ``reply`` (saved, streaming) and settle it.

        Raises:
            ServerError: The engine failed while answering and no other may take over (the
                partial reply is kept).
            ChatFormatError: The engine's chat-format parser rejected the model's output (the
                partial reply is saved first).
        """
        history = self.conversations.history(conv, upto=reply.id, with_images=self.chat_model.accepts_images,
                                             with_reasoning=template is not None and template.keeps_past_reasoning)
        sources = self.sources.get(conv.id)
        if sources is not None:
            with_passages(history, sources)
        remote = self.chat_model.remote
        if remote is not None:
            # Broken off midway: what came is kept and goes back to the model, as for a local engine.
            where = ReplyTarget(remote.label, "remote", f"remote:{remote.label}", INTERRUPTED, "interrupted")
            return await self._stream_into(reply.id, remote, history, conv, options, where)
        if self.chat_model.path is not None and not self.engine.ready:
            self._announcer.announce()  # the engine starts first: the user sees their message meanwhile
        return await self._stream_local(conv, reply, options, on_progress, history)

    async def _stream_local(self, conv: Conversation, reply: Message, options: RequestOptions,
                            on_progress: ProgressCallback | None, history: list[dict[str, Any]]) -> Message:
        attempts = 0
        job_failed = False  # the last attempt's request failed (its partial reply is kept)
        ran_on: EngineSpec | None = None
        # llama-server then sends its count of the tokens generated with every chunk: the live
        # counter counts what the final statistics count (a piece is not a token).
        counted_options = dataclasses.replace(options, extra={**options.extra, "timings_per_token": True})

        async def answer(spec: EngineSpec, client: ChatClient) -> Message:
            nonlocal attempts, job_failed, ran_on
            attempts += 1
            ran_on = spec
            self.first_tokens.prefetch_model = self.chat_model.path  # read once the first token is in
            if attempts > 1:  # the last engine failed: start the reply afresh on this one
                self._restart_reply(reply.id)
            job_failed = False
            where = ReplyTarget(spec.label, spec.backend, f"local:{spec.label}", INTERRUPTED, "interrupted",
                                spec=spec, model=self.chat_model.path)
            try:
                return await self._stream_into(reply.id, client, history, conv, counted_options, where)
            except ServerError:
                job_failed = True
                raise

        try:
            done = await self.engine.run(answer, on_progress, activity="answering")
        except asyncio.CancelledError:
            if self._unanswered(reply.id):  # stopped while the engine was loading
                self.finish(reply.id, "", STOPPED, ReplyStats(finish_reason="stopped"))
            raise
        except ProcessEnded as exc:
            if job_failed:  # it died while answering and no other engine may take over
                said = exc.message if exc.message.endswith(".") else exc.message + "."
                raise ServerError(texts.T(QT_TRANSLATE_NOOP("Core", "{error} The partial reply was kept."), error=said),
                                  hint=QT_TRANSLATE_NOOP("Core", "Send again to restart the engine."),
                                  details=exc.details) from exc
            if self._unanswered(reply.id):
                self.finish(reply.id, "", FAILED, ReplyStats(finish_reason="engine failed"))
            raise
        except Exception:
            if self._unanswered(reply.id):
                self.finish(reply.id, "", FAILED, ReplyStats(finish_reason="engine failed"))
            raise
        if ran_on is not None:
            self.engine.offer_depth_switch(self.conversations.context_used(conv.id), ran_on)
        return done

    def _restart_reply(self, reply_id: int) -> None:
        self.store.update_message(reply_id, content="", thinking="", status=STREAMING)
        again = self.store.message(reply_id)
        assert again is not None
        self.emit(MessageUpdated(again))

    def _unanswered(self, reply_id: int) -> bool:
        """No attempt settled the reply (an engine never started for it)."""
        current = self.store.message(reply_id)
        return current is not None and current.status == STREAMING

    async def _stream_into(self, reply_id: int, client: ReplyClient, history: list[dict[str, Any]],
                           conv: Conversation, options: RequestOptions, where: ReplyTarget) -> Message:
        """Stream one request's reply into the saved message ``reply_id`` and settle it.

        Whatever arrived is kept however the stream ends: Stop, the engine failing, or its
        chat-format parser rejecting the model's output (:class:`ChatFormatError`, raised after the
        partial reply is saved; never an engine failure).
        """
        buffer = ReplyBuffer(reply_id, self)
        watch = self._watch(buffer, client)
        self._live[reply_id] = buffer
        try:
            try:
                result = await client.stream(history, sampling=conv.sampling, options=options, on_piece=buffer.add,
                                             on_sent=self._announcer.announce)
                # The last tokens may carry no text (the end of a grammar, the end-of-text token):
                # the counter's last value is the count the statistics show.
                buffer.tokens = max(buffer.tokens, result.stats.predicted_n or 0)
                await buffer.complete()
            finally:
                if watch is not None:
                    watch.cancel()
                buffer.flush()  # listeners get all the text before the final update
        except BaseException as exc:
            self._settle_broken(reply_id, buffer, options, where, exc)
            raise
        finally:
            self._live.pop(reply_id, None)
        stats = result.stats
        stats.engine, stats.backend = where.engine, where.backend
        if options.max_tokens is not None and options.max_tokens > 0:
            stats.extra["output_limit"] = options.max_tokens
        await self._add_limit(stats, where)
        settings = self._checked_output(reply_id, conv, result.text, stats.finish_reason)
        return self.finish(reply_id, result.text, COMPLETE, stats, thinking=result.thinking,
                           tool_calls=[ToolCallRecord.from_call(c) for c in result.tool_calls],
                           ran_on=where.ran_on, settings=settings)

    def _settle_broken(self, reply_id: int, buffer: ReplyBuffer, options: RequestOptions, where: ReplyTarget,
                       exc: BaseException) -> None:
        """Save what arrived of a reply whose stream ended with ``exc`` (which the caller raises on)."""
        if isinstance(exc, asyncio.CancelledError):
            text, thinking = self._kept(buffer, options)
            self.finish(reply_id, text, STOPPED, where.stats(buffer.counted_stats(), "stopped"),
                        thinking=thinking, ran_on=where.ran_on)
        elif isinstance(exc, ChatFormatError):
            partial = exc.partial if isinstance(exc.partial, ChatReply) else None
            if partial is None:
                partial = ChatReply(buffer.text, buffer.counted_stats(), buffer.thinking_text)
            self.finish(reply_id, partial.text, FORMAT_FAILED, where.stats(partial.stats, "chat format"),
                        thinking=partial.thinking, tool_calls=[ToolCallRecord.from_call(c) for c in partial.tool_calls],
                        ran_on=where.ran_on)
        elif isinstance(exc, ServerError):
            text, thinking = self._kept(buffer, options)
            self.finish(reply_id, text, where.broken, where.stats(ReplyStats(), where.broken_reason),
                        thinking=thinking, ran_on=where.ran_on)
        elif isinstance(exc, Exception):
            self.finish(reply_id, buffer.text, FAILED, where.stats(ReplyStats(), "error"),
                        thinking=buffer.thinking_text, ran_on=where.ran_on)

    @staticmethod
    def _kept(buffer: ReplyBuffer, options: RequestOptions) -> tuple[str, str]:
        """(answer, thinking) of a reply that ended early, told apart as a finished one would be: with
        only ``</think>`` in the text (the prompt opened the thinking), the thinking was saved as
        the answer, and sent back to the model as what it had said."""
        if options.split_thinking:
            return split_lone_close(buffer.text, buffer.thinking_text)
        return buffer.text, buffer.thinking_text

    async def _add_limit(self, stats: ReplyStats, where: ReplyTarget) -> None:
        """Keep the ceilings with a local reply's statistics ("71 % of this GPU's memory limit",
        "18 % of this GPU's compute limit")."""
        if self.limits is None or where.model is None or not (stats.decode_tps or stats.prefill_tps):
            return
        try:
            stats.extra.update(await self.limits(where.spec, where.model, stats))
        except (StrataError, OSError) as exc:
            log.info("no ceilings for %s: %s", where.model, exc)

    def _checked_output(self, reply_id: int, conv: Conversation, text: str,
                        finish_reason: str | None) -> dict[str, Any] | None:
        """The reply's settings with the structured-output check added (None: no structured output)."""
        output = conv.structured_output
        if output.mode == OUTPUT_OFF or finish_reason == "tool_calls":
            return None
        from strata_gui.core.runtime.structured import check_json  # jsonschema, only when used

        fmt = output.response_format()
        check = check_json(text, fmt.schema if fmt is not None else None)
        msg = self.store.message(reply_id)
        settings = dict(msg.settings) if msg is not None else {}
        settings["structured"] = {"mode": output.mode, "ok": check.ok, "problems": list(check.problems)}
        return settings

    # -- while nothing streams ----------------------------------------------------------------------
    def _watch(self, buffer: ReplyBuffer, client: ReplyClient) -> asyncio.Task[None] | None:
        """Start looking at the engine's progress while nothing streams (None: it cannot say)."""
        progress = getattr(client, "decoded_tokens", None)
        if progress is None:
            return None
        return asyncio.get_running_loop().create_task(self._watch_progress(buffer, progress))

    async def _watch_progress(self, buffer: ReplyBuffer, progress: Callable[[], Awaitable[int | None]]) -> None:
        """While no piece arrives for two looks in a row, ask the engine how far it is and tell the
        listeners (the counter moves on); after ``silence_notice_s`` of that, the reply says so."""
        interval = self.watch_interval
        while True:
            await asyncio.sleep(interval)
            silent = self.clock() - buffer.last_seen
            if silent < 2 * interval:
                continue  # streaming: the pieces carry the count
            decoded = await progress()
            if decoded is None:
                continue
            buffer.decoded = max(buffer.decoded, decoded)
            tokens = max(decoded, buffer.tokens)
            notice = silent >= self.silence_notice_s and decoded > buffer.tokens
            self.emit(ReplyProgress(buffer.message_id, tokens, silent, decoded, notice))

    # -- the end ------------------------------------------------------------------------------------
    def finish(self, message_id: int, content: str, status: str, stats: ReplyStats, ran_on: str | None = None, *,
               thinking: str | None = None, tool_calls: Sequence[ToolCallRecord] | None = None,
               settings: dict[str, Any] | None = None) -> Message:
        """Save the reply ``message_id`` as it ended and tell the listeners (:class:`MessageUpdated`).

        Raises:
            StorageError: It could not be saved (it is still shown as it ended).
            ChatError: Its conversation was deleted while it was written.
        """
        started = self._replies.pop(message_id, None)
        try:
            self.store.update_message(message_id, content=content, status=status, stats=stats, ran_on=ran_on,
                                      thinking=thinking, tool_calls=tool_calls or None, settings=settings)
            msg = self.store.message(message_id)
        except StorageError:
            # Not saved (a full disk, a lock held elsewhere): the reply is still shown as it ended,
            # never left "Generating…", and the error says why it was not kept.
            if started is not None:
                self.emit(MessageUpdated(dataclasses.replace(
                    started, content=content, status=status, stats=stats, ran_on=ran_on or started.ran_on,
                    thinking=thinking or "", tool_calls=tuple(tool_calls or ()), settings=settings or started.settings)))
            raise
        if msg is None:  # its conversation was deleted while the reply was written
            raise ChatError(QT_TRANSLATE_NOOP("Core", "The conversation was deleted while its reply was written."))
        self.emit(MessageUpdated(msg))
        return msg
