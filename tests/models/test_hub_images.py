"""Image models in the hub browser (core): search by pipeline tag, the single-file variants of an
image repo with a fit verdict at the family's size, companions downloaded into the same folder so
the library pairs them, and the parts a repo lacks named with where to get them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.base.errors import HubError
from strata_gui.core.models.fit import GIB, MemoryTarget
from strata_gui.core.models.image_models import image_work_bytes
from strata_gui.core.runtime.kinds import IMAGE
from tests.support.safetensors_file import CLIP_L, FLUX_DIFFUSION, SD15_FULL, T5XXL, VAE, write_safetensors

FLUX_REPO = "strata/flux-test"
ALONE_REPO = "strata/flux-alone"
SD_REPO = "strata/sd15-test"


def image_repos(folder: Path) -> list[Any]:
    """A FLUX-style repo (model files + encoders + VAE + a diffusers folder), a diffusion-only
    repo without companions, and a single-file SD 1.5 repo: real safetensors headers."""
    from tests.support.hub_server import HubRepo

    def st(name: str, names: list[str], elements: int) -> Path:
        return write_safetensors(folder / name, names, elements)

    image_tags = ["diffusers", "safetensors", "text-to-image"]
    flux = HubRepo(FLUX_REPO, {
        "README.md": b"# FLUX test\n",
        "flux1-test-fp16.safetensors": st("flux-fp16.safetensors", FLUX_DIFFUSION, 40_000),
        "flux1-test-fp8.safetensors": st("flux-fp8.safetensors", FLUX_DIFFUSION, 20_000),
        "ae.safetensors": st("ae.safetensors", VAE, 3_000),
        "text_encoders/clip_l.safetensors": st("clip_l.safetensors", CLIP_L, 5_000),
        "text_encoders/t5xxl_fp16.safetensors": st("t5xxl_fp16.safetensors", T5XXL, 30_000),
        "text_encoders/t5xxl_fp8_e4m3fn.safetensors": st("t5xxl_fp8.safetensors", T5XXL, 15_000),
        "transformer/diffusion_pytorch_model.safetensors": st("diffusers.safetensors", FLUX_DIFFUSION, 10),
    }, downloads=900, likes=20, tags=image_tags, pipeline_tag="text-to-image", library_name="diffusers")
    alone = HubRepo(ALONE_REPO, {"flux1-alone-Q4_0.safetensors": st("alone.safetensors", FLUX_DIFFUSION, 100)},
                    downloads=50, tags=image_tags, pipeline_tag="text-to-image", library_name="diffusers")
    sd = HubRepo(SD_REPO, {"sd15-test.safetensors": st("sd15.safetensors", SD15_FULL, 1_000)}, downloads=400,
                 tags=image_tags, pipeline_tag="text-to-image", library_name="diffusers")
    return [flux, alone, sd]


@pytest.fixture(scope="session")
def image_model() -> Path:
    """The random-weight SDXS-512-DS GGUF (cached in ~/.cache/strata-dev)."""
    from tests.support.image_model import cached_image_model

    return cached_image_model()


@pytest.fixture
def hub_repos(hub_repos: list[Any], tmp_path: Path) -> list[Any]:
    """The text repos of the model tests plus the image repos."""
    return hub_repos + image_repos(tmp_path / "image-files")


def test_search_finds_image_repos_only_when_asked(make_service: Any, hub: Any) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            images = await svc.search("", kind=IMAGE)
            assert [h.repo_id for h in images.items] == [FLUX_REPO, SD_REPO, ALONE_REPO]
            text = await svc.search("strata")
            assert FLUX_REPO not in [h.repo_id for h in text.items]
            assert [h.repo_id for h in (await svc.search("sd15", kind=IMAGE)).items] == [SD_REPO]

    asyncio.run(go())
    searches = [p for m, p, _ in hub.state.requests if p.startswith("/api/models?")]
    assert "pipeline_tag=text-to-image" in searches[0] and "filter=gguf" not in searches[0]


def test_variants_with_companions_and_a_fit_at_the_family_size(make_service: Any, hub: Any, tmp_path: Path) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            detail = await svc.detail(FLUX_REPO)
            assert detail.kind is IMAGE and detail.quants == ()
            # Companions and the diffusers folder are no variants.
            assert [q.name for q in detail.images] == ["flux1-test-fp8.safetensors", "flux1-test-fp16.safetensors"]
            report = await svc.image_report(detail)
            assert (report.family, report.width, report.height) == ("FLUX", 1024, 1024)
            fp8, fp16 = report.fits
            # The smaller T5 of the two goes with the model; both text encoders and the VAE.
            assert [c.path for c in fp8.companions] == [
                "text_encoders/clip_l.safetensors", "text_encoders/t5xxl_fp8_e4m3fn.safetensors", "ae.safetensors"]
            assert fp8.missing == () and fp8.fit is not None and fp8.fit.verdict == "gpu"
            assert fp8.fit.needed_bytes == int(fp8.size * 1.05) + image_work_bytes(1024, 1024)
            assert fp16.is_default and not fp8.is_default  # the larger one that fits
            # Same files on a 2 GiB card: FLUX's 1024x1024 allowance does not fit, SD 1.5's 512x512 does.
            small = MemoryTarget("Radeon 2 GB", 2 * GIB)
            assert (await svc.image_report(detail, small)).fits[0].fit.verdict == "cpu"  # type: ignore[union-attr]
            sd = await svc.image_report(await svc.detail(SD_REPO), small)
            assert (sd.family, sd.width) == ("Stable Diffusion", 512)
            assert sd.fits[0].companions == () and sd.fits[0].fit.verdict == "gpu"  # type: ignore[union-attr]

            job = svc.enqueue_image(detail, fp8)
            assert job.total == fp8.size and job.name == "flux1-test-fp8.safetensors + 3 parts"
            paths = await svc.download(job, lambda p: None)
            assert paths[0].name == "flux1-test-fp8.safetensors" and len(paths) == 4
            assert paths[0].read_bytes() == (tmp_path / "image-files" / "flux-fp8.safetensors").read_bytes()
            [entry] = await svc.scan_library()  # one image entry, its parts paired beside it
            assert (entry.kind, entry.image_family, entry.image_missing, entry.error) == (IMAGE, "FLUX", (), "")
            assert sorted(p.name for p in entry.companions) == [
                "ae.safetensors", "clip_l.safetensors", "t5xxl_fp8_e4m3fn.safetensors"]
            assert await svc.usable_models(IMAGE) == [paths[0]]

    asyncio.run(go())


def test_a_repo_without_the_parts_says_which_and_where(make_service: Any, hub: Any) -> None:
    async def go() -> None:
        async with make_service(hub) as svc:
            report = await svc.image_report(await svc.detail(ALONE_REPO))
            [variant] = report.fits
            assert report.default is None and variant.companions == ()
            assert variant.fit is not None and variant.fit.message.endswith("not counting the missing parts")
            assert [m.describe() for m in variant.missing] == [
                "CLIP-L text encoder: get it from comfyanonymous/flux_text_encoders (clip_l.safetensors)",
                "T5-XXL text encoder: get it from comfyanonymous/flux_text_encoders (t5xxl_fp16.safetensors)",
                "VAE: get it from black-forest-labs/FLUX.1-schnell (ae.safetensors)"]

    asyncio.run(go())


def test_a_cut_companion_resumes_and_the_model_is_then_complete(make_service: Any, hub: Any) -> None:
    part = "text_encoders/t5xxl_fp8_e4m3fn.safetensors"
    hub.state.cut_after[part] = 10_000

    async def first() -> None:
        async with make_service(hub) as svc:
            detail = await svc.detail(FLUX_REPO)
            fp8 = (await svc.image_report(detail)).fits[0]
            with pytest.raises(HubError, match="stopped at"):
                await svc.download(svc.enqueue_image(detail, fp8), lambda p: None)
            assert [j.state for j in svc.pending_downloads()] == ["failed"]
            [entry] = await svc.scan_library()  # half there: the library says what is missing
            assert entry.image_missing == ("VAE",)  # clip_l arrived, the T5 was cut, the VAE never started

    async def after_restart() -> None:
        async with make_service(hub) as svc:
            (job,) = svc.pending_downloads()
            assert job.state == "failed"
            paths = await svc.download(job, lambda p: None)
            assert len(paths) == 4
            [entry] = await svc.scan_library()
            assert entry.image_missing == () and len(entry.companions) == 3

    asyncio.run(first())
    asyncio.run(after_restart())
    ranges = [h.get("Range") for m, p, h in hub.state.requests if m == "GET" and p.endswith("t5xxl_fp8_e4m3fn.safetensors")]
    assert ranges[-1] == "bytes=10000-"  # continued from what had arrived, not from the start


def test_the_real_test_image_model_as_a_hub_repo(make_service: Any, image_model: Path) -> None:
    """The random-weight SDXS GGUF that sd.cpp runs: one file holding every part, judged at 512²."""
    from tests.support.hub_server import HubRepo, running_hub

    repo = HubRepo("strata/sdxs-test-GGUF", {"sdxs-512-ds-Q4_0.gguf": image_model}, tags=["gguf", "text-to-image"],
                   pipeline_tag="text-to-image", library_name="gguf")

    size = image_model.stat().st_size

    async def go(hub: Any) -> None:
        async with make_service(hub) as svc:
            report = await svc.image_report(await svc.detail(repo.repo_id))
            [variant] = report.fits
            assert (report.family, report.width, variant.entry.label) == ("Stable Diffusion", 512, "Q4_0")
            assert variant.companions == () and variant.missing == () and variant.is_default
            assert variant.fit is not None and variant.fit.verdict == "gpu"
            assert variant.size == size

    with running_hub([repo]) as hub:
        asyncio.run(go(hub))
    read = sum(int(h["Range"].split("-")[1]) - int(h["Range"].split("=")[1].split("-")[0]) + 1
               for m, p, h in hub.state.requests if "Range" in h)
    assert read < size // 100  # a header read, not a download
