"""`strata mcp` through the real CLI entry point, against real MCP servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from strata_gui import cli
from tests.support.mcp_servers import http_server, stdio_entry

REPO = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_tools_json_lists_stdio_and_http_servers_without_secrets(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with http_server(require_header="Authorization=Bearer tok-secret") as url:
        path = _config(tmp_path, {
            "local": stdio_entry(env={"STRATA_TEST_KEY": "sk-secret"}),
            "remote": {"type": "http", "url": url, "headers": {"Authorization": "Bearer tok-secret"}},
        })
        assert cli.main(["mcp", "tools", "--mcp-config", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert "sk-secret" not in captured.out + captured.err and "tok-secret" not in captured.out + captured.err
    data = json.loads(captured.out)
    assert [s["name"] for s in data["servers"]] == ["local", "remote"]
    assert data["servers"][0]["env"] == ["STRATA_TEST_KEY"] and data["servers"][1]["headers"] == ["Authorization"]
    assert data["problems"] == []
    names = [(t["server"], t["name"], t["openai_name"]) for t in data["tools"]]
    assert ("local", "add", "local__add") in names and ("remote", "add", "remote__add") in names
    add = next(t for t in data["tools"] if t["openai_name"] == "local__add")
    assert add["description"] == "Add two integers." and add["input_schema"]["required"] == ["a", "b"]


def test_tools_text_and_a_failing_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path, {
        "tools": stdio_entry(),
        "broken": {"command": sys.executable, "args": ["-c", "import sys; print('no key', file=sys.stderr); sys.exit(1)"]},
        "sleeping": {**stdio_entry(), "disabled": True},
    })
    assert cli.main(["mcp", "tools", "--mcp-config", str(path)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == f"tools (stdio: {sys.executable})"
    assert "  add  Add two integers." in lines
    assert f"broken (stdio: {sys.executable}) [failed]" in lines and f"sleeping (stdio: {sys.executable}) [off]" in lines
    assert "error: The tool server 'broken' stopped while starting: no key" in captured.err
    assert "hint: Check its command and arguments" in captured.err


def test_bad_config_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text('{"mcpServers": {"a": {"command": "npx",}}}', encoding="utf-8")
    assert cli.main(["mcp", "tools", "--mcp-config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"error: The file {bad} is not valid JSON (line 1, column" in err
    assert "hint: Check for a missing comma" in err
    sse = tmp_path / "sse.json"
    sse.write_text('{"mcpServers": {"old": {"type": "sse", "url": "http://h/sse"}}}', encoding="utf-8")
    assert cli.main(["mcp", "tools", "--mcp-config", str(sse)]) == 1
    assert "error: The tool server 'old' uses the older HTTP+SSE transport" in capsys.readouterr().err


def test_import_list_disable_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path, {"local": stdio_entry(env={"STRATA_TEST_KEY": "sk-secret"})})
    assert cli.main(["mcp", "import", str(path)]) == 0
    assert capsys.readouterr().out == "imported 1 tool server(s): local\n"
    assert cli.main(["mcp", "list", "--json"]) == 0
    out = capsys.readouterr().out
    assert "sk-secret" not in out
    assert json.loads(out) == [{"name": "local", "transport": "stdio", "enabled": True, "command": sys.executable,
                                "args": stdio_entry()["args"], "cwd": "", "env": ["STRATA_TEST_KEY"]}]
    # The saved server runs with its secret, read back from the key store.
    assert cli.main(["mcp", "tools", "--json"]) == 0
    assert any(t["name"] == "env" for t in json.loads(capsys.readouterr().out)["tools"])
    assert cli.main(["mcp", "disable", "local"]) == 0
    assert cli.main(["mcp", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"local\tstdio\t{sys.executable}\toff"
    assert cli.main(["mcp", "remove", "local"]) == 0
    assert cli.main(["mcp", "list"]) == 0
    assert "no tool servers" in capsys.readouterr().out
    assert cli.main(["mcp", "remove", "local"]) == 1
    assert "There is no tool server named 'local'." in capsys.readouterr().err


def test_the_console_command_runs_without_qt(tmp_path: Path) -> None:
    path = _config(tmp_path, {"tools": stdio_entry()})
    code = (
        "import sys; from strata_gui.cli import main;"
        f"rc = main(['mcp', 'tools', '--mcp-config', {str(path)!r}, '--json']);"
        "qt = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync')];"
        "print('QT=' + ','.join(qt), file=sys.stderr); sys.exit(rc)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                         env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    assert res.stderr.rstrip().endswith("QT="), res.stderr
    assert len(json.loads(res.stdout)["tools"]) == 10
