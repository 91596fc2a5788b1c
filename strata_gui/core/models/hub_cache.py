"""The hub cache's layout, as huggingface_hub keeps it and every hub tool reads it.

``<cache>/models--org--name/`` holds ``blobs/<etag>`` (the files' bytes, named by their ETag: an
LFS file's SHA-256), ``snapshots/<commit>/<path>`` (links to the blobs, copies where links are
not allowed) and ``refs/<branch>`` (the commit a branch pointed at). Strata writes it
(:mod:`downloads`) and lists it (:mod:`library`) itself; the tests check that huggingface_hub's
``hf_hub_download`` and ``scan_cache_dir`` find what Strata wrote.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

_MODELS = "models--"


def repo_folder(cache_dir: Path, repo_id: str) -> Path:
    """``models--org--name`` as huggingface_hub names repo folders in its cache."""
    return cache_dir / (_MODELS + repo_id.replace("/", "--"))


def cached_repos(cache_dir: Path) -> list[tuple[Path, str]]:
    """The model repos in the hub cache: (folder, ``org/name``) for each ``models--org--name``
    folder (datasets and spaces are not models); none when the cache cannot be read."""
    try:
        folders = sorted(p for p in cache_dir.iterdir() if p.name.startswith(_MODELS) and p.is_dir())
    except OSError as exc:
        if cache_dir.exists():
            log.warning("hub cache %s not readable: %s", cache_dir, exc)
        return []
    return [(p, p.name.removeprefix(_MODELS).replace("--", "/")) for p in folders]
