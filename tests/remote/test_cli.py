"""`strata remote` against a real keyed llama-server and an OpenAI-like server."""

from __future__ import annotations

import json
import os

import pytest

from strata_gui import cli
from strata_gui.core.config.paths import AppPaths
from tests.remote.test_remote import KEY, keyed_server  # noqa: F401 (fixture)
from tests.support.remote_server import WORDS, openai_like_server


def _main(argv: list[str]) -> int:
    return cli.main(argv)


def test_add_list_models_chat_remove(capsys: pytest.CaptureFixture[str]) -> None:
    with openai_like_server() as base:
        assert _main(["remote", "add", "vllm", base + "/v1"]) == 0
        assert "using org/Model-7B" in capsys.readouterr().out
        assert _main(["remote", "list", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed == [{"name": "vllm", "url": base, "api_key": False, "model": "org/Model-7B"}]
        assert _main(["remote", "chat", "vllm", "hi", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["text"] == "".join(WORDS) and out["stats"]["decode_tps"] > 0
        assert _main(["remote", "remove", "vllm"]) == 0
        capsys.readouterr()
        assert _main(["remote", "list"]) == 0
        assert "no remote engines" in capsys.readouterr().out


@pytest.mark.engine
def test_wrong_key_refused_and_not_saved(keyed_server: str, capsys: pytest.CaptureFixture[str],  # noqa: F811
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_KEY", "sk-wrong")
    assert _main(["remote", "add", "lab", keyed_server, "--api-key-env", "LAB_KEY"]) == 1
    assert "rejected the API key" in capsys.readouterr().err
    assert _main(["remote", "list"]) == 0
    assert "no remote engines" in capsys.readouterr().out
    monkeypatch.setenv("LAB_KEY", KEY)
    assert _main(["remote", "add", "lab", keyed_server, "--api-key-env", "LAB_KEY"]) == 0
    capsys.readouterr()
    assert _main(["remote", "list"]) == 0
    assert "lab" in capsys.readouterr().out
    config = AppPaths.from_environment().config_dir
    for f in config.iterdir():
        assert KEY not in f.read_text(), f
    assert os.stat(config / "secrets.json").st_mode & 0o077 == 0
