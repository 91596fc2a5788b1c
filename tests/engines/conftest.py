"""Engine test parts: real archives packed from the real test engines, a fake GitHub, a service."""

from __future__ import annotations

import asyncio
import io
import os
import re
import stat
import tarfile
import zipfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from strata_gui.core.config.settings import Settings, SettingsService, SettingsStore
from strata_gui.core.engines import EngineService, ReleaseClient, load_catalog
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer, github_server

T = TypeVar("T")
UPSTREAM = "ggml-org/llama.cpp"
LEMONADE = "lemonade-sdk/llamacpp-rocm"
ROCM_PLACEHOLDER = b"test archive: this build has no ROCm backend; its llama-server is the CPU build\n"


def _zip_add(zf: zipfile.ZipFile, arcname: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(arcname, date_time=(2026, 2, 10, 8, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data, compresslevel=1)


def _zip_symlink(zf: zipfile.ZipFile, arcname: str, target: str) -> None:
    info = zipfile.ZipInfo(arcname, date_time=(2026, 2, 10, 8, 0, 0))
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    zf.writestr(info, target)


def _tar_add(tf: tarfile.TarFile, arcname: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(arcname)
    info.size, info.mode, info.mtime = len(data), mode, 1770710400
    tf.addfile(info, io.BytesIO(data))


def _tar_link(tf: tarfile.TarFile, arcname: str, target: str, *, hard: bool = False) -> None:
    info = tarfile.TarInfo(arcname)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname, info.mtime = target, 1770710400
    tf.addfile(info)


def pack_vulkan_tgz(vulkan_dir: Path, out: Path, top: str, *, drop: tuple[str, ...] = ()) -> Path:
    """The Vulkan build as the 2026 Linux tarball: top folder and shared-library symlink chains."""
    files = sorted(p for p in vulkan_dir.iterdir() if p.is_file() and p.name != "ggml-rpc-server")
    names = {p.name for p in files}
    with tarfile.open(out, "w:gz", compresslevel=1) as tf:
        for p in files:
            if p.name in drop:
                continue
            # libX.so -> libX.so.0 -> libX.so.0.20.0 (the next longer name is the link target)
            longer = sorted((n for n in names if n.startswith(p.name + ".")), key=len)
            if re.search(r"\.so(\.\d+)?$", p.name) and longer:
                _tar_link(tf, f"{top}/{p.name}", longer[0])
            else:
                _tar_add(tf, f"{top}/{p.name}", p.read_bytes(), 0o755)
    return out


def pack_cpu_zip(cpu_server: Path, out: Path) -> Path:
    """The CPU build as the older Linux zip layout (``build/bin/llama-server``)."""
    with zipfile.ZipFile(out, "w") as zf:
        _zip_add(zf, "build/bin/llama-server", cpu_server.read_bytes(), 0o755)
        _zip_add(zf, "build/bin/LICENSE", b"MIT License\n")
    return out


def pack_fake_rocm_zip(cpu_server: Path, out: Path, *, with_hip: bool = True) -> Path:
    """A "ROCm gfx110X" build whose binary (the CPU build) sees no ROCm device."""
    with zipfile.ZipFile(out, "w") as zf:
        _zip_add(zf, "llama-server", cpu_server.read_bytes(), 0o755)
        if with_hip:
            _zip_add(zf, "libggml-hip.so", ROCM_PLACEHOLDER)
        _zip_add(zf, "libhipblas.so.3.0", ROCM_PLACEHOLDER)
        _zip_symlink(zf, "libhipblas.so.3", "libhipblas.so.3.0")
        _zip_symlink(zf, "libhipblas.so", "libhipblas.so.3")
    return out


@dataclass(frozen=True)
class Archives:
    cpu_zip: Path
    vulkan_tgz: Path
    rocm_zip: Path
    rocm_no_hip_zip: Path
    vulkan_missing_lib_tgz: Path


@pytest.fixture(scope="session")
def archives(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> Archives:
    d = tmp_path_factory.mktemp("engine-archives")
    broken = d / "broken"
    broken.mkdir()
    return Archives(
        cpu_zip=pack_cpu_zip(test_engines.cpu_server, d / "llama-b7601-bin-ubuntu-x64.zip"),
        vulkan_tgz=pack_vulkan_tgz(test_engines.vulkan_dir, d / "llama-b7601-bin-ubuntu-vulkan-x64.tar.gz",
                                   "llama-b7601"),
        rocm_zip=pack_fake_rocm_zip(test_engines.cpu_server, d / "llama-b1011-ubuntu-rocm-gfx110X-x64.zip"),
        rocm_no_hip_zip=pack_fake_rocm_zip(test_engines.cpu_server, broken / "llama-b1012-ubuntu-rocm-gfx110X-x64.zip",
                                           with_hip=False),
        vulkan_missing_lib_tgz=pack_vulkan_tgz(test_engines.vulkan_dir,
                                               broken / "llama-b7700-bin-ubuntu-vulkan-x64.tar.gz", "llama-b7700",
                                               drop=("libllama-server-impl.so",)),
    )


@pytest.fixture
def github() -> Iterator[GitHubServer]:
    with github_server() as gh:
        yield gh


@pytest.fixture
def published(github: GitHubServer, archives: Archives) -> GitHubServer:
    """The fake GitHub with the upstream CPU + Vulkan release and the lemonade gfx110X release."""
    github.add_release(UPSTREAM, "b7601", [archives.cpu_zip, archives.vulkan_tgz])
    github.add_release(LEMONADE, "b1011", [archives.rocm_zip])
    return github


@dataclass
class Harness:
    """Builds an EngineService on the running loop against the fake GitHub."""

    api_base: str
    root: Path
    environ: dict[str, str]
    settings: Settings
    disk_free: Callable[[Path], int] | None = None
    offline: bool = False
    settings_service: SettingsService = field(init=False)

    def __post_init__(self) -> None:
        # One settings service for every run, so a pin made in one run is seen by the next.
        self.settings_service = SettingsService(SettingsStore(self.root / "settings.json"), self.settings)

    def service(self, http: httpx.AsyncClient, **kw: Any) -> EngineService:
        releases = ReleaseClient(http, self.root / "cache" / "releases", api_base=self.api_base,
                                 offline=self.offline)
        extra: dict[str, Any] = {}
        if self.disk_free is not None:
            extra["disk_free"] = self.disk_free
        extra.update(kw)
        extra.setdefault("catalog", load_catalog())
        return EngineService(releases=releases, http=http,
                             engines_dir=self.root / "engines", downloads_dir=self.root / "downloads",
                             settings_service=self.settings_service, environ=self.environ, os_name="linux", **extra)

    def run(self, body: Callable[[EngineService], Awaitable[T]], **kw: Any) -> T:
        async def main() -> T:
            async with httpx.AsyncClient(follow_redirects=True, timeout=30) as http:
                return await body(self.service(http, **kw))

        return asyncio.run(main())


@pytest.fixture
def harness(published: GitHubServer, tmp_path: Path) -> Harness:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GGML_", "HIP", "LD_LIBRARY"))}
    env["STRATA_VK_VISIBLE_DEVICES"] = "0"  # this machine's only Vulkan device is Mesa llvmpipe
    return Harness(published.api_base, tmp_path / "strata", env, Settings())
