"""The user's tool servers, saved in the config folder; their secrets in the key store.

``mcp_servers.json`` holds each server's name, command or address, whether it is enabled, and the
*names* of its environment variables and headers, plus the "always allow" choices. The *values*
of those variables and headers (API keys, tokens), and an address that carries a password or a
query string, go to the user-only key store
(:class:`~strata_gui.core.remote.secrets.FileSecretStore`, DPAPI-protected on Windows), one entry
per server, exactly like remote engines' API keys; they never appear in the JSON or in logs.
"""

from __future__ import annotations

import json
import logging
import secrets as _secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from strata_gui.core.base.errors import StorageError, ToolConfigError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.state_file import UnusableStateFile, load_record, parse_state, write_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.tools.config import (
    HTTP,
    STDIO,
    McpServerConfig,
    check_name,
    load_mcp_config,
    parse_mcp_json,
)

_PASTED = QT_TRANSLATE_NOOP("Core", "The pasted configuration")
log = logging.getLogger(__name__)

FILE_NAME = "mcp_servers.json"
SECRET_PREFIX = "mcp-server-"
VERSION = 1


class SecretStore(Protocol):
    """Named secrets kept out of every settings file (``core.remote.secrets.FileSecretStore``)."""

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


@dataclass(frozen=True)
class ToolServersChanged:
    """Servers were added, removed, changed or turned on/off, or an "always allow" choice changed."""


class McpServerStore:
    """The tool servers the user added, and which tools they always allow.

    Args:
        path: ``mcp_servers.json`` in the config folder.
        secrets: The user-only key store for environment and header values.
    """

    def __init__(self, path: Path, secrets: SecretStore) -> None:
        self.path = path
        self._secrets = secrets
        self.events: Listeners[ToolServersChanged] = Listeners()  # after every saved change

    # -- reading -----------------------------------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        # A damaged list is kept aside (named in the log and on the command line) and Strata
        # starts a new one; a list that cannot be read at all is never written over.
        loaded = load_record(self.path, dict, QT_TRANSLATE_NOOP("Core", "the list of tool servers"))
        if loaded.unreadable:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "The list of tool servers {path} cannot be read."),
                                 path=self.path),
                               hint=QT_TRANSLATE_NOOP("Core", "Check the file's permissions."))
        raw = loaded.data if loaded.data is not None else {}
        servers = raw.get("servers")
        allow = raw.get("always_allow")
        return {"version": VERSION,
                "servers": [s for s in servers if isinstance(s, dict) and "name" in s and "id" in s]
                if isinstance(servers, list) else [],
                "always_allow": {str(k): [str(t) for t in v] for k, v in allow.items() if isinstance(v, list)}
                if isinstance(allow, dict) else {}}

    def _write(self, data: dict[str, Any]) -> None:
        try:
            write_state(self.path, data)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the tool servers: {reason}"),
                                 reason=exc.strerror or exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check that the config folder is writable.")) from exc

    def _secret_values(self, ident: str) -> dict[str, Any]:
        raw = self._secrets.get(SECRET_PREFIX + ident)
        if not raw:
            return {}
        try:
            data = parse_state(raw, dict)
        except UnusableStateFile:
            log.warning("the stored secrets of a tool server cannot be read; it starts without them")
            return {}
        out: dict[str, Any] = {k: {str(n): str(v) for n, v in data[k].items()} for k in ("env", "headers")
                               if isinstance(data.get(k), dict)}
        if isinstance(data.get("url"), str):
            out["url"] = data["url"]
        return out

    def _config(self, item: dict[str, Any]) -> McpServerConfig | None:
        transport = item.get("transport")
        if transport not in (STDIO, HTTP):
            return None
        stored = self._secret_values(str(item["id"]))
        timeout = item.get("timeout")
        return McpServerConfig(
            name=str(item["name"]), transport=transport, command=str(item.get("command", "")),
            args=tuple(str(a) for a in item.get("args", []) if isinstance(a, str)),
            env=stored.get("env", {}), cwd=str(item.get("cwd", "")), url=stored.get("url") or str(item.get("url", "")),
            headers=stored.get("headers", {}), enabled=bool(item.get("enabled", True)),
            timeout=float(timeout) if isinstance(timeout, int | float) and not isinstance(timeout, bool) else None)

    def servers(self) -> list[McpServerConfig]:
        """Every saved server with its secrets filled in, in the order they were added."""
        out = []
        for item in self._read()["servers"]:
            config = self._config(item)
            if config is not None:
                out.append(config)
        return out

    def enabled_servers(self) -> list[McpServerConfig]:
        return [s for s in self.servers() if s.enabled]

    def get(self, name: str) -> McpServerConfig:
        """The server called ``name``.

        Raises:
            ToolConfigError: There is none.
        """
        for s in self.servers():
            if s.name == name:
                return s
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "There is no tool server named '{name}'."),
                                name=name),
                              hint=QT_TRANSLATE_NOOP("Core", "Add it first, or import an mcpServers JSON "
                                                             "file."))

    # -- changing ----------------------------------------------------------------------------------
    def add(self, config: McpServerConfig) -> McpServerConfig:
        """Save ``config`` (replacing a server of the same name); its secrets go to the key store.

        "Always allow" choices of a replaced server survive only if its command and address
        are unchanged.
        """
        self.add_many([config])
        return config

    def add_many(self, configs: Iterable[McpServerConfig]) -> list[McpServerConfig]:
        """Save several servers in one write (see :meth:`add`)."""
        configs = list(configs)
        data = self._read()
        items: list[dict[str, Any]] = data["servers"]
        for config in configs:
            name = check_name(config.name)
            index = next((i for i, it in enumerate(items) if it["name"] == name), None)
            old = items[index] if index is not None else None
            ident = str(old["id"]) if old else _secrets.token_hex(6)
            if old is not None:
                old_config = self._config(old)
                if old_config is None or old_config.identity() != config.identity():
                    data["always_allow"].pop(name, None)
            self._save_secrets(ident, config)
            item = self._item(ident, config)
            if index is None:
                items.append(item)
            else:
                items[index] = item
            log.info("tool server %s saved (%s, %d secret value(s))", name, config.transport,
                     len(config.env) + len(config.headers))
        self._write(data)
        self.events.emit(ToolServersChanged())
        return configs

    def import_file(self, path: Path) -> list[McpServerConfig]:
        """Add every server of an ``mcpServers`` JSON file (Claude Desktop, Cursor, LM Studio).

        Raises:
            ToolConfigError: The file is not a usable configuration (nothing is saved then).
        """
        return self.add_many(load_mcp_config(path))

    def import_json(self, text: str, *, source: str = _PASTED) -> list[McpServerConfig]:
        """Like :meth:`import_file`, from pasted text."""
        return self.add_many(parse_mcp_json(text, source=source))

    def remove(self, name: str) -> None:
        """Forget a server, its secrets and its "always allow" choices."""
        data = self._read()
        gone = [it for it in data["servers"] if it["name"] == name]
        if not gone:
            raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "There is no tool server named '{name}'."),
                                    name=name))
        data["servers"] = [it for it in data["servers"] if it["name"] != name]
        data["always_allow"].pop(name, None)
        self._write(data)
        for it in gone:
            self._secrets.delete(SECRET_PREFIX + str(it["id"]))
        self.events.emit(ToolServersChanged())

    def set_enabled(self, name: str, enabled: bool) -> McpServerConfig:
        """Turn a server on or off (off: its tools are not offered, nothing is started)."""
        data = self._read()
        for item in data["servers"]:
            if item["name"] == name:
                item["enabled"] = bool(enabled)
                self._write(data)
                self.events.emit(ToolServersChanged())
                return self.get(name)
        raise ToolConfigError(T(QT_TRANSLATE_NOOP("Core", "There is no tool server named '{name}'."),
                                name=name))

    # -- "always allow" (ApprovalMemory) ------------------------------------------------------------
    def always_allowed(self) -> dict[str, list[str]]:
        """Server name → the tools the user always allows on it."""
        return {k: sorted(v) for k, v in self._read()["always_allow"].items() if v}

    def is_always_allowed(self, server: str, tool: str) -> bool:
        return tool in self._read()["always_allow"].get(server, [])

    def set_always_allowed(self, server: str, tool: str, allowed: bool) -> None:
        data = self._read()
        tools = set(data["always_allow"].get(server, []))
        if allowed == (tool in tools):
            return
        if allowed:
            tools.add(tool)
        else:
            tools.discard(tool)
        if tools:
            data["always_allow"][server] = sorted(tools)
        else:
            data["always_allow"].pop(server, None)
        self._write(data)
        self.events.emit(ToolServersChanged())

    # -- helpers ------------------------------------------------------------------------------------
    def _save_secrets(self, ident: str, config: McpServerConfig) -> None:
        key = SECRET_PREFIX + ident
        blob: dict[str, Any] = {"env": dict(config.env), "headers": dict(config.headers)}
        if config.transport == HTTP and config.target != config.url:
            blob["url"] = config.url  # user:password@ or ?key=... in the address: a secret too
        if config.env or config.headers or "url" in blob:
            self._secrets.set(key, json.dumps(blob))
        else:
            self._secrets.delete(key)

    @staticmethod
    def _item(ident: str, config: McpServerConfig) -> dict[str, Any]:
        item: dict[str, Any] = {"id": ident, "name": config.name, "transport": config.transport,
                                "enabled": config.enabled}
        if config.transport == STDIO:
            item.update(command=config.command, args=list(config.args), cwd=config.cwd,
                        env_names=sorted(config.env))
        else:
            item.update(url=config.target, header_names=sorted(config.headers))
        if config.timeout is not None:
            item["timeout"] = config.timeout
        return item
