"""GPU detection and telemetry: pure parsers per OS, a thin probe, and a facade.

See :class:`~strata_gui.core.gpu.service.GpuService` and
:func:`~strata_gui.core.gpu.service.build_gpu_service`.
"""

from strata_gui.core.gpu.model import (
    DriverState,
    DriverStatus,
    GpuInfo,
    GpuReport,
    GpuSample,
    HostInfo,
    RocmVerdict,
)
from strata_gui.core.gpu.service import GpuService, build_gpu_service

__all__ = [
    "DriverState",
    "DriverStatus",
    "GpuInfo",
    "GpuReport",
    "GpuSample",
    "GpuService",
    "HostInfo",
    "RocmVerdict",
    "build_gpu_service",
]
