"""Walkthrough parts: the loopback GitHub with the upstream (CPU, Vulkan) and the gfx110X ROCm
releases, the loopback hub with the test starter, and a screenshot helper per variant."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PySide6.QtWidgets import QWidget

from tests.engines.conftest import LEMONADE, UPSTREAM, pack_cpu_zip, pack_fake_rocm_zip, pack_vulkan_tgz
from tests.first_run.conftest import hub, test_starter  # noqa: F401  (fixtures used here)
from tests.support.engines import TestEngines
from tests.support.github_server import GitHubServer, github_server

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots" / "walkthrough"


@dataclass(frozen=True)
class ReleaseFiles:
    cpu_zip: Path
    vulkan_tgz: Path
    rocm_zip: Path


@pytest.fixture(scope="session")
def release_files(tmp_path_factory: pytest.TempPathFactory, test_engines: TestEngines) -> ReleaseFiles:
    """The real engines packed as their release assets (the ROCm one sees no ROCm device here)."""
    d = tmp_path_factory.mktemp("walkthrough-archives")
    return ReleaseFiles(
        cpu_zip=pack_cpu_zip(test_engines.cpu_server, d / "llama-b7601-bin-ubuntu-x64.zip"),
        vulkan_tgz=pack_vulkan_tgz(test_engines.vulkan_dir, d / "llama-b7601-bin-ubuntu-vulkan-x64.tar.gz",
                                   "llama-b7601"),
        rocm_zip=pack_fake_rocm_zip(test_engines.cpu_server, d / "llama-b1011-ubuntu-rocm-gfx110X-x64.zip"),
    )


@pytest.fixture
def releases(release_files: ReleaseFiles) -> Iterator[GitHubServer]:
    """Loopback GitHub as a 7900 XTX owner meets it: a ROCm gfx110X build, then Vulkan and CPU."""
    with github_server() as gh:
        gh.add_release(UPSTREAM, "b7601", [release_files.cpu_zip, release_files.vulkan_tgz])
        gh.add_release(LEMONADE, "b1011", [release_files.rocm_zip])
        yield gh


async def settle() -> None:
    """Let queued paints and layout passes run (never ``processEvents`` inside a running task)."""
    await asyncio.sleep(0.05)


class Shots:
    """Saves one screenshot per step as ``artifacts/screenshots/walkthrough/<variant>/<n>-<step>.png``."""

    def __init__(self, variant: str) -> None:
        self.dir = SCREENSHOTS / variant
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.glob("*.png"):
            old.unlink()
        self.saved: list[str] = []

    def __call__(self, widget: QWidget, step: str) -> Path:
        """Grab ``widget`` (inside a coroutine, ``await settle()`` first so the last changes are painted)."""
        out = self.dir / f"{len(self.saved) + 1:02d}-{step}.png"
        assert widget.grab().save(str(out)), out
        self.saved.append(step)
        return out
