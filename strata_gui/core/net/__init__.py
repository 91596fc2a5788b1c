"""Strata's HTTP clients (httpx, one stack) and the one resumable, verified downloader."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.net.download import (
        HASH_BLOCK,
        Fetch,
        FetchErrors,
        FetchResult,
        fetch,
        free_bytes,
        hash_prefix,
        partial_size,
    )
    from strata_gui.core.net.transfer import (
        BATCH,
        DEFAULT_PACE,
        LOOPBACK_LIMITS,
        LOOPBACK_TIMEOUT,
        MAX_IN_FLIGHT,
        MIN_RATE,
        NETWORK_TIMEOUT,
        PROGRESS_INTERVAL,
        RATE_WINDOW,
        REQUEST_DEADLINE,
        FileSink,
        Hasher,
        Pace,
        PaceWatch,
        body_chunks,
        credentials_for,
        loopback_client,
        network_client,
        same_origin,
        stream_to_sink,
        tls_context,
        within,
    )

__all__ = [
    "BATCH",
    "DEFAULT_PACE",
    "HASH_BLOCK",
    "LOOPBACK_LIMITS",
    "LOOPBACK_TIMEOUT",
    "MAX_IN_FLIGHT",
    "MIN_RATE",
    "NETWORK_TIMEOUT",
    "PROGRESS_INTERVAL",
    "RATE_WINDOW",
    "REQUEST_DEADLINE",
    "Fetch",
    "FetchErrors",
    "FetchResult",
    "FileSink",
    "Hasher",
    "Pace",
    "PaceWatch",
    "body_chunks",
    "credentials_for",
    "fetch",
    "free_bytes",
    "hash_prefix",
    "loopback_client",
    "network_client",
    "partial_size",
    "same_origin",
    "stream_to_sink",
    "tls_context",
    "within",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "download": ["HASH_BLOCK", "Fetch", "FetchErrors", "FetchResult", "fetch", "free_bytes", "hash_prefix", "partial_size"],
    "transfer": ["BATCH", "DEFAULT_PACE", "LOOPBACK_LIMITS", "LOOPBACK_TIMEOUT", "MAX_IN_FLIGHT", "MIN_RATE", "NETWORK_TIMEOUT", "PROGRESS_INTERVAL", "RATE_WINDOW", "REQUEST_DEADLINE", "FileSink", "Hasher", "Pace", "PaceWatch", "body_chunks", "credentials_for", "loopback_client", "network_client", "same_origin", "stream_to_sink", "tls_context", "within"],
})
