"""Warm start: the chat's engine launched before the core loads, adopted only when it is exactly
the launch the pool wants (real engine, real CLI, real processes)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strata_gui import __version__
from strata_gui.cli import _chat_model, _early_engine, main, run_command
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.settings import SettingsService, SettingsStore
from strata_gui.core.platform.warm import WarmEngine, WarmSlot, prelaunch
from tests.support import engines as _engines

Engines = _engines.TestEngines
ROOT = Path(__file__).resolve().parents[2]


def _record() -> Path:
    return AppPaths.from_environment().warm_start_file


def _chat(model: Path, *extra: str) -> list[str]:
    return ["chat", "--model", str(model), "--max-tokens", "4", "--seed", "3", *extra, "Hi"]


@pytest.fixture
def installed(test_engines: Engines) -> None:
    assert run_command(["engines", "add-local", str(test_engines.cpu_dir)]) == 0


@pytest.mark.engine
@pytest.mark.usefixtures("installed")
def test_the_next_chat_adopts_the_engine_launched_early(test_model: Path, caplog: pytest.LogCaptureFixture,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert not _record().exists()
    assert main(_chat(test_model)) == 0
    record = json.loads(_record().read_text(encoding="utf-8"))
    assert record["model"] == str(test_model) and "--port" in record["command"]
    assert "LLAMA_API_KEY" not in record["set"]  # the per-run key is never written down
    capsys.readouterr()
    with caplog.at_level(logging.INFO):
        assert main([*_chat(test_model), "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["reply"] and reply["stats"]["predicted_n"] == 4
    adopted = [r.getMessage() for r in caplog.records if "started early" in r.getMessage()]
    assert len(adopted) == 1 and "adopting" in adopted[0]


@pytest.mark.engine
@pytest.mark.usefixtures("installed")
def test_a_launch_that_differs_is_stopped_and_the_pool_starts_its_own(
        test_model: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_chat(test_model)) == 0
    slot = prelaunch(_record(), test_model)
    assert slot.model == str(test_model)
    early = slot._engine
    assert early is not None and early.proc.poll() is None
    capsys.readouterr()
    with caplog.at_level(logging.INFO):  # another context size: another command line
        assert run_command([*_chat(test_model, "--ctx-size", "512"), "--json"], slot) == 0
    assert json.loads(capsys.readouterr().out)["reply"]
    assert early.proc.poll() is not None, "the early engine must not outlive the mismatch"
    assert any("launched differently" in r.getMessage() for r in caplog.records)
    assert not any("adopting" in r.getMessage() for r in caplog.records)


@pytest.mark.engine
@pytest.mark.usefixtures("installed")
def test_no_early_start_when_the_model_changed_or_for_another_model(test_model: Path, tmp_path: Path) -> None:
    assert main(_chat(test_model)) == 0
    other = tmp_path / "other.gguf"
    other.write_bytes(test_model.read_bytes())
    assert prelaunch(_record(), other).model is None
    st = test_model.stat()
    os.utime(test_model, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # replaced since
    try:
        assert prelaunch(_record(), test_model).model is None
    finally:
        os.utime(test_model, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.engine
@pytest.mark.usefixtures("installed")
def test_only_a_plain_chat_with_the_setting_on_starts_early(test_model: Path) -> None:
    assert main(_chat(test_model)) == 0
    slot = _early_engine(_chat(test_model), "chat")
    try:
        assert slot.model == str(test_model)
    finally:
        slot.close()
    assert _early_engine(_chat(test_model, "--ctx-size", "512"), "chat").model is None
    assert _early_engine(["models", "list"], "models").model is None
    SettingsService.load(SettingsStore(AppPaths.from_environment().settings_file)).update(warm_start=False)
    assert _early_engine(_chat(test_model), "chat").model is None


def test_which_chat_options_leave_the_launch_alone() -> None:
    assert _chat_model(["--model", "m.gguf", "--max-tokens", "8", "--seed=7", "--json", "hi"]) == "m.gguf"
    assert _chat_model(["-m", "m.gguf", "--system", "be brief", "hi"]) == "m.gguf"
    assert _chat_model(["--model=m.gguf", "hi"]) == "m.gguf"
    assert _chat_model(["hi"]) == ""  # the last model used
    for option in (["--ctx-size", "512"], ["--engine", "dir"], ["--image", "a.png"], ["--device", "1"],
                   ["--mcp-config", "c.json"], ["--no-fallback"]):
        assert _chat_model(["--model", "m.gguf", *option, "hi"]) is None, option


def _sleeper() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE,
                            text=True)


def test_an_early_engine_nobody_claims_is_stopped() -> None:
    proc = _sleeper()
    WarmSlot(WarmEngine(proc, "/m.gguf", [], {}, None, 1, "k"), unclaimed_s=0.2)
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is not None


def test_an_early_engine_that_exited_is_not_claimed() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE, text=True)
    proc.wait()
    slot = WarmSlot(WarmEngine(proc, "/m.gguf", [], {}, None, 1, "k"))
    assert slot.claim(Path("/other.gguf")) is None and slot.model == "/m.gguf"  # kept for its own model
    assert slot.claim(Path("/m.gguf")) is None and slot.model is None


def test_a_damaged_record_means_no_early_start(tmp_path: Path) -> None:
    record = tmp_path / "warm-start.json"
    for text in ("{", "[]", json.dumps({"version": 1, "model": "/m.gguf", "command": ["x"], "files": {},
                                         "set": {}, "unset": []}),
                 json.dumps({"version": 1, "model": "/m.gguf", "command": "rm -rf /", "files": {}, "set": {},
                             "unset": []})):
        record.write_text(text, encoding="utf-8")
        assert prelaunch(record, "/m.gguf").model is None


def test_the_command_exits_with_its_code_and_all_its_output(tmp_path: Path) -> None:
    """`python -m strata_gui` ends without the interpreter's teardown, output and code intact."""
    env = {**os.environ, "STRATA_HOME": str(tmp_path / "home")}
    ok = subprocess.run([sys.executable, "-m", "strata_gui", "engines", "list", "--json"], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    json.loads(ok.stdout)
    failed = subprocess.run([sys.executable, "-m", "strata_gui", "chat", "Hi"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert failed.returncode == 1 and "error: No model given." in failed.stderr and "hint:" in failed.stderr


_WINDOWED = """
import atexit, sys
atexit.register(print, "TEARDOWN", flush=True)  # runs only if the interpreter tears down
sys.argv = ["Strata", "--exit-when-shown"]
from strata_gui.cli import gui_main
sys.exit(gui_main())  # what the frozen Strata.exe and the strata-gui script run
"""


def test_the_windowed_app_ends_without_the_interpreter_teardown(tmp_path: Path) -> None:
    """The windowed entry ends like the console one: exit code 0 and nothing after it. Its
    teardown destroyed Qt's objects out of order, and about one close in four crashed (139)."""
    env = {**os.environ, "STRATA_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", _WINDOWED], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TEARDOWN" not in done.stdout
    assert (tmp_path / "home" / "logs" / "strata.log").is_file()  # the log was written and closed


@pytest.mark.engine
@pytest.mark.usefixtures("installed")
def test_the_app_loads_the_last_model_with_the_engine_launched_before_qt(test_model: Path, tmp_path: Path) -> None:
    """`strata` (the app) with a model chosen last: its engine is launched before Qt is imported,
    adopted by the pool, and loaded by the time the window has been up a moment."""
    assert main(_chat(test_model)) == 0  # the chat remembers its launch
    paths = AppPaths.from_environment()
    SettingsService.load(SettingsStore(paths.settings_file)).update(last_model=str(test_model), first_run_done=True)
    report = tmp_path / "report.json"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "STRATA_UI_REPORT": str(report),
           "STRATA_UI_REPORT_CLOSE": "1"}
    done = subprocess.run([sys.executable, "-m", "strata_gui"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(report.read_text(encoding="utf-8"))["visible"]
    run = paths.log_file.read_text(encoding="utf-8").rsplit(f"Strata {__version__} starting", 1)[-1]
    assert "adopting CPU (your build: bin) engine started early" in run
    assert run.index("adopting") < run.index("engine: ready") < run.index("Strata is closing")
    assert "starting CPU" not in run  # no second launch of the same engine


def test_variables_strata_itself_set_since_the_early_launch_do_not_count() -> None:
    """PySide6 sets PYSIDE6_OPTION_PYTHON_ENUM as it loads, after the early launch: the app's own
    launch then carries it, the early engine does not, and that is no reason to refuse it."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE, text=True)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    early = WarmEngine(proc, "/m.gguf", ["server", "-m", "/m.gguf"], {"PATH": "/bin", "LLAMA_ARG_X": "1"}, "/e",
                       1, "k", base={"PATH": "/bin"})
    now = {"PATH": "/bin", "PYSIDE6_OPTION_PYTHON_ENUM": "True"}
    same = {"PATH": "/bin", "LLAMA_ARG_X": "1", "PYSIDE6_OPTION_PYTHON_ENUM": "True"}
    assert early.matches(Path("/m.gguf"), ["server", "-m", "/m.gguf"], same, Path("/e"), now)
    assert not early.matches(Path("/m.gguf"), ["server", "-m", "/m.gguf"], {**same, "LLAMA_ARG_X": "2"},
                             Path("/e"), now)
    assert not early.matches(Path("/m.gguf"), ["server", "-m", "/m.gguf", "--flag"], same, Path("/e"), now)
    assert not early.matches(Path("/m.gguf"), ["server", "-m", "/m.gguf"], same, Path("/other"), now)
