"""Every JSON state file is read through one loader: nested, NaN or huge values never break a command.

Each test writes the hostile file itself, then runs the real command a user would run. Before the
loader, each of these ended in a traceback (RecursionError, ValueError, OverflowError).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from strata_gui.cli import main
from strata_gui.core.base.state_file import MAX_DEPTH, UnusableStateFile, load_cache, load_record, parse_state

NESTED = "[" * 5000 + "]" * 5000  # 10 KB; json.loads recurses once per bracket


@pytest.fixture
def home(_user_dirs_in_tmp: Path) -> Path:
    return _user_dirs_in_tmp


def _kept(path: Path) -> list[Path]:
    return list(path.parent.glob(path.name + ".corrupt-*"))


def test_the_loader_bounds_depth_and_numbers() -> None:
    with pytest.raises(UnusableStateFile, match="nested too deeply"):
        parse_state('{"a": ' + NESTED + "}", dict)
    assert parse_state('{"s": "' + "[" * 5000 + '"}', dict)["s"] == "[" * 5000  # brackets in strings do not nest
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_state(ok, list)
    data = parse_state('{"at": NaN, "b": 1e300, "c": -Infinity, "d": ' + "9" * 5000 + ', "e": 1.5, "f": 12}', dict)
    assert data == {"at": None, "b": None, "c": None, "d": None, "e": 1.5, "f": 12}
    with pytest.raises(UnusableStateFile, match="does not hold"):
        parse_state("[1]", dict)


def test_a_damaged_cache_is_empty_and_a_damaged_record_is_kept_aside_and_named(tmp_path: Path) -> None:
    cache, record = tmp_path / "cache.json", tmp_path / "ledger.json"
    cache.write_text(NESTED, encoding="utf-8")
    record.write_text(NESTED, encoding="utf-8")
    assert load_cache(cache, dict) is None and cache.exists()  # rebuilt on the next write
    loaded = load_record(record, dict, "the test ledger", clock=lambda: 1700000000)
    assert loaded.data is None and not record.exists()
    assert loaded.moved == tmp_path / "ledger.json.corrupt-1700000000"
    assert loaded.moved.read_text(encoding="utf-8") == NESTED  # nothing lost
    assert loaded.notice is not None and "the test ledger" in loaded.notice and "nested too deeply" in loaded.notice
    assert "ledger.json.corrupt-1700000000" in loaded.notice


def test_models_list_survives_a_nested_download_queue(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queue = home / "data" / "downloads.json"
    queue.parent.mkdir(parents=True)
    queue.write_text('{"jobs": ' + NESTED + "}", encoding="utf-8")
    assert main(["models", "list"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "the list of unfinished downloads" in err
    assert [p.read_text(encoding="utf-8")[:9] for p in _kept(queue)] == ['{"jobs": ']


def test_mcp_list_survives_a_nested_server_list(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    servers = home / "config" / "mcp_servers.json"
    servers.parent.mkdir(parents=True)
    servers.write_text('{"servers": ' + NESTED + "}", encoding="utf-8")
    assert main(["mcp", "list"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "the list of tool servers" in err and len(_kept(servers)) == 1


def test_mcp_import_of_a_nested_file_is_a_clear_error(home: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    given = tmp_path / "mcp.json"
    given.write_text('{"mcpServers": {"x": {"command": "echo", "args": ' + NESTED + "}}}", encoding="utf-8")
    code = main(["mcp", "import", str(given)])
    err = capsys.readouterr().err
    assert code != 0 and "nested too deeply" in err and "Traceback" not in err and "Internal error" not in err


@pytest.mark.parametrize("at", ["NaN", "1e300", "-Infinity", "99999999999999"])
def test_engine_history_shows_entries_whose_time_is_out_of_range(home: Path, at: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ledger = home / "data" / "engines" / "strata-updates.json"
    ledger.parent.mkdir(parents=True)
    good = {"at": 1700000000, "action": "promoted", "group": "g", "engine": "b2", "previous": "b1",
            "message": "Updated to b2."}
    ledger.write_text('{"version": 1, "history": [' + json.dumps(good) + ', {"at": ' + at + ', "action": '
                      '"refused", "group": "g", "engine": "b3", "previous": "b2", "message": "Refused b3."}]}',
                      encoding="utf-8")
    assert main(["engines", "history"]) == 0
    out = capsys.readouterr().out
    assert "Updated to b2." in out and "Refused b3." in out
    assert main(["engines", "history", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)  # strict JSON: no NaN
    assert all(isinstance(e["at"], int | float) and math.isfinite(e["at"]) for e in entries)


@pytest.mark.engine
def test_chat_answers_with_every_state_file_nested(home: Path, test_engines: object, test_model: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    records = [home / "data" / "engines" / "strata-updates.json", home / "data" / "load_options.json"]
    caches = [home / "cache" / "model-facts.json", home / "cache" / "memory_bandwidth.json"]
    for path in records + caches:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"models": ' + NESTED + "}", encoding="utf-8")
    code = main(["chat", "-m", str(test_model), "-e", str(test_engines.cpu_dir),  # type: ignore[attr-defined]
                 "--ctx-size", "512", "--max-tokens", "8", "Hello"])
    out, err = capsys.readouterr()
    assert code == 0 and out.strip(), err
    assert "Traceback" not in err and "Internal error" not in err
    for path in records:  # the user's: kept aside, named
        assert len(_kept(path)) == 1 and path.name in err
    for path in caches:  # rebuilt: no copy kept
        assert not _kept(path)
