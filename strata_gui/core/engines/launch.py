"""The one place that decides the environment an engine is launched (and probed) with."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from strata_gui.core.config.settings import Settings
from strata_gui.core.engines.records import GpuTarget, InstalledEngine

# llama.cpp hides CPU-type Vulkan devices (Mesa llvmpipe) unless GGML_VK_VISIBLE_DEVICES names
# them; this variable (or the same-named one in the base environment) lets a user choose.
VK_DEVICES_OVERRIDE = "STRATA_VK_VISIBLE_DEVICES"
_TUNING_CONFLICTS = ("HIPBLASLT_TUNING_FILE", "HIPBLASLT_TUNING_MODE", "HIPBLASLT_TUNING_CACHE_PATH")


def current_os() -> str:
    return "windows" if sys.platform.startswith("win") else "linux"


def _prepend(env: dict[str, str], var: str, folder: Path, sep: str) -> None:
    old = env.get(var, "")
    env[var] = str(folder) + (sep + old if old else "")


def launch_environment(
    engine: InstalledEngine,
    gpu: GpuTarget | None,
    settings: Settings,
    base_env: Mapping[str, str],
    *,
    os_name: str | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Environment for running ``engine`` on ``gpu``, and notices for the user.

    - Linux: the engine folder leads ``LD_LIBRARY_PATH`` so bundled ROCm/ggml libraries win;
      Windows: it leads ``PATH``.
    - The per-family variables the catalog asks for (recorded in the install manifest).
    - Vulkan: ``GGML_VK_VISIBLE_DEVICES`` from ``STRATA_VK_VISIBLE_DEVICES`` when set.
    - ROCm: ``HIPBLASLT_TUNING_OVERRIDE_FILE`` only when the engine's table validates for this
      GPU and the engine's hipBLASLt revision; otherwise it is removed and a notice says why.

    Args:
        engine: The installed engine.
        gpu: The GPU it will run on (None: unknown; ``settings.gfx_override`` is then used).
        settings: User settings.
        base_env: The environment to start from (usually the app's own).
        os_name: "windows" or "linux" (default: this machine).
    """
    os_name = os_name or current_os()
    env = dict(base_env)
    notices: list[str] = []
    if os_name == "linux":
        _prepend(env, "LD_LIBRARY_PATH", engine.library_dir, ":")
    else:
        _prepend(env, "PATH", engine.library_dir, ";")
    env.update(engine.env)

    if engine.backend == "vulkan":
        chosen = base_env.get(VK_DEVICES_OVERRIDE)
        if chosen:
            env["GGML_VK_VISIBLE_DEVICES"] = chosen

    gfx = (gpu.gfx if gpu and gpu.gfx else settings.gfx_override) or None
    if engine.backend == "rocm":
        if gfx and engine.gfx_targets and gfx not in engine.gfx_targets:
            notices.append(f"This build was made for {', '.join(engine.gfx_targets)}, not {gfx}; "
                           "it may not see the GPU.")
        inherited = env.pop("HIPBLASLT_TUNING_OVERRIDE_FILE", None)
        if engine.tuning is not None:
            table = Path(engine.tuning.path)
            if not table.is_absolute():
                table = engine.folder / table
            from strata_gui.core.engines.tuning import check_tuning_table  # csv: only for a tuned engine

            check = check_tuning_table(table, table_gfx=engine.tuning.gfx, gpu_gfx=gfx,
                                       engine_revision=engine.hipblaslt_revision)
            if check.ok:
                env["HIPBLASLT_TUNING_OVERRIDE_FILE"] = str(table)
                for var in _TUNING_CONFLICTS:
                    env.pop(var, None)
            else:
                notices.append(f"hipBLASLt tuning table not used: {check.reason}.")
        elif inherited:
            notices.append("HIPBLASLT_TUNING_OVERRIDE_FILE from the environment was not passed on: "
                           "Strata only hands over tables it has checked (strata engines check-tuning).")
    return env, notices
