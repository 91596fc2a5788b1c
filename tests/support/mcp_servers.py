"""Real MCP tool servers written with the official ``mcp`` SDK (``MCPServer``, FastMCP's name in mcp 2).

Run as a script so the host under test launches it the way it launches any user's server::

    python tests/support/mcp_servers.py stdio
    python tests/support/mcp_servers.py http --require-header X-Api-Key=secret

``http`` serves streamable HTTP on a free loopback port, prints ``PORT <n>`` on stdout once the
socket listens, and answers 401 to a request without the required header (so a test proves the
header stored as a secret reached the server). :func:`http_server` runs it for a test.

Tools: ``add(a, b)``, ``echo(text)``, ``fail()`` (a tool error), ``crash()`` (the process exits
mid-call), ``hang()`` (never returns), ``env(name)`` (a variable of the server's environment),
``pid()`` (the server's process id), ``write(path, text)`` (a side effect), ``picture()`` (an image,
not text), ``weather(city)`` (its argument an enum: a random-weight model forced to call it writes
short, valid arguments). ``stdio --linger`` keeps the process alive after its client has gone;
``--only weather,add`` offers only those tools (a model that picks a tool at random then picks a
harmless one).

This file imports nothing from Strata or the test suite: it runs as a plain script.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

SCRIPT = Path(__file__).resolve()

# The smallest valid PNG (1x1, transparent): what picture() returns.
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082")


TOOLS = ("add", "echo", "fail", "crash", "hang", "env", "pid", "write", "picture", "weather")
# What hang() writes on stderr as it starts (a stdio server's stderr goes to the host's log):
# tests wait for it before stopping a call that must be running on the server.
HANG_CALLED = "hang tool: called"


def build_server(name: str = "strata-test-tools", only: frozenset[str] | None = None) -> MCPServer:
    """The test tool server (``only``: offer just these tools)."""
    server = MCPServer(name, log_level="WARNING")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Always fails with a tool error.")
    def fail() -> str:
        raise ToolError("the fail tool failed on purpose")

    @server.tool(description="Exits the server process in the middle of the call.")
    def crash() -> str:
        sys.stderr.write("crash tool: exiting now\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(description="Never returns.")
    async def hang() -> str:
        sys.stderr.write(HANG_CALLED + "\n")  # the host's log of this server: the call arrived
        sys.stderr.flush()
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool(description="The value of an environment variable of the server ('' when unset).")
    def env(name: str) -> str:
        return os.environ.get(name, "")

    @server.tool(description="The server's process id.")
    def pid() -> int:
        return os.getpid()

    @server.tool(description="Write text to a file (a side effect a test can see).")
    def write(path: str, text: str) -> str:
        Path(path).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters"

    @server.tool(description="A 1x1 PNG image.")
    def picture() -> Image:
        return Image(data=PNG_1X1, format="png")

    @server.tool(description="The weather in a city.")
    def weather(city: Literal["Paris", "Rome"]) -> str:
        return f"Sunny in {city}, 21 °C"

    for tool in TOOLS:
        if only is not None and tool not in only:
            server.remove_tool(tool)
    return server


def _serve_http(required: tuple[str, str] | None) -> None:
    import uvicorn

    app = build_server().streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and required is not None:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            if headers.get(required[0].lower()) != required[1]:
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"missing or wrong key"})
                return
        await app(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--require-header", metavar="NAME=VALUE", default=None)
    parser.add_argument("--linger", action="store_true",
                        help="stay alive after stdin closes (a server that does not exit with its client)")
    parser.add_argument("--only", default=None, metavar="NAMES", help="offer only these tools (comma-separated)")
    args = parser.parse_args(argv)
    only = frozenset(args.only.split(",")) if args.only else None
    if args.transport == "stdio":
        build_server(only=only).run("stdio")
        if args.linger:
            time.sleep(3600)
        return 0
    required = tuple(args.require_header.split("=", 1)) if args.require_header else None
    _serve_http(required)  # type: ignore[arg-type]
    return 0


def stdio_entry(name: str = "tools", *, only: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    """This server as one entry of an ``mcpServers`` JSON (Claude Desktop's spelling); ``only``:
    offer just these tools."""
    args = [str(SCRIPT), "stdio"] + (["--only", ",".join(only)] if only else [])
    return {"command": sys.executable, "args": args, **extra}


def hang_calls(log_dir: Path, name: str = "tools") -> int:
    """How many hang() calls the stdio server ``name`` has started, from the host's log of it in
    ``log_dir`` (``mcp-<name>.log``)."""
    try:
        return (log_dir / f"mcp-{name}.log").read_text(encoding="utf-8", errors="replace").count(HANG_CALLED)
    except FileNotFoundError:
        return 0


@contextlib.contextmanager
def http_server(require_header: str | None = None) -> Iterator[str]:
    """Run the streamable-HTTP server in a child process; yields its URL (``http://127.0.0.1:N/mcp``)."""
    cmd = [sys.executable, str(SCRIPT), "http"]
    if require_header:
        cmd += ["--require-header", require_header]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the MCP test HTTP server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


if __name__ == "__main__":
    sys.exit(main())
