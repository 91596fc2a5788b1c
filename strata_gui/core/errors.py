"""One exception tree for everything Strata reports to a user.

Every error carries a user-facing ``message`` (what went wrong, in plain words), an optional
``hint`` (what the user can do about it) and optional ``details`` (technical text for a bug
report: log tails, tracebacks). Library exceptions (httpx, OSError, sqlite3 ...) are translated
into these at the boundary of the core service that met them; the UI only ever sees these.
"""

from __future__ import annotations


class StrataError(Exception):
    """Base of every error Strata shows to a user.

    Args:
        message: What went wrong, in one sentence a user understands.
        hint: What the user can do about it, if anything.
        details: Technical detail for bug reports (never shown as the headline).
    """

    title = "Something went wrong"

    def __init__(self, message: str, *, hint: str | None = None, details: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def user_text(self) -> str:
        """Message and hint on separate lines, as dialogs and the CLI print them."""
        return f"{self.message}\n{self.hint}" if self.hint else self.message


class SettingsError(StrataError):
    title = "Settings problem"


class StorageError(StrataError):
    """Disk problems: full disk, unwritable folder, corrupt database."""

    title = "Storage problem"


class InsufficientSpaceError(StorageError):
    title = "Not enough disk space"


class NetworkError(StrataError):
    """A server could not be reached or answered with an error."""

    title = "Network problem"


class RateLimitedError(NetworkError):
    title = "Rate limited"


class ChecksumMismatchError(StrataError):
    title = "Download corrupted"


class GpuDetectionError(StrataError):
    title = "GPU detection problem"


class EngineError(StrataError):
    title = "Engine problem"


class EngineCatalogError(EngineError):
    title = "Engine catalog problem"


class EngineDownloadError(EngineError, NetworkError):
    title = "Engine download failed"


class EngineInstallError(EngineError):
    title = "Engine install failed"


class UnsafeArchiveError(EngineInstallError):
    title = "Unsafe archive"


class EngineProbeError(EngineError):
    title = "Engine does not run here"


class TuningTableError(EngineError):
    title = "Tuning table rejected"


class ModelError(StrataError):
    title = "Model problem"


class GGUFError(ModelError):
    title = "Not a valid GGUF file"


class HubError(ModelError, NetworkError):
    title = "Hugging Face hub problem"


class ServerError(StrataError):
    """The managed llama-server failed to start, crashed, or refused a request."""

    title = "Engine server problem"


class ChatError(StrataError):
    title = "Chat problem"


def describe(exc: BaseException) -> StrataError:
    """Wrap an unexpected exception so it can be shown like any other error."""
    if isinstance(exc, StrataError):
        return exc
    import traceback

    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return StrataError(
        f"Unexpected error: {type(exc).__name__}: {exc}",
        hint="This is a bug in Strata. 'Copy details' and the log help to report it.",
        details=details,
    )
