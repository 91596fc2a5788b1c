"""`strata engines update` as a user runs it, against the loopback GitHub and real builds: the
releases a check looked at, with why each was skipped, in the CLI and on the Engines page."""

from __future__ import annotations

import asyncio
import json
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
from tests.support.engine_updates import CURRENT, publish
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer, github_server

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
