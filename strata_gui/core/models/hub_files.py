"""A hub repo's files as Strata groups them: each file with its published hash, and the
downloadable units (one GGUF, all shards of a split set, an image checkpoint). Shared by the GGUF
and the image sides of the hub client (:mod:`hub` and :mod:`hub_images`), which then need not
import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RemoteFile:
    """A file in a repo, with the hash the hub published for it."""

    path: str
    size: int
    sha256: str | None


@dataclass(frozen=True)
class QuantEntry:
    """A downloadable unit: one GGUF file, or all shards of a split set.

    Attributes:
        label: Quantisation (``Q4_K_M``) or the file name when none can be told.
        name: What the user sees (file name, or ``prefix (3 parts)``).
        files: The files, shard 1 first.
    """

    label: str
    name: str
    files: tuple[RemoteFile, ...]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def is_split(self) -> bool:
        return len(self.files) > 1

    @property
    def first(self) -> RemoteFile:
        return self.files[0]

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "size": self.size,
                "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files]}
