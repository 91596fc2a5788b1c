"""The Engines page on real widgets (offscreen) against the fake GitHub and the real builds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.core.bench.store import MetricsStore
from strata_gui.core.bench.updates import EngineUpdater
from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.engines import GpuTarget
from strata_gui.core.engines.resolver import EngineResolver
from strata_gui.core.gpu.service import build_gpu_service
from strata_gui.ui.bridge import AsyncBridge
from strata_gui.ui.pages.engines_page import EnginesPage
from tests.engines.conftest import Harness
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer
from tests.support.pool import real_pool

SHOTS = Path("/tmp/strata-shots")
GPU_TREES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "linux"


@pytest.fixture
def page(qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop,
         harness: Harness) -> Iterator[EnginesPage]:
    http = httpx.AsyncClient(follow_redirects=True, timeout=30)
    svc = harness.service(http)
    bridge = AsyncBridge()
    p = EnginesPage(svc, bridge)
    qtbot.addWidget(p)
    p.set_gpus([GpuTarget("AMD Radeon RX 7900 XTX", 0x744C, "gfx1100")])
    p.resize(1000, 760)
    p.show()
    yield p
    qasync_loop.run_until_complete(bridge.shutdown())
    qasync_loop.run_until_complete(http.aclose())


def _wait(loop: asyncio.AbstractEventLoop, page: EnginesPage) -> None:
    assert page.last_handle is not None
    loop.run_until_complete(page.last_handle.wait())


def test_empty_state_then_plan_with_reasons(page: EnginesPage, qasync_loop: asyncio.AbstractEventLoop) -> None:
    assert page.installed_empty.isVisibleTo(page)
    assert "Set up automatically" in page.installed_empty.text()
    assert "gfx1100" in page.gpu_label.text()
    page.on_shown()
    _wait(qasync_loop, page)
    rows = [[page.plan_tree.topLevelItem(i).text(c) for c in range(4)] for i in range(page.plan_tree.topLevelItemCount())]
    assert [r[1] for r in rows] == ["ROCm", "Vulkan", "CPU"]
    assert rows[0][3].startswith("gfx1100 → family gfx110X")
    assert not page.install_button.isEnabled()
    assert page.select_candidate("cpu") and page.install_button.isEnabled()


@pytest.mark.engine
@pytest.mark.vulkan
def test_setup_shows_rocm_unusable_and_vulkan_chosen(page: EnginesPage, qasync_loop: asyncio.AbstractEventLoop,
                                                     test_engines: TestEngines,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="strata_gui.core.engines")
    page.setup_automatically()
    assert page.progress.isVisibleTo(page) and page.progress.cancel_button.isEnabled()
    _wait(qasync_loop, page)
    rows = [page.installed_tree.topLevelItem(i) for i in range(page.installed_tree.topLevelItemCount())]
    states = {row.toolTip(0): row.text(3) for row in rows}  # the id is the tooltip, for support
    assert states["lemonade-rocm-gfx110X-b1011"].startswith("No device: sees no ROCm device")
    assert states["upstream-vulkan-all-b7601"].startswith("Works: sees Vulkan0 llvmpipe")
    # people read where a build came from, not its folder name
    names = {row.toolTip(0): row.text(0) for row in rows}
    assert names["upstream-vulkan-all-b7601"] == "llama.cpp official builds"
    assert names["lemonade-rocm-gfx110X-b1011"].endswith("· gfx110X")
    assert "Using Vulkan b7601." in page.notes.text()
    # The log tells support the whole story: tried, installed, probed, rejected, chose.
    story = [r.getMessage() for r in caplog.records if r.name == "strata_gui.core.engines.service"]
    steps = ["engine set-up for gfx1100: trying lemonade-rocm-gfx110X-b1011", "installing lemonade-rocm-gfx110X-b1011",
             "installed lemonade-rocm-gfx110X-b1011", "probe of lemonade-rocm-gfx110X-b1011: no_device",
             "trying the next engine", "installed upstream-vulkan-all-b7601", "probe of upstream-vulkan-all-b7601: works",
             "set-up chose upstream-vulkan-all-b7601"]
    text = "\n".join(story)
    positions = [text.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), text
    assert not page.progress.isVisibleTo(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert page.grab().save(str(SHOTS / "engines-page.png"))
    # pin, then remove through the page
    assert page.select_engine("upstream-vulkan-all-b7601")
    page.toggle_pin()
    assert "(always used)" in page.installed_tree.currentItem().text(0)
    assert page.pin_button.text() == "Choose automatically"
    page.remove_selected()
    assert page.installed_tree.topLevelItemCount() == 1


def test_cancel_install_leaves_only_the_resumable_part(page: EnginesPage, qasync_loop: asyncio.AbstractEventLoop,
                                                       harness: Harness, published: GitHubServer) -> None:
    published.state.block_delay = 0.01  # a slow link: the Cancel lands while bytes still flow
    page.refresh_plan()
    _wait(qasync_loop, page)
    assert page.select_candidate("vulkan")
    handle = page.install_selected()
    assert handle is not None
    cancelled: list[bool] = []
    handle.cancelled.connect(lambda: cancelled.append(True))

    def cancel_once_bytes_flow(p: object) -> None:
        if getattr(p, "unit", "") == "bytes" and getattr(p, "done", 0) > 0:
            page.progress.cancel()

    handle.progress.connect(cancel_once_bytes_flow)
    _wait(qasync_loop, page)
    assert cancelled == [True] and handle.was_cancelled
    engines = harness.root / "engines"
    assert not engines.exists() or list(engines.iterdir()) == []
    parts = [p.name for p in (harness.root / "downloads").iterdir()]
    assert parts == ["llama-b7601-bin-ubuntu-vulkan-x64.tar.gz.part"]
    assert page.installed_empty.isVisibleTo(page) and page.setup_button.isEnabled()


def test_an_engine_without_a_published_checksum_is_marked_unverified(page: EnginesPage, harness: Harness) -> None:
    from strata_gui.core.engines.records import InstalledEngine

    for verified in (False, True):
        folder = harness.root / "engines" / f"upstream-cpu-all-b{int(verified)}"
        folder.mkdir(parents=True)
        (folder / "llama-server").write_bytes(b"#!/bin/sh\n")
        InstalledEngine(id=folder.name, backend="cpu", folder=folder, server_path=folder / "llama-server",
                        tag=f"b{int(verified)}", source="upstream", asset="llama-bin-ubuntu-x64.zip",
                        verified=verified, installed_at=float(verified)).write_manifest(folder)
    page.refresh_installed()
    rows = {page.installed_tree.topLevelItem(i).toolTip(0): page.installed_tree.topLevelItem(i)
            for i in range(page.installed_tree.topLevelItemCount())}
    assert "unverified download" in rows["upstream-cpu-all-b0"].text(3)
    assert "no published checksum" in rows["upstream-cpu-all-b0"].toolTip(3)
    assert "unverified" not in rows["upstream-cpu-all-b1"].text(3)


@pytest.mark.engine
def test_every_engine_button_says_what_it_did(qtbot: QtBot, qapp: QApplication,
                                              qasync_loop: asyncio.AbstractEventLoop, harness: Harness) -> None:
    """Check for updates, Update, Roll back, Test and Refresh plan each show progress, then the
    sentence the CLI prints, "nothing to do" included (issue 48, item 4)."""
    http = httpx.AsyncClient(follow_redirects=True, timeout=30)
    svc = harness.service(http)
    gpus = build_gpu_service(kernels_dir(), sysfs_root=GPU_TREES / "rx7900xtx")
    store = MetricsStore(harness.root / "metrics.sqlite3")
    resolver = EngineResolver(svc, gpus, svc.settings, store)
    pool = real_pool(http, harness.environ, log_dir=harness.root / "logs")
    bridge = AsyncBridge()
    page = EnginesPage(svc, bridge, updater=EngineUpdater(svc, resolver, pool, http, store, harness.settings_service))
    qtbot.addWidget(page)
    page.set_gpus([GpuTarget("AMD Radeon RX 7900 XTX", 0x744C, "gfx1100")])
    page.show()
    try:
        page.refresh_plan()
        assert page.progress.isVisibleTo(page) and page.notes.text() == "Reading releases…"
        _wait(qasync_loop, page)
        assert page.notes.text().startswith("Plan read: 3 build")  # "(s)": the plural catalogue comes with the app
        assert "to try, ROCm first." in page.notes.text()
        page.check_updates()
        _wait(qasync_loop, page)
        assert page.notes.text() == "All engines are up to date."
        assert page.select_candidate("cpu")
        page.install_selected()
        _wait(qasync_loop, page)
        assert page.notes.text().startswith("upstream-cpu-all-b7601: Works: ")
        assert page.select_engine("upstream-cpu-all-b7601")
        assert page.update_button.isEnabled() and page.rollback_button.isEnabled()
        page.update_selected()
        assert page.notes.text() == "Looking for a newer build of b7601…"
        _wait(qasync_loop, page)
        assert page.notes.text() == "All engines are up to date."
        page.rollback_selected()
        assert page.notes.text().startswith("There is no earlier build to roll back to.")
        page.probe_selected()
        assert page.notes.text() == "Testing engines…"
        _wait(qasync_loop, page)
        assert page.notes.text().startswith("upstream-cpu-all-b7601: Works: ")
    finally:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(pool.aclose())
        store.close()
        qasync_loop.run_until_complete(http.aclose())
