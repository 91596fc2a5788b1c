"""Names and descriptions of library models as the local API shows them.

A client types a model's id, so ids must be short, stable and unique: ``acme/Model-GGUF:Q4_K_M``
for a hub download (Ollama's ``name:tag`` shape), the repo alone when the library holds one quant
of it, and the file name without ``.gguf`` for a file the user opened or a folder they added.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strata_gui.core.models.gguf_meta import SPLIT_RE, format_params, quant_from_filename
from strata_gui.core.models.library import LibraryEntry
from strata_gui.core.serve.router import KIND_EMBEDDING, KIND_IMAGE, KIND_RERANK, KIND_TEXT, ServedModel


def file_id(path: Path) -> str:
    """The id of a file outside the hub cache: its name without ``.gguf`` (and without the
    ``-00001-of-0000N`` of a split set)."""
    name = path.name
    m = SPLIT_RE.match(name)
    if m:
        return str(m.group("prefix"))
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def assign_ids(entries: Sequence[LibraryEntry]) -> list[str]:
    """One unique id per entry, in order (see the module doc). A clash (two folders holding files of
    the same name) keeps the first as is and numbers the others ``name-2``, ``name-3``."""
    by_repo: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        if e.repo_id:
            by_repo[e.repo_id].add(_quant(e))
    ids: list[str] = []
    seen: dict[str, int] = {}
    for e in entries:
        if e.repo_id:
            quants = by_repo[e.repo_id]
            base = e.repo_id if len(quants) == 1 else f"{e.repo_id}:{_quant(e) or file_id(e.path)}"
        else:
            base = file_id(e.path)
        n = seen.get(base, 0) + 1
        seen[base] = n
        ids.append(base if n == 1 else f"{base}-{n}")
    return ids


def _quant(e: LibraryEntry) -> str:
    return e.quant or quant_from_filename(e.path.name) or ""


def details_of(entry: LibraryEntry, kind: str) -> dict[str, Any]:
    """The ``details`` of a :class:`ServedModel` made from a library entry."""
    details: dict[str, Any] = {"format": "gguf" if entry.path.suffix.lower() == ".gguf" else "safetensors"}
    family = entry.image_family if entry.kind.name == KIND_IMAGE else entry.architecture
    if family:
        details["family"] = family
        details["families"] = [family]
    if entry.params:
        details["parameter_size"] = format_params(entry.params)
        details["parameter_count"] = entry.params
    quant = _quant(entry)
    if quant:
        details["quantization_level"] = quant
    if entry.context_length:
        details["context_length"] = entry.context_length
    caps = {KIND_TEXT: ["completion"], KIND_EMBEDDING: ["embedding"], KIND_IMAGE: ["image"],
            KIND_RERANK: ["rerank"]}.get(kind, [])
    if kind == KIND_TEXT and entry.vision:
        caps.append("vision")
    details["capabilities"] = caps
    return details


def served_model(entry: LibraryEntry, model_id: str, kind: str, modified: float) -> ServedModel:
    """The :class:`ServedModel` for a library entry (``modified``: the file's mtime, epoch seconds)."""
    return ServedModel(id=model_id, kind=kind, path=entry.path, size_bytes=entry.size, modified=modified,
                       details=details_of(entry, kind))
