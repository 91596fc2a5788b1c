"""`strata chat` through its own argparse parser (the lead wires it into strata_gui.cli)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata_gui.cli import run_command
from strata_gui.core.base.errors import ChatError
from tests.support import engines as _engines

Engines = _engines.TestEngines


def _run(argv: list[str]) -> int:
    return run_command(argv)


@pytest.mark.engine
def test_streams_one_reply_and_prints_stats(test_engines: Engines, test_model: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(["chat", "--model", str(test_model), "--engine", str(test_engines.cpu_dir), "--ctx-size", "512",
                 "--max-tokens", "12", "Hello there"])
    out, err = capsys.readouterr()
    assert code == 0 and out.strip()
    assert "12 tokens" in err and "decode" in err and "TTFT" in err and "CPU" in err


@pytest.mark.engine
def test_json_output(test_engines: Engines, test_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir), "--ctx-size", "512",
                 "--max-tokens", "6", "--seed", "1", "--json", "Hi"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["reply"] and data["stats"]["predicted_n"] == 6 and data["context_used"] > 6
    assert data["stats"]["engine"] == "CPU (your build: bin)" and data["notices"] == []
    assert data["engine"]["chosen"] == "local-cpu-bin"
    assert data["engine"]["reason"] == "you chose this engine folder"


@pytest.mark.engine
def test_without_engine_a_failed_probe_is_never_launched(test_engines: Engines, test_model: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's scenario: a ROCm build that sees no ROCm device is installed next to a working
    one; `strata chat` with no --engine uses the working one and says why."""
    import shutil

    rocm = tmp_path / "rocm-build"
    shutil.copytree(test_engines.vulkan_dir, rocm, symlinks=True)
    assert run_command(["engines", "add-local", str(rocm), "--backend", "rocm"]) == 1  # sees no ROCm device
    assert run_command(["engines", "add-local", str(test_engines.cpu_dir)]) == 0
    capsys.readouterr()
    code = _run(["chat", "-m", str(test_model), "--ctx-size", "512", "--max-tokens", "4", "--json", "Hi"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["stats"]["backend"] == "cpu"
    assert data["engine"]["chosen"] == "local-cpu-bin"
    rocm_verdict = next(e for e in data["engine"]["engines"] if e["engine"] == "local-rocm-rocm-build")
    assert not rocm_verdict["included"] and "sees no ROCm device" in rocm_verdict["reason"]
    # Streaming mode says which engine runs and why, before the reply.
    code = _run(["chat", "-m", str(test_model), "--ctx-size", "512", "--max-tokens", "4", "Hi"])
    err = capsys.readouterr().err
    assert code == 0 and "engine: CPU (your build: bin): runs on the processor" in err


def test_no_engine_is_a_clear_error(test_model: Path) -> None:
    with pytest.raises(ChatError, match="No engine is installed"):
        _run(["chat", "-m", str(test_model), "hi"])
