"""What the runtime needs to know about an engine: where its server is and how to launch it.

The engines package produces a plan (a ranked ``list[EngineSpec]``); until it is wired, an engine
folder given on the command line or in Settings becomes a one-item plan via :func:`spec_from_folder`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from strata_gui.core.errors import EngineError

Backend = Literal["rocm", "vulkan", "cpu", "local"]

BACKEND_LABELS: dict[str, str] = {"rocm": "ROCm", "vulkan": "Vulkan", "cpu": "CPU", "local": "Local"}


@dataclass(frozen=True)
class EngineSpec:
    """One launchable llama-server build.

    Attributes:
        id: Stable identifier (engine folder name or catalog id).
        label: What the user reads ("ROCm", "Vulkan b4567").
        backend: Which kind of build it is.
        server_path: The ``llama-server`` executable.
        env: Variables set on top of the app's environment when launching it.
    """

    id: str
    label: str
    backend: Backend
    server_path: Path
    env: dict[str, str] = field(default_factory=dict)


def server_executable(folder: Path) -> Path:
    """The llama-server inside ``folder`` (``llama-server.exe`` on Windows)."""
    name = "llama-server.exe" if sys.platform == "win32" else "llama-server"
    return folder / name


def guess_backend(folder: Path) -> Backend:
    """Tell the backend from the libraries shipped next to the server."""
    names = " ".join(p.name.lower() for p in folder.iterdir()) if folder.is_dir() else ""
    if "ggml-hip" in names or "rocblas" in names or "amdhip" in names:
        return "rocm"
    if "ggml-vulkan" in names:
        return "vulkan"
    return "cpu"


def spec_from_folder(folder: Path, *, label: str | None = None, backend: Backend | None = None) -> EngineSpec:
    """Make an :class:`EngineSpec` for an engine folder chosen by the user.

    Raises:
        EngineError: The folder holds no llama-server.
    """
    folder = folder.expanduser()
    exe = server_executable(folder)
    if not exe.is_file():
        raise EngineError(
            f"No llama-server found in {folder}.",
            hint="Pick the folder of an installed engine (it contains llama-server).",
        )
    kind = backend or guess_backend(folder)
    env: dict[str, str] = {}
    if sys.platform.startswith("linux"):
        # Bundled libraries next to the server must win over system ones.
        env["LD_LIBRARY_PATH"] = str(folder)
    return EngineSpec(id=folder.name, label=label or BACKEND_LABELS[kind], backend=kind, server_path=exe, env=env)


_BACKEND_ORDER = {"rocm": 0, "vulkan": 1, "cpu": 2, "local": 3}


def discover_engines(root: Path) -> list[EngineSpec]:
    """Engine folders under ``root`` (one level deep), best backend first: ROCm, Vulkan, CPU."""
    if not root.is_dir():
        return []
    specs = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for candidate in (folder, folder / "bin"):
            if server_executable(candidate).is_file():
                specs.append(spec_from_folder(candidate))
                break
    return sorted(specs, key=lambda s: _BACKEND_ORDER[s.backend])
