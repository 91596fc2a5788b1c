"""A read-only Strata folder: reading commands work, saving says what could not be saved (issue 47, case 9)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from strata_gui.cli import main
from tests.support.read_only import run_read_only


@pytest.fixture
def filled_home(_user_dirs_in_tmp: Path, tmp_path: Path, test_model: Path,
                capsys: pytest.CaptureFixture[str]) -> Path:
    """A Strata folder that has been used: settings with a model folder, a tool server, a database."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf").symlink_to(test_model)
    config = _user_dirs_in_tmp / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"version": 2, "model_dirs": [str(models)]}), encoding="utf-8")
    servers = tmp_path / "mcp.json"
    servers.write_text('{"mcpServers": {"echo": {"command": "echo"}}}', encoding="utf-8")
    assert main(["mcp", "import", str(servers)]) == 0
    assert main(["system"]) == 0
    capsys.readouterr()
    return _user_dirs_in_tmp


def _strata(home: Path, *args: str) -> tuple[int, str, str]:
    res = run_read_only(home, [sys.executable, "-m", "strata_gui.cli", *args], os.environ)
    return res.returncode, res.stdout, res.stderr


@pytest.mark.parametrize(("command", "shows"), [
    (["system"], "Folders:"), (["models", "list"], "tiny.gguf"), (["engines", "list"], "engines"),
    (["mcp", "list"], "echo"), (["remote", "list"], "no remote engines"),
])
def test_reading_commands_work_on_a_read_only_folder(filled_home: Path, command: list[str], shows: str) -> None:
    code, out, err = _strata(filled_home, *command)
    assert code == 0, err
    assert shows in out
    assert "Traceback" not in err and "Logging error" not in err
    if command != ["system"]:  # the commands that open the database say that nothing is saved
        assert "not saved this session" in err


def test_saving_on_a_read_only_folder_says_what_was_not_saved(filled_home: Path, tmp_path: Path) -> None:
    more = tmp_path / "more.json"
    more.write_text('{"mcpServers": {"other": {"command": "echo"}}}', encoding="utf-8")
    code, _out, err = _strata(filled_home, "mcp", "import", str(more))
    assert code == 1
    assert "Could not save the tool servers" in err and "Read-only file system" in err
    assert "Traceback" not in err
