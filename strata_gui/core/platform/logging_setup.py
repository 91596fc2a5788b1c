"""Rotating log file in the user log folder, plus stderr for the CLI.

Every line is redacted before it is written (:class:`RedactingFormatter`): the password part of
an address (``http://user:KEY@host``), ``Bearer`` tokens, ``api_key=``-style query values, and
every secret the key store has handed out (:func:`register_secret`), wherever they appear: in
the message, its arguments or a traceback (a server's error that echoes the key back included).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from pathlib import Path

from strata_gui.core.base.texts import shown

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
REDACTED = "***"

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s/@:]*):(?P<secret>[^\s/@]+)@")
_BEARER = re.compile(r"(?i)\b(bearer\s+|(?:api[_-]?key|token|password)(?:=|:\s*))([A-Za-z0-9._~+/=-]{6,})")
_QUERY_KEY = re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token|password)=)[^&\s#]+")
_secrets: set[str] = set()
_secrets_lock = threading.Lock()
# Shorter values are too likely to be ordinary words or numbers in a log line.
MIN_SECRET_LENGTH = 6


def register_secret(value: str | None) -> None:
    """Never write ``value`` to a log from now on (the key store calls this for every key it reads
    or saves)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _secrets_lock:
            _secrets.add(value)


def redact(text: str) -> str:
    """``text`` with addresses' passwords, bearer tokens, key query values and known secrets replaced."""
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m[1]}{REDACTED}", text)
    text = _QUERY_KEY.sub(lambda m: f"{m[1]}{REDACTED}", text)
    with _secrets_lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class RedactingFormatter(logging.Formatter):
    """A formatter whose output (message, arguments and traceback) goes through :func:`redact`, and
    then :func:`~strata_gui.core.base.texts.shown`: a log line may quote a tool server or a remote
    engine, whose terminal escapes must not act on the terminal (the CLI prints warnings) or on
    whoever reads the file with ``cat``, and whose half emoji must not make the line unwritable."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(redact(super().format(record)))


class EarlyRecords(logging.Handler):
    """Keeps what is logged before the log file is open; :func:`configure_logging` writes it there.

    The GUI opens its log file once the window is usable (the handler module costs ~9 ms), so
    nothing logged while the window and the chat come up is lost or goes to stderr instead.
    """

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def keep_early_records() -> EarlyRecords:
    """Hold INFO and above in memory until :func:`configure_logging` opens the log file."""
    early = EarlyRecords()
    early._strata = True  # type: ignore[attr-defined]
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(early)
    return early


def configure_logging(log_file: Path, *, verbose: bool = False, to_stderr: bool = False) -> None:
    """Send log records to a rotating file (1 MB × 5); idempotent.

    Records kept by :func:`keep_early_records` are written to the file first.

    Args:
        log_file: Target file; its folder is created.
        verbose: Log DEBUG records too.
        to_stderr: Also print WARNING and above on stderr (CLI).
    """
    import logging.handlers  # socket, pickle, queue: ~9 ms the GUI pays once the window is usable

    root = logging.getLogger()
    early: list[logging.LogRecord] = []
    for handler in list(root.handlers):
        if getattr(handler, "_strata", False):
            root.removeHandler(handler)
            handler.close()
            if isinstance(handler, EarlyRecords):
                early += handler.records
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file_handler: logging.Handler | None = _log_file(log_file)
    except OSError as exc:  # a read-only or missing folder: say so once, not per line
        sys.stderr.write(f"note: the log {log_file} cannot be written ({exc.strerror or exc}); "
                         f"{'warnings are shown here only' if to_stderr else 'it goes to the console'}.\n")
        file_handler = None if to_stderr else logging.StreamHandler()
    if file_handler is not None:
        file_handler.setFormatter(RedactingFormatter(LOG_FORMAT))
        file_handler._strata = True  # type: ignore[attr-defined]
        root.addHandler(file_handler)
    if to_stderr:
        err = logging.StreamHandler()
        err.setLevel(logging.DEBUG if verbose else logging.WARNING)
        err.setFormatter(RedactingFormatter("%(levelname)s: %(message)s"))
        err._strata = True  # type: ignore[attr-defined]
        root.addHandler(err)
    for record in early:
        root.handle(record)
    # httpx logs every request at INFO; keep the file readable. httpx2 (the MCP SDK's client) does
    # too, with the full address, and the SDK logs addresses and session ids: a tool server's
    # address may carry a key in its query string.
    for name in ("httpx", "httpcore", "httpx2", "httpcore2", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _log_file(path: Path) -> logging.Handler:
    import logging.handlers

    class LogFile(logging.handlers.RotatingFileHandler):
        """The rotating log file, which stops at its first failed write (a full disk, a vanished
        folder) with one line on stderr, instead of a "--- Logging error ---" traceback per line."""

        failed = False

        def emit(self, record: logging.LogRecord) -> None:
            if not self.failed:
                super().emit(record)

        def handleError(self, record: logging.LogRecord) -> None:
            if self.failed:
                return
            self.failed = True
            exc = sys.exc_info()[1]
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            sys.stderr.write(f"note: the log {self.baseFilename} cannot be written ({reason}); "
                             "nothing more is logged this session.\n")

    return LogFile(path, maxBytes=1_000_000, backupCount=5, encoding="utf-8")


def close_logging() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_strata", False):
            root.removeHandler(handler)
            handler.close()
