"""Read-only views of a sysfs/procfs tree: the live one, a captured copy, or a snapshot mapping.

Detection and telemetry read through this seam, so a captured machine replays exactly like a
live one (``--sysfs-root DIR`` or a snapshot file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class FileTree(Protocol):
    """Small read-only file system: paths are relative, ``/``-separated."""

    def read(self, rel: str) -> str | None:
        """File contents, or None when missing or unreadable."""

    def list(self, rel: str) -> list[str]:
        """Sorted entry names of a folder; empty when missing."""

    def describe(self) -> str:
        """Where the files come from, for reports."""


class DirTree:
    """A real folder: ``/`` for the live machine, or a captured copy of one."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:  # missing sensor, permission denied, device gone: all mean "no value"
            return None

    def list(self, rel: str) -> list[str]:
        try:
            return sorted(p.name for p in (self.root / rel).iterdir())
        except OSError:
            return []

    def describe(self) -> str:
        return "live sysfs" if str(self.root) == "/" else f"captured tree {self.root}"


class MappingTree:
    """Files held in memory (a replayed snapshot)."""

    def __init__(self, files: dict[str, str], origin: str = "snapshot") -> None:
        self.files = {k.strip("/"): v for k, v in files.items()}
        self.origin = origin

    def read(self, rel: str) -> str | None:
        return self.files.get(rel.strip("/"))

    def list(self, rel: str) -> list[str]:
        prefix = rel.strip("/") + "/"
        names = {k[len(prefix):].split("/", 1)[0] for k in self.files if k.startswith(prefix)}
        return sorted(names)

    def describe(self) -> str:
        return self.origin
