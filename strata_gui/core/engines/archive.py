"""Safe extraction of engine archives (zip, tar.gz) into a staging folder.

Two lines of defence, because a link's text alone does not say where it leads:

1. Before anything is written, every member's name and link text is checked lexically (absolute
   paths, ``..`` components, device files, links whose text leaves the folder) and the archive's
   size is checked against :class:`ArchiveLimits` (member count, total unpacked size, compression
   ratio): a zip bomb is refused before the disk fills.
2. While writing, every path is resolved for REAL against the staging folder, following the links
   already extracted: a chain of links that each look harmless (``a -> .``, ``a/b -> ..``, ...)
   is refused as soon as one of them resolves outside. Files are written before any link exists,
   opened with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a link is never followed while writing), parent
   folders are walked one component at a time, and once every link is made each one is resolved
   again in the final tree (a link made dangling can be redirected by a later one). Hard links are
   copied last, from a source that resolves inside the folder.

Symlinks inside the tree (``libggml.so -> libggml.so.0 -> libggml.so.0.20.0``) are recreated,
because Linux builds only find their libraries through them.

Python 3.11.4+'s ``tarfile`` ``filter='data'`` does similar checks for tar files only; the same
walk serves zip and tar here, so both get the same rules and the same messages.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from strata_gui.core.base.errors import EngineInstallError, UnsafeArchiveError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

_HINT = QT_TRANSLATE_NOOP("Core", "The archive is malformed or malicious. Report it to its publisher.")
_ONLY_FILES = QT_TRANSLATE_NOOP("Core", "Engine archives only hold files, folders and links.")
_SPECIAL = QT_TRANSLATE_NOOP("Core", "{archive} contains a device or special file ({name}); it was not installed.")
_COPY = 1 << 20
_MAX_LINK_TEXT = 4096


@dataclass(frozen=True)
class ArchiveLimits:
    """What an engine archive may unpack to; anything beyond is refused before it fills the disk.

    Attributes:
        max_members: Members (files, folders, links) in one archive. Engine builds hold a few hundred.
        max_total_bytes: Bytes all files unpack to (CUDA builds with their runtime: ~2 GB).
        max_ratio: Unpacked size over packed size, for one zip member and for the whole archive
            (binaries compress 2-5x; a zip bomb 1000x and more).
        ratio_floor: Unpacked bytes below which the ratio is not checked (small text files and
            empty padding compress very well and harm nobody).
    """

    max_members: int = 20_000
    max_total_bytes: int = 16 << 30
    max_ratio: float = 200.0
    ratio_floor: int = 16 << 20


DEFAULT_LIMITS = ArchiveLimits()


@dataclass
class _Entry:
    name: str  # cleaned, relative, "/"-separated
    kind: str  # "dir", "file", "symlink", "hardlink"
    size: int = 0
    mode: int = 0
    target: str = ""  # symlink: its text; hardlink: the cleaned name of the member it repeats
    open: Callable[[], IO[bytes] | None] | None = None


def _clean_name(name: str, archive: str) -> str:
    """Normalise a member name; refuse absolute paths, ``..`` and NUL."""
    raw = name.replace("\\", "/")
    if "\x00" in raw:
        raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} contains a name with a NUL byte; it was not "
                                                              "installed."), archive=archive), hint=_HINT)
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} contains an absolute path ({name}); it was not "
                                                              "installed."), archive=archive, name=name), hint=_HINT)
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} contains a path leaving its folder ({name}); "
                                                             "it was not installed."), archive=archive, name=name),
                                 hint=_HINT)
    return "/".join(parts)


def _escaping(member: str, target: str, archive: str) -> UnsafeArchiveError:
    return UnsafeArchiveError(
        T(QT_TRANSLATE_NOOP("Core", "{archive} contains a link escaping its folder ({member} -> {target}); it was "
                                    "not installed."), archive=archive, member=member, target=target), hint=_HINT)


def _check_link(member: str, target: str, archive: str) -> str:
    """Refuse a symlink whose text leaves the extraction folder; return it with ``/`` separators."""
    t = target.replace("\\", "/")
    if not t or "\x00" in t or t.startswith("/") or (len(t) > 1 and t[1] == ":"):
        raise _escaping(member, target, archive)
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(member), t))
    if joined == ".." or joined.startswith("../"):
        raise _escaping(member, target, archive)
    return t


def _check_limits(entries: list[_Entry], packed: int, archive: str, limits: ArchiveLimits) -> None:
    sizes = {e.name: e.size for e in entries if e.kind == "file"}
    total = sum(sizes.values()) + sum(sizes.get(e.target, 0) for e in entries if e.kind == "hardlink")
    if total > limits.max_total_bytes:
        raise UnsafeArchiveError(
            T(QT_TRANSLATE_NOOP("Core", "{archive} would unpack to {total} bytes, more than the {most} an engine may "
                                        "take; it was not installed."), archive=archive, total=total,
              most=limits.max_total_bytes), hint=_HINT)
    if total > limits.ratio_floor and total > limits.max_ratio * max(packed, 1):
        raise UnsafeArchiveError(
            T(QT_TRANSLATE_NOOP("Core", "{archive} would unpack to {total} bytes from {packed} (a compression bomb); "
                                        "it was not installed."), archive=archive, total=total, packed=packed),
            hint=_HINT)


def _too_many(archive: str, limits: ArchiveLimits) -> UnsafeArchiveError:
    return UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} holds more than {most} entries; it was not "
                                                          "installed."), archive=archive, most=limits.max_members),
                              hint=_HINT)


def _zip_entries(zf: zipfile.ZipFile, label: str, limits: ArchiveLimits) -> list[_Entry]:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise _too_many(label, limits)
    entries: list[_Entry] = []
    for info in infos:
        name = _clean_name(info.filename, label)
        if not name:
            continue
        mode = info.external_attr >> 16
        fmt = stat.S_IFMT(mode)
        if stat.S_ISLNK(mode):
            if info.file_size > _MAX_LINK_TEXT:
                raise _escaping(name, f"<a link text of {info.file_size} bytes>", label)
            target = zf.read(info).decode("utf-8")
            entries.append(_Entry(name, "symlink", target=_check_link(name, target, label)))
        elif info.is_dir() or stat.S_ISDIR(mode):
            entries.append(_Entry(name, "dir"))
        elif fmt in (0, stat.S_IFREG):
            if (info.file_size > limits.ratio_floor
                    and info.file_size > limits.max_ratio * max(info.compress_size, 1)):
                raise UnsafeArchiveError(
                    T(QT_TRANSLATE_NOOP("Core", "{archive} holds {name}, which would unpack to {size} bytes from "
                                                "{packed} (a compression bomb); it was not installed."),
                      archive=label, name=info.filename, size=info.file_size, packed=info.compress_size), hint=_HINT)
            entries.append(_Entry(name, "file", info.file_size, mode & 0o777,
                                  open=lambda info=info: zf.open(info)))  # type: ignore[misc]
        else:
            raise UnsafeArchiveError(T(_SPECIAL, archive=label, name=info.filename), hint=_ONLY_FILES)
    return entries


def _tar_entries(tf: tarfile.TarFile, label: str, limits: ArchiveLimits) -> list[_Entry]:
    entries: list[_Entry] = []
    count = 0
    for m in tf:  # not getmembers(): a tar of a million entries stops at the cap
        count += 1
        if count > limits.max_members:
            raise _too_many(label, limits)
        name = _clean_name(m.name, label)
        if not name:
            continue
        if m.issym():
            entries.append(_Entry(name, "symlink", target=_check_link(name, m.linkname, label)))
        elif m.islnk():
            entries.append(_Entry(name, "hardlink", target=_clean_name(m.linkname, label)))
        elif m.isdir():
            entries.append(_Entry(name, "dir"))
        elif m.isfile():
            entries.append(_Entry(name, "file", m.size, m.mode & 0o777,
                                  open=lambda m=m: tf.extractfile(m)))  # type: ignore[misc]
        else:
            raise UnsafeArchiveError(T(_SPECIAL, archive=label, name=m.name), hint=_ONLY_FILES)
    return entries


class _Writer:
    """Writes entries under ``root``, resolving every path for real and never following a link out."""

    def __init__(self, root: Path, label: str, limits: ArchiveLimits) -> None:
        self.root = os.path.realpath(root)
        self.label = label
        self.budget = limits.max_total_bytes
        self.links: list[tuple[str, str]] = []  # (path on disk, member name)

    def real(self, path: str) -> str:
        """Where ``path`` leads on disk, following every link, one component at a time.

        Unlike ``os.path.realpath`` this never falls back to reading a path as text when a
        component cannot be looked up (a name too long, a link loop): that is refused. Past the
        last component that exists the rest is taken as written (a link made later is checked
        again by :meth:`recheck_links`).
        """
        hops = 0
        anchor = Path(path).anchor
        cur = anchor
        pending = list(reversed(Path(path).parts[1:]))
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                cur = os.path.dirname(cur) or anchor
                continue
            nxt = os.path.join(cur, part)
            try:
                st = os.lstat(nxt)
            except FileNotFoundError:
                cur = nxt
                continue
            except OSError as exc:
                raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} holds a path Strata cannot resolve "
                                                                     "({reason}); it was not installed."),
                                           archive=self.label, reason=exc.strerror), hint=_HINT) from exc
            if not stat.S_ISLNK(st.st_mode):
                cur = nxt
                continue
            hops += 1
            if hops > 64:
                raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} holds a loop of links; it was not "
                                                                     "installed."), archive=self.label), hint=_HINT)
            target = Path(os.readlink(nxt))
            if target.anchor:
                cur = target.anchor
                pending.extend(reversed(target.parts[1:]))
            else:
                pending.extend(reversed(target.parts))
        return cur

    def inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip(os.sep) + os.sep)

    def folder(self, rel: str, member: str) -> str:
        """The real folder for ``rel`` (made as needed), walking one component at a time."""
        cur = self.root
        for part in [p for p in rel.split("/") if p]:
            path = os.path.join(cur, part)
            if os.path.islink(path):
                real = self.real(path)
                if not self.inside(real):
                    raise _escaping(member, os.readlink(path), self.label)
                if not os.path.isdir(real):
                    raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} puts {member} under a link to a "
                                                                         "file; it was not installed."),
                                               archive=self.label, member=member), hint=_HINT)
                cur = real
            elif os.path.isdir(path):
                cur = path
            elif os.path.lexists(path):
                raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} puts {member} under a file; it was "
                                                                     "not installed."), archive=self.label,
                                           member=member), hint=_HINT)
            else:
                os.mkdir(path)
                cur = path
        return cur

    def _slot(self, name: str) -> str:
        """The real path a member named ``name`` is created at (its parents made; nothing there)."""
        parent = self.folder(posixpath.dirname(name), name)
        path = os.path.join(parent, posixpath.basename(name))
        if os.path.islink(path):
            raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} writes {name} over a link; it was not "
                                                                 "installed."), archive=self.label, name=name),
                                     hint=_HINT)
        if os.path.isfile(path):
            os.unlink(path)  # the same name twice in a tar: the later member wins, as with tar itself
        return path

    def write(self, name: str, src: IO[bytes], size: int, mode: int) -> None:
        path = self._slot(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags, 0o600)
        written = 0
        with os.fdopen(fd, "wb") as dst:
            while block := src.read(_COPY):
                written += len(block)
                if written > size or written > self.budget:
                    raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} holds {name}, which unpacks to "
                                                                         "more than it declares; it was not "
                                                                         "installed."), archive=self.label, name=name),
                                             hint=_HINT)
                dst.write(block)
        self.budget -= written
        os.chmod(path, mode | stat.S_IRUSR | stat.S_IWUSR)

    def symlink(self, name: str, target: str) -> None:
        path = self._slot(name)
        if os.path.isdir(path) and not os.path.islink(path):
            raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} replaces the folder {name} by a link; it "
                                                                 "was not installed."), archive=self.label, name=name),
                                     hint=_HINT)
        if not self.inside(self.real(os.path.join(os.path.dirname(path), target))):
            raise _escaping(name, target, self.label)
        os.symlink(target, path)
        self.links.append((path, name))

    def recheck_links(self) -> None:
        """Resolve every link again in the finished tree: a link whose text went through a name
        that did not exist yet may lead elsewhere once a later link gave that name a meaning."""
        for path, name in self.links:
            if not self.inside(self.real(path)):
                raise _escaping(name, os.readlink(path), self.label)

    def hardlink(self, name: str, target: str) -> None:
        src = self.real(os.path.join(self.root, *target.split("/")))
        if not self.inside(src):
            raise _escaping(name, target, self.label)
        if not os.path.isfile(src):
            raise UnsafeArchiveError(T(QT_TRANSLATE_NOOP("Core", "{archive} links {name} to {target}, which is not "
                                                                 "a file in the archive; it was not installed."),
                                       archive=self.label, name=name, target=target), hint=_HINT)
        with open(src, "rb") as fh:
            self.write(name, fh, os.fstat(fh.fileno()).st_size, stat.S_IMODE(os.stat(src).st_mode))


def _extract(entries: list[_Entry], dest: Path, label: str, limits: ArchiveLimits) -> None:
    w = _Writer(dest, label, limits)
    # Folders and files first, while the tree holds no link at all; then the links, each checked
    # where it really lands; then the copies of hard links, from sources that resolve inside.
    for e in entries:
        if e.kind == "dir":
            w.folder(e.name, e.name)
        elif e.kind == "file":
            assert e.open is not None
            src = e.open()
            if src is not None:
                with src:
                    w.write(e.name, src, e.size, e.mode)
    for e in entries:
        if e.kind == "symlink":
            w.symlink(e.name, e.target)
    w.recheck_links()
    for e in entries:
        if e.kind == "hardlink":
            w.hardlink(e.name, e.target)


def safe_extract(archive: Path, dest: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> None:
    """Extract ``archive`` (``.zip``, ``.tar.gz``, ``.tgz``, ``.tar.xz``) into ``dest``.

    On any failure, ``dest`` is removed again if this call made it.

    Raises:
        UnsafeArchiveError: a member would land outside ``dest``, or the archive exceeds ``limits``.
        EngineInstallError: the archive is damaged or of an unknown kind.
    """
    name = archive.name.lower()
    if not name.endswith((".zip", ".tar.gz", ".tgz", ".tar.xz", ".tar")):
        raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "{archive} is not a zip or tar archive."),
                                   archive=archive.name),
                                 hint=QT_TRANSLATE_NOOP("Core", "The catalog matched an asset Strata cannot unpack."))
    made = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    packed = archive.stat().st_size
    ok = False
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                entries = _zip_entries(zf, archive.name, limits)
                _check_limits(entries, packed, archive.name, limits)
                _extract(entries, dest, archive.name, limits)
        else:
            with tarfile.open(archive, "r:*") as tf:
                entries = _tar_entries(tf, archive.name, limits)
                _check_limits(entries, packed, archive.name, limits)
                _extract(entries, dest, archive.name, limits)
        ok = True
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, UnicodeDecodeError, zipfile.LargeZipFile) as exc:
        raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "{archive} is damaged and could not be unpacked "
                                                             "({reason})."), archive=archive.name, reason=exc),
                                 hint=QT_TRANSLATE_NOOP("Core", "Install again to download a fresh copy.")) from exc
    except OSError as exc:
        raise EngineInstallError(T(QT_TRANSLATE_NOOP("Core", "{archive} could not be unpacked: {reason}"),
                                   archive=archive.name, reason=exc.strerror or exc),
                                 hint=QT_TRANSLATE_NOOP("Core", "Check free space and permissions of the engines "
                                                                "folder.")) from exc
    finally:
        if not ok:
            _clear(dest, remove=made)


def _clear(dest: Path, *, remove: bool) -> None:
    """Remove what a failed extraction wrote: the folder this call made (rmtree removes links,
    it never follows them). A folder that was there before is the caller's to clean."""
    if remove:
        shutil.rmtree(dest, ignore_errors=True)
