"""Hostile tool calls and tool servers (issue 47) through `strata remote chat` and the core's tool host:
the model's stream comes from the loopback server in llama-server's exact format, the tools from real
MCP servers (the SDK's, over stdio) whose names and results the tests choose.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.cli import main
from strata_gui.core.base import ChatError
from strata_gui.core.runtime import MAX_ARGUMENT_DEPTH, parse_tool_arguments
from strata_gui.core.runtime.client import ToolCall
from tests.support.hostile_mcp_server import entry
from tests.support.mcp_servers import stdio_entry
from tests.support.openai_stream_server import (
    DONE,
    ChunkMaker,
    Script,
    event,
    openai_stream_server,
    reasoning_then_content,
    tool_calls,
)

NESTED = "[" * 5000 + "]" * 5000  # 10 KB; 5,000 levels made json raise RecursionError


def mcp_config(tmp_path: Path, **entries: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": entries}))
    return path


def remote_chat(server_url: str, capsys: pytest.CaptureFixture[str], *args: str) -> int:
    assert main(["remote", "add", "loop", server_url, "--no-check"]) == 0
    capsys.readouterr()
    return main(["remote", "chat", "loop", *args])


# -- case 1: arguments nested thousands deep --------------------------------------------------------
@pytest.mark.parametrize(("arguments", "said"), [
    ('{"text": ' + NESTED + "}", f"The tool arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"),
    ('{"text": ' + "7" * 5000 + "}", "The tool arguments could not be read (Exceeds the limit"),
], ids=["nested", "huge-number"])
def test_arguments_no_json_reader_takes_are_a_tool_error_and_the_reply_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: str, said: str) -> None:
    config = mcp_config(tmp_path, tools=stdio_entry(only=["echo"]))
    with openai_stream_server(tool_calls([("echo", arguments)]), reasoning_then_content(0, 3)) as server:
        code = remote_chat(server.url, capsys, "go", "--mcp-config", str(config), "--allow-all-tools", "--json")
        sent = server.requests
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Internal error" not in err and "Traceback" not in err
    data = json.loads(out)
    assert data["reply"] == "c0 c1 c2 "
    (call,) = data["tool_calls"]
    assert call["status"] == "error" and call["result"].startswith(said)
    assert call["arguments"] == arguments  # --json shows them as the model wrote them
    # The model was told, as the call's result, and answered.
    assert sent[-1]["messages"][-1]["role"] == "tool" and sent[-1]["messages"][-1]["content"].startswith(said)


def test_a_remote_engine_sending_arguments_as_a_nested_object_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Some servers send the arguments as an object; 5,000 levels of it must not crash the reader."""
    m = ChunkMaker()
    call = ('{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
            '"type":"function","function":{"name":"echo","arguments":{"text":' + NESTED + '}}}]}}],'
            '"object":"chat.completion.chunk"}')
    script = Script([m.role(), m.chunk({"content": "kept "}), event(call), m.final("tool_calls"), DONE])
    config = mcp_config(tmp_path, tools=stdio_entry(only=["echo"]))
    with openai_stream_server(script) as server:
        code = remote_chat(server.url, capsys, "go", "--mcp-config", str(config), "--allow-all-tools")
    out, err = capsys.readouterr()
    assert code == 1 and "error: The engine sent a reply Strata cannot read." in err
    assert "Internal error" not in err and "Traceback" not in err
    assert "kept" in out  # what arrived before it is printed (and saved)


def test_every_reader_of_arguments_bounds_them_the_same_way() -> None:
    nested = '{"a": ' + "[" * (MAX_ARGUMENT_DEPTH + 1) + "]" * (MAX_ARGUMENT_DEPTH + 1) + "}"
    with pytest.raises(ChatError, match="nested more than"):
        ToolCall("c", "f", nested).parsed_arguments()
    # Brackets inside a string are text, not nesting; a tool may well be sent them.
    assert parse_tool_arguments(json.dumps({"text": NESTED})) == {"text": NESTED}
    just_deep_enough = "[" * (MAX_ARGUMENT_DEPTH - 1) + "]" * (MAX_ARGUMENT_DEPTH - 1)
    assert parse_tool_arguments('{"a": ' + just_deep_enough + "}")["a"] == json.loads(just_deep_enough)
    assert parse_tool_arguments("  ") == {} and parse_tool_arguments(None) == {}
    with pytest.raises(ChatError, match="must be a JSON object"):
        parse_tool_arguments("[1]")


# -- case 3: --allow-tool names one server's tool ---------------------------------------------------
def test_allow_tool_names_one_servers_tool_and_a_bare_name_only_an_unambiguous_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Server ``files`` has ``echo``; server ``other`` has ``echo`` and a tool literally named ``files.echo``.
    The model calls all three (``files_echo`` is other's ``files.echo``; the others clash and are prefixed)."""
    config = mcp_config(tmp_path, files=entry(tools=["echo"]), other=entry(tools=["files.echo", "echo"]))
    three = tool_calls([("files_echo", '{"text": "1"}'), ("files__echo", '{"text": "2"}'),
                        ("other__echo", '{"text": "3"}')])
    runs: dict[str, dict[str, Any]] = {}
    with openai_stream_server() as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        for allowed in ("files.echo", "echo", "other.files.echo"):
            server.queue(three, reasoning_then_content(0, 1))
            capsys.readouterr()
            code = main(["remote", "chat", "loop", "go", "--mcp-config", str(config), "--allow-tool", allowed,
                         "--json"])
            assert code == 0
            runs[allowed] = json.loads(capsys.readouterr().out)
    ran = {allowed: [c["result"] for c in data["tool_calls"] if c["status"] == "allowed"]
           for allowed, data in runs.items()}
    assert ran == {"files.echo": ["echo ran: 2"],  # files' echo only: not other's tool named files.echo
                   "echo": [],  # two servers have an echo: neither
                   "other.files.echo": ["files.echo ran: 1"]}
    assert any("--allow-tool echo allows none of the 2 servers' tools of that name (files, other); name one: "
               "--allow-tool files.echo" in n for n in runs["echo"]["notices"])


def test_a_bare_name_allows_the_tool_while_only_one_server_has_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    config = mcp_config(tmp_path, files=entry(tools=["echo"]), other=entry(tools=["files.echo"]))
    with openai_stream_server(tool_calls([("echo", '{"text": "1"}'), ("files_echo", '{"text": "2"}')]),
                              reasoning_then_content(0, 1)) as server:
        code = remote_chat(server.url, capsys, "go", "--mcp-config", str(config), "--allow-tool", "echo", "--json")
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["status"], c["result"]) for c in data["tool_calls"]] == [
        ("allowed", "echo ran: 1"), ("denied", "The user did not allow the tool 'files.echo' to run.")]


def test_a_name_that_reads_as_two_servers_tools_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = mcp_config(tmp_path, a=entry(tools=["b.c"]), **{"a.b": entry(tools=["c"])})
    with openai_stream_server(reasoning_then_content(0, 1)) as server:
        code = remote_chat(server.url, capsys, "go", "--mcp-config", str(config), "--allow-tool", "a.b.c")
        assert server.requests == []
    assert code == 1 and "error: The tool name 'a.b.c' could mean the tool 'b.c' of 'a' or 'c' of 'a.b'." in \
        capsys.readouterr().err
