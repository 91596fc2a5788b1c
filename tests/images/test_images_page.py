"""The Images page in the composed app, with the real CPU sd-server and the random-weight model:
what a user sees while a picture is drawn, cancelled, or rescued by the next engine."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from strata_gui.app import AppUi, UiHooks, compose
from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.images import ImageNotice, ImageProgress, read_settings
from strata_gui.core.runtime.kinds import IMAGE
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.i18n import core_text, install_language
from strata_gui.ui.pages.images_page import ImagesPage
from tests.support.cut_text import cut_texts

pytestmark = pytest.mark.engine


class Opened(list[Path]):
    def __call__(self, path: Path) -> None:
        self.append(path)


@pytest.fixture
def make_app(qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, sd_dir: Path) -> Iterator[object]:
    made: list[tuple[AppServices, AsyncBridge, AppUi]] = []

    def make(engines: tuple[str, ...] = ("sd",), opened: Opened | None = None,
             browsed: Path | None = None) -> tuple[AppServices, AppUi]:
        services = build_app_services(build_services())
        services.images.threads = 2
        bridge = AsyncBridge()
        hooks = UiHooks(open_path=opened if opened is not None else (lambda _p: None), choose_folder=lambda: None,
                        choose_model=lambda: None, save_path=lambda _n: None,
                        choose_image_model=lambda: str(browsed) if browsed is not None else None)
        ui = compose(services, bridge, qapp, hooks)
        made.append((services, bridge, ui))
        for name in engines:
            qasync_loop.run_until_complete(services.engines.add_local(sd_dir, "cpu", None, name, kind=IMAGE))
        ui.window.show()
        return services, ui

    yield make
    for services, bridge, ui in made:
        ui.window.close()
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(services.aclose())
        ui.window.deleteLater()


def _fill(page: ImagesPage, model: Path, prompt: str, *, steps: int = 2, seed: int = 11) -> None:
    page.set_model(model)
    page.prompt.setPlainText(prompt)
    page.negative.setPlainText("blurry")
    page.width_box.setValue(64)
    page.height_box.setValue(64)
    page.steps.setValue(steps)
    page.sampler.setCurrentText("euler")
    page.seed.setValue(seed)


def _until(loop: asyncio.AbstractEventLoop, condition, timeout: float = 120) -> None:
    """Run the app's loop (qasync: the coroutines need it running) until ``condition()`` holds."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    loop.run_until_complete(asyncio.wait_for(poll(), timeout))


def _finish(loop: asyncio.AbstractEventLoop, handle: TaskHandle | None) -> None:
    assert handle is not None
    loop.run_until_complete(asyncio.wait_for(handle.wait(), 180))


def test_generate_shows_steps_then_the_image_with_its_settings_and_survives_a_restart(
        qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, make_app, image_model: Path) -> None:
    opened = Opened()
    services, ui = make_app(opened=opened)
    page = ui.pages.images
    ui.window.show_page(page)
    assert "CPU" in page.engine_line.text() or page.current_model() is None
    _fill(page, image_model, "a red fox in the snow")
    assert "Draws on" in page.engine_line.text()
    statuses: list[str] = []
    services.images.events.subscribe(lambda e: statuses.append(page.status.text()) if isinstance(e, ImageProgress) else None)
    handle = page.generate()
    assert not page.generate_button.isEnabled() and page.cancel_button.isEnabled()
    assert page.generate() is None  # one job at a time
    _finish(qasync_loop, handle)
    assert handle is not None and handle.error is None, handle.error
    assert any("step 2 of 2" in s for s in statuses), statuses
    assert page.generate_button.isEnabled() and not page.cancel_button.isEnabled() and not page.bar.isVisible()
    assert "1 image" in page.status.text() and "s per step" in page.status.text()
    (shown,) = page.gallery_entries()
    assert shown.path.exists() and read_settings(shown.path).request.prompt == "a red fox in the snow"
    assert not page.preview.pixmap().isNull()
    assert "seed 11" in page.details.text() and "64×64" in page.details.text() and image_model.name in page.details.text()
    page.open_folder()
    assert opened == [services.images.gallery.folder]
    page.copy_selected()
    assert QApplication.clipboard().image().width() == 64

    # The form changes; "Use these settings again" brings the image's settings back.
    page.prompt.setPlainText("something else")
    page.seed.setValue(-1)
    page.steps.setValue(9)
    page.reuse_selected()
    assert page.request().prompt == "a red fox in the snow" and page.request().seed == 11
    assert page.request().steps == 2 and page.request().negative_prompt == "blurry"

    # Another start of the app shows the same gallery, read from the PNGs on disk.
    _, ui2 = make_app()
    page2 = ui2.pages.images
    ui2.window.show_page(page2)
    _until(qasync_loop, lambda: len(page2.gallery_entries()) == 1, 10)
    assert page2.gallery_entries()[0].request.seed == 11 and page2.selected() is not None
    # ... with the model chosen last time (a file Browsed to, outside the library), so "Use these
    # settings again" then draws the same picture
    _until(qasync_loop, lambda: page2.current_model() == image_model, 10)
    page2.reuse_selected()
    assert "Generate makes it again" in page2.status.text()
    again = page2.generate()
    _finish(qasync_loop, again)
    assert again is not None and again.error is None, again.error


def test_bad_settings_and_no_model_are_explained_without_starting_a_job(make_app, image_model: Path) -> None:
    _, ui = make_app()
    page = ui.pages.images
    ui.window.show_page(page)
    page.model.clear()
    assert page.generate() is None
    assert page.banner.isVisible() and "image model" in page.banner.text.text()
    _fill(page, image_model, "")
    assert page.generate() is None and "prompt is empty" in page.banner.text.text()
    page.prompt.setPlainText("ok")
    page.width_box.setValue(100)  # not a multiple of 8
    assert page.generate() is None and "multiple of 8" in page.banner.text.text()


def test_a_chat_model_browsed_to_is_refused_with_a_word(make_app, image_model: Path, test_model: Path,
                                                        qasync_loop: asyncio.AbstractEventLoop) -> None:
    """Issue 48 item 13: Browse… took a chat GGUF without a word (only the engine's failure said
    something was wrong). It is refused in the banner and the image model stays chosen."""
    _, ui = make_app(browsed=test_model)
    page = ui.pages.images
    ui.window.show_page(page)
    page.set_model(image_model)
    page.browse.click()
    assert page.model_check is not None
    qasync_loop.run_until_complete(page.model_check.wait())
    assert page.current_model() == image_model
    assert page.banner.isVisible()
    assert page.banner.text.text().startswith(f"{test_model.name} is a chat model, not an image model.")


def test_cancel_mid_job_stops_the_engine_and_the_next_job_runs(
        qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, make_app, image_model: Path) -> None:
    services, ui = make_app()
    page = ui.pages.images
    ui.window.show_page(page)
    _fill(page, image_model, "a slow one", steps=60)
    handle = page.generate()
    assert handle is not None
    pids: list[int | None] = []

    async def cancel_while_sampling() -> None:
        # One run of the loop for the whole exchange: the job's HTTP polls are mid-flight when
        # Cancel is pressed, and qasync must be running when their cancellation unwinds.
        # Any step well before the last: on a loaded machine a 20 ms poll can miss steps 1 and 2.
        while not ((m := re.search(r"step (\d+) of 60", page.status.text())) and int(m.group(1)) < 50):
            await asyncio.sleep(0.02)
        engine = services.images.loaded_engine
        pids.append(engine.pid if engine is not None else None)
        page.cancel()
        await handle.wait()

    qasync_loop.run_until_complete(asyncio.wait_for(cancel_while_sampling(), 120))
    pid = pids[0]
    assert handle.was_cancelled
    assert "Cancelled" in page.status.text() and page.generate_button.isEnabled()
    assert services.images.engine is None and pid is not None and not psutil.pid_exists(pid)
    assert page.gallery_entries() == []
    page.steps.setValue(1)
    again = page.generate()
    _finish(qasync_loop, again)
    assert again is not None and again.error is None and len(page.gallery_entries()) == 1


def test_killed_engine_mid_job_shows_the_notice_and_the_next_engine_finishes(
        qtbot: QtBot, qasync_loop: asyncio.AbstractEventLoop, make_app, image_model: Path) -> None:
    services, ui = make_app(("sd-a", "sd-b"))
    page = ui.pages.images
    ui.window.show_page(page)
    _fill(page, image_model, "a lighthouse", steps=3, seed=7)
    first = services.images.plan(image_model)[0]
    killed: list[int] = []

    def kill(event: object) -> None:
        engine = services.images.loaded_engine
        if (isinstance(event, ImageProgress) and event.phase == "sampling" and not killed and engine is not None
                and engine.pid is not None):
            killed.append(engine.pid)
            os.kill(engine.pid, signal.SIGKILL)  # as a user would with a task manager

    services.images.events.subscribe(kill)
    notices: list[ImageNotice] = []
    services.images.events.subscribe(lambda e: notices.append(e) if isinstance(e, ImageNotice) else None)
    handle = page.generate()
    _finish(qasync_loop, handle)
    assert killed and handle is not None and handle.error is None, handle and handle.error
    assert page.banner.isVisible() and "sending the job again" in page.banner.text.text()
    # The same notice in Chinese: one whole sentence with the engine's reason inside it.
    app = QApplication.instance()
    assert isinstance(app, QApplication) and install_language(app, "zh_CN") == "zh_CN"
    try:
        shown = core_text(notices[0].message)
        assert "正在切换到" in shown and "并重新发送任务" in shown and "sending" not in shown, shown
    finally:
        install_language(app, "en")
    (img,) = page.gallery_entries()
    assert services.images.engine is not None and services.images.engine.id != first.id
    assert read_settings(img.path).request.seed == 7 and "image" in page.status.text()


def test_an_image_model_in_the_library_opens_the_images_page_not_the_chat(
        qasync_loop: asyncio.AbstractEventLoop, make_app, image_model: Path, test_model: Path) -> None:
    services, ui = make_app()
    models, images = ui.pages.models, ui.pages.images
    for path in (image_model, test_model):
        qasync_loop.run_until_complete(services.models.open_file(path))
    ui.window.show_page(images)  # lists the library's image models without a visit to the Models page
    _finish(qasync_loop, images.models_task)
    assert [images.model.itemData(i) for i in range(images.model.count())] == [str(image_model)]
    images.model.clear()
    ui.window.show_page(models)
    models.refresh_library()
    _finish(qasync_loop, models.library_handle)
    assert models.library_paths(IMAGE) == [image_model] and models.library_paths() == [test_model]
    row = [e.path for e in models.library].index(image_model)
    models.library_table.selectRow(row)
    assert models.chat_button.text() == "Make images with this model"
    assert models.library_table.item(row, 6).text() == "image model"
    models.chat_button.click()
    assert ui.window.stack.currentWidget() is images and images.current_model() == image_model
    assert [images.model.itemData(i) for i in range(images.model.count())] == [str(image_model)]
    assert "Draws on" in images.engine_line.text()


def test_dashboard_images_tab_shows_everyday_speed_and_benchmarks_an_image_model(
        qasync_loop: asyncio.AbstractEventLoop, make_app, image_model: Path) -> None:
    services, ui = make_app(("sd-a", "sd-b"))
    page, dash = ui.pages.images, ui.pages.dashboard
    tab = dash.images_tab
    assert tab is not None
    ui.window.show_page(dash)
    dash.tabs.setCurrentWidget(tab)
    assert tab.usage_empty.isVisible() and not tab.usage_table.isVisible()
    _fill(page, image_model, "a boat", steps=2)
    _finish(qasync_loop, page.generate())
    assert tab.usage_table.rowCount() == 1  # refreshed when the image was made
    assert float(tab.usage_table.item(0, 4).text()) > 0 and tab.usage_table.item(0, 2).text() == "1"

    tab._select(image_model)
    tab.size_spin.setValue(64)
    tab.steps_spin.setValue(1)
    tab.reps_spin.setValue(1)
    handle = tab.start_benchmark()
    assert handle is not None and tab.progress.isVisibleTo(tab)
    _finish(qasync_loop, handle)
    assert handle.error is None, handle.error
    engines = {tab.bench_table.item(r, 0).text() for r in range(tab.bench_table.rowCount())}
    assert engines == {s.id for s in services.images.plan(image_model)}
    assert len(tab.bars.categories) == 2 and all(v > 0 for v in tab.bars.values["images/min"])
    assert tab.summary.text().startswith("Fastest here:")
    assert len(page.gallery_entries()) == 1  # benchmark images are not kept
    assert tab.usage_table.rowCount() == 1  # and not counted as everyday use


def test_no_image_engine_offers_to_set_one_up_on_the_engines_page(make_app, image_model: Path) -> None:
    _, ui = make_app(())
    page = ui.pages.images
    ui.window.show_page(page)
    page.set_model(image_model)
    assert "No image engine installed" in page.engine_line.text() and page.setup_button.isVisible()
    page.setup_button.click()
    assert ui.window.stack.currentWidget() is ui.pages.engines and ui.pages.engines.kind is IMAGE


def test_the_first_visit_says_how_to_get_an_image_model_in_full(make_app) -> None:  # type: ignore[no-untyped-def]
    """With no image model the line under the model box is a sentence of guidance: it was shortened
    in the middle to fit the form ("No image model yet: g…guf or .safetensors).")."""
    _, ui = make_app(())
    ui.window.resize(1180, 760)  # the window's first size
    page = ui.pages.images
    ui.window.show_page(page)
    assert page.current_model() is None
    line = page.engine_line
    assert "get one on the Models page" in line.text() and line.text().endswith("(.gguf or .safetensors).")
    assert getattr(line, "shown_text", line.text)() == line.text()  # painted whole, not elided
    assert cut_texts(page) == []


def test_the_smallest_window_shows_the_whole_form_beside_the_preview(make_app, qapp: QApplication) -> None:  # type: ignore[no-untyped-def]
    """At the window's minimum size the form was cut at its right edge (a sideways scroll bar) and the
    preview panel, too wide with three buttons in a row, was pushed over it."""
    from PySide6.QtWidgets import QScrollArea, QSplitter

    _, ui = make_app(())
    page = ui.pages.images
    ui.window.show_page(page)
    ui.window.resize(ui.window.minimumSize())
    qapp.processEvents()
    form = page.findChild(QScrollArea)
    assert not form.horizontalScrollBar().isVisible()
    assert form.widget().width() <= form.viewport().width()
    split = page.findChild(QSplitter)
    right = split.widget(1)
    assert right.geometry().left() >= form.geometry().right() and right.geometry().right() <= split.width()
    assert page.folder_button.isVisible() and page.copy_button.isVisible()
