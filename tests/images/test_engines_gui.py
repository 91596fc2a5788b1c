"""Image engines through the GUI: the Engines page's image tab plans and installs stable-diffusion.cpp
builds from (a loopback) GitHub, and the Images page draws with them, falling back from a ROCm build
that cannot load its runtime to the CPU build, and saying so."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from strata_gui.app import UiHooks, compose
from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.kinds import IMAGE
from strata_gui.ui.bridge import AsyncBridge
from tests.images.test_install import CPU_ASSET, REPO, ROCM_ASSET, TAG, pack_sd_cpu_zip, pack_sd_fake_rocm_zip
from tests.support.github_server import GitHubServer, github_server

pytestmark = pytest.mark.engine


@pytest.fixture
def releases(tmp_path: Path, sd_dir: Path) -> Iterator[GitHubServer]:
    with github_server() as gh:
        gh.add_release(REPO, TAG, [pack_sd_cpu_zip(sd_dir, tmp_path / CPU_ASSET),
                                   pack_sd_fake_rocm_zip(tmp_path / ROCM_ASSET)],
                       published_at="2026-08-19T12:00:00Z")
        yield gh


def test_set_up_image_engines_on_the_engines_page_then_draw_with_the_fallback(
        qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, releases: GitHubServer,
        image_model: Path) -> None:
    base = build_services()
    base.settings_service.update(github_api_url=releases.api_base, gfx_override="gfx1100")
    services = build_app_services(base)
    services.images.threads = 2
    bridge = AsyncBridge()
    ui = compose(services, bridge, qapp, UiHooks(open_path=lambda _p: None, choose_image_model=lambda: None))
    engines, images = ui.pages.engines, ui.pages.images
    try:
        ui.window.show()
        ui.window.show_page(engines)
        assert engines.last_handle is not None
        qasync_loop.run_until_complete(engines.last_handle.wait())  # the text plan
        engines.kind_tabs.setCurrentIndex(1)
        assert engines.kind is IMAGE and engines.last_handle is not None
        qasync_loop.run_until_complete(engines.last_handle.wait())
        rows = [[engines.plan_tree.topLevelItem(i).text(c) for c in range(4)]
                for i in range(engines.plan_tree.topLevelItemCount())]
        assert [r[1] for r in rows if r[0] != "–"] == ["ROCm", "CPU"]
        assert ROCM_ASSET in rows[0][2]
        assert not engines.pin_button.isVisible()  # the pin is the chat's choice

        engines.setup_automatically()
        qasync_loop.run_until_complete(engines.last_handle.wait())
        installed = [engines.installed_tree.topLevelItem(i).text(1)
                     for i in range(engines.installed_tree.topLevelItemCount())]
        assert sorted(installed) == ["CPU", "ROCm"]
        engines.kind_tabs.setCurrentIndex(0)
        assert engines.installed_tree.topLevelItemCount() == 0  # no text engine came with them

        ui.window.show_page(images)
        images.set_model(image_model)
        assert "Draws on ROCm" in images.engine_line.text() and "then CPU" in images.engine_line.text()
        images.prompt.setPlainText("a fox")
        images.width_box.setValue(64)
        images.height_box.setValue(64)
        images.steps.setValue(1)
        images.seed.setValue(5)
        handle = images.generate()
        assert handle is not None
        qasync_loop.run_until_complete(asyncio.wait_for(handle.wait(), 180))
        assert handle.error is None, handle.error
        assert images.banner.isVisible() and "libamdhip64.so.7" in images.banner.text.text()
        assert "CPU" in images.status.text() and len(images.gallery_entries()) == 1
        assert images.engine_line.text().startswith("Draws on CPU")  # the failed build is left out now
    finally:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()
