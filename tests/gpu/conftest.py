"""GPU test fixtures: captured machines (sysfs trees, Windows outputs) and a ROCm family table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.config.resources import kernels_dir
from strata_gui.core.gpu.ids import GpuIdTable, load_gpu_table
from strata_gui.core.gpu.windows import make_windows_snapshot

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
LINUX_CASES = sorted(p.name for p in (DATA / "linux").iterdir() if p.is_dir())
WINDOWS_CASES = sorted(p.name for p in (DATA / "windows").iterdir() if p.is_dir())
# Captures from real Windows machines with an AMD GPU; Wine's capture reports its host's card instead.
WINDOWS_AMD_CASES = [c for c in WINDOWS_CASES if not c.startswith("wine-")]

# The lemonade per-family ROCm builds (shared reference engine-releases.md), standing in for the
# engines catalog's resolver.
ROCM_FAMILIES = {
    "gfx1100": "gfx110X", "gfx1101": "gfx110X", "gfx1102": "gfx110X", "gfx1103": "gfx110X",
    "gfx1200": "gfx120X", "gfx1201": "gfx120X",
    "gfx1030": "gfx103X", "gfx1031": "gfx103X", "gfx1032": "gfx103X", "gfx1034": "gfx103X",
    "gfx1150": "gfx1150", "gfx1151": "gfx1151",
}


def family_of(gfx: str) -> str | None:
    return ROCM_FAMILIES.get(gfx)


@pytest.fixture(scope="session")
def gpu_table() -> GpuIdTable:
    return load_gpu_table(kernels_dir())


def linux_tree(case: str) -> Path:
    return DATA / "linux" / case


def windows_snapshot_data(case: str) -> dict[str, Any]:
    d = DATA / "windows" / case
    return make_windows_snapshot(
        registry=(d / "registry.txt").read_text(),
        dxgi=json.loads((d / "dxgi.json").read_text()),
        wmi=json.loads((d / "wmi.json").read_text()),
        hip=json.loads((d / "hip.json").read_text()),
        pdh=[p.read_text() for p in sorted(d.glob("pdh-*.csv"))],
        host=json.loads((d / "host.json").read_text()),
        captured_at="2026-12-02T14:03:10+00:00",
    )


@pytest.fixture
def windows_snapshot_file(tmp_path: Path) -> Callable[..., Path]:
    """Writes a captured Windows machine as a snapshot file; ``edit`` may change it first."""

    def write(case: str, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
        data = windows_snapshot_data(case)
        if edit is not None:
            edit(data)
        path = tmp_path / f"{case}-snapshot.json"
        path.write_text(json.dumps(data))
        return path

    return write
