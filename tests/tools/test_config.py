"""The mcpServers JSON of Claude Desktop, LM Studio and Cursor, and the errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.core.base.errors import ToolConfigError, ToolError
from strata_gui.core.tools import HTTP, STDIO, McpServerConfig, load_mcp_config, parse_mcp_json

# As Claude Desktop documents claude_desktop_config.json (local servers only, started with npx/uvx).
CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"]
    },
    "brave-search": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-brave-search"],
      "env": {"BRAVE_API_KEY": "BSA-secret-123"}
    }
  }
}"""

# As LM Studio documents mcp.json ("follows Cursor's notation"): a remote server with a bearer token.
LM_STUDIO = """{
  "mcpServers": {
    "hf-mcp-server": {
      "url": "https://huggingface.co/mcp",
      "headers": {"Authorization": "Bearer hf_secret_token"}
    },
    "playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]}
  }
}"""

# As Cursor documents .cursor/mcp.json: explicit "type", stdio and remote side by side.
CURSOR = """{
  "mcpServers": {
    "server-name": {
      "type": "stdio",
      "command": "python",
      "args": ["mcp-server.py"],
      "env": {"API_KEY": "value"},
      "cwd": "/work/project"
    },
    "remote": {"type": "http", "url": "http://localhost:3000/mcp", "headers": {"API_KEY": "value"}},
    "streamable": {"type": "streamable-http", "url": "https://example.com/mcp"},
    "cline-style": {"transport": "streamableHttp", "url": "https://example.com/mcp", "disabled": true}
  }
}"""


def test_claude_desktop_config() -> None:
    servers = parse_mcp_json(CLAUDE_DESKTOP)
    assert [s.name for s in servers] == ["filesystem", "brave-search"]
    fs, brave = servers
    assert fs.transport == STDIO and fs.command == "npx"
    assert fs.args == ("-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads")
    assert dict(brave.env) == {"BRAVE_API_KEY": "BSA-secret-123"}
    assert fs.enabled and brave.enabled and fs.timeout is None


def test_lm_studio_config() -> None:
    hf, playwright = parse_mcp_json(LM_STUDIO)
    assert hf.transport == HTTP and hf.url == "https://huggingface.co/mcp"
    assert dict(hf.headers) == {"Authorization": "Bearer hf_secret_token"}
    assert playwright.transport == STDIO and playwright.args == ("@playwright/mcp@latest",)


def test_cursor_config_and_transport_spellings() -> None:
    by_name = {s.name: s for s in parse_mcp_json(CURSOR)}
    local = by_name["server-name"]
    assert local.transport == STDIO and local.cwd == "/work/project" and dict(local.env) == {"API_KEY": "value"}
    assert by_name["remote"].transport == HTTP and dict(by_name["remote"].headers) == {"API_KEY": "value"}
    assert by_name["streamable"].transport == HTTP
    assert by_name["cline-style"].transport == HTTP and not by_name["cline-style"].enabled


@pytest.mark.parametrize("spelling", ["http", "streamable-http", "streamable_http", "streamableHttp", "HTTP"])
def test_http_type_spellings(spelling: str) -> None:
    (s,) = parse_mcp_json(json.dumps({"mcpServers": {"x": {"type": spelling, "url": "https://h/mcp"}}}))
    assert s.transport == HTTP


def test_vs_code_servers_key_and_scalar_values() -> None:
    text = json.dumps({"servers": {"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git", 3],
                                           "env": {"DEBUG": 1, "VERBOSE": True}, "timeout": 90}}})
    (s,) = parse_mcp_json(text)
    assert s.args == ("mcp-server-git", "3") and dict(s.env) == {"DEBUG": "1", "VERBOSE": "true"}
    assert s.timeout == 90.0


def test_secrets_stay_out_of_repr_describe_and_entry() -> None:
    brave = parse_mcp_json(CLAUDE_DESKTOP)[1]
    hf = parse_mcp_json(LM_STUDIO)[0]
    for text in (repr(brave), repr(hf), json.dumps(brave.describe()), json.dumps(hf.describe()),
                 json.dumps(brave.to_entry()), json.dumps(hf.to_entry())):
        assert "BSA-secret-123" not in text and "hf_secret_token" not in text
    assert brave.describe()["env"] == ["BRAVE_API_KEY"] and hf.describe()["headers"] == ["Authorization"]
    assert brave.to_entry(with_secrets=True)["env"] == {"BRAVE_API_KEY": "BSA-secret-123"}


def test_redact_hides_every_secret_value() -> None:
    s = McpServerConfig("r", HTTP, url="https://me:pa55word@h/mcp?key=k-query&x=1", headers={
        "Authorization": "Bearer tok-123456"}, env={"DEBUG": "1"})
    text = "Bearer tok-123456 / tok-123456 / pa55word / key=k-query / DEBUG=1"
    assert s.redact(text) == "*** / *** / *** / key=*** / DEBUG=1"


def test_config_is_a_frozen_value() -> None:
    s = McpServerConfig("a", STDIO, command="x", env={"K": "v"})
    with pytest.raises(TypeError):
        s.env["K"] = "changed"  # type: ignore[index]
    assert s == McpServerConfig("a", STDIO, command="x", env={"K": "v"})
    assert hash(s) == hash(McpServerConfig("a", STDIO, command="x", env={"K": "other"}))


def test_bad_json_names_line_and_column() -> None:
    with pytest.raises(ToolConfigError) as info:
        parse_mcp_json('{"mcpServers": {"a": {"command": "x",}}}', source="The file mcp.json")
    assert info.value.message.startswith("The file mcp.json is not valid JSON (line 1, column")
    assert "trailing comma" in (info.value.hint or "")
    assert isinstance(info.value, ToolError)


@pytest.mark.parametrize(("entry", "words"), [
    ({"args": ["x"]}, "has neither \"command\" nor \"url\""),
    ({"command": "x", "url": "https://h/mcp"}, "has both \"command\" and \"url\""),
    ({"type": "sse", "url": "https://h/sse"}, "older HTTP+SSE transport"),
    ({"type": "websocket", "url": "wss://h"}, "unknown transport type 'websocket'"),
    ({"type": "stdio", "url": "https://h/mcp"}, "has no \"command\""),
    ({"type": "http", "command": "x"}, "has no \"url\""),
    ({"url": "ftp://h/mcp"}, "is not an http(s) URL"),
    ({"command": "x", "args": "--flag"}, "\"args\" that is not a list"),
    ({"command": "x", "args": [{"a": 1}]}, "value in \"args\" that is not text"),
    ({"command": "x", "env": ["A=1"]}, "\"env\" that is not an object"),
    ({"command": "x", "envFile": ".env"}, "\"envFile\""),
    ({"command": "x", "timeout": -1}, "\"timeout\""),
    ({"command": "x", "disabled": "yes"}, "\"disabled\""),
    ("npx foo", "is not an object"),
])
def test_bad_server_entries_name_the_server_and_field(entry: object, words: str) -> None:
    with pytest.raises(ToolConfigError) as info:
        parse_mcp_json(json.dumps({"mcpServers": {"my-server": entry}}))
    assert "'my-server'" in info.value.message and words in info.value.message


def test_bad_shapes() -> None:
    for text, words in (("[]", "is not an MCP server configuration"), ("{}", "has no \"mcpServers\""),
                        ('{"mcpServers": []}', "is not an object of named servers"),
                        ('{"mcpServers": {"  ": {"command": "x"}}}', "has no name")):
        with pytest.raises(ToolConfigError) as info:
            parse_mcp_json(text)
        assert words in info.value.message, text


def test_secret_values_never_in_error_messages() -> None:
    with pytest.raises(ToolConfigError) as info:
        parse_mcp_json(json.dumps({"mcpServers": {"a": {"url": "ftp://user:hunter2@h/mcp"}}}))
    assert "hunter2" not in info.value.user_text()


def test_load_file(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(CLAUDE_DESKTOP, encoding="utf-8-sig")  # as Notepad saves it
    assert [s.name for s in load_mcp_config(path)] == ["filesystem", "brave-search"]
    with pytest.raises(ToolConfigError) as info:
        load_mcp_config(tmp_path / "missing.json")
    assert "does not exist" in info.value.message
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ToolConfigError) as info:
        load_mcp_config(tmp_path / "bad.json")
    assert str(tmp_path / "bad.json") in info.value.message and "not valid JSON" in info.value.message
