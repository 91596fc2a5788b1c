"""Fixtures for the model browser tests: captured GPU memory figures, model shapes, loopback hub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent.parent / "data" / "models"


@pytest.fixture(scope="session")
def captured_gpus() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((DATA / "gpus.json").read_text())
    data.pop("_comment", None)
    return data


@pytest.fixture(scope="session")
def model_shapes() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((DATA / "model_shapes.json").read_text())
    data.pop("_comment", None)
    return data


CARD = """---
license: apache-2.0
base_model: strata/test-llama
tags: [gguf, llama]
---
# Strata Test Llama GGUF

A tiny **llama** model for tests. Quantisations:

| file | quant |
|---|---|
| strata-test-llama-F16.gguf | F16 |
"""


@pytest.fixture
def hub_repos(test_model: Path, split_model: list[Path]) -> list[Any]:
    """The repos the loopback hub serves: single-file quants, a split set, a gated repo, fillers."""
    from tests.support.hub_server import HubRepo

    repos = [
        HubRepo(
            "strata/test-llama-GGUF",
            {
                "README.md": CARD.encode(),
                "strata-test-llama-F16.gguf": test_model,
                "strata-test-llama-Q8_0.gguf": test_model,
                "strata-test-llama-Q4_K_M.gguf": test_model,
                "config.json": b"{}",
            },
            downloads=5000,
            likes=40,
            params=4_170_048,
        ),
        HubRepo(
            "strata/test-llama-split-GGUF",
            {"README.md": b"# Split test llama\n", **{f"F16/{p.name}": p for p in split_model}},
            commit="fedcba9876543210fedcba9876543210fedcba98",
            downloads=300,
            likes=3,
        ),
        HubRepo("strata/gated-llama-GGUF", {"README.md": b"# Gated\n", "gated-Q4_K_M.gguf": test_model},
                gated=True, downloads=10, likes=1),
    ]
    repos += [
        HubRepo(f"fillers/model-{i:02d}-GGUF", {"README.md": b"# filler\n"}, downloads=i, likes=i % 7,
                last_modified=f"2026-09-{1 + i % 28:02d}T00:00:00.000Z")
        for i in range(45)
    ]
    return repos


@pytest.fixture
def hub(hub_repos: list[Any]) -> Any:
    from tests.support.hub_server import running_hub

    with running_hub(hub_repos) as running:
        yield running


@pytest.fixture
def make_service(tmp_path: Path) -> Any:
    """Build a ModelService inside a running loop: ``async with make_service(hub) as svc``."""
    import contextlib

    import httpx

    from strata_gui.core.models.fit import GIB, MemoryTarget
    from strata_gui.core.models.hub_config import HubTokens, SavedHubToken
    from strata_gui.core.models.service import ModelService
    from strata_gui.core.remote.secrets import FileSecretStore

    @contextlib.asynccontextmanager
    async def factory(hub: Any, **kw: Any) -> Any:
        opts: dict[str, Any] = {
            "endpoint": hub.url if hub is not None else "http://127.0.0.1:9",
            "cache_dir": tmp_path / "hf-home" / "hub",
            "queue_file": tmp_path / "strata-home" / "downloads.json",
            "token_store": HubTokens(SavedHubToken(FileSecretStore(tmp_path / "strata-home" / "secrets.json")), {}),
            "model_dirs": [],
            "memory_target": lambda: MemoryTarget("Test GPU", 8 * GIB),
            "ram_bytes": 32 * GIB,
        }
        opts.update(kw)
        async with httpx.AsyncClient(timeout=10) as client:
            svc = ModelService(client=client, **opts)
            try:
                yield svc
            finally:
                await svc.aclose()

    return factory
