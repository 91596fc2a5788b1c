"""The `strata` command: version, system facts, self-test, and no Qt in headless commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from strata_gui import __version__
from strata_gui.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_system_json_reports_versions_and_folders(capsys: pytest.CaptureFixture[str], _user_dirs_in_tmp: Path) -> None:
    assert main(["system", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["app_version"] == __version__
    assert data["python_version"].startswith("3.")
    assert data["qt_version"][0].isdigit()
    assert data["ram_total_bytes"] > 0
    assert data["cpu_cores_logical"] >= 1
    assert set(data["directories"]) == {"config", "data", "cache", "logs"}
    assert data["directories"]["config"].startswith(str(_user_dirs_in_tmp))


def test_system_text_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["system"]) == 0
    out = capsys.readouterr().out
    assert f"Strata {__version__}" in out and "RAM:" in out and "logs:" in out


def test_headless_commands_import_no_qt() -> None:
    code = (
        "import sys; from strata_gui.cli import main; rc = main(['system', '--json']);"
        "qt = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync')];"
        "print('QT=' + ','.join(qt), file=sys.stderr); sys.exit(rc)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    assert "QT=\n" in res.stderr or res.stderr.rstrip().endswith("QT="), res.stderr


def test_core_imports_no_qt() -> None:
    code = (
        "import sys, pkgutil, importlib, strata_gui.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'strata_gui.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync')]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_self_test_opens_every_page_and_exits_zero() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    res = subprocess.run([sys.executable, "-m", "strata_gui", "--self-test"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "self-test passed" in res.stdout
    for title in ("Chat", "Images", "Models", "Engines", "GPU", "Dashboard", "Network", "Settings", "About"):
        assert f"visited {title}" in res.stdout


def test_import_contract_holds() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 0, res.stdout[-3000:]


def test_output_piped_into_a_reader_that_stops_early_exits_quietly(test_model: Path) -> None:
    """`strata models inspect FILE | head -0`: the reader is gone before anything is written."""
    proc = subprocess.Popen([sys.executable, "-m", "strata_gui.cli", "models", "inspect", str(test_model)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    assert proc.stdout is not None
    proc.stdout.close()  # like `head` that has read what it wanted
    _, err = proc.communicate(timeout=120)
    text = err.decode(errors="replace")
    assert "Traceback" not in text and "BrokenPipeError" not in text and "Exception ignored" not in text, text
    assert proc.returncode == 141


def test_output_piped_into_head_keeps_the_first_line(test_model: Path) -> None:
    res = subprocess.run(f'"{sys.executable}" -m strata_gui.cli models inspect "{test_model}" --json | head -1',
                         shell=True, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert res.stdout == "{\n" and res.returncode == 0
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr


@pytest.mark.parametrize(("argv", "message"), [
    (["serve", "--port", "70000"], "argument --port: 70000 is out of range: use 0 to 65535"),
    (["rpc", "serve", "--port", "99999999999999999999"], "is out of range: use 0 to 65535"),
    (["chat", "--ctx-size", "100000000000000000000", "hi"], "argument --ctx-size: 100000000000000000000 is out of range"),
    (["chat", "--parallel", "-5", "hi"], "argument --parallel: -5 is out of range: use 0 to 256"),
    (["chat", "--threads", "x", "hi"], "argument --threads: 'x' is not a whole number"),
])
def test_number_flags_outside_their_range_are_usage_errors(argv: list[str], message: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Refused by the parser (exit 2 with the range), never an OverflowError from a socket call."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_bad_port_in_settings_is_reset_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    from strata_gui.core.config.paths import AppPaths

    paths = AppPaths.from_environment()
    paths.ensure()
    paths.settings_file.write_text(json.dumps({"version": 1, "serve_port": 99999999999999999999}), encoding="utf-8")
    assert main(["system", "--json"]) == 0
    err = capsys.readouterr().err
    assert "invalid values and were reset to their defaults: serve_port" in err


def test_a_usage_error_writes_one_line_and_no_traceback_to_the_log(_user_dirs_in_tmp: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 48: "No model given." (and a missing file) wrote a traceback into the log each time."""
    from strata_gui.core.config.paths import AppPaths

    assert main(["chat", "hi"]) == 1
    assert main(["models", "inspect", str(_user_dirs_in_tmp / "missing.gguf")]) == 1
    err = capsys.readouterr().err
    assert "error: No model given." in err and "hint: Pass --model FILE.gguf." in err
    log = AppPaths.from_environment().log_file.read_text(encoding="utf-8")
    assert "command failed: No model given." in log and "Traceback" not in log
