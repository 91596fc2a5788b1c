"""Shared helpers for the packaging tests: the repo root and build.spec's pure helpers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spec() -> SimpleNamespace:
    """build.spec's constants and helper functions, loaded without running a build.

    The build part of the spec only runs when PyInstaller defines ``SPECPATH``.
    """
    namespace: dict[str, object] = {"__name__": "build_spec"}
    source = (ROOT / "build.spec").read_text(encoding="utf-8")
    exec(compile(source, str(ROOT / "build.spec"), "exec"), namespace)
    return SimpleNamespace(**namespace)
