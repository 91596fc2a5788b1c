"""Image models on the hub: which files of an image repo can be downloaded, what each needs
beside it, and whether it fits.

An image repo (``pipeline_tag=text-to-image``, as the hub tags Stable Diffusion, FLUX, SD3 ...)
publishes single-file checkpoints (one per quantisation or precision) and, for diffusion-only
families, the text encoders and VAE as separate files. A variant is one model file that
stable-diffusion.cpp loads on its own (``--model``/``--diffusion-model``); diffusers component
folders (``unet/``, ``transformer/`` ...) are not, and companion files (found by the same name
fragments the library pairs them by) are not variants either. One header read (GGUF or
safetensors, by Range requests) tells the family and which parts the variants hold: every
variant of a repo is the same model in another precision.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import httpx

from strata_gui.core.base.errors import HubError, ModelError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.gguf_meta import quant_from_filename
from strata_gui.core.models.hub_files import QuantEntry, RemoteFile
from strata_gui.core.models.image_models import COMPANION_FRAGMENTS, MODEL_SUFFIXES, ImageFit
from strata_gui.core.models.remote_header import ranged_get

IMAGE_PIPELINES = ("text-to-image",)
# diffusers keeps each component in its own folder, in a layout sd.cpp does not load as one file.
_DIFFUSERS_FOLDERS = {"unet", "transformer", "text_encoder", "text_encoder_2", "text_encoder_3", "vae", "tokenizer",
                      "tokenizer_2", "tokenizer_3", "scheduler", "safety_checker", "feature_extractor", "image_encoder"}
# Text encoder roles each diffusion-only family needs (sd.cpp's --clip_l/--clip_g/--t5xxl/--llm).
_TEXT_ROLES: dict[str, tuple[str, ...]] = {
    "FLUX": ("clip_l", "t5xxl"),
    "SD3": ("clip_l", "clip_g", "t5xxl"),
    "Wan": ("t5xxl",),
    "FLUX.2": ("llm",),
    "Qwen-Image": ("llm",),
    "Z-Image": ("llm",),
}
# Where the parts live when a repo publishes the diffusion model alone (the repos sd.cpp's own
# docs/flux.md, sd3.md and z_image.md point to).
_SOURCES: dict[tuple[str, str], str] = {
    ("FLUX", "clip_l"): "comfyanonymous/flux_text_encoders (clip_l.safetensors)",
    ("FLUX", "t5xxl"): "comfyanonymous/flux_text_encoders (t5xxl_fp16.safetensors)",
    ("FLUX", "vae"): "black-forest-labs/FLUX.1-schnell (ae.safetensors)",
    ("SD3", "clip_l"): "stabilityai/stable-diffusion-3.5-large (text_encoders/clip_l.safetensors)",
    ("SD3", "clip_g"): "stabilityai/stable-diffusion-3.5-large (text_encoders/clip_g.safetensors)",
    ("SD3", "t5xxl"): "stabilityai/stable-diffusion-3.5-large (text_encoders/t5xxl_fp16.safetensors)",
    ("SD3", "vae"): "stabilityai/stable-diffusion-3.5-large (vae/diffusion_pytorch_model.safetensors)",
    ("Z-Image", "llm"): "Comfy-Org/z_image_turbo (split_files/text_encoders/qwen_3_4b.safetensors)",
    ("Z-Image", "vae"): "Comfy-Org/z_image_turbo (split_files/vae/ae.safetensors)",
}
_ROLE_NAMES = {"vae": "VAE", "clip_l": "CLIP-L text encoder", "clip_g": "CLIP-G text encoder",
               "t5xxl": "T5-XXL text encoder", "llm": "LLM text encoder", "text": "text encoder"}
# Resolution images are judged at: the size each family was trained for.
_NATIVE_SIDE = {"Stable Diffusion": 512}
DEFAULT_SIDE = 1024


def native_resolution(family: str) -> tuple[int, int]:
    """The image size a family makes by default (512² for SD 1.x/2.x, 1024² for the rest)."""
    side = _NATIVE_SIDE.get(family, DEFAULT_SIDE)
    return side, side


def is_image_repo(pipeline_tag: str | None, tags: tuple[str, ...] | list[str]) -> bool:
    """The hub says the repo makes images from text."""
    return pipeline_tag in IMAGE_PIPELINES or any(t in IMAGE_PIPELINES for t in tags)


def _companion_role(path: str) -> str | None:
    low = path.lower()
    for role, fragments in COMPANION_FRAGMENTS:
        if any(fr in low for fr in fragments):
            return role
    return None


def image_variants(files: list[RemoteFile]) -> tuple[list[QuantEntry], list[RemoteFile]]:
    """The downloadable model files of an image repo (smallest first) and the rest."""
    variants: list[QuantEntry] = []
    others: list[RemoteFile] = []
    for f in files:
        p = PurePosixPath(f.path)
        in_diffusers = any(part in _DIFFUSERS_FOLDERS for part in p.parts[:-1])
        if (p.suffix.lower() in MODEL_SUFFIXES and not in_diffusers and _companion_role(p.name) is None
                and f.size > 0):
            label = quant_from_filename(p.name) or p.stem
            variants.append(QuantEntry(label, p.name, (f,)))
        else:
            others.append(f)
    variants.sort(key=lambda q: q.size)
    return variants, others


@dataclass(frozen=True)
class MissingPart:
    """A part the model needs that the repo does not have, and where people get it."""

    role: str
    source: str

    @property
    def name(self) -> str:
        return _ROLE_NAMES.get(self.role, self.role)

    def describe(self) -> str:
        return f"{self.name}: get it from {self.source}" if self.source else f"{self.name}: not in this repository"


def plan_companions(family: str, has_text: bool, has_vae: bool, model: RemoteFile,
                    files: list[RemoteFile]) -> tuple[tuple[RemoteFile, ...], tuple[MissingPart, ...]]:
    """The repo files to download with ``model`` so the library pairs them, and the parts not in the repo.

    Companions are looked for where :func:`~strata_gui.core.models.image_models.find_companions`
    finds them after the download: beside the model or one folder below it. Of several
    candidates for a role, the smallest (a quantised encoder) is taken.
    """
    roles: list[str] = []
    if not has_text:
        roles += list(_TEXT_ROLES.get(family, ("text",)))
    if not has_vae:
        roles.append("vae")
    folder = PurePosixPath(model.path).parent
    near = [f for f in files if f.path != model.path and PurePosixPath(f.path).suffix.lower() in MODEL_SUFFIXES
            and _within(folder, PurePosixPath(f.path))]
    picked: list[RemoteFile] = []
    missing: list[MissingPart] = []
    for role in roles:
        pool = [f for f in near if _companion_role(str(PurePosixPath(f.path).relative_to(folder))) == role
                or (role == "text" and _companion_role(PurePosixPath(f.path).name) not in (None, "vae"))]
        if pool:
            picked.append(min(pool, key=lambda f: f.size))
        else:
            missing.append(MissingPart(role, _SOURCES.get((family, role), "")))
    return tuple(picked), tuple(missing)


def _within(folder: PurePosixPath, path: PurePosixPath) -> bool:
    try:
        rel = path.relative_to(folder)
    except ValueError:
        return False
    return len(rel.parts) <= 2


@dataclass(frozen=True)
class ImageVariantFit:
    """One image model file with what downloads with it and its fit verdict.

    Attributes:
        entry: The model file.
        companions: Text encoder / VAE files of the repo that download with it.
        missing: Parts neither in the file nor in the repo.
        fit: Where it runs at the family's native resolution (None: header unreadable).
        is_default: The pick to pre-select.
    """

    entry: QuantEntry
    companions: tuple[RemoteFile, ...]
    missing: tuple[MissingPart, ...]
    fit: ImageFit | None
    is_default: bool = False

    @property
    def files(self) -> tuple[RemoteFile, ...]:
        """Everything one download fetches, the model file first."""
        return self.entry.files + self.companions

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return {**self.entry.to_json(), "default": self.is_default, "total_size": self.size,
                "companions": [{"path": f.path, "size": f.size} for f in self.companions],
                "missing": [{"part": m.name, "source": m.source or None} for m in self.missing],
                "verdict": self.fit.verdict if self.fit else None,
                "fit": self.fit.message if self.fit else None,
                "memory_bytes": self.fit.needed_bytes if self.fit else None}


def pick_image_default(fits: list[ImageVariantFit]) -> int | None:
    """Index of the variant to pre-select: the largest complete one that fits the GPU, else the
    largest that runs from system memory, else the smallest."""
    if not fits:
        return None
    for verdict in ("gpu", "cpu"):
        ok = [i for i, f in enumerate(fits) if f.fit is not None and f.fit.verdict == verdict]
        if ok:
            return max(ok, key=lambda i: fits[i].size)
    return min(range(len(fits)), key=lambda i: fits[i].size)


SAFETENSORS_HEADER_MAX = 100 << 20


async def read_remote_safetensors_names(client: httpx.AsyncClient, url: str, *, headers: dict[str, str],
                                        label: str, endpoint: str, deadline: float | None = None) -> list[str]:
    """Tensor names of a remote safetensors file: its 8-byte length, then the JSON header, by Range."""

    async def get(start: int, end: int) -> bytes:
        resp, body = await ranged_get(client, url, headers, start, end, label=label, endpoint=endpoint,
                                      deadline=deadline)
        # A server that ignores Range sends the whole (small) file from byte 0.
        return body if resp.status_code == 206 else body[start:end + 1]

    head = await get(0, 7)
    if len(head) != 8:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{label} is too short to be a safetensors file."),
                           label=label))
    (size,) = struct.unpack("<Q", head)
    if size > SAFETENSORS_HEADER_MAX:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{label} does not look like a safetensors file."),
                           label=label))
    raw = await get(8, 8 + size - 1)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "The safetensors header of {label} is corrupt."),
                           label=label)) from exc
    if not isinstance(data, dict):
        raise HubError(T(QT_TRANSLATE_NOOP("Core", "The safetensors header of {label} is not a table of "
                                                   "tensors."), label=label))
    return [k for k in data if k != "__metadata__"]
