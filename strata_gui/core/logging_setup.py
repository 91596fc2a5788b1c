"""Rotating log file in the user log folder, plus stderr for the CLI."""

from __future__ import annotations

import logging
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


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
        file_handler: logging.Handler = logging.handlers.RotatingFileHandler(
            log_file, maxBytes=1_000_000, backupCount=5, encoding="utf-8"
        )
    except OSError:
        file_handler = logging.StreamHandler()
    file_handler.setFormatter(logging.Formatter(LOG_FORMAT))
    file_handler._strata = True  # type: ignore[attr-defined]
    root.addHandler(file_handler)
    if to_stderr:
        err = logging.StreamHandler()
        err.setLevel(logging.DEBUG if verbose else logging.WARNING)
        err.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        err._strata = True  # type: ignore[attr-defined]
        root.addHandler(err)
    for record in early:
        root.handle(record)
    # httpx logs every request at INFO; keep the file readable. httpx2 (the MCP SDK's client) does
    # too, with the full address, and the SDK logs addresses and session ids: a tool server's
    # address may carry a key in its query string.
    for name in ("httpx", "httpcore", "httpx2", "httpcore2", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)


def close_logging() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_strata", False):
            root.removeHandler(handler)
            handler.close()
