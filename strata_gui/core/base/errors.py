"""One exception tree for everything Strata reports to a user.

Every error carries a user-facing ``message`` (what went wrong, in plain words), an optional
``hint`` (what the user can do about it) and optional ``details`` (technical text for a bug
report: log tails, tracebacks). Library exceptions (httpx, OSError, sqlite3 ...) are translated
into these at the boundary of the core service that met them; the UI only ever sees these.

Two different things are shown the same way, and must never be told apart by their text:

- an expected condition (no network, a damaged model, a port in use): every :class:`StrataError`
  subclass except one. Core raises these; the user can act on them.
- a bug in Strata: :class:`InternalError`. Core never raises it; :func:`describe` makes one from
  any exception that is not a :class:`StrataError`, with the traceback as details.
"""

from __future__ import annotations

from typing import Any

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP


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


class UnknownModelError(ServerError):
    """A client of the local API asked for a model that is not served (the API answers 404)."""

    title = "Unknown model"


class WrongModelKindError(ServerError):
    """A client of the local API named a model of another kind than the endpoint serves (a chat
    model for ``/v1/rerank``): refused before anything loads (the API answers 400)."""

    title = "Wrong kind of model"


class ServerBusyError(ServerError):
    """No engine can take the work now: the engines in use hold the memory another model needs, or
    every slot of the local API's queue is taken, and the caller may not wait. The client should try
    again after ``retry_after`` seconds (the local API answers 503 with ``Retry-After``).

    Args:
        message: What is busy, in one sentence.
        retry_after: Seconds after which a retry has a chance.
        hint: What the user can do about it.
    """

    title = "Engines busy"

    def __init__(self, message: str, *, retry_after: float = 1.0, hint: str | None = None,
                 details: str | None = None) -> None:
        super().__init__(message, hint=hint, details=details)
        self.retry_after = retry_after


class ChatError(StrataError):
    title = "Chat problem"


class ChatFormatError(ChatError):
    """The engine's chat-format parser rejected the model's output mid-reply.

    llama-server (``--jinja``) reads the model's text with its chat format (thinking, answer,
    tool calls) and reports a 500 "server_error" when the text does not fit ("The model produced
    output that does not match the expected peg-native format"). The engine is fine: the model
    wrote something its format does not allow, so this is never a :class:`ServerError`.

    Args:
        message: What the user reads (a default says it in plain words).
        hint: What to do (default: retry, or turn the format parsing off).
        details: The engine's own message.
        partial: What had arrived before the failure (a ``runtime.client.ChatReply`` when the
            chat client raises it: answer, thinking, tool calls, statistics), so nothing is lost.
    """

    title = "Reply does not fit the chat format"

    def __init__(self, message: str = "The model's output did not match its chat format.", *,
                 hint: str | None = ("Send it again; if it keeps happening, turn off chat-format parsing for "
                                     "this model (its thinking and tool calls then arrive as plain text)."),
                 details: str | None = None, partial: Any = None) -> None:
        super().__init__(message, hint=hint, details=details)
        self.partial: Any = partial


class ImageError(StrataError):
    """An image could not be made (no image engine, a bad request, the engine failed the job)."""

    title = "Image problem"


class SpeechError(StrataError):
    """Speech could not be transcribed (not audio, no speech engine, no microphone, the engine failed)."""

    title = "Speech problem"
class DocumentError(StrataError):
    """A document that cannot be attached or indexed (damaged, not what its name says, too large)."""

    title = "Document problem"


class ToolError(StrataError):
    """An MCP tool server could not be configured, started, listed or called."""

    title = "Tool problem"


class ToolConfigError(ToolError):
    """An ``mcpServers`` configuration (a file, or one server in it) is not usable."""

    title = "Settings problem"


class InternalError(StrataError):
    """A bug in Strata (an exception nobody expected), shown so the user can report it.

    Made by :func:`describe`, never raised by core code. Check for it with ``isinstance``.

    Args:
        exc: The unexpected exception; its traceback becomes :attr:`details`.
    """

    # The base title ("Something went wrong"): the dialog already has it translated.

    def __init__(self, exc: BaseException) -> None:
        import traceback

        details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        super().__init__(
            f"Internal error in Strata: {type(exc).__name__}: {exc}",
            hint="This is a bug in Strata. Please report it; 'Copy details' and the log help.",
            details=details,
        )
        self.original = exc


def network_error(exc: BaseException) -> NetworkError | None:
    """The :class:`NetworkError` for an httpx failure that no service translated, else None.

    The one catch at the edge for the whole httpx tree (``HTTPError``: time-outs, refused
    connections, redirect loops, bodies in a bad ``Content-Encoding``; and ``InvalidURL``): a
    server misbehaving is an expected condition, never a bug in Strata.
    """
    import sys

    httpx = sys.modules.get("httpx")  # not imported here: this module loads before any network code
    if httpx is None or not isinstance(exc, httpx.HTTPError | httpx.InvalidURL | httpx.StreamError):
        return None
    details = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, httpx.TimeoutException):
        return NetworkError(QT_TRANSLATE_NOOP("Core", "A server did not answer in time."),
                            hint=QT_TRANSLATE_NOOP("Core", "Check your network or proxy and try again."),
                            details=details)
    if isinstance(exc, httpx.TooManyRedirects):
        return NetworkError(QT_TRANSLATE_NOOP("Core", "A server sent Strata round in a loop of redirects."),
                            hint=QT_TRANSLATE_NOOP("Core", "The server is misconfigured; try again later."),
                            details=details)
    if isinstance(exc, httpx.DecodingError):
        return NetworkError(QT_TRANSLATE_NOOP("Core", "A server sent an answer Strata could not decode."),
                            hint=QT_TRANSLATE_NOOP("Core", "A proxy may be altering the traffic; try again later or "
                                                           "from another network."),
                            details=details)
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return NetworkError(QT_TRANSLATE_NOOP("Core", "A server sent Strata to an address it cannot use."),
                            hint=QT_TRANSLATE_NOOP("Core", "Check the endpoint in Settings; the server may be "
                                                           "misconfigured."),
                            details=details)
    return NetworkError(QT_TRANSLATE_NOOP("Core", "A network request failed."),
                        hint=QT_TRANSLATE_NOOP("Core", "Check your network or proxy and try again."),
                        details=details)


def describe(exc: BaseException) -> StrataError:
    """The error to show for ``exc``: itself if it is a :class:`StrataError`, a :class:`NetworkError`
    for an httpx failure (:func:`network_error`), else an :class:`InternalError`."""
    if isinstance(exc, StrataError):
        return exc
    return network_error(exc) or InternalError(exc)
