"""What `strata chat` and `strata remote chat` share: thinking, JSON output, tools, and printing a
reply as it streams.

Both run the reply through the core's chat service (the same one the app uses), so thinking,
tool calls and structured output behave the same in both and in the app:

- ``--think on|off|low|medium|high`` sets the conversation's thinking (``low``..``high`` also set
  the effort, for templates that take one);
- ``--json-schema FILE`` asks for JSON that follows the schema (the engine enforces it with a
  grammar); the reply is checked against it;
- ``--mcp-config FILE`` offers the tools of the servers in an ``mcpServers`` JSON file (the servers
  saved in the app are not used). Every call is asked about first: ``--allow-tool SERVER.NAME``
  (that server's tool only; a bare ``NAME`` while only one server has such a tool; repeatable) and
  ``--allow-all-tools`` answer in advance; otherwise the command asks on the
  terminal when it is interactive and denies the call when it is not (a pipe, a script), saying
  so. ``--tool-choice required`` makes the model's first step a tool call;
- ``--extra-body JSON`` sends server-specific fields with every request (``logit_bias`` ...).

Printing: the answer goes to standard output, the thinking to standard error (dimmed on a
terminal), and tool calls, notices and statistics to standard error. ``--json`` prints one object
at the end: ``reply``, ``reasoning``, ``tool_calls`` (``name``, ``arguments``, ``result``, ``status``),
``structured`` (with ``--json-schema``), ``stats``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from strata_gui.core.base import ChatError, run_blocking, shown
from strata_gui.core.chat import (
    OUTPUT_SCHEMA,
    TOOL_RUNNING,
    ChatEvent,
    ChatService,
    ChatTools,
    Message,
    MessageAdded,
    MessageDelta,
    MessageUpdated,
    ReplyProgress,
    StructuredOutput,
    ThinkingSettings,
    ToolApproval,
)
from strata_gui.core.runtime import parse_tool_arguments
from strata_gui.core.tools import (
    AllowedTools,
    Decision,
    McpHost,
    MemoryApprovals,
    ToolPolicy,
    load_mcp_config,
)

THINK_CHOICES = ("on", "off", "low", "medium", "high")
DIM, RESET = "\x1b[2m", "\x1b[0m"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--think --json-schema --mcp-config --allow-tool --allow-all-tools``."""
    p.add_argument("--think", choices=THINK_CHOICES, default=None,
                   help="thinking on or off, or on with an effort level (models whose template has them)")
    p.add_argument("--json-schema", type=Path, default=None, metavar="FILE",
                   help="reply with JSON that follows this JSON schema (checked when the reply ends)")
    g = p.add_argument_group("tools (MCP); every call is asked about first")
    g.add_argument("--mcp-config", type=Path, default=None, metavar="FILE",
                   help="offer the tools of the servers in this mcpServers JSON file (Claude Desktop, Cursor, "
                        "LM Studio)")
    g.add_argument("--allow-tool", action="append", default=[], metavar="NAME",
                   help="let this tool run without asking: SERVER.NAME (that server's tool only), or NAME when "
                        "only one server has a tool of that name; repeat for more")
    g.add_argument("--allow-all-tools", action="store_true",
                   help="let every tool run without asking. Without this or --allow-tool, a terminal is asked "
                        "and anything else is denied")
    g.add_argument("--tool-choice", choices=("auto", "required"), default="auto",
                   help="required: the model must call a tool first (later it may answer); default auto")
    p.add_argument("--extra-body", default=None, metavar="JSON",
                   help='fields sent with every request as they are, e.g. \'{"logit_bias": [["a", false]]}\' '
                        "(llama-server's logit_bias, grammar, n_probs, ...)")


def thinking(choice: str | None) -> ThinkingSettings:
    """``--think`` as a conversation's thinking settings."""
    if choice is None:
        return ThinkingSettings()
    if choice in ("on", "off"):
        return ThinkingSettings(enabled=choice == "on")
    return ThinkingSettings(enabled=True, effort=choice)  # type: ignore[arg-type]


def structured_output(schema_file: Path | None) -> StructuredOutput:
    """``--json-schema FILE`` as a conversation's structured output (checked here, before loading).

    Raises:
        ChatError: The file cannot be read or is not a valid JSON schema.
    """
    if schema_file is None:
        return StructuredOutput()
    try:
        text = schema_file.expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ChatError(f"Cannot read the schema {schema_file}: {exc.strerror or exc}.") from exc
    output = StructuredOutput(OUTPUT_SCHEMA, text)
    output.response_format()  # a bad schema fails now, with where and why
    return output


@dataclass
class Printer:
    """Prints a reply as it streams: answer to ``out``, thinking and the rest to ``err``.

    Args:
        out: Where the answer goes (standard output).
        err: Where thinking, tool calls, notices and statistics go (standard error).
        quiet: Print nothing while streaming (``--json``: one object at the end).
    """

    out: TextIO
    err: TextIO
    quiet: bool = False
    notices: list[str] = field(default_factory=list)
    _thinking: bool = False  # the last thing printed was thinking (the answer starts on a new line)
    _silent_said: set[int] = field(default_factory=set)
    _calls_said: set[tuple[int, str]] = field(default_factory=set)

    def _dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self.err.isatty() else text

    def on_event(self, event: ChatEvent) -> None:
        if isinstance(event, MessageDelta):
            if self.quiet:
                return
            if event.thinking:
                self.err.write(self._dim(_streamed(event.thinking)))
                self.err.flush()
                self._thinking = True
            if event.text:
                if self._thinking:
                    self.err.write("\n")
                    self._thinking = False
                self.out.write(_streamed(event.text))
                self.out.flush()
        elif isinstance(event, ReplyProgress):
            if event.silent and event.message_id not in self._silent_said:
                self._silent_said.add(event.message_id)
                self.say(event.text)
        elif isinstance(event, MessageUpdated):
            self._tool_calls(event.message)
        elif isinstance(event, MessageAdded) and event.message.role == "tool" and not self.quiet:
            self._end_line()
            result = " ".join(event.message.content.split())
            self.err.write(shown(f"tool {event.message.tool_name} → {result[:300]}") + "\n")
            self.err.flush()

    def _tool_calls(self, msg: Message) -> None:
        if self.quiet:
            return
        for call in msg.tool_calls:
            key = (msg.id, call.id)
            if call.status == TOOL_RUNNING and key not in self._calls_said:
                self._calls_said.add(key)
                self._end_line()
                self.err.write(shown(f"calling {call.name}({call.arguments})") + "\n")
                self.err.flush()

    def _end_line(self) -> None:
        if self._thinking:
            self.err.write("\n")
            self._thinking = False

    def say(self, text: str) -> None:
        """A note on standard error (also kept for ``--json``'s ``notices``)."""
        self.notices.append(text)
        self._end_line()
        self.err.write(f"note: {shown(text)}\n")
        self.err.flush()


def _streamed(text: str) -> str:
    """A piece of the model's reply, safe for a terminal (:func:`shown`): a model or a remote engine
    can write ESC too. Windows line ends are plain line ends, not a visible ``\\x0d``."""
    return shown(text.replace("\r\n", "\n"))


def extra_body(text: str | None) -> dict[str, Any]:
    """``--extra-body JSON`` as a dict.

    Raises:
        ChatError: It is not a JSON object.
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ChatError(f"--extra-body is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ChatError("--extra-body must be a JSON object, e.g. '{\"n_probs\": 3}'.")
    return value


def configure(service: ChatService, args: argparse.Namespace, printer: Printer,
              log_dir: Path | None = None) -> McpHost | None:
    """Give ``service`` the run's request fields, tools and the way to approve their calls;
    returns the host to close afterwards (None without ``--mcp-config``).

    Raises:
        ToolConfigError: The ``--mcp-config`` file is not usable.
        ChatError: ``--extra-body`` is not a JSON object.
    """
    service.request_extra = extra_body(args.extra_body)
    service.tool_choice = args.tool_choice
    if args.mcp_config is None:
        service.tools = None
        return None
    host = McpHost(load_mcp_config(args.mcp_config.expanduser()), log_dir=log_dir)
    tools = ChatTools(host, ToolPolicy(MemoryApprovals()))
    service.tools = lambda: tools
    allowed = AllowedTools(args.allow_tool, (s.name for s in host.servers))
    service.approver = approver(allowed, args.allow_all_tools, sys.stdin, printer)
    return host


def approver(allowed: AllowedTools, allow_all: bool, stdin: TextIO,
             printer: Printer) -> Callable[[ToolApproval], Any]:
    """The command line's answer to a tool call: allowed in advance, asked on a terminal, or denied."""
    interactive = stdin.isatty()

    async def ask(approval: ToolApproval) -> Decision:
        req = approval.request
        if allow_all or allowed.allows(req):
            return Decision.ALLOW_ONCE
        if allowed.ambiguous(req):
            printer.say(f"--allow-tool {req.tool} allows none of the {len(req.offered_by)} servers' tools of that "
                        f"name ({', '.join(req.offered_by)}); name one: --allow-tool {req.server}.{req.tool}")
        if not interactive:
            printer.say(f"the tool {req.tool} of {req.server} was not allowed to run: nobody is at a terminal "
                        f"to ask (pass --allow-tool {req.server}.{req.tool} or --allow-all-tools)")
            return Decision.DENY
        question = (f"\nThe model wants to run {req.tool} (server {req.server}) with "
                    f"{json.dumps(dict(req.arguments), ensure_ascii=False)}\n"
                    "Allow? [y] once, [a] always this run, [N] no: ")

        def prompt() -> str:
            printer.err.write(shown(question))
            printer.err.flush()
            return stdin.readline().strip().lower()

        answer = await run_blocking(prompt, name="strata-tool-approval")
        if answer in ("a", "always"):
            return Decision.ALWAYS
        return Decision.ALLOW_ONCE if answer in ("y", "yes") else Decision.DENY

    return ask


def turn(service: ChatService, conversation_id: int, after: int) -> list[Message]:
    """The assistant and tool messages of the last turn (saved after message ``after``)."""
    return [m for m in service.store.messages(conversation_id) if m.id > after and m.role in ("assistant", "tool")]


def result_json(messages: list[Message]) -> dict[str, Any]:
    """``reply``, ``reasoning``, ``tool_calls`` and ``structured`` of one turn for ``--json``."""
    replies = [m for m in messages if m.role == "assistant"]
    final = replies[-1] if replies else None
    calls = []
    for m in replies:
        for c in m.tool_calls:
            try:
                arguments: Any = parse_tool_arguments(c.arguments)
            except ChatError:  # as the model wrote them (the call's result says why they were refused)
                arguments = c.arguments
            calls.append({"name": c.name, "arguments": arguments, "result": c.result, "status": c.status})
    out: dict[str, Any] = {
        "reply": final.content if final else "",
        "reasoning": "\n\n".join(m.thinking for m in replies if m.thinking),
        "tool_calls": calls,
    }
    if final is not None and "structured" in final.settings:
        out["structured"] = final.settings["structured"]
    return out
