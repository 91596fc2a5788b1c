"""The driver check: does the primary GPU's driver let ROCm builds run (catalog ``drivers`` data)?

A known-bad driver or one older than the family's minimum moves ROCm out of the engine plan and
out of the resolver's launch order, with the catalog's reason and links; Vulkan runs instead.
``Settings.ignore_driver_check`` (the user's override) keeps ROCm in, with the warning still shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strata_gui.core.engines.catalog import OSES, EngineCatalog
from strata_gui.core.gpu.model import GpuReport


@dataclass(frozen=True)
class DriverVerdict:
    """The driver check for the GPU models run on.

    Attributes:
        gpu: The GPU's name.
        ok: No known problem.
        message: One sentence for people.
        links: Where the problem is reported.
        overridden: The user chose to use ROCm anyway.
    """

    gpu: str
    ok: bool
    message: str
    links: tuple[str, ...] = field(default=())
    overridden: bool = False

    @property
    def blocks_rocm(self) -> bool:
        return not self.ok and not self.overridden

    def skip_reason(self) -> str:
        """Why a ROCm build is left out (resolver verdicts and install plan)."""
        return (f"driver check: {self.message} → Vulkan instead (to use ROCm anyway: the GPU page, "
                "or --ignore-driver-check)")

    def to_json(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "ok": self.ok, "message": self.message, "links": list(self.links),
                "overridden": self.overridden, "blocks_rocm": self.blocks_rocm}


def check_driver(report: GpuReport | None, catalog: EngineCatalog, *, ignore: bool = False) -> DriverVerdict | None:
    """The verdict for ``report``'s primary AMD GPU (None: no AMD GPU or no driver version known)."""
    gpu = report.primary if report is not None else None
    if report is None or gpu is None or report.platform not in OSES or not (gpu.driver_version or gpu.driver_date):
        return None
    family = gpu.rocm_family or (catalog.family_of(gpu.gfx_target) if gpu.gfx_target else None)
    what = f"AMD driver {gpu.driver_version or 'of unknown version'}" + (
        f" ({gpu.driver_date})" if gpu.driver_date else "")
    rule = catalog.driver_problem(report.platform, family, gpu.driver_version, gpu.driver_date)
    if rule is None:
        return DriverVerdict(gpu.name, True, f"{what}: no known problem with ROCm builds")
    if rule.kind == "minimum":
        message = f"{what} is older than {rule.release}, which ROCm builds need ({rule.reason})"
    else:
        message = f"{what} is {rule.release}: {rule.reason}"
    return DriverVerdict(gpu.name, False, message, rule.links, ignore)
