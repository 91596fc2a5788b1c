"""The benchmark table writes a depth as the note above it does (issue 48 item 10): exactly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from strata_gui.core.bench.service import DashboardService
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.dashboard_page import DashboardPage
from tests.ui.test_dashboard_page import engine_env  # noqa: F401  (the fixture)


@pytest.mark.engine
def test_the_depth_column_gives_the_exact_depth_the_note_names(
    qtbot: QtBot, engine_env: DashboardService, test_model: Path,  # noqa: F811
    qasync_loop: asyncio.AbstractEventLoop
) -> None:
    page = DashboardPage(engine_env, AsyncBridge(), models=lambda: [test_model])
    qtbot.addWidget(page)
    page.refresh_choices()
    page.prefill_spin.setValue(32)
    page.gen_spin.setValue(4)
    page.reps_spin.setValue(1)
    page.depth_spin.setValue(1500)  # not a multiple of 1,024: "1.5K" said 1,536 to a reader
    page.run_button.click()
    handle = page.bench_task
    assert handle is not None
    qasync_loop.run_until_complete(handle.wait())
    assert handle.error is None, handle.error
    depths = [page.results_table.item(row, 2).text() for row in range(page.results_table.rowCount())]
    assert depths == ["0", "1,500"]
