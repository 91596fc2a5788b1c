"""The vocabulary every part of core speaks: user-facing texts, the one error tree, listeners,
progress, the one way to leave the event loop for blocking work, and lazy package surfaces."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.base.blocking import (
        SerialLane,
        run_blocking,
    )
    from strata_gui.core.base.errors import (
        ChatError,
        ChatFormatError,
        ChecksumMismatchError,
        EngineCatalogError,
        EngineDownloadError,
        EngineError,
        EngineInstallError,
        EngineProbeError,
        GGUFError,
        GpuDetectionError,
        HubError,
        ImageError,
        InsufficientSpaceError,
        InternalError,
        ModelError,
        NetworkError,
        RateLimitedError,
        ServerBusyError,
        ServerError,
        SettingsError,
        StorageError,
        StrataError,
        ToolConfigError,
        ToolError,
        TuningTableError,
        UnknownModelError,
        UnsafeArchiveError,
        describe,
        network_error,
    )
    from strata_gui.core.base.events import (
        LISTENER_LOGGER,
        Listeners,
    )
    from strata_gui.core.base.lazy import (
        lazy_exports,
    )
    from strata_gui.core.base.progress import (
        GIB,
        Progress,
        ProgressCallback,
        RateMeter,
        format_bytes,
        format_duration,
        no_progress,
        to_gib,
    )
    from strata_gui.core.base.texts import (
        CONTEXT,
        QT_TRANSLATE_NOOP,
        Text,
        from_json,
        joined,
        to_json,
    )

__all__ = [
    "CONTEXT",
    "GIB",
    "LISTENER_LOGGER",
    "QT_TRANSLATE_NOOP",
    "ChatError",
    "ChatFormatError",
    "ChecksumMismatchError",
    "EngineCatalogError",
    "EngineDownloadError",
    "EngineError",
    "EngineInstallError",
    "EngineProbeError",
    "GGUFError",
    "GpuDetectionError",
    "HubError",
    "ImageError",
    "InsufficientSpaceError",
    "InternalError",
    "Listeners",
    "ModelError",
    "NetworkError",
    "Progress",
    "ProgressCallback",
    "RateLimitedError",
    "RateMeter",
    "SerialLane",
    "ServerBusyError",
    "ServerError",
    "SettingsError",
    "StorageError",
    "StrataError",
    "Text",
    "ToolConfigError",
    "ToolError",
    "TuningTableError",
    "UnknownModelError",
    "UnsafeArchiveError",
    "describe",
    "format_bytes",
    "format_duration",
    "from_json",
    "joined",
    "lazy_exports",
    "network_error",
    "no_progress",
    "run_blocking",
    "to_gib",
    "to_json",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "blocking": ["SerialLane", "run_blocking"],
    "errors": ["ChatError", "ChatFormatError", "ChecksumMismatchError", "EngineCatalogError", "EngineDownloadError", "EngineError", "EngineInstallError", "EngineProbeError", "GGUFError", "GpuDetectionError", "HubError", "ImageError", "InsufficientSpaceError", "InternalError", "ModelError", "NetworkError", "RateLimitedError", "ServerBusyError", "ServerError", "SettingsError", "StorageError", "StrataError", "ToolConfigError", "ToolError", "TuningTableError", "UnknownModelError", "UnsafeArchiveError", "describe", "network_error"],
    "events": ["LISTENER_LOGGER", "Listeners"],
    "lazy": ["lazy_exports"],
    "progress": ["GIB", "Progress", "ProgressCallback", "RateMeter", "format_bytes", "format_duration", "no_progress", "to_gib"],
    "texts": ["CONTEXT", "QT_TRANSLATE_NOOP", "Text", "from_json", "joined", "to_json"],
})
