"""The MCP host: starts or reaches the user's tool servers, lists their tools, calls them.

Built on the official ``mcp`` SDK (``mcp.Client`` over its stdio and streamable-HTTP transports):
the protocol, its version negotiation and its shutdown sequence are the SDK's. This module adds
what a chat needs around it:

- **One worker loop.** Every session lives on one asyncio loop on a thread the host owns
  (:class:`~strata_gui.core.tools.loop_thread.LoopThread`); the host's methods are awaited from
  any loop, qasync's included (which on Windows cannot run asyncio subprocesses). Cancelling the
  awaiting task cancels the call on the worker loop (the SDK then sends the server a
  ``notifications/cancelled``) and returns once the call has unwound.
- **Lazy connections.** A server is started (stdio) or reached (HTTP) on first use, once, and kept;
  a call made while it starts waits for the same start.
- **Failures become results.** A server that cannot start, exits mid-call, hangs past the time
  limit, or answers with an error gives a :class:`ToolResult` with ``is_error`` and a sentence
  the user (and the model) can read; the session is dropped and the next call starts the server
  again. The chat goes on.
- **Tool names for the model.** :class:`ToolCatalog` turns every server's tools into the OpenAI
  ``tools`` field, with names unique and safe across servers, and maps them back.
- **Nothing left behind.** :meth:`McpHost.aclose` ends every session; the SDK stops each stdio
  server (stdin closed, then SIGTERM/SIGKILL of its process group; a job object on Windows).
  On Linux the server is also started under ``setpriv --pdeathsig KILL`` (when util-linux has it)
  so it dies with Strata even when Strata is killed; on Windows the SDK's job object, created with
  ``KILL_ON_JOB_CLOSE``, does the same.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from strata_gui import __version__
from strata_gui.core.base.errors import ChatError, ToolError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.tool_arguments import parse_tool_arguments
from strata_gui.core.tools.approvals import ApprovalRequest, Approver, ToolPolicy
from strata_gui.core.tools.config import STDIO, McpServerConfig
from strata_gui.core.tools.loop_thread import LoopThread
from strata_gui.core.tools.stdout_noise import watch_stdout

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

log = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT = 60.0  # seconds a tool call may take
DEFAULT_CONNECT_TIMEOUT = 30.0  # seconds a server may take to start and answer the handshake
DEFAULT_MAX_RESULT_CHARS = 100_000  # longer tool output is cut (it goes into the model's context)
MAX_TOOL_PAGES = 100  # tools/list pages read from one server (a paginator that never ends)
OPENAI_NAME_MAX = 64  # OpenAI's limit on a function name: ^[a-zA-Z0-9_-]{1,64}$
CLOSE_TIMEOUT = 15.0  # the SDK's own stop is bounded (~6.5 s); this only guards against a bug there
LOG_TAIL_LINES = 8
LOG_MAX_BYTES = 1_000_000  # a server's stderr log is started afresh past this size

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class ToolOutcome(enum.Enum):
    """How a tool call ended."""

    OK = "ok"
    TOOL_ERROR = "tool_error"  # the server ran the tool and reported an error
    CRASHED = "crashed"  # the server stopped (or the connection broke) during the call
    TIMED_OUT = "timed_out"  # no answer within the time limit; the server is restarted
    UNAVAILABLE = "unavailable"  # the server could not be started or reached
    UNKNOWN_TOOL = "unknown_tool"  # the model named a tool nobody offers
    BAD_ARGUMENTS = "bad_arguments"  # the model's arguments are not a JSON object
    DENIED = "denied"  # the user said no


@dataclass(frozen=True)
class ToolResult:
    """The result of one tool call, successful or not.

    Attributes:
        server: The tool server's name ("" when the tool was unknown).
        tool: The tool's name on that server (or the name the model used).
        outcome: How the call ended.
        text: The result as text: the tool's text content joined, or the error in a sentence.
            This is what goes back to the model.
        duration_s: Wall time of the call (0 when nothing was called).
        structured: The tool's structured result, when it gave one.
        details: Technical detail for the user (the server's last stderr lines); never sent to
            the model.
    """

    server: str
    tool: str
    outcome: ToolOutcome
    text: str
    duration_s: float = 0.0
    structured: Any = None
    details: str = ""

    @property
    def is_error(self) -> bool:
        return self.outcome is not ToolOutcome.OK

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"server": self.server, "tool": self.tool, "outcome": self.outcome.value,
                               "is_error": self.is_error, "text": self.text,
                               "duration_s": round(self.duration_s, 3)}
        if self.structured is not None:
            out["structured"] = self.structured
        if self.details:
            out["details"] = self.details
        return out


@dataclass(frozen=True)
class McpTool:
    """One tool of one server.

    Attributes:
        server: The server's name.
        name: The tool's name on the server (what is called).
        description: Its description (the server's words; "" if none).
        input_schema: The JSON schema of its arguments.
        openai_name: The function name the model sees (unique across servers, ``[A-Za-z0-9_-]{1,64}``).
        title: A display name the server gave ("" if none).
        hints: The server's annotations (``readOnlyHint``, ``destructiveHint``, ...): hints, not promises.
    """

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any] = field(hash=False)
    openai_name: str = ""
    title: str = ""
    hints: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_openai(self) -> dict[str, Any]:
        """This tool as one entry of the OpenAI ``tools`` field."""
        return {"type": "function",
                "function": {"name": self.openai_name, "description": self.description,
                             "parameters": openai_parameters(self.input_schema)}}

    def to_json(self) -> dict[str, Any]:
        return {"server": self.server, "name": self.name, "openai_name": self.openai_name,
                "title": self.title, "description": self.description,
                "input_schema": dict(self.input_schema), "hints": dict(self.hints)}


@dataclass(frozen=True)
class ServerProblem:
    """A server whose tools could not be listed, and why."""

    server: str
    error: ToolError

    def to_json(self) -> dict[str, Any]:
        return {"server": self.server, "message": self.error.message, "hint": self.error.hint or "",
                "details": self.error.details or ""}


@dataclass(frozen=True)
class ToolCatalog:
    """Every tool of the enabled servers, as listed at one moment, and the servers that failed.

    Attributes:
        tools: The tools, server by server in the configured order.
        problems: Servers that could not be listed (the others' tools are still there).
    """

    tools: tuple[McpTool, ...] = ()
    problems: tuple[ServerProblem, ...] = ()

    def openai_tools(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` field for a chat request (``[]`` when there are no tools)."""
        return [t.to_openai() for t in self.tools]

    def resolve(self, openai_name: str) -> McpTool:
        """The tool behind a function name the model used.

        Raises:
            ToolError: No tool has that name.
        """
        for t in self.tools:
            if t.openai_name == openai_name:
                return t
        raise ToolError(T(QT_TRANSLATE_NOOP("Core", "There is no tool named '{name}'."),
                          name=openai_name[:80]),
                        hint=QT_TRANSLATE_NOOP("Core", "The model asked for a tool that none of the enabled "
                                                       "tool servers offers."))

    def servers_offering(self, name: str) -> tuple[str, ...]:
        """The servers that have a tool named ``name`` (its name on the server), in order."""
        return tuple(dict.fromkeys(t.server for t in self.tools if t.name == name))

    def to_json(self) -> dict[str, Any]:
        return {"tools": [t.to_json() for t in self.tools], "problems": [p.to_json() for p in self.problems]}


def openai_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An MCP input schema as OpenAI ``parameters``: an object schema, always with ``properties``."""
    out = dict(schema)
    if out.get("type") != "object":
        out = {"type": "object", "properties": {}} if not out else {**out, "type": "object"}
    out.setdefault("properties", {})
    return out


def openai_names(keys: Sequence[tuple[str, str]]) -> list[str]:
    """Function names for ``(server, tool)`` pairs, in order: unique, ``[A-Za-z0-9_-]``, at most 64.

    A tool keeps its own name (cleaned) when no other server has one like it; otherwise it is
    prefixed with its server's name (``files__search``). Names that are still taken get a number.
    Linear in the number of tools: a server that lists 12,000 tools of one name took 13 s of CPU
    at every listing when each duplicate counted and numbered from the start again.
    """
    plain = [_clean(tool) for _, tool in keys]
    seen = collections.Counter(plain)
    taken: set[str] = set()
    next_number: dict[str, int] = {}  # per name: every number below it is taken already
    out = []
    for (server, tool), base in zip(keys, plain, strict=True):
        name = _fit(f"{_clean(server)}__{base}" if seen[base] > 1 else base, f"{server}\0{tool}")
        candidate, n = name, next_number.get(name, 2)
        while candidate in taken:
            suffix = f"_{n}"
            candidate = name[: OPENAI_NAME_MAX - len(suffix)] + suffix
            n += 1
        next_number[name] = n
        taken.add(candidate)
        out.append(candidate)
    return out


def _clean(name: str) -> str:
    return _UNSAFE.sub("_", name).strip("_") or "tool"


def _fit(name: str, original: str) -> str:
    if len(name) <= OPENAI_NAME_MAX:
        return name
    digest = hashlib.sha1(original.encode("utf-8")).hexdigest()[:8]
    return name[: OPENAI_NAME_MAX - 9] + "_" + digest


# -- content → text --------------------------------------------------------------------------------
def result_text(content: Iterable[Any], structured: Any = None) -> str:
    """The text of a tool result: text blocks as they are, other blocks in brackets
    (``[image: image/png, 68 bytes]``), the structured result as JSON when there is no text."""
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {block.mime_type}, {_b64_size(block.data)} bytes]")
        elif kind == "resource":
            res = block.resource
            text = getattr(res, "text", None)
            if isinstance(text, str):
                parts.append(text)
            else:
                parts.append(f"[resource {res.uri}: {res.mime_type or 'binary'}, {_b64_size(res.blob)} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.name} {block.uri}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and structured is not None:
        return json.dumps(structured, ensure_ascii=False)
    return "\n".join(parts)


def _b64_size(data: str) -> int:
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters cut]"


# -- the host --------------------------------------------------------------------------------------
class _ServerDown(Exception):
    """The session broke (raised on the worker loop, turned into a result there)."""


class _WatchedReads:
    """The messages a server sends, as the SDK's transport gives them (its read-stream protocol:
    ``receive``, async iteration, ``aclose``, ``async with``), calling ``on_end`` once they end."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message, where the inner stream keeps one (the
        protocol's documented, optional attribute)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    def __aiter__(self) -> _WatchedReads:
        return self

    async def __anext__(self) -> Any:
        try:
            return await anext(self._inner)
        except StopAsyncIteration:
            self._on_end()
            raise

    async def aclose(self) -> None:
        self._on_end()
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReads:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self._on_end()
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


class _Connection:
    """One server's session, owned by one task on the worker loop (anyio's task groups and
    cancel scopes must be entered and left by the same task)."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.client: Client | None = None
        self.log_path: Path | None = None
        self.http_status: int | None = None  # the last HTTP error status (the SDK turns it into a generic error)
        self.transport_ended = False  # the server's side of the transport ended (see watched())
        self._stop = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[Client] | None = None

    @property
    def alive(self) -> bool:
        """Whether the session can take a call: started, not stopping, and its transport still open
        (a server that exited while idle is noticed here, before a call is lost to it)."""
        return self.client is not None and not self._stop.is_set() and not self.transport_ended

    def watched(self, transport: Any) -> Any:
        """``transport`` (an SDK transport: a context giving the read and write streams) with its
        read stream watched: :attr:`transport_ended` is set when the server's side ends (a stdio
        server that exited, a closed HTTP session). The SDK tells no one; its session only fails
        the next call."""

        @contextlib.asynccontextmanager
        async def watching() -> Any:
            async with transport as (reads, writes):
                yield _WatchedReads(reads, self._transport_ended), writes

        return watching()

    def _transport_ended(self) -> None:
        self.transport_ended = True

    async def open(self, host: McpHost) -> Client:
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._owner = loop.create_task(self._own(host, self._ready), name=f"mcp-{self.config.name}")
        return await asyncio.shield(self._ready)

    async def _own(self, host: McpHost, ready: asyncio.Future[Client]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await host._enter_client(self, stack)
                self.client = client
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                log.debug("tool server %s: session ended with %s", self.config.name,
                          self.config.redact(repr(exc)))
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            self.client = None
            self._stop.set()

    async def close(self) -> None:
        """End the session (the SDK stops a stdio server); returns when it is over."""
        self._stop.set()
        owner = self._owner
        if owner is None or owner.done():
            return
        if self._ready is not None and not self._ready.done():
            owner.cancel()  # still starting: cancel the start (once: the SDK's shutdown then runs shielded)
        finished, _ = await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT)
        if not finished:
            log.warning("tool server %s did not stop within %.0f s", self.config.name, CLOSE_TIMEOUT)
            owner.cancel()


class McpHost:
    """Runs the user's MCP tool servers for the chat.

    Every public method is a coroutine to await from any event loop (the app's qasync loop, a
    CLI's ``asyncio.run``); the servers themselves live on the host's own worker loop.

    Args:
        servers: The configured servers (disabled ones are kept but never started).
        call_timeout: Default seconds a tool call may take (a server's ``timeout`` overrides it).
        connect_timeout: Seconds a server may take to start and answer the handshake.
        log_dir: Where each stdio server's stderr is written (``mcp-<name>.log``); its last
            lines explain a failure. None discards it.
        guard_children: On Linux, start stdio servers under ``setpriv --pdeathsig KILL`` so they
            die with the app even when it is killed (when ``setpriv`` is installed).
        max_result_chars: Longer tool output is cut to this many characters.
    """

    def __init__(self, servers: Iterable[McpServerConfig] = (), *,
                 call_timeout: float = DEFAULT_CALL_TIMEOUT, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 log_dir: Path | None = None, guard_children: bool = True,
                 max_result_chars: int = DEFAULT_MAX_RESULT_CHARS) -> None:
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.log_dir = log_dir
        self.guard_children = guard_children
        self.max_result_chars = max_result_chars
        self._configs: Mapping[str, McpServerConfig] = MappingProxyType({})
        self._thread = LoopThread("strata-mcp")
        # Worker-loop state (touched only on the worker loop):
        self._conns: dict[str, _Connection] = {}
        self._starting: dict[str, asyncio.Future[_Connection]] = {}
        self._calls: set[asyncio.Task[Any]] = set()
        self._closing: set[asyncio.Task[None]] = set()
        self.set_servers(servers)

    # -- configuration -------------------------------------------------------------------------------
    @property
    def servers(self) -> tuple[McpServerConfig, ...]:
        """The configured servers, enabled or not."""
        return tuple(self._configs.values())

    def set_servers(self, servers: Iterable[McpServerConfig]) -> None:
        """Replace the configured servers. Sessions of servers removed, disabled or changed are
        ended in the background (:meth:`aclose` waits for that); the others are kept."""
        configs: dict[str, McpServerConfig] = {}
        for s in servers:
            if s.name in configs:
                raise ToolError(T(QT_TRANSLATE_NOOP("Core", "Two tool servers are named '{name}'."),
                                  name=s.name),
                                hint=QT_TRANSLATE_NOOP("Core", "Give each server its own name."))
            configs[s.name] = s
        self._configs = MappingProxyType(configs)
        if self._thread.running:
            self._thread.loop().call_soon_threadsafe(self._drop_stale)

    def _drop_stale(self) -> None:  # on the worker loop
        for name, conn in list(self._conns.items()):
            if self._configs.get(name) != conn.config or not conn.config.enabled:
                del self._conns[name]
                self._close_later(conn)

    def _close_later(self, conn: _Connection) -> None:  # on the worker loop
        task = asyncio.get_running_loop().create_task(conn.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _config(self, name: str) -> McpServerConfig:
        config = self._configs.get(name)
        if config is None:
            raise ToolError(T(QT_TRANSLATE_NOOP("Core", "There is no tool server named '{name}'."),
                              name=name))
        if not config.enabled:
            raise ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' is turned off."),
                              name=name),
                            hint=QT_TRANSLATE_NOOP("Core", "Turn it on in the tool settings."))
        return config

    # -- the public, any-loop API ----------------------------------------------------------------------
    async def list_tools(self) -> ToolCatalog:
        """List the tools of every enabled server (started as needed, all at once).

        A server that fails is reported in :attr:`ToolCatalog.problems`; the others' tools are
        still listed. With no enabled server nothing is started.
        """
        if not any(c.enabled for c in self._configs.values()):
            return ToolCatalog()
        return await self._thread.run(self._track(self._list_all()))

    async def list_server_tools(self, server: str) -> list[McpTool]:
        """The tools of one server (named for the model as if it were the only one).

        Raises:
            ToolError: The server is unknown, turned off, or could not be started or listed.
        """
        return await self._thread.run(self._track(self._list_one_named(server)))

    async def call_tool(self, server: str, tool: str, arguments: Mapping[str, Any] | None = None, *,
                        timeout: float | None = None) -> ToolResult:
        """Call one tool. Never raises for the server's failures: they come back as a result with
        ``is_error`` (see :class:`ToolOutcome`).

        Args:
            server: The server's name.
            tool: The tool's name on it.
            arguments: Its arguments (a JSON object).
            timeout: Seconds it may take (default: the server's ``timeout``, else the host's).

        Raises:
            asyncio.CancelledError: The awaiting task was cancelled (the call is cancelled on the
                server and has ended when this is raised).
        """
        return await self._thread.run(self._track(self._call(server, tool, dict(arguments or {}), timeout)))

    async def run_call(self, catalog: ToolCatalog, name: str, arguments: str | Mapping[str, Any] | None, *,
                       policy: ToolPolicy, approver: Approver, timeout: float | None = None) -> ToolResult:
        """One tool call the model asked for: resolve its name, check its arguments, ask the user
        (unless always allowed), then call it. Every refusal is a result, so the chat goes on.

        Args:
            catalog: The catalog the model's ``tools`` field came from.
            name: The function name the model used.
            arguments: The arguments the model gave (the JSON text of ``function.arguments``, or a mapping).
            policy: Decides whether it may run (asks ``approver`` unless always allowed).
            approver: Asks the user (called on this loop).
            timeout: As in :meth:`call_tool`.
        """
        try:
            tool = catalog.resolve(name)
        except ToolError as exc:
            return ToolResult("", name, ToolOutcome.UNKNOWN_TOOL, exc.message)
        args = parse_arguments(arguments)
        if isinstance(args, str):
            return ToolResult(tool.server, tool.name, ToolOutcome.BAD_ARGUMENTS, args)
        request = ApprovalRequest(tool.server, tool.name, tool.description, args, catalog.servers_offering(tool.name))
        decision = await policy.decide(request, approver)
        if not decision.allowed:
            return ToolResult(tool.server, tool.name, ToolOutcome.DENIED,
                              f"The user did not allow the tool '{tool.name}' to run.")
        return await self.call_tool(tool.server, tool.name, args, timeout=timeout)

    async def aclose(self) -> None:
        """Cancel running calls, end every session (stopping every stdio server) and the worker
        thread. The host may be used again afterwards (it starts afresh)."""
        if not self._thread.running:
            return
        try:
            await self._thread.run(self._close_all())
        finally:
            await self._thread.stop()

    # -- on the worker loop ----------------------------------------------------------------------------
    async def _track(self, coro: Any) -> Any:
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        try:
            return await coro
        finally:
            self._calls.discard(task)

    async def _close_all(self) -> None:
        calls = [t for t in self._calls if not t.done()]
        for t in calls:
            t.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        conns = list(self._conns.values())
        self._conns.clear()
        await asyncio.gather(*(c.close() for c in conns), *list(self._closing), return_exceptions=True)

    async def _connection(self, name: str) -> _Connection:
        config = self._config(name)
        conn = self._conns.get(name)
        if conn is not None and conn.alive and conn.config == config:
            return conn
        if conn is not None:
            del self._conns[name]
            self._close_later(conn)
        while (starting := self._starting.get(name)) is not None:  # someone is starting it: share that start
            try:
                return await asyncio.shield(starting)
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if starting.cancelled() and me is not None and me.cancelling() == 0:
                    continue  # its caller gave up (Stop), this one did not: start it again
                raise
        fut: asyncio.Future[_Connection] = asyncio.get_running_loop().create_future()
        self._starting[name] = fut
        try:
            conn = _Connection(config)
            try:
                await conn.open(self)
            except asyncio.CancelledError:
                await conn.close()
                fut.cancel()
                raise
            except BaseException as exc:
                await conn.close()
                error = self._start_error(conn, exc)
                fut.set_exception(error)
                fut.exception()  # retrieved: a start nobody else waited for must not be logged as lost
                raise error from None
            self._conns[name] = conn
            fut.set_result(conn)
            return conn
        finally:
            del self._starting[name]

    async def _enter_client(self, conn: _Connection, stack: contextlib.AsyncExitStack) -> Client:
        """Open the transport and the SDK session for ``conn`` (its owner task calls this)."""
        from mcp import Client, Implementation

        config = conn.config
        if config.transport == STDIO:
            from mcp import StdioServerParameters

            command, args = self._launch_command(config)
            errlog = stack.enter_context(self._open_log(conn))
            # Bytes that are not UTF-8 on its stdout replaced, not fatal: strict decoding stopped the
            # SDK's reader while the session stayed open, so every call waited out its time limit.
            transport: Any = StdioServerParameters(command=command, args=args, env=dict(config.env) or None,
                                                   cwd=_expand(config.cwd) or None, encoding_error_handler="replace")
            log.info("starting tool server %s (%s)", config.name, Path(config.command).name)
            from mcp.client.stdio import stdio_client

            watch_stdout(config.name)  # the SDK's reader, started from this task, logs each stray line
            transport = stdio_client(transport, errlog=errlog)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # The SDK's documented way to send headers: its transport over our httpx2 client, with
            # the SDK's timeouts (a server may hold a response stream open for minutes). A loopback
            # server is reached directly, never through the user's proxy.
            async def note_status(response: httpx2.Response) -> None:
                if response.status_code >= 400:
                    conn.http_status = response.status_code

            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0),
                trust_env=not _is_loopback(config.url), event_hooks={"response": [note_status]}))
            transport = streamable_http_client(config.url, http_client=http)
            log.info("connecting to tool server %s (%s)", config.name, config.target)
        client = Client(conn.watched(transport), read_timeout_seconds=self.connect_timeout, cache=None,
                        client_info=Implementation(name="Strata", version=__version__))
        return await stack.enter_async_context(client)

    def _launch_command(self, config: McpServerConfig) -> tuple[str, list[str]]:
        """The program and arguments to start: the configured command, found before starting
        (for a clear message), wrapped in ``setpriv --pdeathsig KILL`` on Linux when possible."""
        cwd = _expand(config.cwd)
        if cwd and not Path(cwd).is_dir():
            raise ToolError(T(QT_TRANSLATE_NOOP("Core", "The working folder of the tool server '{name}' does "
                                                        "not exist: {path}"), name=config.name, path=cwd),
                            hint=QT_TRANSLATE_NOOP("Core", "Fix its \"cwd\" or remove it."))
        command = _expand(config.command)
        path_var = config.env.get("PATH", os.environ.get("PATH", ""))
        if os.sep in command or (os.altsep and os.altsep in command):
            candidate = Path(cwd or os.getcwd()) / command
            found = str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
        else:
            found = shutil.which(command, path=path_var)
        if found is None:
            raise ToolError(T(QT_TRANSLATE_NOOP("Core", "The program '{program}' of the tool server '{name}' "
                                                        "was not found."), program=config.command,
                              name=config.name),
                            hint=_install_hint(command))
        args = list(config.args)
        if self.guard_children:
            setpriv = _pdeathsig_wrapper()
            if setpriv is not None:
                return setpriv, ["--pdeathsig", "KILL", "--", found, *args]
        return found, args

    @contextlib.contextmanager
    def _open_log(self, conn: _Connection) -> Any:
        if self.log_dir is None:
            with open(os.devnull, "w", encoding="utf-8") as devnull:
                yield devnull
            return
        path = self.log_dir / f"mcp-{_clean(conn.config.name)}.log"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            if path.stat().st_size > LOG_MAX_BYTES:
                path.unlink()
        with open(path, "a", encoding="utf-8", errors="replace") as f:  # append: the child writes at the end
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {conn.config.name}\n")
            f.flush()
            conn.log_path = path
            yield f

    def _log_tail(self, conn: _Connection) -> str:
        if conn.log_path is None:
            return ""
        try:
            with open(conn.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 8192))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        run = text.rsplit("\n--- ", 1)[-1].split("\n", 1)[-1] if "\n--- " in text else text
        lines = [ln for ln in run.splitlines() if ln.strip() and not ln.startswith("--- ")]
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def _start_error(self, conn: _Connection, exc: BaseException) -> ToolError:
        """A sentence for a server that could not be started or reached."""
        if isinstance(exc, ToolError):
            return exc
        name, config = conn.config.name, conn.config
        leaf = _root_cause(exc)
        tail = self._log_tail(conn)
        code = getattr(leaf, "code", None)
        tail = config.redact(tail)
        details = config.redact(f"{type(leaf).__name__}: {leaf}" + (f"\n{tail}" if tail else ""))
        if config.transport == STDIO:
            if code == _REQUEST_TIMEOUT:
                return ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' did not answer within "
                                                             "{seconds:.0f} s of starting."),
                                   name=name, seconds=self.connect_timeout),
                                 hint=QT_TRANSLATE_NOOP("Core", "Check its command; the server may be "
                                                                "waiting for input."),
                                 details=details)
            last = tail.splitlines()[-1] if tail else ""
            return ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' stopped while starting: "
                                                         "{last}"),
                               name=name, last=last[:200]) if last
                             else T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' stopped while "
                                                              "starting."),
                                    name=name),
                             hint=QT_TRANSLATE_NOOP("Core", "Check its command and arguments; run it in a "
                                                            "terminal to see why."),
                             details=details)
        status = _http_status(leaf) or conn.http_status
        if status in (401, 403):
            return ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' refused the connection "
                                                         "(HTTP {status})."), name=name, status=status),
                             hint=QT_TRANSLATE_NOOP("Core", "Check its headers (an API key or token may be "
                                                            "missing or wrong)."),
                             details=details)
        if status is not None:
            return ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' answered HTTP {status}."),
                               name=name, status=status),
                             hint=QT_TRANSLATE_NOOP("Core", "Check that the address is the server's MCP "
                                                            "endpoint (often ending in /mcp)."),
                             details=details)
        if code == _REQUEST_TIMEOUT:
            return ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' did not answer within "
                                                         "{seconds:.0f} s."), name=name,
                               seconds=self.connect_timeout),
                             hint=QT_TRANSLATE_NOOP("Core", "Check the address and your network."),
                             details=details)
        return ToolError(T(QT_TRANSLATE_NOOP("Core",
                                             "Could not reach the tool server '{name}' at {address}."),
                           name=name, address=config.target),
                         hint=QT_TRANSLATE_NOOP("Core", "Check the address and that the server is running."),
                         details=details)

    async def _list_all(self) -> ToolCatalog:
        enabled = [c for c in self._configs.values() if c.enabled]
        outcomes = await asyncio.gather(*(self._list_one(c.name) for c in enabled), return_exceptions=True)
        found: list[tuple[str, Any]] = []
        problems: list[ServerProblem] = []
        for config, outcome in zip(enabled, outcomes, strict=True):
            if isinstance(outcome, ToolError):
                problems.append(ServerProblem(config.name, outcome))
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                found.extend((config.name, t) for t in outcome)
        return ToolCatalog(_make_tools(found), tuple(problems))

    async def _list_one_named(self, name: str) -> list[McpTool]:
        return list(_make_tools([(name, t) for t in await self._list_one(name)]))

    async def _list_one(self, name: str) -> list[Any]:
        conn = await self._connection(name)
        client = conn.client
        try:
            if client is None:
                raise _ServerDown
            tools: list[Any] = []
            cursor: str | None = None
            for _ in range(MAX_TOOL_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._drop(conn)
            leaf = _root_cause(exc)
            raise ToolError(T(QT_TRANSLATE_NOOP("Core", "The tool server '{name}' could not list its tools."),
                              name=name),
                            hint=QT_TRANSLATE_NOOP("Core", "It may have stopped; the next try starts it "
                                                           "again."),
                            details=conn.config.redact(f"{type(leaf).__name__}: {leaf}\n{self._log_tail(conn)}"
                                                       .strip())) from None

    def _drop(self, conn: _Connection) -> None:
        if self._conns.get(conn.config.name) is conn:
            del self._conns[conn.config.name]
        self._close_later(conn)

    async def _call(self, server: str, tool: str, arguments: dict[str, Any], timeout: float | None) -> ToolResult:
        started = time.monotonic()
        try:
            config = self._config(server)
            conn = await self._connection(server)
        except ToolError as exc:
            return ToolResult(server, tool, ToolOutcome.UNAVAILABLE, exc.message, time.monotonic() - started,
                              details="\n".join(x for x in (exc.hint, exc.details) if x))
        limit = timeout or config.timeout or self.call_timeout
        try:
            client = conn.client
            if client is None:
                raise _ServerDown
            result: CallToolResult = await client.call_tool(tool, arguments, read_timeout_seconds=limit)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._call_failure(conn, tool, exc, limit, time.monotonic() - started)
        text = _cut(result_text(result.content, result.structured_content), self.max_result_chars)
        outcome = ToolOutcome.TOOL_ERROR if result.is_error else ToolOutcome.OK
        return ToolResult(server, tool, outcome, text, time.monotonic() - started, result.structured_content)

    def _call_failure(self, conn: _Connection, tool: str, exc: BaseException, limit: float,
                      elapsed: float) -> ToolResult:
        server = conn.config.name
        leaf = _root_cause(exc)
        code = getattr(leaf, "code", None)
        if code == _REQUEST_TIMEOUT:
            self._drop(conn)  # a server that hung may be wedged: the next call starts it afresh
            return ToolResult(server, tool, ToolOutcome.TIMED_OUT,
                              f"The tool '{tool}' of '{server}' did not finish within {limit:g} s and was "
                              "stopped.", elapsed)
        if _is_result_check(leaf):  # the SDK checked the answer against the tool's own schema: the server is fine
            return ToolResult(server, tool, ToolOutcome.TOOL_ERROR,
                              conn.config.redact(f"The tool '{tool}' of '{server}' answered in a form its own "
                                                 f"description does not allow: {leaf}"), elapsed)
        if isinstance(leaf, _ServerDown) or code == _CONNECTION_CLOSED or not _is_peer_error(leaf):
            self._drop(conn)
            tail = self._log_tail(conn)
            return ToolResult(server, tool, ToolOutcome.CRASHED,
                              f"The tool server '{server}' stopped during the call of '{tool}'.", elapsed,
                              details=conn.config.redact(f"{type(leaf).__name__}: {leaf}"
                                                         + (f"\n{tail}" if tail else "")))
        # The server answered with a JSON-RPC error (unknown tool, invalid arguments): it is fine.
        return ToolResult(server, tool, ToolOutcome.TOOL_ERROR,
                          conn.config.redact(f"The tool '{tool}' of '{server}' failed: {leaf}"), elapsed)


_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


# What the MCP SDK's client raises (RuntimeError) when a result does not match the tool's outputSchema.
_RESULT_CHECKS = ("has an output schema but did not return structured content",
                  "Invalid structured content returned by tool", "Invalid schema for tool")


def _is_result_check(exc: BaseException) -> bool:
    return type(exc) is RuntimeError and any(phrase in str(exc) for phrase in _RESULT_CHECKS)


def _is_peer_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error the server sent (the session is still usable)."""
    from mcp import MCPError

    return isinstance(exc, MCPError) and exc.code not in (_CONNECTION_CLOSED, _REQUEST_TIMEOUT)


def _make_tools(found: Sequence[tuple[str, Any]]) -> tuple[McpTool, ...]:
    names = openai_names([(server, t.name) for server, t in found])
    out = []
    for (server, t), openai_name in zip(found, names, strict=True):
        hints = t.annotations.model_dump(exclude_none=True, by_alias=True) if t.annotations else {}
        out.append(McpTool(server=server, name=t.name, description=t.description or t.title or "",
                           input_schema=dict(t.input_schema or {}), openai_name=openai_name,
                           title=t.title or "", hints=hints))
    return tuple(out)


def parse_arguments(arguments: str | Mapping[str, Any] | None) -> dict[str, Any] | str:
    """The model's arguments as a dict, or a sentence saying why they are unusable (not JSON, not
    an object, nested too deeply: see :func:`~strata_gui.core.runtime.parse_tool_arguments`)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        return parse_tool_arguments(arguments)
    except ChatError as exc:
        return exc.message


def _root_cause(exc: BaseException) -> BaseException:
    """The most telling exception inside ``exc`` (the SDK's task groups wrap failures in groups)."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(exc)
    from mcp import MCPError

    preferences: list[Callable[[BaseException], bool]] = [
        lambda e: _http_status(e) is not None,
        lambda e: isinstance(e, MCPError),
        lambda e: isinstance(e, OSError),
        lambda e: not isinstance(e, asyncio.CancelledError),
    ]
    for prefer in preferences:
        for leaf in leaves:
            if prefer(leaf):
                return leaf
    return leaves[0] if leaves else exc


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _expand(path: str) -> str:
    return os.path.expanduser(path) if path.startswith("~") else path


def _install_hint(command: str) -> str:
    base = Path(command).name.lower().removesuffix(".exe").removesuffix(".cmd")
    if base in ("npx", "node", "npm"):
        return QT_TRANSLATE_NOOP("Core", "Install Node.js (it brings npx), or give the full path of the "
                                         "program.")
    if base in ("uvx", "uv"):
        return QT_TRANSLATE_NOOP("Core", "Install uv (https://docs.astral.sh/uv/), or give the full path of "
                                         "the program.")
    if base in ("docker", "podman"):
        return T(QT_TRANSLATE_NOOP("Core", "Install {program}, or give the full path of the program."),
                 program=base)
    return QT_TRANSLATE_NOOP("Core", "Install it, or give the full path of the program in the server's "
                                     "settings.")



@functools.cache
def _pdeathsig_wrapper() -> str | None:
    """``setpriv`` when it can set the parent-death signal (Linux, util-linux 2.33+), else None.

    The SDK starts a stdio server in a session of its own and offers no ``preexec_fn``, so the
    signal cannot be armed in the child as the engines' guard does (runtime/process_guard.py);
    ``setpriv`` arms it and then runs the server in its place (the signal survives ``exec``). It
    fires when the thread that started the server ends: the host's worker thread, which lives
    until :meth:`McpHost.aclose` has stopped every server, or Strata dying.
    """
    if not sys.platform.startswith("linux"):
        return None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    try:
        help_text = subprocess.run([setpriv, "--help"], capture_output=True, text=True, timeout=10,
                                   check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return setpriv if "--pdeathsig" in help_text else None


def _is_loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
