"""The gallery: every generated image as a PNG on disk with its settings embedded.

Each PNG carries a ``parameters`` text chunk (A1111 style, readable by other tools) and a
``strata`` chunk (JSON: the request, model, engine, timings), so the gallery needs no database:
the folder is the truth, and a PNG copied elsewhere still says how it was made.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import ImageError, StorageError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.images.params import ImageRequest, ParsedParameters, parse_parameters
from strata_gui.core.images.png import read_text, with_text


@dataclass(frozen=True)
class GalleryImage:
    """One image in the gallery.

    Attributes:
        path: The PNG file.
        request: The settings that make exactly this image again (count 1, its own seed).
        model: The model file's name.
        engine: The engine label that made it ("CPU (your build: bin)").
        created: Epoch seconds.
        seconds: Wall time of its batch divided by the batch size (None when unknown).
    """

    path: Path
    request: ImageRequest
    model: str = ""
    engine: str = ""
    created: float = 0.0
    seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "request": self.request.to_json(), "model": self.model,
                "engine": self.engine, "created": self.created, "seconds": self.seconds}


def read_settings(path: Path) -> ParsedParameters:
    """The settings embedded in a PNG (ours or another A1111-compatible tool's).

    Raises:
        ImageError: not a PNG, or it carries no readable settings.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageError(T(QT_TRANSLATE_NOOP("Core", "Could not read {path}: {reason}"), path=str(path),
                           reason=str(exc.strerror or exc))) from exc
    text = read_text(data)
    if "parameters" not in text:
        raise ImageError(T(QT_TRANSLATE_NOOP("Core", "{file} carries no generation settings."),
                           file=path.name),
                         hint=QT_TRANSLATE_NOOP("Core", "Only images made by Strata or A1111-compatible "
                                                        "tools have them."))
    return parse_parameters(text["parameters"])


class Gallery:
    """The folder of generated PNGs (``<data dir>/images``).

    Args:
        folder: Where images are kept.
        clock: Wall clock (epoch seconds), for names and timestamps.
    """

    def __init__(self, folder: Path, clock: Callable[[], float] = time.time) -> None:
        self.folder = folder
        self._clock = clock

    def save(self, png: bytes, request: ImageRequest, *, seed: int, model: str, engine: str,
             seconds: float | None = None) -> GalleryImage:
        """Write one image with its settings embedded; returns its gallery entry.

        Raises:
            StorageError: the folder is not writable.
        """
        one = ImageRequest(request.prompt, request.negative_prompt, request.width, request.height, request.steps,
                           request.cfg_scale, request.sampler, seed, 1)
        created = self._clock()
        meta = {"request": one.to_json(), "model": model, "engine": engine, "created": created, "seconds": seconds}
        data = with_text(png, {"parameters": one.parameters_text(model=model, engine=engine),
                               "strata": json.dumps(meta, ensure_ascii=False)})
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(created))
        slug = re.sub(r"[^A-Za-z0-9]+", "-", request.prompt).strip("-")[:40].lower() or "image"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / f"{stamp}-{seed}-{slug}.png"
            n = 1
            while path.exists():
                n += 1
                path = self.folder / f"{stamp}-{seed}-{slug}-{n}.png"
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the image in {folder}: {reason}"),
                                 folder=self.folder, reason=exc.strerror or exc),
                               hint=QT_TRANSLATE_NOOP("Core", "Check the data folder is writable and the disk is "
                                                              "not full.")) from exc
        return GalleryImage(path, one, model, engine, created, seconds)

    def read(self, path: Path) -> GalleryImage:
        """The gallery entry of a PNG (any PNG with A1111 ``parameters`` works; ours says more).

        Raises:
            ImageError: not a PNG, or no settings in it.
        """
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "Could not read {path}: {reason}"), path=str(path),
                           reason=str(exc.strerror or exc))) from exc
        text = read_text(data)
        if "strata" in text:
            try:
                meta = json.loads(text["strata"])
                r = meta["request"]
                req = ImageRequest(str(r["prompt"]), str(r.get("negative_prompt", "")), int(r["width"]),
                                   int(r["height"]), int(r["steps"]), float(r["cfg_scale"]), str(r["sampler"]),
                                   int(r["seed"]), 1)
                secs = meta.get("seconds")
                return GalleryImage(path, req, str(meta.get("model", "")), str(meta.get("engine", "")),
                                    float(meta.get("created", 0.0)), float(secs) if secs is not None else None)
            except (ValueError, KeyError, TypeError):
                pass  # fall back to the A1111 text
        if "parameters" not in text:
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "{file} carries no generation settings."),
                               file=path.name),
                             hint=QT_TRANSLATE_NOOP("Core", "Only images made by Strata or A1111-compatible "
                                                            "tools have them."))
        parsed = parse_parameters(text["parameters"])
        return GalleryImage(path, parsed.request, parsed.model, parsed.engine, path.stat().st_mtime)

    def images(self) -> list[GalleryImage]:
        """Every readable image in the folder, newest first (unreadable files are skipped)."""
        out = []
        if self.folder.is_dir():
            for p in self.folder.glob("*.png"):
                try:
                    out.append(self.read(p))
                except ImageError:
                    continue
        return sorted(out, key=lambda g: g.created, reverse=True)
