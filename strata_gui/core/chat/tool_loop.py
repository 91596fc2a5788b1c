"""The tool loop of a reply: offer the tools, run the calls the model asks for (each asked about
first), save their results and let the model go on, until it answers in words or reaches its
limit of rounds."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from strata_gui.core.base.errors import ToolError
from strata_gui.core.base.progress import ProgressCallback
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.client import ReplyStats, RequestOptions
from strata_gui.core.tools.approvals import ApprovalRequest, Decision

from .events import (
    ChatApprover,
    ChatEvent,
    ChatTools,
    MessageAdded,
    MessageUpdated,
    Notice,
    TemplateInfo,
    ToolApproval,
)
from .model import ChatModel
from .records import (
    COMPLETE,
    FAILED,
    STOPPED,
    TOOL_ALLOWED,
    TOOL_DENIED,
    TOOL_ERROR,
    TOOL_PENDING,
    TOOL_RUNNING,
    TOOL_STOPPED,
    Conversation,
    Message,
    ToolCallRecord,
)
from .store import ConversationStore
from .streaming import ReplyStreamer

if TYPE_CHECKING:
    from strata_gui.core.tools.host import ToolCatalog

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 8  # tool-call rounds per reply; the last one asks the model to answer in words


class ToolLoop:
    """Runs a reply's rounds of tool calls.

    Args:
        store: Where the calls and their results are saved.
        chat_model: The model that answers (whether its engine parses tool calls at all).
        streamer: Streams each round's reply.
        emit: Tells the chat's listeners.
        tools: The tools replies may call (built on first use: listing them starts the servers);
            None or returning None: no tools.
        max_rounds: Tool calls answered in one reply before the model must answer in words.

    Attributes:
        tools: As given (the CLI sets it from its arguments).
        approver: Asks the user about a tool call; None: calls are denied.
        tool_choice: "required": the first request of a reply must call a tool (later ones may
            answer); "auto": the model chooses.
        listed: A reply listed the tools this session (a read ahead may list them too).
    """

    def __init__(self, store: ConversationStore, chat_model: ChatModel, streamer: ReplyStreamer,
                 emit: Callable[[ChatEvent], None], *, tools: Callable[[], ChatTools | None] | None = None,
                 max_rounds: int = MAX_TOOL_ROUNDS) -> None:
        self.store = store
        self.chat_model = chat_model
        self.streamer = streamer
        self.tools = tools
        self.approver: ChatApprover | None = None
        self.tool_choice = "auto"
        self.listed = False
        self._emit = emit
        self._max_rounds = max_rounds

    def tools_for(self, template: TemplateInfo | None) -> ChatTools | None:
        """The tools to offer a reply: none without a tool host, when the engine does not parse the
        chat format (a tool call would arrive as text), or when the template has no tools."""
        if self.tools is None:
            return None
        if self.chat_model.remote is None:
            if not self.chat_model.launch_settings_or_default().chat_parsing:
                return None
            if template is not None and not template.tools:
                return None
        return self.tools()

    async def read_ahead_options(self, template: TemplateInfo | None, options: RequestOptions) -> RequestOptions | None:
        """``options`` with the tools a reply would offer, for reading its prompt ahead; None when
        they are not to be listed yet (that starts their servers: not before a reply used them)."""
        tools = self.tools_for(template)
        if tools is None:
            return options
        if not self.listed:
            return None
        catalog = await tools.host.list_tools()
        if catalog.tools:
            options = dataclasses.replace(options, tools=catalog.openai_tools(), tool_choice=self.tool_choice)
        return options

    async def converse(self, conv: Conversation, reply: Message, options: RequestOptions,
                       on_progress: ProgressCallback | None, template: TemplateInfo | None) -> Message:
        """Stream the reply; while it asks for tools, run them (each asked about first), save their
        results and let the model go on, until it answers in words. Returns the last reply."""
        tools = self.tools_for(template)
        catalog: ToolCatalog | None = None
        if tools is not None:
            try:
                catalog = await self._catalog(tools)
                self.listed = True
            except BaseException as exc:
                stopped = isinstance(exc, asyncio.CancelledError)
                self.streamer.finish(reply.id, "", STOPPED if stopped else FAILED,
                                     ReplyStats(finish_reason="stopped" if stopped else "error"))
                raise
        rounds = 0
        while True:
            last = rounds >= self._max_rounds
            offered = options
            if catalog is not None:
                # The last round still shows the tools (the history holds calls of them) but asks for words.
                choice = "none" if last else self.tool_choice if rounds == 0 else "auto"
                offered = dataclasses.replace(options, tools=catalog.openai_tools(), tool_choice=choice)
            done = await self.streamer.stream(conv, reply, offered, on_progress, template)
            if catalog is not None and last and done.status == COMPLETE and done.tool_calls:
                return self._past_the_limit(done)
            if catalog is None or tools is None or last or done.status != COMPLETE or not done.tool_calls:
                return done
            await self._run_tools(done, catalog, tools)
            rounds += 1
            reply = self.streamer.new_reply(conv)
            self._emit(MessageAdded(reply))

    def _past_the_limit(self, done: Message) -> Message:
        """Asked for words, the model called tools again (a remote server may ignore "none"): its
        calls are answered as not run, so none waits for an answer that never comes."""
        limit = T(QT_TRANSLATE_NOOP("Core", "Not run: this reply reached its limit of {rounds} rounds of "
                                            "tool calls."), rounds=self._max_rounds)
        self._answer_unrun(done, limit, "limit")
        self._emit(Notice(limit))
        return self.store.message(done.id) or done

    async def _catalog(self, tools: ChatTools) -> ToolCatalog | None:
        catalog = await tools.host.list_tools()
        for problem in catalog.problems:  # the others' tools are still offered: the chat goes on
            err = problem.error
            self._emit(Notice(err.message + (f" {err.hint}" if err.hint else ""), err.details or ""))
        return catalog if catalog.tools else None

    async def _run_tools(self, reply: Message, catalog: ToolCatalog, tools: ChatTools) -> None:
        """Run each call ``reply`` asked for, in order: ask (unless always allowed), call, save the
        result as a ``tool`` message. A server that fails gives a result saying so; Stop cancels
        the call running and is raised after the call and the reply are saved as stopped."""
        for record in reply.tool_calls:
            if record.status != TOOL_PENDING:
                continue
            try:
                await self._run_tool(reply, record, catalog, tools)
            except asyncio.CancelledError:  # Stop: the calls after it are not run, and say so
                self._answer_unrun(reply, QT_TRANSLATE_NOOP("Core", "Not run: stopped by the user."), "stopped")
                raise

    def _answer_unrun(self, reply: Message, text: str, outcome: str) -> None:
        """Answer every call of ``reply`` still pending with ``text`` (saved, shown, and sent to the
        model as its result, so no call is left waiting)."""
        current = self.store.message(reply.id)
        for record in (current or reply).tool_calls:
            if record.status != TOOL_PENDING:
                continue
            status = TOOL_STOPPED if outcome == "stopped" else TOOL_ERROR  # Stop is no failure of the tool
            self.store.update_tool_call(reply.id, dataclasses.replace(record, status=status, result=text))
            self._add_tool_message(reply, record, text, {"outcome": outcome})
        msg = self.store.message(reply.id)
        if msg is not None:
            self._emit(MessageUpdated(msg))

    def _update_call(self, reply: Message, changed: ToolCallRecord) -> None:
        self.store.update_tool_call(reply.id, changed)
        msg = self.store.message(reply.id)
        if msg is not None:
            self._emit(MessageUpdated(msg))

    async def _run_tool(self, reply: Message, record: ToolCallRecord, catalog: ToolCatalog, tools: ChatTools) -> None:
        started: list[bool] = []  # the call ran (approved or always allowed), not only waited for an answer

        async def approve(request: ApprovalRequest) -> Decision:
            approver = self.approver
            if approver is None:
                log.info("tool call %s denied: nobody to ask", record.name)
                return Decision.DENY
            decision = await approver(ToolApproval(reply.id, record.id, request))
            if decision.allowed:
                started.append(True)
                self._update_call(reply, dataclasses.replace(record, status=TOOL_RUNNING))
            return decision

        try:
            tool = catalog.resolve(record.name)
        except ToolError:
            tool = None
        if tool is not None and tools.policy.is_always_allowed(tool.server, tool.name):
            started.append(True)
            self._update_call(reply, dataclasses.replace(record, status=TOOL_RUNNING))
        try:
            result = await tools.host.run_call(catalog, record.name, record.arguments, policy=tools.policy,
                                               approver=approve)
        except asyncio.CancelledError:
            stopped = (QT_TRANSLATE_NOOP("Core", "Stopped by the user before the tool finished.") if started
                       else QT_TRANSLATE_NOOP("Core", "Not run: stopped by the user."))
            self._update_call(reply, dataclasses.replace(record, status=TOOL_STOPPED, result=stopped))
            self._add_tool_message(reply, record, stopped, {"outcome": "stopped"})
            raise
        from strata_gui.core.tools.host import ToolOutcome  # loaded with the host, when tools are used

        status = {ToolOutcome.OK: TOOL_ALLOWED, ToolOutcome.DENIED: TOOL_DENIED}.get(result.outcome, TOOL_ERROR)
        self._update_call(reply, dataclasses.replace(record, status=status, result=result.text,
                                                     duration_s=result.duration_s))
        info: dict[str, Any] = {"server": result.server, "tool": result.tool, "outcome": result.outcome.value}
        if result.details:
            info["details"] = result.details
        self._add_tool_message(reply, record, result.text, info)

    def _add_tool_message(self, reply: Message, record: ToolCallRecord, text: str, info: dict[str, Any]) -> None:
        msg = self.store.add_message(reply.conversation_id, "tool", text, settings=info, tool_call_id=record.id,
                                     tool_name=record.name)
        self._emit(MessageAdded(msg))
