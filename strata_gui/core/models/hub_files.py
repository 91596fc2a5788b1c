"""A hub repo's files as Strata groups them: each file with its published hash, and the
downloadable units (one GGUF, all shards of a split set, an image checkpoint). Shared by the GGUF
and the image sides of the hub client (:mod:`hub` and :mod:`hub_images`), which then need not
import each other."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from strata_gui.core.base.errors import HubError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T


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


# -- names from the hub ------------------------------------------------------------------------
# A hub or a mirror (HF_ENDPOINT) chooses the file names, ETags and commits Strata turns into
# paths of the hub cache (``blobs/<etag>``, ``snapshots/<commit>/<file>``, ``refs/<ref>``). Each
# is checked before it touches the disk; one that could name a place outside its folder is refused.

_HINT = QT_TRANSLATE_NOOP("Core", "The hub endpoint (or mirror) sent a name that could write outside the hub "
                                 "cache; check the hub endpoint in Settings.")
_REPO_ID = re.compile(r"^[A-Za-z0-9_][\w.-]{0,95}(/[A-Za-z0-9_][\w.-]{0,95})?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")  # a git SHA-1 (or SHA-256) commit id
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# ETags are file names in blobs/: the hub's are hex (a SHA-256 for LFS files, a git SHA-1 else);
# a mirror's may carry dashes (``"5f3e-1a2b"``). No dots, no separators: one plain name.
_ETAG = re.compile(r"^[0-9A-Za-z_][0-9A-Za-z_-]{0,127}$")


def _unsafe(what: str, value: str, endpoint: str) -> HubError:
    if endpoint:
        return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent an unsafe {what} ({value}); "
                                                    "Strata did not use it."),
                          endpoint=endpoint, what=what, value=repr(value[:200])),
                        hint=_HINT)
    return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub sent an unsafe {what} ({value}); Strata did not use "
                                                "it."), what=what, value=repr(value[:200])), hint=_HINT)


def safe_repo_path(path: str, *, what: str = "file name", endpoint: str = "") -> str:
    """``path`` if it is a plain relative ``/``-separated name (no ``..``, ``.``, empty part,
    absolute path, backslash, drive or NUL), else raise :class:`HubError`."""
    parts = path.split("/")
    if (not path or len(path) > 1024 or "\\" in path or "\x00" in path or path.startswith("/")
            or re.match(r"^[A-Za-z]:", path) or any(p in ("", ".", "..") for p in parts)
            or any(ord(c) < 32 for c in path)):
        raise _unsafe(what, path, endpoint)
    return path


def safe_repo_id(repo_id: str, *, endpoint: str = "") -> str:
    """``repo_id`` if it is ``name`` or ``org/name`` as the hub allows them (no ``..``), else raise."""
    if not _REPO_ID.match(repo_id) or ".." in repo_id:
        raise HubError(T(QT_TRANSLATE_NOOP("Core", "{repo} is not a valid repository id."),
                         repo=repr(repo_id[:200])),
                       hint=QT_TRANSLATE_NOOP("Core", "Repository ids look like org/name (letters, digits, "
                                                      "'-', '_', '.')."))
    return repo_id


def safe_commit(commit: str, *, endpoint: str = "") -> str:
    """``commit`` if it is a git commit id (40 or 64 lowercase hex digits), else raise."""
    if not _COMMIT.match(commit):
        raise _unsafe("commit id", commit, endpoint)
    return commit


def safe_etag(etag: str, *, endpoint: str = "") -> str:
    """An ETag (already stripped of ``W/`` and quotes) if it is usable as a blob file name, else raise."""
    if not _ETAG.match(etag):
        raise _unsafe("ETag", etag, endpoint)
    return etag


def safe_sha256(value: str | None, *, endpoint: str = "") -> str | None:
    """A published SHA-256 (64 lowercase hex digits) or None; anything else raises."""
    if value is not None and not _SHA256.match(value):
        raise _unsafe("SHA-256", value, endpoint)
    return value


def check_remote_files(files: list[RemoteFile], *, endpoint: str = "") -> None:
    """Refuse a file list in which any name or hash could name a place outside the hub cache."""
    for f in files:
        safe_repo_path(f.path, endpoint=endpoint)
        safe_sha256(f.sha256, endpoint=endpoint)
