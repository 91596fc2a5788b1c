"""Image models: recognise them from their tensor names, find the parts kept in separate files,
and judge whether they fit.

stable-diffusion.cpp accepts a single file holding everything (a Stable Diffusion checkpoint as
GGUF or safetensors: diffusion model, text encoder, VAE) or a diffusion model alone with its text
encoders and VAE beside it (FLUX, SD3, Z-Image and other repos publish them separately). The tensor
names tell which parts a file holds (the same markers sd.cpp's own version detection reads); the
missing parts are looked for next to the file by their usual names, and the launch arguments say
which file is which.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from strata_gui.core.models.fit import MemoryTarget

# (marker in a tensor name, family) in the order sd.cpp's get_sd_version() tests them.
_FAMILY_MARKERS: tuple[tuple[str, str], ...] = (
    ("model.diffusion_model.joint_blocks.", "SD3"),
    ("model.diffusion_model.transformer_blocks.0.img_mod.1.weight", "Qwen-Image"),
    ("model.diffusion_model.cap_embedder.0.weight", "Z-Image"),
    ("model.diffusion_model.double_stream_modulation_img", "FLUX.2"),
    ("model.diffusion_model.double_blocks.", "FLUX"),
    ("model.diffusion_model.blocks.0.cross_attn.norm_k.weight", "Wan"),
    ("conditioner.embedders.1", "SDXL"),
    ("model.diffusion_model.input_blocks.", "Stable Diffusion"),
    ("unet.down_blocks.", "Stable Diffusion"),
)
_DIFFUSION = ("model.diffusion_model.", "unet.", "double_blocks.", "single_blocks.", "joint_blocks.")
_TEXT = ("cond_stage_model.", "conditioner.", "text_encoders.", "te.", "text_model.")
_VAE = ("first_stage_model.", "vae.", "tae.", "decoder.conv_in", "encoder.conv_in")
# Families whose checkpoints normally hold only the diffusion model.
_SEPARATE_PARTS = {"FLUX", "FLUX.2", "SD3", "Qwen-Image", "Z-Image", "Wan"}

# Companion files by role: (sd-server option, name fragments, lower-case).
_COMPANIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("vae", "--vae", ("vae", "ae.safetensors", "ae.gguf")),
    ("clip_l", "--clip_l", ("clip_l",)),
    ("clip_g", "--clip_g", ("clip_g",)),
    ("t5xxl", "--t5xxl", ("t5xxl", "t5-v1_1", "umt5")),
    ("llm", "--llm", ("qwen", "mistral", "gemma", "llm")),
)
MODEL_SUFFIXES = (".gguf", ".safetensors")
# Role -> name fragments, for matching repo files before they are downloaded (hub_images).
COMPANION_FRAGMENTS: tuple[tuple[str, tuple[str, ...]], ...] = tuple((r, f) for r, _o, f in _COMPANIONS)


@dataclass(frozen=True)
class ImageModelParts:
    """What an image model file holds, and the files found for what it lacks.

    Attributes:
        family: "Stable Diffusion", "SDXL", "FLUX", ... (sd.cpp's names).
        diffusion, text_encoder, vae: Whether the file holds each part.
        companions: Role ("vae", "clip_l", "t5xxl", "llm", ...) → file found next to it.
    """

    family: str
    diffusion: bool
    text_encoder: bool
    vae: bool
    companions: dict[str, Path] = field(default_factory=dict)

    @property
    def single_file(self) -> bool:
        return self.diffusion and self.text_encoder and self.vae

    @property
    def missing(self) -> tuple[str, ...]:
        """Parts neither in the file nor beside it ("text encoder", "VAE")."""
        out = []
        if not self.text_encoder and not ({"clip_l", "clip_g", "t5xxl", "llm"} & set(self.companions)):
            out.append("text encoder")
        if not self.vae and "vae" not in self.companions:
            out.append("VAE")
        return tuple(out)

    def launch_args(self, model: Path) -> list[str]:
        """sd-server's model options: ``--model`` for a complete file, else ``--diffusion-model``
        and one option per companion file."""
        if self.single_file:
            return ["--model", str(model)]
        args = ["--model" if self.text_encoder or self.vae else "--diffusion-model", str(model)]
        for role, option, _names in _COMPANIONS:
            path = self.companions.get(role)
            if path is not None:
                args += [option, str(path)]
        return args


def image_family(names: Iterable[str]) -> str | None:
    """The image model family a set of tensor names belongs to, or None (not an image model)."""
    names = list(names)
    for marker, family in _FAMILY_MARKERS:
        if any(marker in n for n in names):
            return family
    return None


def safetensors_names(path: Path) -> list[str]:
    """Tensor names in a safetensors file's header (raises OSError/ValueError on a bad file)."""
    from strata_gui.core.platform.files import open_regular

    with open_regular(path) as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError("too short for safetensors")
        (size,) = struct.unpack("<Q", raw)
        if size > 100 << 20:
            raise ValueError("implausible safetensors header")
        try:
            header = json.loads(f.read(size))
        except RecursionError as exc:  # a crafted header of nested brackets
            raise ValueError("safetensors header nested too deeply") from exc
    if not isinstance(header, dict):
        raise ValueError("safetensors header is not an object")
    return [k for k in header if k != "__metadata__"]


def image_parts(names: Iterable[str], model: Path | None = None) -> ImageModelParts | None:
    """Which parts the tensors make up (None: not an image model); with ``model``, the companion
    files for the missing parts are looked for in its folder."""
    names = list(names)
    family = image_family(names)
    if family is None:
        return None
    diffusion = any(n.startswith(_DIFFUSION) for n in names)
    text = any(n.startswith(_TEXT) for n in names)
    vae = any(n.startswith(_VAE) for n in names)
    parts = ImageModelParts(family, diffusion, text, vae)
    if model is not None and not parts.single_file:
        parts = ImageModelParts(family, diffusion, text, vae, find_companions(model, need_text=not text,
                                                                             need_vae=not vae))
    return parts


def find_companions(model: Path, *, need_text: bool = True, need_vae: bool = True) -> dict[str, Path]:
    """Text encoder / VAE files beside ``model`` (or in ``text_encoder*/``, ``vae/`` sub-folders,
    as diffusers-style repos keep them), by their usual names."""
    folder = model.parent
    try:
        candidates = [p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in MODEL_SUFFIXES
                      and p != model and len(p.relative_to(folder).parts) <= 2]
    except OSError:
        return {}
    found: dict[str, Path] = {}
    for role, _option, fragments in _COMPANIONS:
        if (role == "vae" and not need_vae) or (role != "vae" and not need_text):
            continue
        hits = sorted((p for p in candidates if any(fr in str(p.relative_to(folder)).lower() for fr in fragments)),
                      key=lambda p: (len(p.parts), p.name))
        if hits:
            found[role] = hits[0]
    return found


def model_parts(path: Path) -> ImageModelParts | None:
    """The parts of an image model file (GGUF or safetensors), or None when it is not one."""
    if path.suffix.lower() == ".safetensors":
        try:
            return image_parts(safetensors_names(path), path)
        except (OSError, ValueError):
            return None
    from strata_gui.core.base.errors import ModelError
    from strata_gui.core.models.gguf_meta import read_header  # GGUF header only

    try:
        meta = read_header(path)
    except (ModelError, OSError):
        return None
    return image_parts((t.name for t in meta.tensors), path)


@dataclass(frozen=True)
class ImageFit:
    """Where an image model runs: "gpu" (it and its working memory fit), "cpu" (system memory
    only, much slower) or "too_large", with one sentence for people."""

    verdict: str
    message: str
    needed_bytes: int


# Working memory of sd.cpp beyond the weights: a fixed part (backend buffers, the text encoders'
# activations) plus a part that grows with the pixels (the diffusion model's and the VAE decoder's
# activations scale with the latent and image area). Chosen so that 512x512 keeps the earlier
# 1.5 GiB margin (loosely measured for SD1.x/SDXL-sized models) and 1024x1024 asks for about
# 3 GiB, the order of the VAE decode buffers sd.cpp logs at that size without tiling: a safe
# margin, not a model of each network.
_WORK_FIXED = 1024 << 20
_WORK_PER_MEGAPIXEL = 2048 << 20


def image_work_bytes(width: int = 512, height: int = 512) -> int:
    """Compute allowance of one image of ``width`` x ``height`` on top of the weights."""
    return _WORK_FIXED + int(_WORK_PER_MEGAPIXEL * (width * height) / (1 << 20))


def estimate_image_fit(weights_bytes: int, target: MemoryTarget, ram_bytes: int,
                       width: int = 512, height: int = 512) -> ImageFit:
    """Judge an image model (all its files' bytes) at one image size against the GPU memory and system RAM."""
    return estimate_bytes_fit(int(weights_bytes * 1.05) + image_work_bytes(width, height), target, ram_bytes)


def estimate_bytes_fit(need: int, target: MemoryTarget, ram_bytes: int) -> ImageFit:
    """Judge a model that needs ``need`` bytes as a whole (image and speech models: no KV cache)
    against the GPU memory and system RAM."""
    gib = 1 << 30
    if target.usable_bytes and need <= target.usable_bytes:
        return ImageFit("gpu", f"fits in {target.name} ({need / gib:.1f} of {target.usable_bytes / gib:.1f} GiB)",
                        need)
    if need <= ram_bytes * 0.8:
        where = f"does not fit in {target.name}; " if target.usable_bytes else ""
        return ImageFit("cpu", f"{where}runs from system memory ({need / gib:.1f} GiB), much slower", need)
    return ImageFit("too_large", f"needs about {need / gib:.1f} GiB: more than this machine has", need)


def separate_parts_expected(family: str) -> bool:
    """Families whose repos usually publish the text encoders and VAE as separate files."""
    return family in _SEPARATE_PARTS
