"""Hostile tool calls and tool servers (issue 47) through `strata remote chat` and the core's tool host:
the model's stream comes from the loopback server in llama-server's exact format, the tools from real
MCP servers (the SDK's, over stdio) whose names and results the tests choose.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
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
    http_error,
    openai_stream_server,
    reasoning_then_content,
    tool_calls,
)

REPO = Path(__file__).resolve().parents[2]
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


# -- case 2: terminal escapes in what tool servers and engines send ---------------------------------
CONCEAL, TITLE, CSI = "\x1b[8m", "\x1b]0;owned\x07", "\x9b"  # hide what follows; retitle the window; 8-bit CSI
WIPE = f"delete{TITLE}all"  # a tool's name, as its server lists it


def test_escapes_in_tool_results_names_and_replies_are_shown_not_acted_on(tmp_path: Path) -> None:
    """A result ending in 'conceal' hid the next approval question; escapes in a tool's name landed in
    the question itself. stdin is a terminal, so the command asks (and is told no)."""
    config = mcp_config(tmp_path, h=entry(tools=["peek", WIPE], suffix=CONCEAL + CSI))
    m = ChunkMaker()
    answer = Script([m.role(), m.chunk({"content": "done\x1b[2J\r\n"}), m.chunk({"reasoning_content": "\x1b[5m"}),
                     m.final("stop"), DONE])
    scripts = [tool_calls([("peek", "{}")]), tool_calls([("delete_0_owned_all", '{"text": "\\u001b[31m"}')]), answer]
    with openai_stream_server(*scripts) as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        controller, terminal = pty.openpty()
        try:
            os.write(controller, b"n\n")
            proc = subprocess.run([sys.executable, "-m", "strata_gui", "remote", "chat", "loop", "go",
                                   "--mcp-config", str(config), "--allow-tool", "h.peek"],
                                  stdin=terminal, capture_output=True, text=True, timeout=120, cwd=REPO)
        finally:
            os.close(terminal)
            os.close(controller)
    assert proc.returncode == 0, proc.stderr
    for raw in ("\x1b", "\x07", CSI):
        assert raw not in proc.stderr and raw not in proc.stdout
    assert "tool peek → peek ran: \\x1b[8m\\x9b" in proc.stderr
    assert ("The model wants to run delete\\x1b]0;owned\\x07all (server h) with {\"text\": \"\\u001b[31m\"}\n"
            "Allow? [y] once") in proc.stderr
    assert "done\\x1b[2J\n" in proc.stdout  # the model's words too; a Windows line end stays a line end
    assert "\\x1b[5m" in proc.stderr  # and its thinking


def test_json_output_escapes_what_a_terminal_acts_on_and_keeps_the_data(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    config = mcp_config(tmp_path, h=entry(tools=["peek"], suffix=CONCEAL + CSI + "\u202e"))
    with openai_stream_server(tool_calls([("peek", "{}")]), reasoning_then_content(0, 1)) as server:
        code = remote_chat(server.url, capsys, "go", "--mcp-config", str(config), "--allow-all-tools", "--json")
    out = capsys.readouterr().out
    assert code == 0 and "\x9b" not in out and "\u202e" not in out and "\\u009b\\u202e" in out
    assert json.loads(out)["tool_calls"][0]["result"] == "peek ran: " + CONCEAL + CSI + "\u202e"


def test_mcp_tools_shows_escapes_in_names_and_descriptions(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = mcp_config(tmp_path, h=entry(tools=[WIPE]))
    assert main(["mcp", "tools", "--mcp-config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "  delete\\x1b]0;owned\\x07all (the model sees delete_0_owned_all)  Echo for delete\\x1b]0;owned\\x07all" in out


def test_log_lines_show_escapes(tmp_path: Path) -> None:
    """What the log quotes (a server's words) reaches stderr and the log file as text, not as escapes.

    Run in its own process: pytest's own log capture would keep the raw record, and the half emoji
    in it cannot cross to the xdist controller."""
    log_file = tmp_path / "strata.log"
    script = ("import logging, sys; from pathlib import Path\n"
              "from strata_gui.core.platform.logging_setup import configure_logging\n"
              "configure_logging(Path(sys.argv[1]), to_stderr=True)\n"
              "logging.getLogger('strata_gui.test').warning('tool server said %s', '\\x1b[8m' + '\\ud83d')\n")
    res = subprocess.run([sys.executable, "-c", script, str(log_file)], capture_output=True, timeout=60)
    err = res.stderr.decode("utf-8")
    assert res.returncode == 0, err
    assert "\x1b" not in err and "said \\x1b[8m\ufffd" in err
    assert "said \\x1b[8m\ufffd" in log_file.read_text(encoding="utf-8")


def test_an_engines_error_message_is_printed_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    with openai_stream_server(http_error(400, "bad request" + CONCEAL + "Allow? y", "invalid_request_error")) as server:
        code = remote_chat(server.url, capsys, "go")
    err = capsys.readouterr().err
    assert code == 1 and "\x1b" not in err and "bad request\\x1b[8mAllow? y" in err
