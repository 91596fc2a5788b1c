"""Image models in the model library: recognised by their tensors, parts found beside them, a fit verdict."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from strata_gui.core.models.fit import MemoryTarget
from strata_gui.core.models.image_models import estimate_image_fit, model_parts
from strata_gui.core.models.library import ModelLibrary, describe_model
from strata_gui.core.runtime.kinds import IMAGE, TEXT

GIB = 1 << 30


def write_safetensors(path: Path, names: list[str]) -> Path:
    """A real (tiny) safetensors file holding F16 tensors of one element each under ``names``."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    for i, n in enumerate(names):
        header[n] = {"dtype": "F16", "shape": [1], "data_offsets": [2 * i, 2 * i + 2]}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0\0" * len(names))
    return path


FLUX_NAMES = ["model.diffusion_model.double_blocks.0.img_attn.qkv.weight",
              "model.diffusion_model.single_blocks.0.linear1.weight"]


def test_the_test_sd_model_is_an_image_model_in_one_file(image_model: Path, tmp_path: Path,
                                                          test_model: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / image_model.name).symlink_to(image_model)
    (folder / test_model.name).symlink_to(test_model)
    entries = {e.path.name: e for e in ModelLibrary(tmp_path / "hub", [folder]).scan()}
    img, txt = entries[image_model.name], entries[test_model.name]
    assert (img.kind, img.image_family, img.error, img.image_missing) == (IMAGE, "Stable Diffusion", "", ())
    assert img.params > 400_000_000 and img.to_json()["kind"] == "image"
    assert txt.kind is TEXT and txt.architecture == "llama"
    parts = model_parts(image_model)
    assert parts is not None and parts.single_file
    assert parts.launch_args(image_model) == ["--model", str(image_model)]


def test_a_diffusion_only_repo_finds_its_text_encoders_and_vae(tmp_path: Path) -> None:
    repo = tmp_path / "flux-repo"
    model = write_safetensors(repo / "flux1-schnell.safetensors", FLUX_NAMES)
    alone = describe_model(model, "folder")
    assert alone.kind is IMAGE and alone.image_family == "FLUX"
    assert alone.image_missing == ("text encoder", "VAE") and "needs its text encoder and VAE" in alone.error

    vae = write_safetensors(repo / "ae.safetensors", ["decoder.conv_in.weight"])
    clip = write_safetensors(repo / "text_encoders" / "clip_l.safetensors", ["text_model.embeddings.x"])
    t5 = write_safetensors(repo / "text_encoders" / "t5xxl_fp16.safetensors", ["encoder.block.0.x"])
    entry = describe_model(model, "folder")
    assert entry.error == "" and entry.image_missing == ()
    assert set(entry.companions) == {vae, clip, t5}
    assert entry.size == sum(p.stat().st_size for p in (model, vae, clip, t5))
    parts = model_parts(model)
    assert parts is not None
    args = parts.launch_args(model)
    assert args[:2] == ["--diffusion-model", str(model)]
    assert args[args.index("--vae") + 1] == str(vae) and args[args.index("--clip_l") + 1] == str(clip)
    assert args[args.index("--t5xxl") + 1] == str(t5)
    # The companions are parts, not models of their own.
    names = [e.path.name for e in ModelLibrary(tmp_path / "hub", [repo]).scan()]
    assert names == ["flux1-schnell.safetensors"]


def test_fit_verdict_uses_the_same_memory_target() -> None:
    gpu = MemoryTarget(name="Radeon RX 7600", vram_bytes=8 * GIB)
    assert estimate_image_fit(2 * GIB, gpu, 32 * GIB).verdict == "gpu"
    cpu = estimate_image_fit(12 * GIB, gpu, 32 * GIB)
    assert cpu.verdict == "cpu" and "does not fit in Radeon RX 7600" in cpu.message
    assert estimate_image_fit(40 * GIB, gpu, 32 * GIB).verdict == "too_large"
    assert estimate_image_fit(2 * GIB, MemoryTarget(name="no GPU", vram_bytes=0), 16 * GIB).verdict == "cpu"


def test_the_composed_core_judges_image_models_against_its_fit_target(image_model: Path) -> None:
    import asyncio

    from strata_gui.core.app_services import build_app_services
    from strata_gui.core.config.services import build_services

    async def scenario() -> tuple[str, str]:
        base = build_services()
        base.settings_service.update(fallback_gpu_memory_mb=4096)  # no GPU detected here: Settings' figure
        app = build_app_services(base)
        try:
            fit = app.models.image_fit(describe_model(image_model, "opened"))
            return fit.verdict, fit.message
        finally:
            await app.aclose()

    verdict, message = asyncio.run(scenario())
    assert verdict == "gpu" and "GPU memory from Settings" in message
