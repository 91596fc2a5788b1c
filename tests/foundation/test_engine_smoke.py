"""The real test engines run the real test model and stream a chat reply (per engine)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.engines import TestEngines, running_server


def _stream_reply(base: str) -> tuple[list[str], dict[str, object]]:
    pieces: list[str] = []
    timings: dict[str, object] = {}
    body = {"messages": [{"role": "user", "content": "Say hello"}], "stream": True, "max_tokens": 16,
            "seed": 1}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices", []):
                if choice.get("delta", {}).get("content"):
                    pieces.append(choice["delta"]["content"])
            if "timings" in chunk:
                timings = chunk["timings"]
    return pieces, timings


@pytest.mark.engine
def test_cpu_engine_streams_a_reply(test_engines: TestEngines, test_model: Path) -> None:
    with running_server(test_engines.cpu_server, test_model) as base:
        pieces, timings = _stream_reply(base)
    assert len(pieces) >= 2
    assert timings["predicted_n"] == 16 and float(timings["predicted_per_second"]) > 0  # type: ignore[arg-type]


@pytest.mark.engine
def test_cpu_engine_lists_no_gpu(test_engines: TestEngines) -> None:
    out = subprocess.run([str(test_engines.cpu_server), "--list-devices"], capture_output=True, text=True,
                         timeout=60)
    assert "Available devices" in out.stdout
    assert "Vulkan" not in out.stdout and "ROCm" not in out.stdout


@pytest.mark.engine
@pytest.mark.vulkan
def test_vulkan_engine_sees_llvmpipe_and_streams_a_reply(test_engines: TestEngines, test_model: Path) -> None:
    env = test_engines.vulkan_env()
    out = subprocess.run([str(test_engines.vulkan_server), "--list-devices"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert "Vulkan0:" in out.stdout and "llvmpipe" in out.stdout
    with running_server(test_engines.vulkan_server, test_model, env=env, extra=["-ngl", "99"]) as base:
        pieces, timings = _stream_reply(base)
    assert len(pieces) >= 2
    assert timings["predicted_n"] == 16
