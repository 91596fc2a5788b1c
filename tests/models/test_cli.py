"""`strata models ...` against the loopback hub (own parser until the lead wires the command)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.commands import models as models_cmd
from strata_gui.core.errors import GGUFError, HubError
from strata_gui.core.services import Services, build_services


def _cli(services: Services, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="strata")
    models_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    return int(asyncio.run(args.func(args, services)))


@pytest.fixture
def services(hub: Any) -> Services:
    svc = build_services()
    svc.settings_service.update(hub_endpoint=hub.url)
    return svc


def test_search_info_pull_list_rm(services: Services, capsys: pytest.CaptureFixture[str], test_model: Path) -> None:
    assert _cli(services, "models", "search", "llama", "--json") == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["repo_id"] for h in hits] == ["strata/test-llama-GGUF", "strata/test-llama-split-GGUF", "strata/gated-llama-GGUF"]

    assert _cli(services, "models", "search", "--limit", "40") == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 41 and "strata/test-llama-GGUF" in out

    assert _cli(services, "models", "info", "strata/test-llama-GGUF", "--json") == 0
    info = json.loads(capsys.readouterr().out)
    assert [q["label"] for q in info["fit"]["quants"]] == ["F16", "Q4_K_M", "Q8_0"]
    assert info["fit"]["architecture"] == "llama"

    assert _cli(services, "models", "pull", "strata/test-llama-GGUF", "q8_0", "--json") == 0
    pulled = json.loads(capsys.readouterr().out)
    assert pulled["label"] == "Q8_0" and Path(pulled["files"][0]).read_bytes() == test_model.read_bytes()

    assert _cli(services, "models", "list", "--json") == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["quant"] == "F16" and entry["source"] == "hub cache" and entry["chat_template"] is True

    assert _cli(services, "models", "rm", "strata-test-llama-Q8_0.gguf", "--yes") == 0
    assert "freed 9.1 MB" in capsys.readouterr().out
    assert _cli(services, "models", "list") == 0
    assert "No models yet" in capsys.readouterr().out


def test_inspect_and_offline(services: Services, capsys: pytest.CaptureFixture[str], test_model: Path,
                             broken_models: dict[str, Path]) -> None:
    assert _cli(services, "models", "inspect", str(test_model), "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["architecture"], data["layers"], data["kv_heads"], data["context_length"]) == ("llama", 2, [2, 2], 4096)
    assert data["metadata"]["tokenizer.ggml.tokens"] == "<array of 32000>"
    with pytest.raises(GGUFError, match=r"incomplete|damaged"):
        _cli(services, "models", "inspect", str(broken_models["truncated"]))

    services.settings_service.update(offline=True)
    with pytest.raises(HubError, match="offline mode"):
        _cli(services, "models", "search", "llama")
    assert _cli(services, "models", "list") == 0
