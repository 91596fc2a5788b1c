"""The Models page on real widgets (offscreen) against the loopback hub."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QApplication, QMessageBox
from pytestqt.qtbot import QtBot

from strata_gui.core.models.downloads import DownloadState
from strata_gui.core.models.fit import GIB, MemoryTarget
from strata_gui.core.models.hub_config import HubTokens, SavedHubToken
from strata_gui.core.models.service import ModelService
from strata_gui.core.remote.secrets import FileSecretStore
from strata_gui.ui.bridge import AsyncBridge, TaskHandle
from strata_gui.ui.pages.models_page import ModelsPage
from strata_gui.ui.theme import apply_theme

SHOTS = Path("/tmp/strata-shots")


class Harness:
    def __init__(self, page: ModelsPage, loop: asyncio.AbstractEventLoop, qtbot: QtBot) -> None:
        self.page, self.loop, self.qtbot = page, loop, qtbot
        self.opened: list[QUrl] = []

    def settle(self, handle: TaskHandle | None) -> None:
        if handle is not None:
            self.loop.run_until_complete(handle.wait())
        self.qtbot.wait(20)

    def until(self, predicate: Any, timeout: float = 8.0) -> None:
        async def poll() -> None:
            deadline = self.loop.time() + timeout
            while not predicate():
                if self.loop.time() > deadline:
                    raise AssertionError("condition not reached")
                await asyncio.sleep(0.02)

        self.loop.run_until_complete(poll())

    def until_shown(self, job_id: str, state: DownloadState, timeout: float = 20.0) -> None:
        """Wait until the Downloads tab shows ``job_id`` in ``state`` (CANCELLED: its row is gone)."""
        def shown() -> bool:
            row = self.page.download_rows.get(job_id)
            if state is DownloadState.CANCELLED:
                return row is None
            return row is not None and row.shown_state is state

        self.until(shown, timeout)
        self.qtbot.wait(20)

    def shot(self, name: str) -> None:
        self.qtbot.wait(50)
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert self.page.grab().save(str(SHOTS / f"models-{name}.png"))


@pytest.fixture
def harness(qtbot: QtBot, qapp: QApplication, qasync_loop: asyncio.AbstractEventLoop, hub: Any,
            tmp_path: Path) -> Iterator[Any]:
    made: list[tuple[AsyncBridge, ModelService, httpx.AsyncClient]] = []

    def make(offline: bool = False, model_dirs: list[Path] | None = None) -> Harness:
        apply_theme(qapp, "light")
        client = httpx.AsyncClient(timeout=10)
        svc = ModelService(
            client=client, endpoint=hub.url, cache_dir=tmp_path / "hf-home" / "hub",
            queue_file=tmp_path / "strata-home" / "downloads.json",
            token_store=HubTokens(SavedHubToken(FileSecretStore(tmp_path / "strata-home" / "secrets.json")), {}),
            model_dirs=model_dirs or [], memory_target=lambda: MemoryTarget("Radeon RX 7600 (8 GB)", 8 * GIB),
            ram_bytes=32 * GIB, offline=offline,
        )
        opened: list[QUrl] = []
        bridge = AsyncBridge()
        page = ModelsPage(svc, bridge, open_url=opened.append)
        h = Harness(page, qasync_loop, qtbot)
        h.opened = opened
        qtbot.addWidget(page)
        page.resize(1200, 800)
        page.show()
        made.append((bridge, svc, client))
        return h

    yield make
    for bridge, svc, client in made:
        qasync_loop.run_until_complete(bridge.shutdown())
        qasync_loop.run_until_complete(client.aclose())
        qasync_loop.run_until_complete(svc.aclose())


def test_search_paging_and_stale_answers(harness: Any, hub: Any) -> None:
    h = harness()
    page: ModelsPage = h.page
    page.on_shown()
    h.settle(page.search_handle)
    h.settle(page.library_handle)
    assert page.hit_ids()[:2] == ["strata/test-llama-GGUF", "strata/test-llama-split-GGUF"]
    assert len(page.hit_ids()) == 30 and "scroll for more" in page.results_status.text()
    h.shot("search")

    bar = page.results.verticalScrollBar()
    bar.setValue(bar.maximum())
    h.settle(page.search_handle)
    assert len(page.hit_ids()) == 48 and "scroll" not in page.results_status.text()

    # A slow answer to an older query never replaces the newer results.
    hub.state.search_delay["split"] = 0.6
    page.search_box.setText("split")
    page.start_search()
    slow = page.search_handle
    page.search_box.setText("gated")
    page.start_search()
    h.settle(page.search_handle)
    h.settle(slow)
    h.until(lambda: not any(m == "GET" and "search=split" in p for m, p, _ in hub.state.requests) or True)
    assert page.hit_ids() == ["strata/gated-llama-GGUF"]

    page.search_box.setText("no such model anywhere")
    page.start_search()
    h.settle(page.search_handle)
    assert "No GGUF models match" in page.results_empty.text()


def test_an_empty_search_clears_the_detail_and_says_so(harness: Any, hub: Any) -> None:
    """Issue 48 item 13: after a search that found nothing, the detail pane still showed the model
    picked before, as if it were a result."""
    h = harness()
    page: ModelsPage = h.page
    page.on_shown()
    h.settle(page.search_handle)
    page.results.setCurrentRow(0)
    h.settle(page.detail_handle)
    assert page.detail_stack.currentIndex() == 1 and page.detail_title.text() == "strata/test-llama-GGUF"
    page.search_box.setText("no such model anywhere")
    page.start_search()
    h.settle(page.search_handle)
    assert page.results.count() == 0 and page.detail is None
    assert page.detail_stack.currentWidget() is page.detail_empty
    assert page.detail_empty.text() == "No results: no model to show."
    page.search_box.setText("llama")  # results again: the pane asks for a pick
    page.start_search()
    h.settle(page.search_handle)
    assert page.results.count() > 0 and page.detail_stack.currentWidget() is page.detail_empty
    assert page.detail_empty.text().startswith("Pick a model on the left")


def test_detail_download_and_library(harness: Any, hub: Any, test_model: Path) -> None:
    h = harness()
    page: ModelsPage = h.page
    page.on_shown()
    h.settle(page.search_handle)
    h.settle(page.library_handle)
    assert "No models yet" in page.library_empty.text()
    assert not any(_marked(page))  # nothing downloaded yet
    page.results.setCurrentRow(0)
    h.settle(page.detail_handle)
    assert page.detail_title.text() == "strata/test-llama-GGUF"
    table = page.quant_table
    rows = {table.item(r, 0).text(): table.item(r, 2).text() for r in range(table.rowCount())}
    assert rows == {"F16": "fits fully on GPU", "Q4_K_M  (recommended)": "fits fully on GPU", "Q8_0": "fits fully on GPU"}
    assert table.selectionModel().selectedRows()[0].row() == 1
    assert "Strata Test Llama GGUF" in page.card_view.toPlainText()
    assert "Radeon RX 7600" in page.fit_note.text()
    h.shot("detail")

    # Nothing picked: the button is greyed and says why.
    table.clearSelection()
    assert not page.download_button.isEnabled() and "Pick a file" in page.download_button.toolTip()
    table.selectRow(1)
    assert page.download_button.isEnabled() and not page.download_button.toolTip()
    page.download_button.click()
    assert page.tabs.currentIndex() == 1
    (row,) = page.download_rows.values()
    h.until_shown(row.job.job_id, DownloadState.DONE)
    assert row.status.text().startswith("Done") and row.bar.value() == 1000
    assert not row.pause_button.isVisible() and page.tabs.tabText(1) == "Downloads"
    h.until(lambda: bool(page.library))
    h.shot("downloads")
    page.tabs.setCurrentIndex(2)
    assert [e.display_name for e in page.library] == ["strata-test-llama-Q4_K_M.gguf"]
    assert page.library_table.item(0, 3).text() == "F16" and page.library_table.item(0, 6).text() == "yes"
    h.shot("library")
    # Issue 48 item 13: the hub's results did not say which repositories are already downloaded.
    marked = [repo for repo, on in zip(page.hit_ids(), _marked(page), strict=True) if on]
    assert marked == ["strata/test-llama-GGUF"]
    page.search_box.setText("llama")
    page.start_search()
    h.settle(page.search_handle)
    assert "strata/test-llama-GGUF" in page.hit_ids()  # a new search marks it as it lists it
    assert [r for r, on in zip(page.hit_ids(), _marked(page), strict=True) if on] == ["strata/test-llama-GGUF"]


def _marked(page: ModelsPage) -> list[bool]:
    """Each hit: whether its "in your library" mark shows."""
    widgets = [page.results.itemWidget(page.results.item(i)) for i in range(page.results.count())]
    return [w.in_library.isVisibleTo(w) for w in widgets]  # type: ignore[union-attr]


def test_pause_resume_cancel_and_token(harness: Any, hub: Any, test_model: Path) -> None:
    hub.state.chunk_delay = 0.03
    h = harness()
    page: ModelsPage = h.page
    page.show_detail("strata/test-llama-GGUF")
    h.settle(page.detail_handle)
    page.download_selected()
    row = next(iter(page.download_rows.values()))
    job_id = row.job.job_id
    assert page.tabs.tabText(1) == "Downloads (1)"
    h.until(lambda: row.bar.value() > 50)
    assert row.running and row.pause_button.text() == "Pause"
    row.pause_button.click()
    h.until_shown(job_id, DownloadState.PAUSED)
    assert row.pause_button.text() == "Resume" and row.status.text() == "Paused · resumes where it stopped"
    assert page.service.pending_downloads()[0].state is DownloadState.PAUSED
    paused_at = page.service.downloader.partial_files(row.job)[0].stat().st_size
    assert paused_at > 0
    row.pause_button.click()
    h.until_shown(job_id, DownloadState.DONE)
    assert row.status.text().startswith("Done")
    ranges = [hd.get("Range") for m, p, hd in hub.state.requests if m == "GET" and p.endswith("Q4_K_M.gguf")]
    assert ranges[-1] == f"bytes={paused_at}-"  # the resume continued from the bytes on disk

    # Cancel a running one (a split set, one unit): the row goes and the partial file is deleted.
    page.show_detail("strata/test-llama-split-GGUF")
    h.settle(page.detail_handle)
    page.download_selected()
    q8 = next(r for r in page.download_rows.values() if r.job.repo_id == "strata/test-llama-split-GGUF")
    h.until(lambda: q8.bar.value() > 50)
    partial = page.service.downloader.partial_files(q8.job)[0]
    assert partial.exists()
    q8.cancel_button.click()
    h.until_shown(q8.job.job_id, DownloadState.CANCELLED)
    assert not partial.exists() and page.service.pending_downloads() == []

    # Gated: the token form appears; a saved token retries the download.
    hub.state.chunk_delay = 0.0
    page.show_detail("strata/gated-llama-GGUF")
    h.settle(page.detail_handle)
    assert "access token" in page.fit_note.text()  # even the header read needs the token
    page.quant_table.selectRow(0)
    page.download_selected()
    gated = next(r for r in page.download_rows.values() if r.job.repo_id == "strata/gated-llama-GGUF")
    h.until_shown(gated.job.job_id, DownloadState.FAILED)
    assert page.token_frame.isVisible() and gated.status.text().startswith("Failed: The hub needs an access token")
    h.shot("token")
    page.token_edit.setText(hub.state.token)
    page.token_button.click()
    h.until_shown(gated.job.job_id, DownloadState.DONE)
    assert gated.status.text().startswith("Done") and not page.token_frame.isVisible()


def test_unfinished_downloads_come_back_paused_after_a_restart(harness: Any, hub: Any, test_model: Path) -> None:
    hub.state.chunk_delay = 0.03
    h = harness()
    page: ModelsPage = h.page
    page.show_detail("strata/test-llama-GGUF")
    h.settle(page.detail_handle)
    page.download_selected()
    (row,) = page.download_rows.values()
    h.until(lambda: row.bar.value() > 50)
    # The app closes mid-download; the next start shows the job paused, and Resume finishes it.
    h.loop.run_until_complete(page.service.aclose())
    hub.state.chunk_delay = 0.0
    again = harness()
    again.page.on_shown()
    (row2,) = again.page.download_rows.values()
    assert row2.shown_state is DownloadState.PAUSED and row2.status.text() == "Paused · resumes where it stopped"
    assert again.page.tabs.tabText(1) == "Downloads (1)"
    row2.pause_button.click()
    again.until_shown(row2.job.job_id, DownloadState.DONE)
    assert row2.status.text().startswith("Done")


def test_library_broken_open_reveal_delete(harness: Any, tmp_path: Path, test_model: Path,
                                           broken_models: dict[str, Path]) -> None:
    folder = tmp_path / "my-models"
    folder.mkdir()
    shutil.copy(test_model, folder / "mine-Q8_0.gguf")
    shutil.copy(broken_models["truncated"], folder / "cut.gguf")
    single = tmp_path / "single.gguf"
    shutil.copy(test_model, single)
    h = harness(offline=True, model_dirs=[folder])
    page: ModelsPage = h.page
    page.on_shown()
    h.settle(page.library_handle)
    assert not page.offline_notice.isHidden() and not page.search_box.isEnabled()
    assert page.tabs.currentIndex() == 2 and page.search_handle is None
    names = [e.display_name for e in page.library]
    assert names == ["cut.gguf", "mine-Q8_0.gguf"]
    assert page.library_table.item(0, 7).text().startswith("Broken: cut.gguf is incomplete")
    assert "1 broken" in page.library_status.text() and page.library_status.text().startswith("2 models · ")

    page.open_files([single])
    h.until(lambda: "single.gguf" in [e.display_name for e in page.library])
    h.shot("library-offline")

    page.library_table.selectRow([e.display_name for e in page.library].index("mine-Q8_0.gguf"))
    page.reveal_button.click()
    assert h.opened == [QUrl.fromLocalFile(str(folder))]

    page.delete_button.click()
    box = page.confirm_box
    assert box is not None and "frees 8.6 MiB" in box.text()
    cancel = box.button(QMessageBox.StandardButton.Cancel)
    cancel.click()
    h.qtbot.wait(20)
    assert (folder / "mine-Q8_0.gguf").exists()
    page.delete_button.click()
    box = page.confirm_box
    assert box is not None
    delete = next(b for b in box.buttons() if b.text() == "Delete")
    delete.click()
    h.until(lambda: "freed 8.6 MiB" in page.library_status.text())
    h.until(lambda: "mine-Q8_0.gguf" not in [e.display_name for e in page.library])
    assert not (folder / "mine-Q8_0.gguf").exists()


def test_library_lists_hostile_files_as_broken_with_their_reason(harness: Any, tmp_path: Path,
                                                                 test_model: Path) -> None:
    """A crafted header (arrays nested 50 000 deep) and a FIFO in a models folder: the page lists
    them as broken with the reason, lists the good model, and never shows an internal error (it
    used to: RecursionError, and the FIFO hung the scan)."""
    import os
    import struct

    folder = tmp_path / "hostile-models"
    folder.mkdir()
    shutil.copy(test_model, folder / "good-F16.gguf")
    inner = struct.pack("<IQI", 4, 1, 7)
    for _ in range(50_000):
        inner = struct.pack("<IQ", 9, 1) + inner
    key = b"x.nested"
    (folder / "nested.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
                                         + struct.pack("<I", 9) + inner)
    os.mkfifo(folder / "pipe.gguf")
    h = harness(offline=True, model_dirs=[folder])
    page: ModelsPage = h.page
    page.on_shown()
    h.settle(page.library_handle)
    names = [e.display_name for e in page.library]
    assert names == ["good-F16.gguf", "nested.gguf", "pipe.gguf"]
    assert page.library_table.item(1, 7).text().startswith("Broken: nested.gguf: Corrupt GGUF header: an array of arrays")
    assert "named pipe (FIFO)" in page.library_table.item(2, 7).text()
    assert "2 broken" in page.library_status.text()
    assert "Internal error" not in page.library_status.text()


def test_a_damaged_key_store_does_not_break_search(harness: Any, tmp_path: Path) -> None:
    """secrets.json holds the saved hub token; damaged, the page searches without it (the key
    store moved the file aside and says so) instead of failing every request."""
    secrets = tmp_path / "strata-home" / "secrets.json"
    secrets.parent.mkdir(parents=True, exist_ok=True)
    secrets.write_text("{ damaged key store", encoding="utf-8")
    h = harness()
    page: ModelsPage = h.page
    page.on_shown()
    h.settle(page.search_handle)
    assert page.hit_ids()[:2] == ["strata/test-llama-GGUF", "strata/test-llama-split-GGUF"]
    assert list(secrets.parent.glob("secrets.json.corrupt-*"))
