"""GPU detection and telemetry: pure parsers per OS, a thin probe, and a facade.

See :class:`~strata_gui.core.gpu.service.GpuService` and
:func:`~strata_gui.core.gpu.service.build_gpu_service`.
"""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.gpu.history import GpuTelemetry
    from strata_gui.core.gpu.model import (
        DriverState,
        DriverStatus,
        GpuInfo,
        GpuReport,
        GpuSample,
        HostInfo,
        RocmVerdict,
        fmt_opt_bytes,
        fmt_sample_value,
        format_mem,
    )
    from strata_gui.core.gpu.service import ENV_SNAPSHOT, ENV_SYSFS_ROOT, GpuService, build_gpu_service
    from strata_gui.core.gpu.telemetry import TelemetrySampler

__all__ = [
    "ENV_SNAPSHOT",
    "ENV_SYSFS_ROOT",
    "DriverState",
    "DriverStatus",
    "GpuInfo",
    "GpuReport",
    "GpuSample",
    "GpuService",
    "GpuTelemetry",
    "HostInfo",
    "RocmVerdict",
    "TelemetrySampler",
    "build_gpu_service",
    "fmt_opt_bytes",
    "fmt_sample_value",
    "format_mem",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "history": ["GpuTelemetry"],
    "model": ["DriverState", "DriverStatus", "GpuInfo", "GpuReport", "GpuSample", "HostInfo", "RocmVerdict", "fmt_opt_bytes", "fmt_sample_value", "format_mem"],
    "service": ["ENV_SNAPSHOT", "ENV_SYSFS_ROOT", "GpuService", "build_gpu_service"],
    "telemetry": ["TelemetrySampler"],
})
