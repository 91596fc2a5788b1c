"""`strata chat` and `strata remote chat` with tools, thinking and JSON output.

Real MCP servers (the SDK's, over stdio) from an ``mcpServers`` file; the model is the real CPU engine
where it can make a tool call (Functionary, forced), else the loopback server streaming llama-server's
exact deltas (a whole round trip: call, result, answer).
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
from tests.runtime.conftest import functionary_model  # noqa: F401 (fixture)
from tests.support import engines as _engines
from tests.support.mcp_servers import stdio_entry
from tests.support.openai_stream_server import openai_stream_server, reasoning_then_content, tool_calls

Engines = _engines.TestEngines
REPO = Path(__file__).resolve().parents[2]


def mcp_config(tmp_path: Path, **entries: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": entries or {"tools": stdio_entry(timeout=1.5)}}))
    return path


ROUND_TRIP = [tool_calls([("add", '{"a": 2, "b": 3}')]), tool_calls([("echo", '{"text": "hi"}')]),
              tool_calls([("crash", "{}")]), tool_calls([("hang", "{}")]), reasoning_then_content(2, 3)]


def test_remote_chat_round_trip_with_allowed_denied_crashing_and_hanging_tools(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = mcp_config(tmp_path)
    with openai_stream_server(*ROUND_TRIP) as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        capsys.readouterr()
        code = main(["remote", "chat", "loop", "Use your tools", "--mcp-config", str(config), "--json",
                     "--allow-tool", "add", "--allow-tool", "tools.crash", "--allow-tool", "hang"])
        sent = server.requests
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reply"] == data["text"] == "c0 c1 c2 " and data["reasoning"] == "r0 r1"
    calls = data["tool_calls"]
    assert [(c["name"], c["arguments"], c["status"]) for c in calls] == [
        ("add", {"a": 2, "b": 3}, "allowed"), ("echo", {"text": "hi"}, "denied"), ("crash", {}, "error"),
        ("hang", {}, "error")]
    assert calls[0]["result"] == "5" and calls[1]["result"] == "The user did not allow the tool 'echo' to run."
    assert calls[2]["result"] == "The tool server 'tools' stopped during the call of 'crash'."
    assert "did not finish within 1.5 s" in calls[3]["result"]
    # Not a terminal, and echo not allowed in advance: denied, and said so.
    assert any("echo of tools was not allowed to run: nobody is at a terminal" in n for n in data["notices"])
    assert [m["role"] for m in sent[-1]["messages"]] == ["user"] + ["assistant", "tool"] * 4
    assert data["stats"]["thinking_n"] == 2 and data["stats"]["ttft_s"] is not None


def test_plain_output_puts_thinking_and_tools_on_stderr_and_the_answer_on_stdout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = mcp_config(tmp_path, tools=stdio_entry(only=["add"]))
    with openai_stream_server(tool_calls([("add", '{"a": 2, "b": 3}')]), reasoning_then_content(2, 3)) as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        capsys.readouterr()
        assert main(["remote", "chat", "loop", "2+3?", "--mcp-config", str(config), "--allow-all-tools"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "c0 c1 c2"
    assert 'calling add({"a": 2, "b": 3})' in err and "tool add → 5" in err
    assert "r0 r1" in err and "\x1b[2m" not in err  # thinking on stderr, not dimmed: not a terminal
    assert "thought 2 tokens" in err


def test_a_terminal_is_asked_before_a_tool_runs(tmp_path: Path) -> None:
    """With stdin a terminal (a pseudo-terminal here), the command asks and reads the answer."""
    config = mcp_config(tmp_path, tools=stdio_entry(only=["add"]))
    scripts = [tool_calls([("add", '{"a": 2, "b": 3}')]), tool_calls([("add", '{"a": 4, "b": 4}')]),
               reasoning_then_content(0, 2)]
    with openai_stream_server(*scripts) as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        controller, terminal = pty.openpty()
        try:
            os.write(controller, b"y\nn\n")  # allow the first call once, deny the second
            proc = subprocess.run([sys.executable, "-m", "strata_gui", "remote", "chat", "loop", "add twice",
                                   "--mcp-config", str(config), "--json"], stdin=terminal, capture_output=True,
                                  text=True, timeout=120, cwd=REPO)
        finally:
            os.close(terminal)
            os.close(controller)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("The model wants to run add (server tools) with") == 2
    assert 'with {"a": 2, "b": 3}' in proc.stderr and "Allow? [y] once, [a] always this run, [N] no:" in proc.stderr
    data = json.loads(proc.stdout)
    assert [(c["status"], c["result"]) for c in data["tool_calls"]] == [
        ("allowed", "5"), ("denied", "The user did not allow the tool 'add' to run.")]


def test_bad_tool_and_schema_files_fail_before_anything_starts(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {}}}')
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "objekt"}')
    with openai_stream_server(reasoning_then_content(0, 1)) as server:
        assert main(["remote", "add", "loop", server.url, "--no-check"]) == 0
        capsys.readouterr()
        assert main(["remote", "chat", "loop", "hi", "--json-schema", str(schema)]) == 1
        assert "The schema is not valid" in capsys.readouterr().err
        assert main(["remote", "chat", "loop", "hi", "--mcp-config", str(bad)]) == 1
        assert "error:" in capsys.readouterr().err
        assert main(["remote", "chat", "loop", "hi", "--extra-body", "[1]"]) == 1
        assert "--extra-body must be a JSON object" in capsys.readouterr().err
        assert server.requests == []


@pytest.mark.engine
def test_strata_chat_runs_the_real_engines_tool_call(test_engines: Engines, functionary_model: Path,  # noqa: F811
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Functionary on the real engine, made to call a tool: the call is allowed, runs on the MCP server,
    its result goes back; the model's next words (random weights) fail its chat format, which the
    command says in plain words after printing everything it has."""
    config = mcp_config(tmp_path, tools=stdio_entry(only=["weather"]))
    extra = json.dumps({"logit_bias": [["a", False], ["al", False], ["all", False]]})
    code = main(["chat", "-m", str(functionary_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "2048",
                 "--seed", "1", "--max-tokens", "200", "--mcp-config", str(config), "--allow-tool", "weather",
                 "--tool-choice", "required", "--extra-body", extra, "--json", "What is the weather in Paris?"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["tool_calls"], data
    for call in data["tool_calls"]:
        assert call["name"] == "weather" and call["status"] == "allowed"
        assert call["result"] == f"Sunny in {call['arguments']['city']}, 21 °C"
    assert code == 1 and data["error"]["message"] == "The model's output did not match its chat format."
    assert "error: The model's output did not match its chat format." in err
