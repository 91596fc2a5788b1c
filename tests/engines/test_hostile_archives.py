"""Hostile engine archives (issue 28): link chains, loops, bombs. Each test builds the archive itself.

Every test extracts into ``<tmp>/home/engines/staging`` and checks that nothing appeared anywhere
else under ``<tmp>`` (the folders a chain of links would reach first) and that the refused
staging folder is gone.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from strata_gui.core.base.errors import UnsafeArchiveError
from strata_gui.core.config.settings import Settings
from strata_gui.core.engines import EngineService
from strata_gui.core.engines.archive import ArchiveLimits, safe_extract
from tests.engines.conftest import UPSTREAM, Harness, _tar_add, _tar_link, _zip_add, _zip_symlink
from tests.support.github_server import GitHubServer


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _layout(tmp_path: Path) -> tuple[Path, Path, set[str]]:
    """``tmp/home/engines/staging`` under a tree with a file to steal; returns (root, staging, before)."""
    engines = tmp_path / "home" / "engines"
    engines.mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("keep me")
    return tmp_path, engines / "staging", _tree(tmp_path)


def _refused(archive: Path, tmp_path: Path, staging: Path, before: set[str], needle: str,
             limits: ArchiveLimits | None = None) -> None:
    with pytest.raises(UnsafeArchiveError, match=needle) as info:
        safe_extract(archive, staging, *([limits] if limits else []))
    assert info.value.hint  # every refusal says what to do
    assert not staging.exists()  # the refused install leaves nothing behind
    after = _tree(tmp_path) - {str(archive.relative_to(tmp_path))}
    assert after == before  # and nothing appeared outside the staging folder
    assert (tmp_path / "secret.txt").read_text() == "keep me"


def _tgz(path: Path, *adds: object) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for add in adds:
            add(tf)  # type: ignore[operator]
    return path


def test_tar_link_chain_then_hard_link_is_refused(tmp_path: Path) -> None:
    # Each link's text stays inside when read against its own member name, but ``x`` is the
    # staging folder itself, so ``x/x/x/up`` sits at its top and ``../../..`` climbs three
    # folders out of it (outside STRATA_HOME); the hard link would then write through it.
    root, staging, before = _layout(tmp_path)
    archive = _tgz(tmp_path / "chain.tar.gz",
                   lambda tf: _tar_add(tf, "llama/llama-server", b"#!/bin/sh\n", 0o755),
                   lambda tf: _tar_link(tf, "x", "."),
                   lambda tf: _tar_link(tf, "x/x/x/up", "../../.."),
                   lambda tf: _tar_link(tf, "up/planted.txt", "llama/llama-server", hard=True))
    _refused(archive, root, staging, before, "link escaping its folder")


def test_tar_link_chain_then_file_is_refused(tmp_path: Path) -> None:
    root, staging, before = _layout(tmp_path)
    archive = _tgz(tmp_path / "chain.tar.gz",
                   lambda tf: _tar_link(tf, "a", "."),
                   lambda tf: _tar_link(tf, "a/a/b", ".."),
                   lambda tf: _tar_add(tf, "b/secret.txt", b"overwritten"))
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, staging)
    assert not staging.exists()
    assert _tree(root) - {"chain.tar.gz"} == before
    assert (root / "secret.txt").read_text() == "keep me"


def test_zip_link_chain_cannot_plant_a_link_outside(tmp_path: Path) -> None:
    root, staging, before = _layout(tmp_path)
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        _zip_add(zf, "llama-server", b"MZ")
        _zip_symlink(zf, "d", ".")
        _zip_symlink(zf, "d/d/d/up", "../../..")
        _zip_symlink(zf, "up/passwd", "../../etc/passwd")  # made through ``up``: outside
    _refused(archive, root, staging, before, "link escaping its folder")
    assert not (tmp_path / "home" / "passwd").exists() and not (tmp_path / "passwd").exists()


def test_zip_link_to_etc_passwd_through_a_chain_is_refused(tmp_path: Path) -> None:
    # Read as text, ``d/d/.../pw -> ../../.../etc/passwd`` climbs exactly back to the top and
    # names ``etc/passwd`` inside; really ``d`` is the top, so it climbs to / and names /etc/passwd.
    root, staging, before = _layout(tmp_path)
    depth = len(staging.parts) + 2
    archive = tmp_path / "passwd.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        _zip_add(zf, "llama-server", b"MZ")
        _zip_symlink(zf, "d", ".")
        _zip_symlink(zf, "/".join(["d"] * depth) + "/pw", "../" * depth + "etc/passwd")
    _refused(archive, root, staging, before, "link escaping its folder")


def test_link_redirected_by_a_later_link_is_refused(tmp_path: Path) -> None:
    # ``z -> y/..`` is harmless while ``y`` does not exist (it resolves to the folder itself);
    # once ``y -> .`` exists it leads to the folder's parent. Only the final tree tells.
    root, staging, before = _layout(tmp_path)
    archive = tmp_path / "late.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        _zip_add(zf, "llama-server", b"MZ")
        _zip_symlink(zf, "z", "y/..")
        _zip_symlink(zf, "y", ".")
    _refused(archive, root, staging, before, "link escaping its folder")


def test_link_loop_is_refused(tmp_path: Path) -> None:
    root, staging, before = _layout(tmp_path)
    archive = _tgz(tmp_path / "loop.tar.gz",
                   lambda tf: _tar_link(tf, "a", "b"),
                   lambda tf: _tar_link(tf, "b", "a"))
    _refused(archive, root, staging, before, "loop of links")


def test_file_under_a_link_is_written_inside_only(tmp_path: Path) -> None:
    # A link to a folder inside the tree is fine, and a hard link through it lands inside.
    root, staging, before = _layout(tmp_path)
    archive = _tgz(tmp_path / "ok.tar.gz",
                   lambda tf: _tar_add(tf, "build/bin/llama-server", b"#!/bin/sh\n", 0o755),
                   lambda tf: _tar_link(tf, "bin", "build/bin"),
                   lambda tf: _tar_link(tf, "bin/server-copy", "build/bin/llama-server", hard=True))
    safe_extract(archive, staging)
    assert (staging / "bin").is_symlink()
    assert (staging / "build" / "bin" / "server-copy").read_bytes() == b"#!/bin/sh\n"
    assert not (staging / "build" / "bin" / "server-copy").is_symlink()
    assert {p for p in _tree(root) if not p.startswith("home/engines/staging")} - {"ok.tar.gz"} == before


def test_zip_bomb_member_is_refused_before_unpacking(tmp_path: Path) -> None:
    root, staging, before = _layout(tmp_path)
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("llama-server", b"MZ")
        with zf.open("zeros.bin", "w", force_zip64=True) as out:
            block = bytes(1 << 20)
            for _ in range(64):
                out.write(block)
    assert archive.stat().st_size < 1 << 20
    _refused(archive, root, staging, before, "compression bomb")


def test_tar_bomb_is_refused_by_its_ratio(tmp_path: Path) -> None:
    root, staging, before = _layout(tmp_path)
    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=9) as tf:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 64 << 20
        tf.addfile(info, io.BytesIO(bytes(info.size)))
    _refused(archive, root, staging, before, "compression bomb")


def test_total_size_and_member_count_are_capped(tmp_path: Path) -> None:
    root, staging, before = _layout(tmp_path)
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as zf:
        for i in range(50):
            _zip_add(zf, f"f{i}.txt", b"x")
    _refused(many, root, staging, before, "more than 20 entries", ArchiveLimits(max_members=20))
    big = _tgz(tmp_path / "big.tar.gz", lambda tf: _tar_add(tf, "blob.bin", os.urandom(4096)))
    before = _tree(tmp_path) - {"big.tar.gz"}
    _refused(big, root, staging, before, "more than the 1000 an engine may take", ArchiveLimits(max_total_bytes=1000))


def test_unpack_never_writes_through_an_existing_link(tmp_path: Path) -> None:
    # A staging folder that (somehow) already holds a link to the outside: the writer refuses
    # to follow it instead of writing where it points.
    root, staging, _ = _layout(tmp_path)
    staging.mkdir()
    (staging / "llama-server").symlink_to(tmp_path / "secret.txt")
    archive = _tgz(tmp_path / "over.tar.gz", lambda tf: _tar_add(tf, "llama-server", b"pwned"))
    with pytest.raises(UnsafeArchiveError, match="over a link"):
        safe_extract(archive, staging)
    assert (root / "secret.txt").read_text() == "keep me"


def test_engine_install_of_a_chained_archive_is_refused_and_leaves_nothing(github: GitHubServer, tmp_path: Path) -> None:
    # The whole install path: a release whose zip carries the chain; the install is refused
    # and nothing stays anywhere, neither outside STRATA_HOME nor in its engines folder.
    src = tmp_path / "published"
    src.mkdir()
    archive = src / "llama-b7601-bin-ubuntu-x64.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        _zip_add(zf, "build/bin/llama-server", b"#!/bin/sh\n", 0o755)
        _zip_symlink(zf, "x", ".")
        _zip_symlink(zf, "x/x/x/x/up", "../../../..")
    github.add_release(UPSTREAM, "b7601", [archive])
    h = Harness(github.api_base, tmp_path / "home" / "strata", dict(os.environ), Settings())
    h.root.mkdir(parents=True)
    before = _tree(tmp_path)

    async def body(svc: EngineService) -> None:
        plan = await svc.plan([])
        await svc.install(next(c for c in plan.included if c.backend == "cpu"))

    with pytest.raises(UnsafeArchiveError, match="link escaping its folder"):
        h.run(body)
    left = {p for p in _tree(tmp_path) - before if not p.startswith("home/strata/")}
    assert left == set(), left
    engines = h.root / "engines"
    assert not engines.exists() or list(engines.iterdir()) == []
