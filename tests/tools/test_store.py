"""The saved tool servers: secrets in the key store only, import, enable/disable, "always allow"."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from strata_gui.core.base.errors import ToolConfigError
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.tools import (
    HTTP,
    STDIO,
    ApprovalRequest,
    Decision,
    McpServerConfig,
    McpServerStore,
    ToolPolicy,
)
from tests.tools.test_config import CLAUDE_DESKTOP, CURSOR, LM_STUDIO

SECRETS = ("BSA-secret-123", "hf_secret_token", "hunter2", "tok-in-query")


def _store() -> McpServerStore:
    config = AppPaths.from_environment().config_dir
    return McpServerStore(config / "mcp_servers.json", FileSecretStore(config / "secrets.json"))


def test_secrets_never_in_the_saved_json(tmp_path: Path) -> None:
    store = _store()
    for i, text in enumerate((CLAUDE_DESKTOP, LM_STUDIO, CURSOR)):
        (tmp_path / f"{i}.json").write_text(text, encoding="utf-8")
        store.import_file(tmp_path / f"{i}.json")
    store.add(McpServerConfig("private", HTTP, url="https://me:hunter2@example.com/mcp?key=tok-in-query"))
    saved = store.path.read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in saved
    data = json.loads(saved)
    by_name = {s["name"]: s for s in data["servers"]}
    assert by_name["brave-search"]["env_names"] == ["BRAVE_API_KEY"]
    assert by_name["hf-mcp-server"]["header_names"] == ["Authorization"]
    assert by_name["private"]["url"] == "https://example.com/mcp"
    # ... they are in the user-only key store, and a new store reads them back.
    keys = store.path.parent / "secrets.json"
    if sys.platform != "win32":
        assert os.stat(keys).st_mode & 0o077 == 0
    again = {s.name: s for s in _store().servers()}
    assert dict(again["brave-search"].env) == {"BRAVE_API_KEY": "BSA-secret-123"}
    assert dict(again["hf-mcp-server"].headers) == {"Authorization": "Bearer hf_secret_token"}
    assert again["private"].url == "https://me:hunter2@example.com/mcp?key=tok-in-query"
    assert again["server-name"].cwd == "/work/project" and again["cline-style"].enabled is False
    assert [s.name for s in again.values()] == ["filesystem", "brave-search", "hf-mcp-server", "playwright",
                                                "server-name", "remote", "streamable", "cline-style", "private"]


def test_a_bad_import_saves_nothing(tmp_path: Path) -> None:
    store = _store()
    bad = tmp_path / "mcp.json"
    bad.write_text('{"mcpServers": {"ok": {"command": "x"}, "broken": {"type": "sse", "url": "https://h"}}}',
                   encoding="utf-8")
    with pytest.raises(ToolConfigError):
        store.import_file(bad)
    assert store.servers() == [] and not store.path.exists()


def test_enable_disable_remove_and_events() -> None:
    store = _store()
    changes: list[int] = []
    store.events.subscribe(lambda _e: changes.append(1))
    store.import_json(CLAUDE_DESKTOP)
    assert store.set_enabled("filesystem", False).enabled is False
    assert [s.name for s in store.enabled_servers()] == ["brave-search"]
    store.remove("brave-search")
    assert [s.name for s in store.servers()] == ["filesystem"]
    secrets = store.path.parent / "secrets.json"
    assert "BSA" not in secrets.read_text(encoding="utf-8") and json.loads(secrets.read_text(encoding="utf-8")) == {}
    with pytest.raises(ToolConfigError):
        store.get("brave-search")
    with pytest.raises(ToolConfigError):
        store.set_enabled("nope", True)
    assert len(changes) == 3


def test_always_allow_persists_and_is_forgotten_when_the_server_changes() -> None:
    store = _store()
    store.add(McpServerConfig("files", STDIO, command="npx", args=("server-a",)))
    store.set_always_allowed("files", "read", True)
    store.set_always_allowed("files", "list", True)
    assert _store().always_allowed() == {"files": ["list", "read"]}
    assert _store().is_always_allowed("files", "read") and not _store().is_always_allowed("files", "write")
    # Same command and arguments (only its env changed): the approvals stay.
    store.add(McpServerConfig("files", STDIO, command="npx", args=("server-a",), env={"K": "v"}))
    assert store.is_always_allowed("files", "read")
    # Another program under the same name: it has to earn them again.
    store.add(McpServerConfig("files", STDIO, command="npx", args=("server-b",)))
    assert store.always_allowed() == {}
    store.set_always_allowed("files", "read", True)
    store.remove("files")
    assert store.always_allowed() == {}


def test_policy_asks_unless_always_allowed_and_remembers_always() -> None:
    store = _store()
    asked: list[ApprovalRequest] = []
    answers = [Decision.ALLOW_ONCE, Decision.DENY, Decision.ALWAYS]

    async def approver(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return answers.pop(0)

    async def main() -> list[Decision]:
        policy = ToolPolicy(store)
        request = ApprovalRequest("files", "read", "Read a file", {"path": "/tmp/x"})
        return [await policy.decide(request, approver) for _ in range(5)]

    decisions = asyncio.run(main())
    assert decisions == [Decision.ALLOW_ONCE, Decision.DENY, Decision.ALWAYS, Decision.ALWAYS, Decision.ALWAYS]
    assert len(asked) == 3 and asked[0].arguments == {"path": "/tmp/x"}
    assert _store().always_allowed() == {"files": ["read"]}  # persisted for the next run
    ToolPolicy(_store()).forget("files", "read")
    assert _store().always_allowed() == {}


def test_policy_refuses_an_approver_that_does_not_answer_a_decision() -> None:
    async def sloppy(request: ApprovalRequest) -> Decision:
        return True  # type: ignore[return-value]

    with pytest.raises(TypeError):
        asyncio.run(ToolPolicy().decide(ApprovalRequest("s", "t"), sloppy))


def test_a_damaged_store_is_kept_aside_and_a_new_one_starts() -> None:
    store = _store()
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text("{broken", encoding="utf-8")
    assert store.servers() == []  # was a StorageError that broke `strata mcp list` and every reply
    kept = list(store.path.parent.glob("mcp_servers.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == "{broken"
