"""Tools for the chat: MCP tool servers (stdio or streamable HTTP) through the official ``mcp`` SDK.

- :class:`McpHost` — starts/reaches the servers, lists their tools (:class:`ToolCatalog`, the
  OpenAI ``tools`` field), calls them with a time limit and cancellation (:class:`ToolResult`).
- :class:`McpServerConfig`, :func:`load_mcp_config`, :func:`parse_mcp_json` — the ``mcpServers``
  JSON of Claude Desktop, Cursor and LM Studio.
- :class:`McpServerStore` — the user's servers (secrets in the key store) and "always allow".
- :class:`ToolPolicy`, :class:`Decision`, :class:`ApprovalRequest`, :data:`Approver` — asking
  before every call; :class:`AllowedTools` — tools allowed in advance by name (``--allow-tool``).
"""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.tools.approvals import (
        AllowedTools,
        ApprovalMemory,
        ApprovalRequest,
        Approver,
        Decision,
        MemoryApprovals,
        ToolPolicy,
    )
    from strata_gui.core.tools.config import (
        HTTP,
        STDIO,
        McpServerConfig,
        Transport,
        load_mcp_config,
        parse_mcp_json,
        parse_mcp_servers,
    )
    from strata_gui.core.tools.host import (
        DEFAULT_CALL_TIMEOUT,
        McpHost,
        McpTool,
        ServerProblem,
        ToolCatalog,
        ToolOutcome,
        ToolResult,
        openai_names,
        parse_arguments,
    )
    from strata_gui.core.tools.store import McpServerStore

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "HTTP",
    "STDIO",
    "AllowedTools",
    "ApprovalMemory",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "McpHost",
    "McpServerConfig",
    "McpServerStore",
    "McpTool",
    "MemoryApprovals",
    "ServerProblem",
    "ToolCatalog",
    "ToolOutcome",
    "ToolPolicy",
    "ToolResult",
    "Transport",
    "load_mcp_config",
    "openai_names",
    "parse_arguments",
    "parse_mcp_json",
    "parse_mcp_servers",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy); the SDK itself
# is imported only when a server is first started.
__getattr__, __dir__ = lazy_exports(__name__, {
    "approvals": ["AllowedTools", "ApprovalMemory", "ApprovalRequest", "Approver", "Decision", "MemoryApprovals", "ToolPolicy"],
    "config": ["HTTP", "STDIO", "McpServerConfig", "Transport", "load_mcp_config", "parse_mcp_json",
               "parse_mcp_servers"],
    "host": ["DEFAULT_CALL_TIMEOUT", "McpHost", "McpTool", "ServerProblem", "ToolCatalog", "ToolOutcome",
             "ToolResult", "openai_names", "parse_arguments"],
    "store": ["McpServerStore"],
})
