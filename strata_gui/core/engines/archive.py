"""Safe extraction of engine archives (zip, tar.gz) into a staging folder.

Every member is checked before anything is written: absolute paths, ``..`` components,
device files and links pointing outside the folder are refused. Symlinks inside the tree
(``libggml.so -> libggml.so.0 -> libggml.so.0.20.0``) are recreated, because Linux builds
only find their libraries through them.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

from strata_gui.core.errors import EngineInstallError, UnsafeArchiveError


def _clean_name(name: str, archive: str) -> str:
    """Normalise a member name; refuse absolute paths and ``..``."""
    raw = name.replace("\\", "/")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise UnsafeArchiveError(f"{archive} contains an absolute path ({name}); it was not installed.",
                                 hint="The archive is malformed or malicious. Report it to its publisher.")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(f"{archive} contains a path leaving its folder ({name}); it was not installed.",
                                 hint="The archive is malformed or malicious. Report it to its publisher.")
    return "/".join(parts)


def _check_link(member: str, target: str, archive: str, *, hard: bool = False) -> str:
    """Refuse a link whose target leaves the extraction folder; return it normalised."""
    t = target.replace("\\", "/")
    base = "" if hard else posixpath.dirname(member)
    joined = posixpath.normpath(posixpath.join(base, t)) if not t.startswith("/") else t
    if t.startswith("/") or joined == ".." or joined.startswith("../"):
        raise UnsafeArchiveError(
            f"{archive} contains a link escaping its folder ({member} -> {target}); it was not installed.",
            hint="The archive is malformed or malicious. Report it to its publisher.")
    return t


def _extract_zip(archive: Path, dest: Path) -> None:
    label = archive.name
    with zipfile.ZipFile(archive) as zf:
        links: list[tuple[str, str]] = []
        members: list[tuple[zipfile.ZipInfo, str]] = []
        for info in zf.infolist():
            name = _clean_name(info.filename, label)
            if not name:
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target = zf.read(info).decode("utf-8")
                links.append((name, _check_link(name, target, label)))
            else:
                members.append((info, name))
        for info, name in members:
            out = dest / name
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(out, mode | stat.S_IRUSR | stat.S_IWUSR)
        for name, target in links:
            out = dest / name
            out.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, out)


def _extract_tar(archive: Path, dest: Path) -> None:
    label = archive.name
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        checked: list[tuple[tarfile.TarInfo, str]] = []
        for m in members:
            name = _clean_name(m.name, label)
            if not name:
                continue
            if m.issym():
                _check_link(name, m.linkname, label)
            elif m.islnk():
                _clean_name(m.linkname, label)
            elif not (m.isfile() or m.isdir()):
                raise UnsafeArchiveError(f"{label} contains a device or special file ({m.name}); it was not installed.",
                                         hint="Engine archives only hold files, folders and links.")
            checked.append((m, name))
        links: list[tuple[tarfile.TarInfo, str]] = []
        for m, name in checked:
            out = dest / name
            if m.isdir():
                out.mkdir(parents=True, exist_ok=True)
            elif m.issym() or m.islnk():
                links.append((m, name))
            else:
                out.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(m)
                if src is None:
                    continue
                with src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.chmod(out, (m.mode & 0o777) | stat.S_IRUSR | stat.S_IWUSR)
        for m, name in links:
            out = dest / name
            out.parent.mkdir(parents=True, exist_ok=True)
            if m.issym():
                os.symlink(m.linkname, out)
            else:
                shutil.copy2(dest / _clean_name(m.linkname, label), out)


def safe_extract(archive: Path, dest: Path) -> None:
    """Extract ``archive`` (``.zip``, ``.tar.gz``, ``.tgz``, ``.tar.xz``) into ``dest``.

    Raises:
        UnsafeArchiveError: a member would land outside ``dest``.
        EngineInstallError: the archive is damaged or of an unknown kind.
    """
    name = archive.name.lower()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if name.endswith(".zip"):
            _extract_zip(archive, dest)
        elif name.endswith((".tar.gz", ".tgz", ".tar.xz", ".tar")):
            _extract_tar(archive, dest)
        else:
            raise EngineInstallError(f"{archive.name} is not a zip or tar archive.",
                                     hint="The catalog matched an asset Strata cannot unpack.")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, UnicodeDecodeError) as exc:
        raise EngineInstallError(f"{archive.name} is damaged and could not be unpacked ({exc}).",
                                 hint="Install again to download a fresh copy.") from exc
    except OSError as exc:
        raise EngineInstallError(f"{archive.name} could not be unpacked: {exc.strerror or exc}",
                                 hint="Check free space and permissions of the engines folder.") from exc
