"""Vision models on the hub and on disk: the projector (``mmproj-*.gguf``) is recognised, is not a
quant, is downloaded with the model, and is paired with the model in the library."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.models.library import SOURCE_FOLDER, ModelLibrary, find_projector
from tests.models.test_models_page import harness  # noqa: F401  (fixture)

REPO = "strata/test-llava-GGUF"


def _repo(vision_model: Path) -> Any:
    from tests.support.hub_server import HubRepo

    projector = vision_model.parent / "mmproj-strata-test-llava-F16.gguf"
    return HubRepo(REPO, {
        "README.md": b"# Test llava\n",
        "test-llava-Q8_0.gguf": vision_model,
        "test-llava-F16.gguf": vision_model,
        "mmproj-test-llava-f32.gguf": projector,
        "mmproj-test-llava-F16.gguf": projector,
    }, downloads=7, likes=1)


def test_projector_is_no_quant_and_comes_with_the_download(make_service: Any, vision_model: Path,
                                                           tmp_path: Path) -> None:
    from tests.support.hub_server import running_hub

    model_size = vision_model.stat().st_size
    projector_bytes = (vision_model.parent / "mmproj-strata-test-llava-F16.gguf").read_bytes()

    async def go(hub: Any) -> None:
        async with make_service(hub) as svc:
            detail = await svc.detail(REPO)
            assert sorted(q.label for q in detail.quants) == ["F16", "Q8_0"]  # no "mmproj" quant
            assert detail.vision and {f.path for f in detail.projectors} == {
                "mmproj-test-llava-f32.gguf", "mmproj-test-llava-F16.gguf"}
            quant = next(q for q in detail.quants if q.label == "Q8_0")
            chosen = detail.projector_for(quant)
            assert chosen is not None and chosen.path == "mmproj-test-llava-F16.gguf"  # F16 before F32
            assert detail.to_json()["projectors"]
            job = svc.enqueue(detail, quant)
            assert job.total == model_size + len(projector_bytes)  # the user sees both
            paths = await svc.download(job, lambda p: None)
            assert paths[0].name == "test-llava-Q8_0.gguf" and paths[-1].name == "mmproj-test-llava-F16.gguf"
            assert paths[-1].read_bytes() == projector_bytes
            [entry] = await svc.scan_library()  # the projector is not listed as a model ...
            assert entry.path.name == "test-llava-Q8_0.gguf"
            assert entry.projector is not None and entry.projector.name == "mmproj-test-llava-F16.gguf"  # ... but paired
            assert entry.vision and entry.to_json()["projector"] == str(entry.projector)

    with running_hub([_repo(vision_model)]) as hub:
        asyncio.run(go(hub))


def test_a_folder_pairs_a_model_with_its_projector(tmp_path: Path, vision_model: Path, test_model: Path) -> None:
    folder = tmp_path / "models"
    (folder / "llava").mkdir(parents=True)
    shutil.copy(vision_model, folder / "llava" / "llava-Q4_K_M.gguf")
    shutil.copy(vision_model.parent / "mmproj-strata-test-llava-F16.gguf", folder / "llava" / "mmproj-model-f16.gguf")
    shutil.copy(test_model, folder / "plain-F16.gguf")
    entries = {e.path.name: e for e in ModelLibrary(tmp_path / "hub", [folder]).scan()}
    assert set(entries) == {"llava-Q4_K_M.gguf", "plain-F16.gguf"}
    assert entries["llava-Q4_K_M.gguf"].projector == folder / "llava" / "mmproj-model-f16.gguf"
    assert entries["llava-Q4_K_M.gguf"].source == SOURCE_FOLDER
    assert entries["plain-F16.gguf"].projector is None and not entries["plain-F16.gguf"].vision
    assert find_projector(folder / "plain-F16.gguf") is None


@pytest.fixture
def hub_repos(vision_model: Path) -> list[Any]:
    """For the page test below: the loopback hub serves only the vision repo."""
    return [_repo(vision_model)]


def test_models_page_says_the_model_sees_images(harness: Any, hub: Any) -> None:  # noqa: F811
    h = harness()
    page = h.page
    page.on_shown()
    h.settle(page.search_handle)
    h.settle(page.library_handle)
    page.results.setCurrentRow(0)
    h.settle(page.detail_handle)
    assert page.detail_title.text() == REPO and "vision: sees images" in page.detail_meta.text()
    table = page.quant_table
    assert sorted(table.item(r, 4).text() for r in range(table.rowCount())) == [
        "test-llava-F16.gguf", "test-llava-Q8_0.gguf"]
