"""Tool servers that misbehave (issue 47): thousands of tools of one name, chatter on standard output.
Real MCP servers (the SDK's low-level server, over stdio: ``tests/support/hostile_mcp_server.py``)."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from strata_gui.cli import main
from strata_gui.core.tools import McpHost, openai_names, parse_mcp_servers
from tests.support.hostile_mcp_server import entry
from tests.support.openai_stream_server import openai_stream_server, reasoning_then_content, tool_calls

REPO = Path(__file__).resolve().parents[2]
DUPLICATES = 12_000


# -- case 7: tool names deduplicated in linear time --------------------------------------------------
def test_twelve_thousand_tools_of_one_name_get_their_names_at_once() -> None:
    """Naming them took 13 s of CPU (quadratic) at every listing, holding every tool server's loop."""
    keys = [("tools", "echo")] * DUPLICATES
    named: list[list[str]] = []
    done = threading.Event()

    def name_them() -> None:
        started = time.process_time()
        named.append(openai_names(keys))
        print(f"bench: {DUPLICATES} duplicate tool names in {time.process_time() - started:.3f} s of CPU")
        done.set()

    worker = threading.Thread(target=name_them, daemon=True)
    worker.start()
    # A guard, not a measurement: linear work takes milliseconds; the quadratic one took 13 s of CPU.
    assert done.wait(10.0), "naming 12,000 duplicate tools did not finish"
    (names,) = named
    assert names[:3] == ["tools__echo", "tools__echo_2", "tools__echo_3"] and names[-1] == "tools__echo_12000"
    assert len(set(names)) == DUPLICATES


def test_numbered_names_still_step_around_names_that_are_taken() -> None:
    keys = [("a", "x"), ("a", "x"), ("b", "a__x_2"), ("a", "x"), ("b", "x"), ("c", "y"), ("c", "y"), ("c", "y_2"),
            ("c", "y")]
    assert openai_names(keys) == ["a__x", "a__x_2", "a__x_2_2", "a__x_3", "b__x", "c__y", "c__y_2", "y_2", "c__y_3"]
    long = "t" * 70
    names = openai_names([("s", long)] * 3)
    assert len(set(names)) == 3 and all(len(n) <= 64 for n in names)


def test_a_server_listing_the_same_tool_twelve_thousand_times_is_listed_and_called(tmp_path: Path) -> None:
    # 12,000 tools allocate enough on the tool host's thread to start the cyclic collector there,
    # which would free an earlier test's Qt objects off the GUI thread: collect them here first.
    gc.collect()
    (config,) = parse_mcp_servers({"mcpServers": {"dup": entry(tools=["echo", "other"], duplicates=DUPLICATES)}})

    async def main() -> None:
        host = McpHost([config], log_dir=tmp_path)
        try:
            catalog = await host.list_tools()
            assert len(catalog.tools) == DUPLICATES + 1 and catalog.problems == ()
            assert catalog.tools[-2].openai_name == f"dup__echo_{DUPLICATES}" and catalog.tools[-1].openai_name == "other"
            result = await host.call_tool("dup", "other", {"text": "hi"})
            assert result.text == "other ran: hi"
        finally:
            await host.aclose()

    asyncio.run(main())


# -- case 11: a server that prints other text on its standard output --------------------------------
def test_fifty_lines_of_chatter_on_stdout_are_said_once_and_the_tool_works(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"chatty": entry(tools=["echo"], noise=50)}}))
    listed = subprocess.run([sys.executable, "-m", "strata_gui", "mcp", "tools", "--mcp-config", str(config)],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert listed.returncode == 0 and "  echo" in listed.stdout
    _said_once(listed.stderr)

    with openai_stream_server(tool_calls([("echo", '{"text": "hi"}')]), reasoning_then_content(0, 2)) as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        chat = subprocess.run([sys.executable, "-m", "strata_gui", "remote", "chat", "loop", "go", "--mcp-config",
                               str(config), "--allow-tool", "echo", "--json"],
                              capture_output=True, text=True, timeout=120, cwd=REPO)
    assert chat.returncode == 0, chat.stderr
    (call,) = json.loads(chat.stdout)["tool_calls"]
    assert call["status"] == "allowed" and call["result"] == "echo ran: hi"
    _said_once(chat.stderr)


def _said_once(stderr: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) <= 1, stderr[:2000]  # it was 11 lines of traceback per line of chatter
    assert not lines or ("chatty" in lines[0] and "not an MCP message" in lines[0] and len(lines[0]) < 200)


def test_the_apps_log_gets_one_line_for_chatter_too(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The app runs the same host: its log file got a traceback per line."""
    (config,) = parse_mcp_servers({"mcpServers": {"chatty": entry(tools=["echo"], noise=50)}})

    async def list_and_call() -> None:
        host = McpHost([config], log_dir=tmp_path)
        try:
            await host.list_tools()
            assert (await host.call_tool("chatty", "echo", {"text": "hi"})).text == "echo ran: hi"
        finally:
            await host.aclose()

    with caplog.at_level(logging.DEBUG):
        asyncio.run(list_and_call())
    about = [r for r in caplog.records if "not an MCP message" in r.getMessage()]
    assert len(about) == 1 and about[0].exc_info is None and "chatty" in about[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info is not None]
