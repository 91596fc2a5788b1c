"""The Models page's Speech filter: whisper.cpp repos from the hub with their ggml-*.bin models and a
fit verdict each, downloaded into the library, where the file is listed as a speech model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.models import DownloadState
from strata_gui.core.runtime.kinds import SPEECH
from tests.models.test_models_page import harness  # noqa: F401  (fixture)
from tests.support.engines import TestEngines

WHISPER_REPO = "strata/whisper-test"


@pytest.fixture
def hub_repos(test_model: Path, whisper_model: Path, test_engines: TestEngines) -> list[Any]:
    from tests.support.hub_server import HubRepo

    return [HubRepo("strata/test-llama-GGUF", {"m-Q8_0.gguf": test_model}, downloads=5000),
            HubRepo(WHISPER_REPO, {"ggml-base.en.bin": whisper_model,
                                   "ggml-tiny.bin": test_engines.whisper_vocab_model("tiny")},
                    downloads=900, tags=["whisper.cpp"], pipeline_tag="automatic-speech-recognition",
                    library_name="whisper.cpp")]


def test_browse_pick_and_download_a_speech_model(harness: Any, hub: Any) -> None:  # noqa: F811
    h = harness()
    page = h.page
    page.on_shown()
    h.settle(page.search_handle)
    h.settle(page.library_handle)
    assert page.hit_ids() == ["strata/test-llama-GGUF"]
    page.kind_box.setCurrentIndex(page.kind_box.findData(SPEECH.name))
    h.settle(page.search_handle)
    assert page.hit_ids() == [WHISPER_REPO]
    assert "speech models" in page.search_box.placeholderText()

    page.results.setCurrentRow(0)
    h.settle(page.detail_handle)
    table = page.quant_table
    shown = [[table.item(r, c).text() for c in range(5)] for r in range(table.rowCount())]
    assert [row[4] for row in shown] == ["ggml-tiny.bin", "ggml-base.en.bin"]
    assert shown[1][0] == "base.en  (recommended)" and shown[1][2].startswith("fits in Radeon RX 7600")
    assert "speech model: whisper" in page.detail_meta.text() and "whisper.cpp's working memory" in page.fit_note.text()
    table.selectRow(1)
    assert page.download_button.isEnabled()

    page.download_button.click()
    (row,) = page.download_rows.values()
    h.until_shown(row.job.job_id, DownloadState.DONE)
    h.until(lambda: bool(page.library))
    [entry] = page.library
    assert (entry.kind, entry.path.name, entry.architecture) == (SPEECH, "ggml-base.en.bin", "whisper")
    assert page.library_table.item(0, 6).text() == "speech model"
    page.library_table.selectRow(0)
    assert not page.chat_button.isEnabled()  # the microphone and the local API use it, not a chat
