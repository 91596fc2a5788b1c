"""One core, two faces: `strata engines update` and the Engines page's "Update" give the same
verdict on the same new build (promoted when faster, refused when it crashes while loading or is
slower beyond the tolerance), each in its own Strata home, against the loopback GitHub and the
real CPU engine (see tests/engines/test_updates.py for the builds)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.core.config.services import build_services
from tests.parity.test_gui_cli_parity import cli, gui
from tests.support.engine_updates import CURRENT, Builds, make_builds, make_models, publish
from tests.support.engines import TestEngines
from tests.support.github_server import github_server

GPU_TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"
# case: (the build in use, the new build, the verdict both faces must give)
CASES = {"faster": ("slow", "real", "promoted"), "crashes": ("real", "crash", "refused"),
         "slower": ("real", "slow", "refused")}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Builds:
    return make_builds(tmp_path_factory.mktemp("update-builds"), test_engines)


@pytest.fixture(scope="module")
def trial_model(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Path:
    return make_models(tmp_path_factory.mktemp("update-models"), test_engines)[0]


def _same_words(message: str) -> str:
    """The sentence without its measured figures (two runs never measure the same numbers)."""
    return re.sub(r"-?\d+(\.\d+)?", "#", message)


@pytest.mark.engine
@pytest.mark.parametrize("case", list(CASES))
def test_gui_and_cli_give_the_same_update_verdict(
        case: str, builds: Builds, trial_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], qtbot: QtBot, qapp: Any, qasync_loop: asyncio.AbstractEventLoop) -> None:
    current, new, verdict = CASES[case]
    monkeypatch.delenv("STRATA_GPU_SNAPSHOT", raising=False)
    monkeypatch.setenv("STRATA_SYSFS_ROOT", str(GPU_TREES / "rx7900xtx"))
    homes = {"cli": tmp_path / "cli-home", "gui": tmp_path / "gui-home"}
    with github_server() as gh:
        publish(gh, "b7601", getattr(builds, current), tmp_path, "2026-02-10T08:10:00Z")
        for home in homes.values():
            monkeypatch.setenv("STRATA_HOME", str(home))
            # One engine thread: the machine's other work then sways every build alike.
            build_services().settings_service.update(github_api_url=gh.api_base, update_tolerance_pct=40, threads=1,
                                                     last_model=str(trial_model))
            rc, installed = cli(capsys, "engines", "install", "--backend", "cpu")
            assert rc == 0 and installed["id"] == CURRENT
        publish(gh, "b7700", getattr(builds, new), tmp_path, "2026-03-02T09:00:00Z")

        monkeypatch.setenv("STRATA_HOME", str(homes["cli"]))
        _rc, survey = cli(capsys, "engines", "update", "--check")
        assert [(o["current"], o["tag"]) for o in survey["offers"]] == [(CURRENT, "b7700")]
        rc, updated = cli(capsys, "engines", "update")
        assert rc == 0
        (by_cli,) = updated["outcomes"]
        assert by_cli["verdict"] == verdict, by_cli["message"]
        _rc, history = cli(capsys, "engines", "history")
        assert [h["action"] for h in history] == [verdict]

        monkeypatch.setenv("STRATA_HOME", str(homes["gui"]))
        asyncio.set_event_loop(qasync_loop)  # each CLI run (asyncio.run) left no current loop
        for ui in gui(qtbot, qapp, qasync_loop):
            page = ui.pages.engines
            ui.window.show()
            ui.window.show_page(page)  # reads the plan and what is new
            assert page.last_handle is not None
            qasync_loop.run_until_complete(page.last_handle.wait())
            assert page.updates_notice.isVisibleTo(page) and "b7700 (2026-03-02) is available" in \
                page.updates_notice.text()
            assert page.select_engine(CURRENT) and page.update_button.isEnabled()
            handle = page.update_selected()
            assert handle is not None
            qasync_loop.run_until_complete(handle.wait())
            assert handle.error is None, handle.error
            by_gui = page.last_trial
            assert by_gui is not None and by_gui.verdict == by_cli["verdict"]
            assert _same_words(by_gui.message) == _same_words(by_cli["message"])
            assert page.notes.text() == by_gui.message
            assert page.history_tree.topLevelItemCount() == 1
            assert page.history_tree.topLevelItem(0).text(1) == verdict.capitalize()
            assert page.history_tree.topLevelItem(0).text(3) == by_gui.message
            if verdict == "promoted":
                assert ui.services.resolver.resolve(trial_model).chosen.id == "upstream-cpu-all-b7700"  # type: ignore[union-attr]
                assert page.select_engine(CURRENT) and page.rollback_button.isEnabled()
                page.rollback_selected()
                assert page.notes.text().startswith("Rolled back to b7601 from b7700")
                assert ui.services.resolver.resolve(trial_model).chosen.id == CURRENT  # type: ignore[union-attr]
        print(f"{case}: {by_cli['message']}")


def test_the_window_tells_of_an_automatic_rollback(qtbot: QtBot, qapp: Any,
                                                   qasync_loop: asyncio.AbstractEventLoop) -> None:
    from strata_gui.core.engines import AUTO_ROLLED_BACK, UpdateEntry

    for ui in gui(qtbot, qapp, qasync_loop):
        message = ("b7700 could not load a.gguf, which b7601 loaded; rolled back to b7601 and marked b7700 bad "
                   "for this model on your AMD Radeon RX 7900 XTX")
        ledger = ui.services.engines.ledger
        ledger.record(UpdateEntry(1.0, "promoted", "text:upstream:cpu:", "b", "a", "b7700 replaced b7601"))
        assert not ui.window.banner.isVisibleTo(ui.window)  # a promotion is the Engines page's news
        ledger.record(UpdateEntry(2.0, AUTO_ROLLED_BACK, "text:upstream:cpu:", "a", "b", message), restore="a")
        assert ui.window.banner.isVisibleTo(ui.window) and ui.window.banner.text.text() == message
