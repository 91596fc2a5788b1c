"""Rotating log file in the user log folder, plus stderr for the CLI."""

from __future__ import annotations

import logging
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def configure_logging(log_file: Path, *, verbose: bool = False, to_stderr: bool = False) -> None:
    """Send log records to a rotating file (1 MB × 5); idempotent.

    Args:
        log_file: Target file; its folder is created.
        verbose: Log DEBUG records too.
        to_stderr: Also print WARNING and above on stderr (CLI).
    """
    import logging.handlers  # socket, pickle, queue: ~9 ms the GUI pays after its first paint

    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_strata", False):
            root.removeHandler(handler)
            handler.close()
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
    # httpx logs every request at INFO; keep the file readable.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def close_logging() -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_strata", False):
            root.removeHandler(handler)
            handler.close()
