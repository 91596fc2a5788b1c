"""`strata engines update` as a user runs it: a real `python -m strata_gui` process against the
loopback GitHub and real builds, killed or stopped while its trial runs, and what the next commands
say; and the releases a check looked at, with why each was skipped, in the CLI and on the Engines
page.

The build in use here (b7601) is the real CPU llama-server behind a start script that, asked to
load a model, writes a line and waits: the update's trial measures it first, so the test stops
the update once that line is written (an event, not a delay).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.cli import main
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.services import build_services
from strata_gui.core.engines.updates import LEDGER_FILE, REFUSED, UpdateEntry, UpdateLedger
from tests.engines.conftest import pack_cpu_zip
from tests.parity.test_gui_cli_parity import gui
from tests.support.engine_updates import CURRENT, NEW, hangs_loading, make_models, pack_wrapper_zip, publish
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer, github_server
from tests.support.poll import until, wait_until

ROOT = Path(__file__).resolve().parents[2]
GROUP = "text:upstream:cpu:"


@pytest.fixture
def feed(tmp_path: Path) -> Iterator[GitHubServer]:
    with github_server() as gh:
        yield gh


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _install_current(feed: GitHubServer, archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     model: Path) -> Path:
    """b7601 installed from the feed, as `strata engines install` does; returns the ledger's path."""
    publish(feed, "b7601", archive, tmp_path, "2026-02-10T08:10:00Z")
    build_services().settings_service.update(github_api_url=feed.api_base, update_tolerance_pct=60, threads=1,
                                             last_model=str(model))
    rc, out, err = _run(capsys, "engines", "install", "--backend", "cpu", "--json")
    assert rc == 0 and json.loads(out)["id"] == CURRENT, err
    return AppPaths.from_environment().engines_dir / LEDGER_FILE


def _ledger(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _start_update(marker: Path, loads: int) -> subprocess.Popen[str]:
    """`strata engines update` in its own process, returned once its trial is loading a model."""
    proc = subprocess.Popen([sys.executable, "-m", "strata_gui", "engines", "update"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: (marker.is_file() and len(marker.read_text().splitlines()) == loads) or proc.poll() is not None,
                   timeout=180)
    except TimeoutError:
        proc.kill()
        raise
    assert proc.poll() is None, proc.communicate()
    return proc


def _update_on_trial(feed: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     test_engines: TestEngines) -> tuple[Path, Path, Path]:
    """b7601 in use (its loads wait), b7700 published: (the ledger, the load marker, the model)."""
    marker = tmp_path / "loads.txt"
    model = make_models(tmp_path / "models", test_engines)[0]
    current = pack_wrapper_zip(test_engines.cpu_server, tmp_path / "hangs" / "b7601.zip", hangs_loading(marker))
    ledger = _install_current(feed, current, tmp_path, capsys, model)
    (tmp_path / "real").mkdir()
    publish(feed, "b7700", pack_cpu_zip(test_engines.cpu_server, tmp_path / "real" / "b7700.zip"), tmp_path,
            "2026-03-02T09:00:00Z")
    return ledger, marker, model


@pytest.mark.engine
def test_an_update_killed_mid_trial_is_settled_by_the_next_read(
        feed: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], test_engines: TestEngines) -> None:
    ledger, marker, model = _update_on_trial(feed, tmp_path, capsys, test_engines)
    # Killed outright (SIGKILL: no handler runs): the record says "on trial" until someone reads it.
    proc = _start_update(marker, 1)
    proc.kill()
    proc.communicate()
    assert _ledger(ledger)["on_trial"] == [NEW]
    # The next read settles it: not finished, not refused; the build left on disk is not used.
    rc, out, err = _run(capsys, "engines", "list")
    assert rc == 0 and NEW in out  # left on disk: the process had no chance to remove it
    assert (f"not finished: The trial of b7700 did not finish: the Strata process that ran it ({proc.pid}) ended "
            "during it; b7601 stays in use; the next `strata engines update` tries it again.") in err
    record = _ledger(ledger)
    assert record["on_trial"] == [] and record["refused"] == {} and record["history"][-1]["action"] == "not finished"
    rc, out, _err = _run(capsys, "engines", "resolve", "--model", str(model), "--json")
    resolved = json.loads(out)
    assert rc == 0 and resolved["chosen"] == CURRENT
    assert "did not finish" in next(e["reason"] for e in resolved["engines"] if e["engine"] == NEW)
    rc, out, _err = _run(capsys, "engines", "gc", "--json")
    assert rc == 0 and json.loads(out) == {"removed": [NEW]}  # the untried leftover, never the build in use
    # The next update tries it again, and is stopped there too.
    proc = _start_update(marker, 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert [h["action"] for h in _ledger(ledger)["history"]] == ["not finished", "not finished"]


@pytest.mark.engine
@pytest.mark.parametrize(("sig", "how"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl+C")])
def test_an_update_stopped_mid_trial_ends_it_cleanly_and_says_so(
        sig: signal.Signals, how: str, feed: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        test_engines: TestEngines) -> None:
    ledger, marker, _model = _update_on_trial(feed, tmp_path, capsys, test_engines)
    # Stopped (SIGTERM, as a logout or `kill` sends; Ctrl+C): the trial ends cleanly and says so.
    proc = _start_update(marker, 1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert out.startswith(f"stopped ({how})\n")
    assert f"not finished: The trial of b7700 did not finish: Strata was stopped ({how}) during it; kept b7601" in out
    assert "Traceback" not in err
    record = _ledger(ledger)
    assert record["on_trial"] == [] and record["refused"] == {} and record["active"] == {}
    assert [h["action"] for h in record["history"]] == ["not finished"]
    rc, out, err = _run(capsys, "engines", "list", "--json")
    assert [e["id"] for e in json.loads(out)] == [CURRENT]  # the stopped trial removed its build
    assert f"did not finish: Strata was stopped ({how})" in err
    # The next update offers it again (it was not refused), and says what happened last time.
    rc, out, _err = _run(capsys, "engines", "update", "--check")
    assert rc == 0 and "b7700 (2026-03-02): offered" in out
    assert f"note: The trial of b7700 did not finish: Strata was stopped ({how}) during it; kept b7601 (" in out


@pytest.mark.engine
def test_the_check_lists_each_release_and_why_it_was_skipped_in_both_faces(
        feed: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], test_engines: TestEngines,
        monkeypatch: pytest.MonkeyPatch, qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    real = pack_cpu_zip(test_engines.cpu_server, tmp_path / "real.zip")
    ledger = _install_current(feed, real, tmp_path, capsys, tmp_path / "none.gguf")
    # b7700 was refused by an earlier trial; b7650 came later and is good; b9001 is an old build
    # (b7500, says its title) moved to a higher tag. By tag number, b9001 would be offered.
    publish(feed, "b9001", real, tmp_path, "2026-01-20T09:00:00Z", name="b7500")
    publish(feed, "b7700", real, tmp_path, "2026-03-02T09:00:00Z")
    publish(feed, "b7650", real, tmp_path, "2026-03-04T09:00:00Z")
    refused_at = datetime(2026, 3, 3, 8, 30).timestamp()
    UpdateLedger(ledger).record(UpdateEntry(refused_at, REFUSED, GROUP, "upstream-cpu-all-b7700", CURRENT,
                                            "b7700 crashed while loading; kept b7601"), refuse=True)
    refused_line = "b7700 (2026-03-02): skipped: refused at 2026-03-03 08:30 because b7700 crashed while loading; kept b7601"

    rc, out, _err = _run(capsys, "engines", "update", "--check")
    assert rc == 0
    assert out.splitlines() == [
        next(line for line in out.splitlines() if line.startswith("cpu b7650 (2026-03-04) is available; you use b7601.")),
        f"Releases looked at for cpu b7601 ({CURRENT}):", "  " + refused_line, "  b7650 (2026-03-04): offered"]
    rc, out, _err = _run(capsys, "engines", "update", "--check", "--json")
    survey = json.loads(out)
    assert [(o["tag"], o["held"]) for o in survey["offers"]] == [("b7650", None)]
    assert [(c["tag"], c["verdict"], c["refused"]) for c in survey["candidates"]] == [
        ("b7700", "skipped", True), ("b7650", "offered", False)]
    assert [o["tag"] for o in survey["retries"]] == ["b7700"]

    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(ROOT / "tests" / "data" / "gpu" / "linux" / "rx7900xtx"))
    asyncio.set_event_loop(qasync_loop)  # each CLI run (asyncio.run) left no current loop
    for ui in gui(qtbot, qapp, qasync_loop):
        page = ui.pages.engines
        handle = page.check_updates()
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        assert handle.error is None, handle.error
        shown = page.updates_notice.text()
        assert "b7650 (2026-03-04) is available" in shown and refused_line in shown
        assert "b7650 (2026-03-04): offered" in page.updates_notice.toolTip()


@pytest.mark.engine
def test_a_trial_cancelled_on_the_engines_page_is_recorded_as_not_finished(
        feed: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], test_engines: TestEngines,
        qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    ledger, marker, _model = _update_on_trial(feed, tmp_path, capsys, test_engines)
    asyncio.set_event_loop(qasync_loop)  # the CLI run (asyncio.run) left no current loop
    for ui in gui(qtbot, qapp, qasync_loop):
        page = ui.pages.engines
        handle = page.check_updates()
        assert handle is not None
        qasync_loop.run_until_complete(handle.wait())
        assert page.select_engine(CURRENT) and page.update_button.isEnabled()
        trial = page.update_selected()
        assert trial is not None
        qasync_loop.run_until_complete(until(marker.is_file, timeout=180))
        trial.cancel()  # the progress panel's Cancel
        qasync_loop.run_until_complete(until(lambda handle=trial: not handle.is_running, timeout=60))
        assert trial.was_cancelled
        message = "The trial of b7700 did not finish: it was cancelled; kept b7601"
        record = _ledger(ledger)
        assert record["on_trial"] == [] and record["refused"] == {} and record["history"][-1]["message"] == message
        top = page.history_tree.topLevelItem(0)
        assert top is not None and (top.text(1), top.text(3)) == ("Not finished", message)
        assert [e.id for e in ui.services.engines.installed()] == [CURRENT]
