"""Keys where they should not be: written into a remote's address, echoed back by a server's
error, or a damaged key store. The key never reaches remote_engines.json, the log or
`remote list`; a damaged key store is a notice, never an exception."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from strata_gui import cli
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.core.remote.service import split_credentials
from tests.support.remote_server import openai_like_server

KEY = "sk-in-the-url-5d2e8b"


def _paths() -> AppPaths:
    paths = AppPaths.from_environment()
    paths.ensure()
    return paths


def _no_key_anywhere(paths: AppPaths) -> None:
    for folder in (paths.config_dir, paths.log_dir):
        for f in folder.iterdir():
            if f.is_file() and f.name != "secrets.json":
                assert KEY not in f.read_text(encoding="utf-8", errors="replace"), f


def test_split_credentials() -> None:
    assert split_credentials(f"http://user:{KEY}@host:8000/v1") == ("http://host:8000/v1", KEY)
    assert split_credentials(f"https://{KEY}@host/v1") == ("https://host/v1", KEY)
    assert split_credentials("http://host:8000/v1") == ("http://host:8000/v1", None)
    assert split_credentials("http://u:p%40ss%3Aword@h") == ("http://h", "p@ss:word")


def test_a_key_in_the_address_goes_to_the_key_store(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _paths()
    with openai_like_server() as base:
        url = base.replace("http://", f"http://me:{KEY}@") + "/v1"
        assert cli.main(["remote", "add", "lab", url]) == 0
        out = capsys.readouterr()
        assert KEY not in out.out + out.err
        assert cli.main(["remote", "list", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed == [{"name": "lab", "url": base, "api_key": True, "model": "org/Model-7B"}]
        assert cli.main(["remote", "list"]) == 0
        assert KEY not in capsys.readouterr().out
    assert FileSecretStore(paths.config_dir / "secrets.json").get(
        json.loads((paths.config_dir / "remote_engines.json").read_text())["endpoints"][0]["id"]) == KEY
    _no_key_anywhere(paths)


def test_a_key_saved_in_an_address_by_an_older_strata_is_moved_out(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _paths()
    saved = paths.config_dir / "remote_engines.json"
    saved.write_text(json.dumps({"version": 1, "endpoints": [
        {"id": "remote-0001", "name": "old", "base_url": f"http://u:{KEY}@10.0.0.5:8000", "has_key": False,
         "model": ""}]}), encoding="utf-8")
    assert cli.main(["remote", "list"]) == 0
    out = capsys.readouterr().out
    assert "http://10.0.0.5:8000\tkey" in out and KEY not in out
    assert KEY not in saved.read_text(encoding="utf-8")
    assert FileSecretStore(paths.config_dir / "secrets.json").get("remote-0001") == KEY
    _no_key_anywhere(paths)


def test_a_server_error_that_echoes_the_key_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _paths()
    with openai_like_server(echo_auth=True) as base:
        assert cli.main(["remote", "add", "lab", base.replace("http://", f"http://{KEY}@")]) == 0
        capsys.readouterr()
        assert cli.main(["-v", "remote", "chat", "lab", "hi"]) == 1
    err = capsys.readouterr().err
    assert "cannot serve request with Authorization: Bearer ***" in err  # the server's words, minus the key
    assert KEY not in err
    log_text = paths.log_file.read_text(encoding="utf-8")
    assert "cannot serve request" in log_text and KEY not in log_text
    _no_key_anywhere(paths)


@pytest.mark.parametrize("content", [b"{ not json", b"[" * 100_000 + b"]" * 100_000, b'["a list"]',
                                     b'{"hub-token": 5}', b"\xff\xfe garbage"])
def test_a_damaged_key_store_is_a_notice_not_an_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "secrets.json"
    path.write_bytes(content)
    path.chmod(0o600)
    store = FileSecretStore(path, clock=lambda: 1_700_000_000)
    assert store.get("hub-token") is None
    assert store.notice is not None and "was damaged" in store.notice and "Enter them again" in store.notice
    kept = tmp_path / "secrets.json.corrupt-1700000000"
    assert kept.read_bytes() == content and stat.S_IMODE(kept.stat().st_mode) == 0o600
    store.set("hub-token", "hf_new_token_123")  # a fresh store, user-only
    assert store.get("hub-token") == "hf_new_token_123"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_value_that_does_not_decode_is_a_notice(tmp_path: Path) -> None:
    path = tmp_path / "secrets.json"
    path.write_text(json.dumps({"hub-token": "%%% not base64 %%%"}), encoding="utf-8")
    store = FileSecretStore(path)
    assert store.get("hub-token") is None
    assert store.notice is not None and "'hub-token' cannot be read" in store.notice
    assert path.exists()  # the other keys in it are still good


def test_commands_start_with_a_damaged_key_store_and_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _paths()
    (paths.config_dir / "secrets.json").write_text("{ damaged", encoding="utf-8")
    assert cli.main(["system"]) == 0
    assert "note: The key store secrets.json was damaged" in capsys.readouterr().err
