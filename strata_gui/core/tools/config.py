"""MCP server definitions: the ``{"mcpServers": {...}}`` JSON other apps write, as typed configs.

Claude Desktop (``claude_desktop_config.json``), Cursor (``.cursor/mcp.json``) and LM Studio
(``mcp.json``) share one shape: an object ``mcpServers`` mapping a server's name to either a
command (``command``, ``args``, ``env``, ``cwd``: a local server spoken to over stdio) or an address
(``url``, ``headers``: a remote server spoken to over streamable HTTP). An explicit ``type`` (Cursor,
Claude Code, VS Code) or ``transport`` (Cline, older docs) may name the transport; the spellings
seen in those files (``stdio``, ``http``, ``streamable-http``, ``streamableHttp``) are accepted.
VS Code's ``{"servers": {...}}`` is read too. The older HTTP+SSE transport is refused with a hint:
the host speaks streamable HTTP only.

Environment values and header values are treated as secrets (API keys live there): they are never
part of a ``repr``, a log line or :meth:`McpServerConfig.describe`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import urlsplit

from strata_gui.core.base.errors import ToolConfigError
from strata_gui.core.base.state_file import nested_too_deeply
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text

Transport = Literal["stdio", "http"]
STDIO: Transport = "stdio"
HTTP: Transport = "http"

MAX_NAME = 100  # a server's name is shown in approval prompts and prefixes tool names

# ``type``/``transport`` values, lower-cased with "-" and "_" removed.
_TRANSPORT_SPELLINGS: dict[str, Transport] = {
    "stdio": STDIO,
    "local": STDIO,
    "http": HTTP,
    "streamablehttp": HTTP,
    "streamable": HTTP,
    "httpstreamable": HTTP,
    "remote": HTTP,
}
_URL_KEYS = ("url", "serverUrl", "httpUrl")  # Cursor/LM Studio/Claude Code, Windsurf, Gemini CLI
_TRANSPORT_KEYS = ("type", "transport", "transportType")


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server the host may start (stdio) or reach (streamable HTTP).

    Attributes:
        name: The user's name for it (the key in ``mcpServers``); unique among the user's servers.
        transport: ``"stdio"`` (``command`` is run) or ``"http"`` (``url`` is reached).
        command: The program to run (stdio), found on ``PATH`` unless a path is given.
        args: Its arguments.
        env: Variables added to its environment (secret: never shown or logged).
        cwd: Its working folder ("" = Strata's).
        url: The streamable-HTTP endpoint (http).
        headers: Headers sent with every request, e.g. ``Authorization`` (secret).
        enabled: False keeps the server saved but unused.
        timeout: Seconds a tool call of this server may take (None = the host's default).
    """

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False, hash=False)
    enabled: bool = True
    timeout: float | None = None

    def __post_init__(self) -> None:
        # Read-only copies: a config is a value, and its secrets must not change under the host.
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))

    @property
    def target(self) -> str:
        """What it runs or reaches, for lists: the command (no arguments: they may hold keys) or the URL's host."""
        if self.transport == STDIO:
            return self.command
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"

    def secret_values(self) -> list[str]:
        """Every secret this server's config holds (env and header values, a bearer token, the
        password and query of its address), longest first; values under 4 characters are not
        secrets worth hiding ("1", "true")."""
        values = [*self.env.values(), *self.headers.values()]
        values += [v.split(None, 1)[1] for v in self.headers.values() if len(v.split(None, 1)) == 2]
        if self.url:
            parts = urlsplit(self.url)
            values += [parts.password or "", parts.query, parts.fragment]
            values += [pair.partition("=")[2] for pair in parts.query.split("&")]
        return sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """``text`` with this server's secret values replaced by ``***`` (for messages and logs)."""
        for value in self.secret_values():
            text = text.replace(value, "***")
        return text

    def identity(self) -> tuple[object, ...]:
        """What the server *is*: approvals given to it are forgotten when this changes."""
        return (self.transport, self.command, self.args, self.cwd, self.url)

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly summary without secret values (variable and header names only)."""
        out: dict[str, Any] = {"name": self.name, "transport": self.transport, "enabled": self.enabled}
        if self.transport == STDIO:
            out.update(command=self.command, args=list(self.args), cwd=self.cwd, env=sorted(self.env))
        else:
            out.update(url=self.target, headers=sorted(self.headers))
        if self.timeout is not None:
            out["timeout"] = self.timeout
        return out

    def to_entry(self, *, with_secrets: bool = False) -> dict[str, Any]:
        """This server as one ``mcpServers`` entry (secret values only when asked)."""
        entry: dict[str, Any]
        if self.transport == STDIO:
            entry = {"command": self.command, "args": list(self.args)}
            if self.cwd:
                entry["cwd"] = self.cwd
            if with_secrets and self.env:
                entry["env"] = dict(self.env)
        else:
            entry = {"type": "http", "url": self.url}
            if with_secrets and self.headers:
                entry["headers"] = dict(self.headers)
        if not self.enabled:
            entry["disabled"] = True
        if self.timeout is not None:
            entry["timeout"] = self.timeout
        return entry


_CONFIGURATION = QT_TRANSLATE_NOOP("Core", "The MCP configuration")
# "In {source}, ..." names the source in lower case; these are the lower-case names Strata itself uses.
_LOWER_SOURCES = (QT_TRANSLATE_NOOP("Core", "the MCP configuration"),
                  QT_TRANSLATE_NOOP("Core", "the file {path}"),
                  QT_TRANSLATE_NOOP("Core", "the pasted configuration"))


def parse_mcp_json(text: str, *, source: str = _CONFIGURATION) -> list[McpServerConfig]:
    """Servers from the text of an ``mcpServers`` JSON file.

    Args:
        text: The file's text.
        source: How messages name it ("The file mcp.json").

    Raises:
        ToolConfigError: Not JSON, not the ``mcpServers`` shape, or a server entry is unusable;
            the message names the server and the field.
    """
    if nested_too_deeply(text):  # json.loads would recurse until Python gives up
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "{source} is nested too deeply to be a tool server "
                                                          "configuration."), source=source))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolConfigError(
            T(QT_TRANSLATE_NOOP("Core",
                                "{source} is not valid JSON (line {line}, column {column}: {reason})."),
              source=source, line=exc.lineno, column=exc.colno, reason=exc.msg),
            hint=QT_TRANSLATE_NOOP("Core", "Check for a missing comma or quote, or a trailing comma; "
                                           "comments are not allowed in JSON."),
        ) from None
    return parse_mcp_servers(data, source=source)


def load_mcp_config(path: Path) -> list[McpServerConfig]:
    """Servers from an ``mcpServers`` JSON file (``claude_desktop_config.json``, ``mcp.json`` ...).

    Raises:
        ToolConfigError: The file cannot be read or is not a usable configuration.
    """
    source = T(QT_TRANSLATE_NOOP("Core", "The file {path}"), path=str(path))
    try:
        text = path.read_text(encoding="utf-8-sig")  # Notepad writes a byte-order mark
    except FileNotFoundError:
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core",
                                                  "The MCP configuration file {path} does not exist."),
                                path=str(path)),
                              hint=QT_TRANSLATE_NOOP("Core", "Check the path.")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core",
                                                  "The MCP configuration file {path} cannot be read."),
                                path=str(path)),
                              hint=QT_TRANSLATE_NOOP("Core", "Check that it is a UTF-8 text file you may "
                                                             "read."),
                              details=f"{type(exc).__name__}: {exc}") from None
    return parse_mcp_json(text, source=source)


def parse_mcp_servers(data: Any, *, source: str = _CONFIGURATION) -> list[McpServerConfig]:
    """Servers from already-decoded ``mcpServers`` JSON (see :func:`parse_mcp_json`).

    Raises:
        ToolConfigError: The shape or one server entry is unusable.
    """
    shape_hint = QT_TRANSLATE_NOOP("Core", 'Expected {"mcpServers": {"name": {"command": ..., "args": '
                                           '[...]}}} or {"name": {"url": ...}}.')
    if not isinstance(data, dict):
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "{source} is not an MCP server configuration."),
                                source=source), hint=shape_hint)
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "{source} has no \"mcpServers\" section."),
                                source=source),
                              hint=shape_hint)
    if not isinstance(servers, dict):
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "In {source}, \"mcpServers\" is not an object of "
                                                          "named servers."), source=_lower(source)),
                              hint=shape_hint)
    return [parse_server(name, entry) for name, entry in servers.items()]


def parse_server(name: str, entry: Any) -> McpServerConfig:
    """One ``mcpServers`` entry.

    Raises:
        ToolConfigError: The entry is unusable; the message names the server and the field.
    """
    name = check_name(name)
    if not isinstance(entry, dict):
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' is not an object."),
                   QT_TRANSLATE_NOOP("Core", 'Give it "command" (a local server) or "url" (a remote one).'))
    if "envFile" in entry:
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' uses \"envFile\", which Strata "
                                                   "does not read."),
                   QT_TRANSLATE_NOOP("Core", 'Copy the variables into "env" instead.'))
    transport = _transport(name, entry)
    enabled = not _flag(name, entry, "disabled", False) and _flag(name, entry, "enabled", True)
    timeout = _timeout(name, entry)
    if transport == STDIO:
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has no \"command\"."),
                       QT_TRANSLATE_NOOP("Core", 'A local server needs "command", e.g. "npx" or "uvx".'))
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has \"args\" that is not a "
                                                       "list."),
                       QT_TRANSLATE_NOOP("Core", 'Write the arguments as ["arg1", "arg2"].'))
        cwd = entry.get("cwd", "")
        if not isinstance(cwd, str):
            raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has a \"cwd\" that is not a "
                                                       "folder path."), None)
        return McpServerConfig(name, STDIO, command=command.strip(),
                               args=tuple(_scalar(name, "args", a) for a in args),
                               env=_string_map(name, entry, "env"), cwd=cwd, enabled=enabled, timeout=timeout)
    url = next((entry[k] for k in _URL_KEYS if k in entry), None)
    if not isinstance(url, str) or not url.strip():
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has no \"url\"."),
                   QT_TRANSLATE_NOOP("Core", 'A remote server needs "url", e.g. "https://example.com/mcp".'))
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has the address '{url}', which "
                                                   "is not an http(s) URL."),
                   QT_TRANSLATE_NOOP("Core", "Use the form https://host/path."), url=_safe_url(url))
    return McpServerConfig(name, HTTP, url=url, headers=_string_map(name, entry, "headers"), enabled=enabled,
                           timeout=timeout)


def check_name(name: object) -> str:
    """A server name, stripped; raises :class:`ToolConfigError` when empty, too long or unprintable."""
    if not isinstance(name, str) or not name.strip():
        raise ToolConfigError(QT_TRANSLATE_NOOP("Core", "A tool server has no name."),
                              hint=QT_TRANSLATE_NOOP("Core", "Give every server a name."))
    cleaned = name.strip()
    if len(cleaned) > MAX_NAME or not cleaned.isprintable():
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "The tool server name '{name}' is too long or has "
                                                          "control characters."), name=cleaned[:40]),
                              hint=T(QT_TRANSLATE_NOOP("Core", "Use a short name (at most {count} "
                                                               "characters)."),
                                     count=MAX_NAME))
    return cleaned


def _transport(name: str, entry: dict[str, Any]) -> Transport:
    given = next((entry[k] for k in _TRANSPORT_KEYS if k in entry), None)
    has_url = any(k in entry for k in _URL_KEYS)
    if given is None:
        if has_url and "command" in entry:
            raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has both \"command\" and "
                                                       "\"url\"."),
                       QT_TRANSLATE_NOOP("Core", "Keep the one this server uses."))
        if has_url:
            return HTTP
        if "command" in entry:
            return STDIO
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has neither \"command\" nor "
                                                   "\"url\"."),
                   QT_TRANSLATE_NOOP("Core", 'Give it "command" (a local server) or "url" (a remote one).'))
    if not isinstance(given, str):
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has a transport type that is "
                                                   "not text."),
                   QT_TRANSLATE_NOOP("Core", 'Use "stdio" or "http".'))
    key = given.strip().lower().replace("-", "").replace("_", "")
    if key == "sse":
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' uses the older HTTP+SSE "
                                                   "transport, which Strata does not speak."),
                   QT_TRANSLATE_NOOP("Core", "Use the server's streamable-HTTP address instead (often the "
                                             "same host, ending in /mcp)."))
    transport = _TRANSPORT_SPELLINGS.get(key)
    if transport is None:
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has the unknown transport type "
                                                   "'{transport}'."),
                   QT_TRANSLATE_NOOP("Core", 'Use "stdio" or "http".'), transport=given[:40])
    return transport


def _scalar(name: str, what: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # before int: JSON true is a bool
        return "true" if value else "false"
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return str(value)
    raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has a value in \"{field}\" that is "
                                               "not text."),
               T(QT_TRANSLATE_NOOP("Core", 'Write every value in "{field}" as a string.'), field=what),
               field=what)


def _string_map(name: str, entry: dict[str, Any], key: str) -> dict[str, str]:
    raw = entry.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has \"{field}\" that is not an "
                                                   "object."),
                   T(QT_TRANSLATE_NOOP("Core", 'Write "{field}" as {{"NAME": "value"}}.'), field=key),
                   field=key)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if not str(k).strip():
            raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has an empty name in "
                                                       "\"{field}\"."),
                       None, field=key)
        out[str(k)] = _scalar(name, key, v)  # the value is never put in a message: it may be a key
    return out


def _flag(name: str, entry: dict[str, Any], key: str, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has \"{field}\" that is not "
                                                   "true or false."), None, field=key)
    return value


def _timeout(name: str, entry: dict[str, Any]) -> float | None:
    value = entry.get("timeout")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise _bad(name, QT_TRANSLATE_NOOP("Core", "The tool server '{name}' has a \"timeout\" that is not a "
                                                   "positive number of seconds."), None)
    return float(value)  # seconds, as Cline writes it


def _safe_url(url: str) -> str:
    """The URL without user:password@ (for messages)."""
    parts = urlsplit(url)
    return url.replace(parts.netloc, parts.netloc.rpartition("@")[2], 1) if "@" in parts.netloc else url[:200]


def _lower(source: str) -> str:
    """``source`` starting in lower case; Strata's own names stay translatable (see ``_LOWER_SOURCES``)."""
    if isinstance(source, Text):
        return Text(source.template[:1].lower() + source.template[1:], **source.args)
    return source[:1].lower() + source[1:]


def _bad(name: str, message: str, hint: str | None, **args: object) -> ToolConfigError:
    """``message``: a whole marked sentence with ``{name}`` (the server) and ``args``."""
    return ToolConfigError(T(message, name=name, **args), hint=hint)
