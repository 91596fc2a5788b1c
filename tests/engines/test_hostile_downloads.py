"""Hostile release servers for engine downloads (issue 28): loops, bad bodies, drips, odd names,
and the warning for an asset with no published checksum. Real loopback servers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_gui.core.base.errors import EngineDownloadError, UnsafeArchiveError
from strata_gui.core.engines.download import download_file
from strata_gui.core.engines.records import InstalledEngine
from strata_gui.core.engines.service import _check_asset_name
from strata_gui.core.net.transfer import Pace
from tests.models.test_hostile_hub import BODY, Behaviour, serve


def _get(url: str, dest: Path, **kw: Any) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient(follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0)) as http:
            return await download_file(http, url, dest, expected_size=None, expected_sha256=None,
                                       on_progress=lambda _p: None, **kw)

    return asyncio.run(go())


def test_redirect_loop_is_an_explained_download_error(tmp_path: Path) -> None:
    with serve(Behaviour(loop=True)) as base, pytest.raises(EngineDownloadError, match="loop of redirects") as info:
        _get(f"{base}/asset.zip", tmp_path / "asset.zip")
    assert info.value.hint


def test_bad_content_encoding_is_an_explained_download_error(tmp_path: Path) -> None:
    with serve(Behaviour(bad_encoding=True)) as base, pytest.raises(EngineDownloadError, match="could not decode"):
        _get(f"{base}/asset.zip", tmp_path / "asset.zip")


def test_dripping_server_is_given_up_and_the_part_is_kept(tmp_path: Path) -> None:
    with serve(Behaviour(drip=0.05)) as base, pytest.raises(EngineDownloadError, match="interrupted") as info:
        _get(f"{base}/asset.zip", tmp_path / "asset.zip", pace=Pace(min_rate=10_000, window=0.5))
    assert "resumes" in (info.value.hint or "")
    assert not (tmp_path / "asset.zip").exists()


def test_a_fast_enough_server_passes_the_pace_check(tmp_path: Path) -> None:
    with serve(Behaviour()) as base:
        result = _get(f"{base}/asset.zip", tmp_path / "asset.zip", pace=Pace(min_rate=1, window=5.0))
    assert result.path.read_bytes() == BODY and not result.verified


@pytest.mark.parametrize("name", ["../../evil.zip", "a/b.zip", "..", ".hidden.zip", "C:evil.zip", "a\\b.zip",
                                  "a\x00.zip", ""])
def test_unsafe_asset_names_are_refused(name: str) -> None:
    with pytest.raises(UnsafeArchiveError, match="unsafe name"):
        _check_asset_name(name)


def test_plain_asset_names_pass() -> None:
    _check_asset_name("llama-b7601-bin-ubuntu-vulkan-x64.tar.gz")


def test_an_engine_without_a_published_checksum_is_flagged(tmp_path: Path) -> None:
    base = dict(id="upstream-cpu-b1", backend="cpu", folder=tmp_path, server_path=tmp_path / "llama-server",
                tag="b1", source="upstream", asset="llama-b1-bin-ubuntu-x64.zip")
    unverified = InstalledEngine(**base, verified=False)  # type: ignore[arg-type]
    assert unverified.unverified and "no published checksum" in unverified.unverified_notice()
    assert not InstalledEngine(**base, verified=True).unverified  # type: ignore[arg-type]
    local = InstalledEngine(id="local-x", backend="cpu", folder=tmp_path, server_path=tmp_path / "s", tag="local")
    assert not local.unverified and local.unverified_notice() == ""


def test_the_cli_warns_about_an_unverified_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from strata_gui.commands.engines import _warn_unverified

    e = InstalledEngine(id="upstream-cpu-b1", backend="cpu", folder=tmp_path, server_path=tmp_path / "llama-server",
                        tag="b1", source="upstream", asset="llama-b1-bin-ubuntu-x64.zip", verified=False)
    _warn_unverified(e, None)
    assert capsys.readouterr().err.startswith("warning: llama-b1-bin-ubuntu-x64.zip had no published checksum")


def test_a_compressed_body_cannot_unpack_past_the_expected_size(tmp_path: Path) -> None:
    async def go(url: str) -> Any:
        async with httpx.AsyncClient(follow_redirects=True, timeout=30) as http:
            return await download_file(http, url, tmp_path / "asset.zip", expected_size=len(BODY),
                                       expected_sha256=None, on_progress=lambda _p: None)

    with serve(Behaviour(gzip_bomb=True)) as base, pytest.raises(EngineDownloadError, match="interrupted"):
        asyncio.run(go(f"{base}/asset.zip"))
    part = tmp_path / "asset.zip.part"
    assert not part.exists() or part.stat().st_size <= len(BODY)
