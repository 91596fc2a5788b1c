"""`strata models ...` against the loopback hub (own parser until the lead wires the command)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import GGUFError, HubError
from strata_gui.core.config.services import Services, build_services


def _cli(services: Services, *argv: str) -> int:
    return run_command(list(argv))


@pytest.fixture
def services(hub: Any) -> Services:
    svc = build_services()
    svc.settings_service.update(hub_endpoint=hub.url)  # saved, as the Settings page does
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
    assert "freed 8.6 MiB" in capsys.readouterr().out
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


def test_inspect_shows_the_memory_breakdown(services: Services, capsys: pytest.CaptureFixture[str],
                                            test_model: Path, split_model: list[Path]) -> None:
    from strata_gui.core.gpu.model import format_mem

    services.settings_service.update(context_size=2048)
    assert _cli(services, "models", "inspect", str(test_model), "--json") == 0
    data = json.loads(capsys.readouterr().out)
    mem = data["memory"]
    # f16 K and V for every layer and KV head, per position: from the header the command also shows.
    per_token = sum(h * (data["key_length"] + data["value_length"]) * 2 for h in data["kv_heads"])
    assert mem["kv_bytes_per_token"] == per_token > 0
    assert mem["weights_bytes"] == test_model.stat().st_size == data["size"]
    assert (mem["trained_context"], mem["kv_bytes_trained_context"]) == (4096, 4096 * per_token)
    # The Settings context for each of the parallel requests (automatic: as many as fit, at most 4);
    # the KV cache holds them all.
    slots = mem["slots"]
    assert 1 < slots <= 4 and data["fit"]["slots"] == slots and data["fit"]["automatic_slots"]
    assert (mem["n_ctx"], mem["kv_bytes_n_ctx"]) == (2048, slots * 2048 * per_token)
    assert mem["compute_bytes"] > 0
    assert mem["total_bytes"] == mem["weights_bytes"] + mem["kv_bytes_n_ctx"] + mem["compute_bytes"]

    # --ctx-size wins over Settings, for the breakdown and the fit alike; text uses the GPU page's units.
    assert _cli(services, "models", "inspect", str(test_model), "--ctx-size", "512", "--parallel", "1") == 0
    lines = {" ".join(line.split()) for line in capsys.readouterr().out.splitlines()}
    assert f"weights {format_mem(test_model.stat().st_size)}" in lines
    assert f"KV cache per token {format_mem(per_token)}" in lines
    assert f"KV cache at 4096 {format_mem(4096 * per_token)} trained context" in lines
    assert f"KV cache at 512 {format_mem(512 * per_token)} chosen context" in lines
    assert "parallel 1 request at a time, 512 tokens" in lines
    assert any(line.startswith("compute buffer ") and line.endswith("MiB at context 512") for line in lines)
    assert any(line.startswith("fit ") and "at context 512 " in line for line in lines)

    # Automatic parallel requests: how many, the context each gets, and the cache for all of them.
    assert _cli(services, "models", "inspect", str(test_model), "--ctx-size", "512") == 0
    lines = {" ".join(line.split()) for line in capsys.readouterr().out.splitlines()}
    assert f"parallel {slots} requests at once, 512 tokens each (automatic: as many as fit, at most 4)" in lines
    assert (f"KV cache at {slots} × 512 {format_mem(slots * 512 * per_token)} chosen context, {slots} parallel "
            f"requests") in lines

    # A split set counts every shard's weights.
    assert _cli(services, "models", "inspect", str(split_model[0]), "--json", "--ctx-size", "1024",
                "--parallel", "2") == 0
    split = json.loads(capsys.readouterr().out)["memory"]
    assert split["weights_bytes"] == sum(p.stat().st_size for p in split_model)
    assert (split["n_ctx"], split["slots"], split["kv_bytes_n_ctx"]) == (1024, 2, 2 * 1024 * per_token)
