"""The curated starter models the first-run guide offers (``kernels/starter-models.json``).

Each entry names one GGUF file of a hub repository with its size and the header figures the
fit estimate needs, so the guide can say "fits fully on GPU" before anything is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata_gui.core.base.errors import ModelError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.fit import FitEstimate, MemoryTarget, ModelShape, Verdict, estimate_fit

STARTERS_FILE = "starter-models.json"
#: The shipped list's descriptions, marked so the catalogue translates them (the GUI looks a starter's
#: description up whole; one not listed here is shown as written). tests/models checks the list is whole.
SHIPPED_DESCRIPTIONS = (
    QT_TRANSLATE_NOOP("Core", "Tiny and fast; runs anywhere, even on the processor. Good for a first try."),
    QT_TRANSLATE_NOOP("Core", "Small general assistant from Meta with a long context window."),
    QT_TRANSLATE_NOOP("Core", "Capable everyday assistant that fits most GPUs with 4 GB or more."),
    QT_TRANSLATE_NOOP("Core", "Strong all-rounder for writing, coding and many languages (8 GB GPUs)."),
    QT_TRANSLATE_NOOP("Core", "Google's mid-size model with fluent, well-structured answers."),
    QT_TRANSLATE_NOOP("Core", "The best answers of this list; needs a GPU with 12 GB or more."),
)
STARTERS_VERSION = 1
_SHAPE_KEYS = ("n_layers", "kv_heads", "head_dim", "trained_context", "n_vocab", "embedding_length")
_DAMAGED_HINT = QT_TRANSLATE_NOOP("Core", "The starter model list is damaged; reinstall Strata.")
_REINSTALL_HINT = QT_TRANSLATE_NOOP("Core", "Reinstall Strata.")


@dataclass(frozen=True)
class StarterModel:
    """One curated model file.

    Attributes:
        id: Stable key ("qwen2.5-7b-instruct").
        name: What the user sees.
        repo: Hub repository ("bartowski/Qwen2.5-7B-Instruct-GGUF").
        file: Path of the GGUF file inside the repository.
        quant: Quantisation label ("Q4_K_M").
        size: File size in bytes as the hub lists it.
        description: One sentence for the user.
        license: Licence id as the model card states it.
        shape: Header figures for the fit estimate.
    """

    id: str
    name: str
    repo: str
    file: str
    quant: str
    size: int
    description: str
    license: str
    shape: ModelShape

    def fit(self, target: MemoryTarget, ram_bytes: int, n_ctx: int) -> FitEstimate:
        return estimate_fit(self.shape, target, ram_bytes, n_ctx)


def _field(raw: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where}: '{key}' is missing or not a {kind}."),
                           where=where, key=key, kind=kind.__name__),
                         hint=_DAMAGED_HINT)
    if isinstance(value, int) and value <= 0:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where}: '{key}' must be positive."), where=where,
                           key=key),
                         hint=_DAMAGED_HINT)
    return value


def parse_starters(data: Any, origin: str = STARTERS_FILE) -> list[StarterModel]:
    """Validate decoded JSON; entries come back smallest first.

    Raises:
        ModelError: Wrong version, a missing or mistyped field, or a duplicate id.
    """
    if not isinstance(data, dict) or data.get("version") != STARTERS_VERSION or not isinstance(data.get("models"), list):
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{origin} is not a version {version} starter model "
                                                     "list."), origin=origin, version=STARTERS_VERSION),
                         hint=_DAMAGED_HINT)
    out: list[StarterModel] = []
    seen: set[str] = set()
    for i, raw in enumerate(data["models"]):
        where = T(QT_TRANSLATE_NOOP("Core", "{origin}, entry {number}"), origin=origin, number=i + 1)
        if not isinstance(raw, dict):
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where} is not an object."), where=where),
                             hint=_DAMAGED_HINT)
        shape_raw = raw.get("shape")
        if not isinstance(shape_raw, dict):
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where}: 'shape' is missing."), where=where),
                             hint=_DAMAGED_HINT)
        shape_where = T(QT_TRANSLATE_NOOP("Core", "{where} shape"), where=where)
        fig = {k: _field(shape_raw, k, int, shape_where) for k in _SHAPE_KEYS}
        file = _field(raw, "file", str, where)
        if not file.lower().endswith(".gguf"):
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where}: '{file}' is not a GGUF file."),
                               where=where, file=file),
                             hint=_DAMAGED_HINT)
        size = _field(raw, "size", int, where)
        starter = StarterModel(
            id=_field(raw, "id", str, where),
            name=_field(raw, "name", str, where),
            repo=_field(raw, "repo", str, where),
            file=file,
            quant=_field(raw, "quant", str, where),
            size=size,
            description=_field(raw, "description", str, where),
            license=str(raw.get("license") or ""),
            shape=ModelShape(
                n_layers=fig["n_layers"],
                kv_heads_per_layer=(fig["kv_heads"],) * fig["n_layers"],
                key_length=fig["head_dim"],
                value_length=fig["head_dim"],
                trained_context=fig["trained_context"],
                n_vocab=fig["n_vocab"],
                embedding_length=fig["embedding_length"],
                weights_bytes=size,
            ),
        )
        if "/" not in starter.repo:
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where}: repo '{repo}' is not owner/name."),
                               where=where, repo=starter.repo),
                             hint=_DAMAGED_HINT)
        if starter.id in seen:
            raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{where}: the id '{id}' appears twice."),
                               where=where, id=starter.id),
                             hint=_DAMAGED_HINT)
        seen.add(starter.id)
        out.append(starter)
    if not out:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{origin} lists no models."), origin=origin),
                         hint=_DAMAGED_HINT)
    return sorted(out, key=lambda s: s.size)


def load_starters(path: Path) -> list[StarterModel]:
    """Read and validate a starter list file (``kernels_dir() / STARTERS_FILE`` in the app).

    Raises:
        ModelError: Unreadable file, invalid JSON or an invalid entry.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "Could not read the starter model list {path}: "
                                                     "{reason}"),
                           path=str(path), reason=str(exc.strerror or exc)),
                         hint=_REINSTALL_HINT) from exc
    except json.JSONDecodeError as exc:
        raise ModelError(T(QT_TRANSLATE_NOOP("Core", "{file} is not valid JSON (line {line})."),
                           file=path.name, line=exc.lineno),
                         hint=_REINSTALL_HINT) from exc
    return parse_starters(data, path.name)


@dataclass(frozen=True)
class StarterFit:
    """A starter model with its verdict on this machine."""

    model: StarterModel
    estimate: FitEstimate

    @property
    def runs(self) -> bool:
        return self.estimate.verdict is not Verdict.WONT_FIT


def judge_starters(starters: Sequence[StarterModel], target: MemoryTarget, ram_bytes: int,
                   n_ctx: int) -> list[StarterFit]:
    """Every starter judged against this GPU and RAM at context ``n_ctx``."""
    return [StarterFit(s, s.fit(target, ram_bytes, n_ctx)) for s in starters]


def recommend(fits: Sequence[StarterFit]) -> StarterFit | None:
    """The model to pre-select: the largest that fits fully on the GPU; without such a GPU,
    the smallest that runs at all (it stays responsive on the processor)."""
    full = [f for f in fits if f.estimate.verdict is Verdict.FULL_GPU]
    if full:
        return max(full, key=lambda f: f.model.size)
    runnable = [f for f in fits if f.runs]
    return min(runnable, key=lambda f: f.model.size) if runnable else None
