"""A stdio tool server that prints other text on its standard output: said once, not once per line.

The MCP SDK's stdio transport skips such a line and logs it with a full traceback (``logger.exception``),
which the CLI prints on the terminal: a server printing 50 lines of start-up chatter made 553 lines of
stderr. A filter on the SDK's logger (the public ``logging`` API; nothing in the SDK is touched) drops
those records and logs one short line per server session instead. It knows which server the line came
from through a context variable the session's task sets: the SDK's reader runs in a task started from it.
"""

from __future__ import annotations

import functools
import logging
from contextvars import ContextVar

log = logging.getLogger("strata_gui.core.tools.host")

SDK_STDIO_LOGGER = "mcp.client.stdio"  # the SDK's stdio transport logs under its module name
NOT_AN_MCP_MESSAGE = "Failed to parse JSONRPC message from server"  # its record for a line it skips


class _Session:
    def __init__(self, server: str) -> None:
        self.server = server
        self.said = False


_session: ContextVar[_Session | None] = ContextVar("strata_mcp_stdio_session", default=None)
_UNKNOWN = _Session("?")  # a session opened without watch_stdout: said once per process


def watch_stdout(server: str) -> None:
    """Say once, for ``server``, that its standard output held lines that are not MCP messages.

    Call it in the task that opens the server's stdio session, before the SDK's transport starts.
    """
    _install_filter()
    _session.set(_Session(server))


class _OnceFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != NOT_AN_MCP_MESSAGE:
            return True
        session = _session.get() or _UNKNOWN
        if not session.said:
            session.said = True
            log.warning("tool server %s printed text that is not an MCP message on its standard output "
                        "(ignored)", session.server)
        return False


@functools.cache
def _install_filter() -> None:
    logging.getLogger(SDK_STDIO_LOGGER).addFilter(_OnceFilter())
