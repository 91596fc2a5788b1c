"""What the local API limits, counts and records: plain data, no HTTP stack (cheap to import)."""

from __future__ import annotations

from dataclasses import dataclass

from strata_gui.core.serve.router import Upstream


@dataclass(frozen=True)
class ServerLimits:
    """What one client may take of the server.

    Attributes:
        max_body_bytes: Largest request body (413 above it).
        max_header_bytes: Longest request line or header field (aiohttp's parser answers 400).
        header_timeout_s: A connection must send a complete request head within this long of
            opening or of its last response; it is also how long an idle keep-alive connection
            stays open. A client that trickles its headers (slowloris) is dropped after it.
        body_timeout_s: The body must arrive within this long once the head did (408 otherwise).
        write_timeout_s: A client that stops reading a response for this long is dropped.
        max_connections: Most connections open at once (and at most half the files the process
            may open); a new one past it closes the oldest without a request in a handler.
        stop_grace_s: On stop, requests in flight may finish for this long; streams still
            running are then ended with an error item and closed.
    """

    max_body_bytes: int = 32 * 1024 * 1024
    max_header_bytes: int = 16 * 1024
    header_timeout_s: float = 15.0
    body_timeout_s: float = 60.0
    write_timeout_s: float = 60.0
    max_connections: int = 256
    stop_grace_s: float = 5.0


@dataclass(frozen=True)
class ApiRequest:
    """One model request the server answered, as recorded for the dashboard."""

    path: str
    status: int
    upstream: Upstream
    stream: bool
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    output_tokens: int | None = None
    prefill_tps: float | None = None
    decode_tps: float | None = None
    ttft_s: float | None = None


@dataclass
class Counters:
    """Requests to model endpoints since the server started (what the Network page shows)."""

    total: int = 0
    active: int = 0
    completed: int = 0
    failed: int = 0
    unauthorized: int = 0
