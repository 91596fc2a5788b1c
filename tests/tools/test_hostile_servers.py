"""Tool servers that misbehave (issue 47): thousands of tools of one name, chatter on standard output.
Real MCP servers (the SDK's low-level server, over stdio: ``tests/support/hostile_mcp_server.py``)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from strata_gui.core.tools import McpHost, openai_names, parse_mcp_servers
from tests.support.hostile_mcp_server import entry

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
