"""`strata mcp tools|list|import|remove|enable|disable`: MCP tool servers for the chat.

``strata mcp tools --mcp-config FILE`` lists the tools of the servers in an ``mcpServers`` JSON file
(Claude Desktop, Cursor, LM Studio) without saving anything; without ``--mcp-config`` it lists the
tools of the servers saved in Strata. Secret values (environment, headers) are never printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from strata_gui.core.app_services import AppServices
from strata_gui.core.base import shown, shown_json
from strata_gui.core.tools import McpHost, McpServerConfig, ToolCatalog, load_mcp_config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="MCP tool servers the chat's models may call")
    msub = p.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    tools = msub.add_parser("tools", help="start the servers and list their tools")
    tools.add_argument("--mcp-config", type=Path, metavar="FILE",
                       help="an mcpServers JSON file (Claude Desktop, Cursor, LM Studio); default: the saved servers")
    tools.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                       help="how long a server may take to start (default 30)")
    tools.add_argument("--json", action="store_true", help="machine-readable output")
    ls = msub.add_parser("list", help="list the saved servers (secret values are never printed)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    imp = msub.add_parser("import", help="save every server of an mcpServers JSON file")
    imp.add_argument("file", type=Path)
    rm = msub.add_parser("remove", help="forget a saved server, its secrets and its approvals")
    rm.add_argument("name")
    for action in ("enable", "disable"):
        sw = msub.add_parser(action, help=f"{action} a saved server")
        sw.add_argument("name")
    p.set_defaults(func=run)


async def run(args: argparse.Namespace, app: AppServices) -> int:
    action = args.mcp_command
    store = app.tool_servers
    if action == "tools":
        servers = load_mcp_config(args.mcp_config) if args.mcp_config is not None else store.servers()
        return await _tools(servers, args, app.base.paths.log_dir)
    if action == "list":
        saved = store.servers()
        if args.json:
            print(json.dumps([s.describe() for s in saved], indent=2))
        elif not saved:
            print("no tool servers; add some with: strata mcp import FILE")
        else:
            for s in saved:
                print(shown(f"{s.name}\t{s.transport}\t{s.target}\t{'on' if s.enabled else 'off'}"))
        return 0
    if action == "import":
        added = store.import_file(args.file)
        print(shown(f"imported {len(added)} tool server(s): {', '.join(s.name for s in added)}"))
        return 0
    if action == "remove":
        store.remove(args.name)
        print(f"removed {args.name}")
        return 0
    store.set_enabled(args.name, action == "enable")
    print(f"{args.name}: {'on' if action == 'enable' else 'off'}")
    return 0


async def _tools(servers: list[McpServerConfig], args: argparse.Namespace, log_dir: Path) -> int:
    host = McpHost(servers, connect_timeout=args.timeout, log_dir=log_dir)
    try:
        catalog = await host.list_tools()
    finally:
        await host.aclose()
    if args.json:
        print(shown_json(json.dumps({"servers": [s.describe() for s in servers], **catalog.to_json()}, indent=2,
                                    ensure_ascii=False)))
    else:
        _print_catalog(servers, catalog)
    for problem in catalog.problems:
        print(f"error: {shown(problem.error.message)}", file=sys.stderr)  # it may quote the server
        if problem.error.hint:
            print(f"hint: {shown(problem.error.hint)}", file=sys.stderr)
    return 1 if catalog.problems else 0


def _print_catalog(servers: list[McpServerConfig], catalog: ToolCatalog) -> None:
    failed = {p.server for p in catalog.problems}
    for s in servers:
        state = "off" if not s.enabled else "failed" if s.name in failed else ""
        print(shown(f"{s.name} ({s.transport}: {s.target})" + (f" [{state}]" if state else "")))
        for t in catalog.tools:
            if t.server == s.name:
                first_line = t.description.strip().splitlines()[0] if t.description.strip() else ""
                alias = f" (the model sees {t.openai_name})" if t.openai_name != t.name else ""
                # Names and descriptions are the server's words: a terminal must not act on them.
                print(shown(f"  {t.name}{alias}" + (f"  {first_line}" if first_line else "")))
