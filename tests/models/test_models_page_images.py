"""The Models page's hub browser for image models: Text/Image choice, variants with parts and
verdicts, a download that brings the text encoders and VAE, the missing parts named; the CLI
shows the same files for the same repo."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from strata_gui.cli import run_command
from strata_gui.core.config.services import build_services
from strata_gui.core.models import DownloadState
from strata_gui.core.runtime.kinds import IMAGE
from tests.models.test_hub_images import ALONE_REPO, FLUX_REPO, SD_REPO, image_repos
from tests.models.test_models_page import harness  # noqa: F401  (fixture)


@pytest.fixture
def hub_repos(test_model: Path, tmp_path: Path) -> list[Any]:
    from tests.support.hub_server import HubRepo

    return [HubRepo("strata/test-llama-GGUF", {"m-Q8_0.gguf": test_model}, downloads=5000),
            *image_repos(tmp_path / "image-files")]


def test_browse_pick_and_download_an_image_model(harness: Any, hub: Any,  # noqa: F811
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    h = harness()
    page = h.page
    page.on_shown()
    h.settle(page.search_handle)
    h.settle(page.library_handle)
    assert page.hit_ids() == ["strata/test-llama-GGUF"]
    page.kind_box.setCurrentIndex(page.kind_box.findData(IMAGE.name))
    h.settle(page.search_handle)
    assert page.hit_ids() == [FLUX_REPO, SD_REPO, ALONE_REPO]
    assert "image models" in page.search_box.placeholderText()

    page.results.setCurrentRow(0)
    h.settle(page.detail_handle)
    table = page.quant_table
    shown = [[table.item(r, c).text() for c in range(5)] for r in range(table.rowCount())]
    assert [row[4] for row in shown] == ["flux1-test-fp8.safetensors", "flux1-test-fp16.safetensors"]
    assert shown[0][3] == "clip_l.safetensors, t5xxl_fp8_e4m3fn.safetensors, ae.safetensors"
    assert shown[1][0].endswith("(recommended)") and shown[1][2].startswith("fits in Radeon RX 7600")
    assert "image model: FLUX" in page.detail_meta.text() and "1024×1024" in page.fit_note.text()
    table.selectRow(0)
    assert page.image_plan.text().startswith("Downloads 4 files")
    assert "text_encoders/clip_l.safetensors" in page.image_plan.text() and page.download_button.isEnabled()
    h.shot("image-detail")

    # The CLI sees the same files, sizes and parts for the same repo.
    build_services().settings_service.update(hub_endpoint=hub.url)
    assert run_command(["models", "info", FLUX_REPO, "--json"]) == 0
    asyncio.set_event_loop(h.loop)  # the CLI ran its own loop (asyncio.run); the page's is current again
    variants = json.loads(capsys.readouterr().out)["image_fit"]["variants"]
    assert [v["name"] for v in variants] == [row[4] for row in shown]
    assert [", ".join(c["path"].rsplit("/", 1)[-1] for c in v["companions"]) for v in variants] == [
        row[3] for row in shown]
    assert [v["total_size"] for v in variants] == [f.size for f in page.image_report.fits]

    page.download_button.click()
    assert page.tabs.currentIndex() == 1
    (row,) = page.download_rows.values()
    h.until_shown(row.job.job_id, DownloadState.DONE)
    h.until(lambda: bool(page.library))
    [entry] = page.library
    assert (entry.kind, entry.image_family, entry.image_missing) == (IMAGE, "FLUX", ())
    assert len(entry.companions) == 3

    # A repo that has the diffusion model only: the parts it lacks, and where to get them.
    page.tabs.setCurrentIndex(0)
    page.results.setCurrentRow(2)
    h.settle(page.detail_handle)
    assert page.quant_table.item(0, 3).text() == "missing: CLIP-L text encoder, T5-XXL text encoder, VAE"
    page.quant_table.selectRow(0)
    assert "get it from black-forest-labs/FLUX.1-schnell" in page.image_plan.text()
    assert not page.download_button.isEnabled()
    h.shot("image-missing")
