"""What to draw: one request's settings, its A1111-style ``parameters`` text and the native
stable-diffusion.cpp job body.

The ``parameters`` text is what AUTOMATIC1111's web UI writes into its PNGs (and what most image
tools read back): the prompt, an optional ``Negative prompt:`` line, then one line of
``Key: value`` pairs. :func:`parse_parameters` reads it back for "use these settings again".
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from typing import Any

from strata_gui.core.base.errors import ImageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

DEFAULT_SAMPLER = "euler_a"
MAX_SIDE = 4096
_PAIR_RE = re.compile(r"\s*([A-Za-z][A-Za-z0-9 ]*):\s*([^,]*)")


@dataclass(frozen=True)
class ImageRequest:
    """The settings of one generation (a batch of ``count`` images with seeds ``seed``, ``seed+1``, …).

    Attributes:
        prompt: What to draw.
        negative_prompt: What to keep out.
        width, height: Image size in pixels (multiples of 8 for the SD family; checked by :meth:`validate`).
        steps: Sampling steps.
        cfg_scale: Classifier-free guidance scale.
        sampler: stable-diffusion.cpp's sampling method name ("euler_a", "euler", "dpm++2m", ...).
        seed: The first image's seed; -1 picks one at random (:meth:`with_seed` fixes it before
            a job is sent, so the gallery records the real seed).
        count: Images in the batch.
    """

    prompt: str
    negative_prompt: str = ""
    width: int = 512
    height: int = 512
    steps: int = 20
    cfg_scale: float = 7.0
    sampler: str = DEFAULT_SAMPLER
    seed: int = -1
    count: int = 1

    def validate(self) -> ImageRequest:
        """Return itself, or raise :class:`ImageError` naming the setting that cannot work."""
        if not self.prompt.strip():
            raise ImageError(QT_TRANSLATE_NOOP("Core", "The prompt is empty."),
                             hint=QT_TRANSLATE_NOOP("Core", "Describe the image to make."))
        for message, side in ((QT_TRANSLATE_NOOP("Core", "The image width {side} is not possible."),
                               self.width),
                              (QT_TRANSLATE_NOOP("Core", "The image height {side} is not possible."),
                               self.height)):
            if side < 64 or side > MAX_SIDE or side % 8:
                raise ImageError(T(message, side=side),
                                 hint=T(QT_TRANSLATE_NOOP("Core", "Use a multiple of 8 between 64 and {max} "
                                                                  "pixels (some models round up to a "
                                                                  "multiple of 64; Strata says so when they "
                                                                  "do)."), max=MAX_SIDE))
        if not 1 <= self.steps <= 500:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "{count} steps is not possible."), count=self.steps),
                             hint=QT_TRANSLATE_NOOP("Core", "Use 1 to 500 steps."))
        if not 1 <= self.count <= 64:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "{count} images at once is not possible."),
                               count=self.count),
                             hint=QT_TRANSLATE_NOOP("Core", "Make 1 to 64 images."))
        if not 0.0 <= self.cfg_scale <= 100.0:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "A CFG scale of {scale} is not possible."),
                               scale=self.cfg_scale),
                             hint=QT_TRANSLATE_NOOP("Core", "Use 0 to 100 (7 is usual)."))
        return self

    def with_seed(self, rng: random.Random | None = None) -> ImageRequest:
        """The same request with a fixed seed (a random one when it was -1)."""
        if self.seed >= 0:
            return self
        return replace(self, seed=(rng or random.SystemRandom()).randrange(0, 2**31 - 64))

    @property
    def size(self) -> str:
        return f"{self.width}x{self.height}"

    def sdcpp_job(self) -> dict[str, Any]:
        """The body of ``POST /sdcpp/v1/img_gen`` (stable-diffusion.cpp's native async API)."""
        return {
            "prompt": self.prompt,
            "negative_prompt": self.negative_prompt,
            "width": self.width,
            "height": self.height,
            "seed": self.seed,
            "batch_count": self.count,
            "output_format": "png",
            # Strata writes its own "parameters" text (with the engine), so sd.cpp's is left out.
            "embed_image_metadata": False,
            "sample_params": {
                "sample_method": self.sampler,
                "sample_steps": self.steps,
                "guidance": {"txt_cfg": self.cfg_scale},
            },
        }

    def parameters_text(self, *, seed: int | None = None, model: str = "", engine: str = "") -> str:
        """The A1111-style ``parameters`` text for one image of the batch (its own ``seed``)."""
        lines = [self.prompt]
        if self.negative_prompt:
            lines.append(f"Negative prompt: {self.negative_prompt}")
        pairs = [("Steps", str(self.steps)), ("Sampler", self.sampler), ("CFG scale", _num(self.cfg_scale)),
                 ("Seed", str(self.seed if seed is None else seed)), ("Size", self.size)]
        if model:
            pairs.append(("Model", model.replace(",", " ")))
        if engine:
            pairs.append(("Engine", engine.replace(",", " ")))
        pairs.append(("Version", "Strata"))
        lines.append(", ".join(f"{k}: {v}" for k, v in pairs))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "negative_prompt": self.negative_prompt, "width": self.width,
                "height": self.height, "steps": self.steps, "cfg_scale": self.cfg_scale,
                "sampler": self.sampler, "seed": self.seed, "count": self.count}


def _num(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class ParsedParameters:
    """What a ``parameters`` text says: the request (count 1, the image's own seed) and the rest."""

    request: ImageRequest
    model: str = ""
    engine: str = ""
    extra: tuple[tuple[str, str], ...] = ()


def parse_parameters(text: str) -> ParsedParameters:
    """Read an A1111-style ``parameters`` text back into a request (for "use these settings again").

    Settings it does not name keep their defaults; unknown keys are kept in ``extra``.

    Raises:
        ImageError: the text has no settings line.
    """
    lines = text.strip("\n").split("\n")
    if not lines or not lines[-1].lstrip().startswith("Steps:"):
        raise ImageError(QT_TRANSLATE_NOOP("Core",
                                           "The image carries no generation settings Strata can read."),
                         hint=QT_TRANSLATE_NOOP("Core", "Only images made by Strata or A1111-compatible "
                                                        "tools have them."))
    settings = dict(_PAIR_RE.findall(lines[-1]))
    body = lines[:-1]
    neg_at = next((i for i, ln in enumerate(body) if ln.startswith("Negative prompt:")), None)
    if neg_at is None:
        prompt, negative = "\n".join(body), ""
    else:
        prompt = "\n".join(body[:neg_at])
        negative = "\n".join(body[neg_at:])[len("Negative prompt:"):].strip()
    req = ImageRequest(prompt=prompt, negative_prompt=negative)
    known = {"Steps", "Sampler", "CFG scale", "Seed", "Size", "Model", "Engine", "Version"}
    try:
        if "Steps" in settings:
            req = replace(req, steps=int(settings["Steps"]))
        if "Sampler" in settings:
            req = replace(req, sampler=settings["Sampler"].strip())
        if "CFG scale" in settings:
            req = replace(req, cfg_scale=float(settings["CFG scale"]))
        if "Seed" in settings:
            req = replace(req, seed=int(settings["Seed"]))
        if "Size" in settings:
            w, h = settings["Size"].lower().split("x")
            req = replace(req, width=int(w), height=int(h))
    except ValueError as exc:
        raise ImageError(T(QT_TRANSLATE_NOOP("Core",
                                             "The image's generation settings are damaged ({reason})."),
                           reason=str(exc))) from exc
    extra = tuple((k, v) for k, v in settings.items() if k not in known)
    return ParsedParameters(req, settings.get("Model", "").strip(), settings.get("Engine", "").strip(), extra)


def parse_size(text: str) -> tuple[int, int]:
    """``"512x768"`` → (512, 768).

    Raises:
        ImageError: not WIDTHxHEIGHT.
    """
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not m:
        raise ImageError(T(QT_TRANSLATE_NOOP("Core", "'{text}' is not an image size."), text=text),
                         hint=QT_TRANSLATE_NOOP("Core", "Write it as WIDTHxHEIGHT, for example 512x512."))
    return int(m.group(1)), int(m.group(2))
