"""`strata remote` against a real keyed llama-server and an OpenAI-like server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from strata_gui import cli
from strata_gui.core.config.paths import AppPaths
from tests.remote.test_remote import KEY, keyed_server  # noqa: F401 (fixture)
from tests.support.remote_server import WORDS, openai_like_server


def _main(argv: list[str]) -> int:
    return cli.main(argv)


def test_add_list_models_chat_remove(capsys: pytest.CaptureFixture[str]) -> None:
    words = WORDS * 5  # enough pieces for a decode rate measured on the client (issue 48: 3 chunks were "3,651 tok/s")
    with openai_like_server(words=words) as base:
        assert _main(["remote", "add", "vllm", base + "/v1"]) == 0
        assert "using org/Model-7B" in capsys.readouterr().out
        assert _main(["remote", "list", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed == [{"name": "vllm", "url": base, "api_key": False, "model": "org/Model-7B"}]
        assert _main(["remote", "chat", "vllm", "hi", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["text"] == "".join(words) and out["stats"]["decode_tps"] > 0
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


def _strata_bytes(*argv: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    # A real process with its output piped: printing text that cannot be encoded fails there.
    return subprocess.run([os.fsencode(sys.executable), b"-m", b"strata_gui.cli", *argv], env=env,
                          capture_output=True, timeout=120)


def test_half_an_emoji_in_a_reply_or_a_latin1_prompt_is_replaced_not_fatal(tmp_path: Path) -> None:
    """A remote reply holding the JSON escape ``\\ud83d`` alone, or a prompt byte that is not UTF-8
    (``strata remote chat lab "$(cat latin1.txt)"``), ended in "Internal error … surrogates not
    allowed" and the reply was lost."""
    env = dict(os.environ, STRATA_HOME=str(tmp_path / "home"))
    with openai_like_server(words=["Hi ", "\ud83d", "!"]) as base:
        assert _strata_bytes(b"remote", b"add", b"lab", base.encode() + b"/v1", env=env).returncode == 0
        shown = _strata_bytes(b"remote", b"chat", b"lab", b"caf\xe9 au lait", env=env)
        assert shown.returncode == 0, shown.stderr.decode(errors="replace")
        assert shown.stdout.decode("utf-8").strip() == "Hi \ufffd!"
        assert b"Traceback" not in shown.stderr and b"Internal error" not in shown.stderr
        data = _strata_bytes(b"remote", b"chat", b"lab", b"caf\xe9", b"--json", env=env)
        assert data.returncode == 0 and json.loads(data.stdout)["text"] == "Hi \ufffd!"
