"""Asking before a tool runs: "Allow once / Always allow this tool / Deny".

Nothing runs unasked. Before every call the chat asks :meth:`ToolPolicy.decide`; unless the user
chose "Always allow" for that server's tool earlier, the policy calls the :data:`Approver` the
chat supplied (the UI's dialog, the CLI's prompt) and waits for the answer. "Always" is
remembered in :class:`ApprovalMemory` (the tool-server store persists it; it forgets a server's
approvals when the server's command or address changes).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from strata_gui.core.base.errors import ToolConfigError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T


class Decision(enum.Enum):
    """The user's answer to one tool call."""

    ALLOW_ONCE = "allow_once"
    ALWAYS = "always"  # allow now and for every later call of this tool of this server
    DENY = "deny"

    @property
    def allowed(self) -> bool:
        return self is not Decision.DENY


@dataclass(frozen=True)
class ApprovalRequest:
    """What the user is asked about: which tool of which server, with which arguments.

    Attributes:
        server: The tool server's name.
        tool: The tool's name on that server.
        description: The tool's own description (from the server).
        arguments: The arguments the model gave.
        offered_by: Every server whose tools include one named ``tool`` (in the catalog the call came
            from): a name given without its server is ambiguous when there are several.
    """

    server: str
    tool: str
    description: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    offered_by: tuple[str, ...] = ()


# Called (on the caller's event loop) before every call that is not always-allowed.
Approver = Callable[[ApprovalRequest], Awaitable[Decision]]


class ApprovalMemory(Protocol):
    """Where "always allow" choices are kept (:class:`~strata_gui.core.tools.store.McpServerStore`)."""

    def is_always_allowed(self, server: str, tool: str) -> bool: ...

    def set_always_allowed(self, server: str, tool: str, allowed: bool) -> None: ...


class MemoryApprovals:
    """"Always allow" choices kept for this session only (the CLI, tests)."""

    def __init__(self) -> None:
        self._allowed: set[tuple[str, str]] = set()

    def is_always_allowed(self, server: str, tool: str) -> bool:
        return (server, tool) in self._allowed

    def set_always_allowed(self, server: str, tool: str, allowed: bool) -> None:
        if allowed:
            self._allowed.add((server, tool))
        else:
            self._allowed.discard((server, tool))


class ToolPolicy:
    """Decides whether one tool call may run, asking the user unless they always allow it.

    Args:
        memory: Where "always allow" is remembered (default: this session only).
    """

    def __init__(self, memory: ApprovalMemory | None = None) -> None:
        self.memory: ApprovalMemory = memory if memory is not None else MemoryApprovals()

    def is_always_allowed(self, server: str, tool: str) -> bool:
        return self.memory.is_always_allowed(server, tool)

    def forget(self, server: str, tool: str) -> None:
        """Ask again before the next call of this tool."""
        self.memory.set_always_allowed(server, tool, False)

    async def decide(self, request: ApprovalRequest, approver: Approver) -> Decision:
        """The decision for ``request``: :attr:`Decision.ALWAYS` without asking when remembered,
        else the approver's answer ("Always" is then remembered).

        Raises:
            asyncio.CancelledError: The chat was stopped while the question was open.
        """
        if self.memory.is_always_allowed(request.server, request.tool):
            return Decision.ALWAYS
        decision = await approver(request)
        if not isinstance(decision, Decision):  # an approver bug must not turn into "allowed"
            raise TypeError(f"the approver answered {decision!r}, not a Decision")
        if decision is Decision.ALWAYS:
            self.memory.set_always_allowed(request.server, request.tool, True)
        return decision


class AllowedTools:
    """Tools the user allowed in advance by name (``strata chat --allow-tool``), each one server's tool.

    ``SERVER.NAME`` (a configured server's name, a dot, a tool's name) allows that server's tool and
    no other: it is matched on the (server, tool) pair, so another server's tool literally named
    ``SERVER.NAME`` is not allowed by it. A bare ``NAME`` allows a tool of that name only while exactly
    one server offers one (a name that fits several servers' tools allows none of them:
    :meth:`ambiguous` says so, and the command says how to name one), so adding a server never
    widens what was allowed.

    Args:
        names: The names as the user gave them.
        servers: The configured servers' names (they tell ``SERVER.NAME`` from a tool name with a dot).

    Raises:
        ToolConfigError: A name reads as two servers' tools (servers ``a`` and ``a.b``, name ``a.b.c``).
    """

    def __init__(self, names: Iterable[str], servers: Iterable[str]) -> None:
        known = set(servers)
        self.pairs: set[tuple[str, str]] = set()
        self.bare: set[str] = set()
        for name in names:
            readings = [(name[:i], name[i + 1:]) for i, mark in enumerate(name)
                        if mark == "." and name[:i] in known and name[i + 1:]]
            if len(readings) > 1:
                raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "The tool name '{name}' could mean the tool "
                                                                  "'{first}' of '{first_server}' or '{second}' of "
                                                                  "'{second_server}'."),
                                        name=name, first=readings[0][1], first_server=readings[0][0],
                                        second=readings[1][1], second_server=readings[1][0]),
                                      hint=QT_TRANSLATE_NOOP("Core", "Rename one of the servers, or answer when "
                                                                     "asked instead."))
            if readings:
                self.pairs.add(readings[0])
            else:
                self.bare.add(name)

    def allows(self, request: ApprovalRequest) -> bool:
        """Whether ``request``'s tool was allowed in advance."""
        if (request.server, request.tool) in self.pairs:
            return True
        return request.tool in self.bare and request.offered_by == (request.server,)

    def ambiguous(self, request: ApprovalRequest) -> bool:
        """Whether a bare name was given for ``request``'s tool, which several servers offer."""
        return request.tool in self.bare and len(request.offered_by) > 1
