"""`strata serve` in a thread, a plain httpx client in the test: a streamed reply, then exit."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from strata_gui import cli
from tests.support.engines import TestEngines, free_port


def test_lan_without_key_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--lan", "--port", "0"]) == 1
    assert "requires an API key" in capsys.readouterr().err


def test_new_key_printed_once_then_only_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--new-key"]) == 0
    out = capsys.readouterr().out
    key = out.split("\n")[1].strip()
    assert key.startswith("strata-") and len(key) > 30
    assert cli.main(["serve", "--show-key"]) == 0
    assert key in capsys.readouterr().out


@pytest.mark.engine
def test_serves_a_streamed_reply(test_engines: TestEngines, test_model: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(cli.main(
        ["serve", "--engine", str(test_engines.cpu_dir), "--model", str(test_model), "--port", str(port),
         "--max-requests", "1", "--no-model-routes"])))
    t.start()
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        # --no-model-routes: apps may not delete (nor pull or copy) library models on this run.
        refused = httpx.request("DELETE", base + "/api/delete", json={"model": test_model.stem}, timeout=30)
        assert refused.status_code == 403 and "turned off" in refused.json()["error"]
        assert test_model.exists()
        text = []
        with httpx.stream("POST", base + "/v1/chat/completions", timeout=60,
                          json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
                                "stream": True}) as resp:
            assert resp.status_code == 200
            text = [line for line in resp.iter_lines() if line.startswith("data: ")]
        assert text[-1] == "data: [DONE]" and len(text) > 2
    finally:
        t.join(60)
    assert result == [0]
    out = capsys.readouterr().out
    assert f"serving 1 model at http://127.0.0.1:{port}/v1: {test_model.stem}" in out
    assert "200 /v1/chat/completions" in out and "tok/s" in out
