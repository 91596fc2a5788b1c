"""A real MCP tool server (the official SDK's low-level ``Server``, over stdio) that misbehaves on request.

Run as a script, as the host under test launches any user's server::

    python tests/support/hostile_mcp_server.py --tool 'files.echo' --tool $'wipe\\x1b[8m' --suffix $'\\x1b[8m'

- ``--tool NAME`` (repeatable): offer a tool of that exact name, whatever it holds (dots, terminal
  escapes); each returns ``NAME ran: <its "text" argument>`` followed by ``--suffix``.
- ``--duplicates N``: list the first tool N times (one name, N entries).
- ``--noise N``: print N lines that are not MCP messages on stdout before serving.

The SDK's high-level ``MCPServer`` keeps one tool per name and checks names, so it cannot offer
these. This file imports nothing from Strata or the test suite: it runs as a plain script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCRIPT = Path(__file__).resolve()


def build(tools: list[str], duplicates: int, suffix: str) -> Server[Any]:
    """The server: ``tools`` listed (the first ``duplicates`` times), each echoing its text."""
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    listed = [types.Tool(name=name, description=f"Echo for {name}", input_schema=schema) for name in tools]
    if duplicates > 1:
        listed = listed[:1] * duplicates + listed[1:]

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} ran: {text}{suffix}")])

    return Server("strata-hostile-tools", on_list_tools=list_tools, on_call_tool=call_tool)


def entry(*, tools: list[str], duplicates: int = 0, noise: int = 0, suffix: str = "") -> dict[str, Any]:
    """This server as one entry of an ``mcpServers`` JSON."""
    args = [str(SCRIPT)]
    for name in tools:
        args += ["--tool", name]
    if duplicates:
        args += ["--duplicates", str(duplicates)]
    if noise:
        args += ["--noise", str(noise)]
    if suffix:
        args += ["--suffix", suffix]
    return {"command": sys.executable, "args": args}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tool", action="append", default=[])
    parser.add_argument("--duplicates", type=int, default=0)
    parser.add_argument("--noise", type=int, default=0)
    parser.add_argument("--suffix", default="")
    args = parser.parse_args(argv)
    for i in range(args.noise):
        print(f"debug: warming up step {i} (not an MCP message)", flush=True)
    server = build(args.tool or ["echo"], args.duplicates, args.suffix)

    async def serve() -> None:
        async with stdio_server() as (reads, writes):
            await server.run(reads, writes, server.create_initialization_options())

    anyio.run(serve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
