"""Names and descriptions of library models as the local API shows them.

A client types a model's id, so ids must be short, stable and unique: ``acme/Model-GGUF:Q4_K_M``
for a hub download (Ollama's ``name:tag`` shape), the repo alone when the library holds one quant
of it, and the file name without ``.gguf`` for a file the user opened or a folder they added.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strata_gui.core.models.gguf_meta import SPLIT_RE, format_params, quant_from_filename
from strata_gui.core.models.library import LibraryEntry
from strata_gui.core.serve.router import (
    KIND_EMBEDDING,
    KIND_IMAGE,
    KIND_RERANK,
    KIND_SPEECH,
    KIND_TEXT,
    LATEST,
    ServedModel,
)


def file_id(path: Path) -> str:
    """The id of a file outside the hub cache: its name without ``.gguf`` (or a whisper model's
    ``.bin``; and without the ``-00001-of-0000N`` of a split set)."""
    name = path.name
    m = SPLIT_RE.match(name)
    if m:
        return str(m.group("prefix"))
    for suffix in (".gguf", ".bin"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


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


_FORMATS = {".gguf": "gguf", ".safetensors": "safetensors"}  # else whisper.cpp's GGML (.bin)


def details_of(entry: LibraryEntry, kind: str) -> dict[str, Any]:
    """The ``details`` of a :class:`ServedModel` made from a library entry."""
    details: dict[str, Any] = {"format": _FORMATS.get(entry.path.suffix.lower(), "ggml")}
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
            KIND_SPEECH: ["transcription"],
            KIND_RERANK: ["rerank"]}.get(kind, [])
    if kind == KIND_TEXT and entry.vision:
        caps.append("vision")
    details["capabilities"] = caps
    return details


def served_model(entry: LibraryEntry, model_id: str, kind: str, modified: float) -> ServedModel:
    """The :class:`ServedModel` for a library entry (``modified``: the file's mtime, epoch seconds)."""
    return ServedModel(id=model_id, kind=kind, path=entry.path, size_bytes=entry.size, modified=modified,
                       details=details_of(entry, kind))


# How Ollama's users name hub models: "hf.co/org/repo:Q4_K_M" (also "huggingface.co/...", with a
# scheme, or "org/repo:tag" alone); "latest" or no tag means "the quant that fits best".
_HUB_HOSTS = ("hf.co/", "huggingface.co/", "www.huggingface.co/")
_HUB_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,95}/[A-Za-z0-9][A-Za-z0-9._\-]{0,95}")


def hub_name(name: str) -> tuple[str, str] | None:
    """``(repo_id, quant)`` of a hub model name as Ollama's users write it ("" quant: the best
    fit), or None when ``name`` names no hub repo (Ollama's own library names, "llama3.2")."""
    rest = name.strip()
    for scheme in ("https://", "http://"):
        rest = rest.removeprefix(scheme)
    for host in _HUB_HOSTS:
        if rest.lower().startswith(host):
            rest = rest[len(host):]
            break
    repo, _, tag = rest.partition(":")
    if not _HUB_REPO.fullmatch(repo) or ".." in repo:
        return None
    return repo, "" if tag.lower() == "latest" else tag


def find_served(models: Sequence[ServedModel], name: str) -> ServedModel | None:
    """The served model ``name`` stands for: its id (``:latest`` added by Ollama's clients or not),
    or the hub name it was pulled as (``hf.co/org/repo:Q4_K_M`` for the id ``org/repo:Q4_K_M``, or
    ``org/repo`` when the library holds that quant alone)."""
    by_id = {m.id: m for m in models}
    for candidate in (name, name.removesuffix(LATEST)):
        if candidate in by_id:
            return by_id[candidate]
    parsed = hub_name(name)
    if parsed is None:
        return None
    repo, quant = parsed
    for m in models:
        if m.id.lower() == f"{repo}:{quant}".lower():
            return m
    alone = by_id.get(repo)
    if alone is not None and (not quant or str(alone.details.get("quantization_level", "")).upper() == quant.upper()):
        return alone
    return None
