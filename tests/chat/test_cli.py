"""`strata chat` through its own argparse parser (the lead wires it into strata_gui.cli)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from strata_gui.commands import chat as chat_cmd
from strata_gui.core.errors import ChatError
from strata_gui.core.services import build_services
from tests.support import engines as _engines

Engines = _engines.TestEngines


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="strata")
    chat_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(asyncio.run(args.func(args, build_services())))


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
    assert data["stats"]["engine"] == "CPU" and data["notices"] == []


def test_no_engine_is_a_clear_error(test_model: Path) -> None:
    with pytest.raises(ChatError, match="No engine found"):
        _run(["chat", "-m", str(test_model), "hi"])
