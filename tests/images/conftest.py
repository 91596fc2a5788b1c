"""Fixtures for image generation: the real CPU sd-server, the random-weight SDXS model, the composed core."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.app_services import AppServices, build_app_services
from strata_gui.core.config.services import build_services
from strata_gui.core.runtime.kinds import IMAGE
from tests.support.engines import TestEngines
from tests.support.image_model import cached_image_model


@pytest.fixture(scope="session")
def sd_dir(test_engines: TestEngines) -> Path:
    """The folder of the real CPU sd-server and sd-cli (scripts/test-engines.sh)."""
    return test_engines.sd_server.parent


@pytest.fixture(scope="session")
def image_model() -> Path:
    """The random-weight SDXS-512-DS GGUF (cached in ~/.cache/strata-dev)."""
    return cached_image_model()


def fake_rocm_engine(folder: Path, script: str) -> Path:
    """A folder that looks like a ROCm sd.cpp build (``libggml-hip.so`` beside an ``sd-server``)
    whose server is a shell script: it answers ``--version``, then fails as ``script`` says."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "libggml-hip.so").write_bytes(b"")
    server = folder / "sd-server"
    server.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'stable-diffusion.cpp version fake-rocm'; "
                      "exit 0; fi\n" + script)
    server.chmod(server.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


MISSING_LIBRARY = ("echo \"$0: error while loading shared libraries: libamdhip64.so.7: cannot open shared object "
                   "file: No such file or directory\" >&2\nexit 127\n")
CRASH_DURING_LOAD = ("echo '[INFO ] stable-diffusion.cpp:212  - loading model'\n"
                     "echo 'ggml_cuda_init: found 1 ROCm devices'\nkill -SEGV $$\n")


@asynccontextmanager
async def image_core(engines: list[tuple[Path, str | None, str]], **settings: Any) -> AsyncIterator[AppServices]:
    """The composed core (exactly what the app and the CLI build) with image engine folders
    registered as the user's own builds, in order ``(folder, backend or None to detect, name)``."""
    base = build_services()
    if settings:
        base.settings_service.update(**settings)
    app = build_app_services(base)
    try:
        for folder, backend, name in engines:
            await app.engines.add_local(folder, backend, None, name, kind=IMAGE)
        app.images.threads = 2
        yield app
    finally:
        await app.aclose()
