"""Read a remote GGUF header with HTTP Range requests (no full download)."""

from __future__ import annotations

import re

import httpx

from strata_gui.core.errors import GGUFError, HubError
from strata_gui.core.models.gguf_meta import GGUFMetadata, HeaderParser
from strata_gui.core.models.hub_errors import check_response, error_for_transport

CHUNK = 2 * 1024 * 1024
# Token lists of big vocabularies make headers a few MB; anything past this is not a header.
HEADER_LIMIT = 64 * 1024 * 1024
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


async def read_remote_header(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    label: str = "the model file",
    endpoint: str = "",
    chunk: int = CHUNK,
) -> tuple[GGUFMetadata, int | None]:
    """Fetch ``url`` in ``chunk``-sized Range requests until the GGUF header parses.

    Returns:
        The metadata and the file's total size (from ``Content-Range``), if the server said.

    Raises:
        GGUFError: The file is not a GGUF file or its header is corrupt.
        HubError: HTTP or network failure.
    """
    # Each reply is fed to one parser, which resumes where it stopped: a header that takes many
    # round trips is parsed once, not again from byte 0 after every reply.
    parser = HeaderParser(limit=HEADER_LIMIT)
    total: int | None = None
    want = chunk
    while True:
        start = parser.received
        req_headers = dict(headers or {})
        req_headers["Range"] = f"bytes={start}-{want - 1}"
        req_headers["Accept-Encoding"] = "identity"
        try:
            resp = await client.get(url, headers=req_headers, follow_redirects=True)
        except httpx.TransportError as exc:
            raise error_for_transport(exc, endpoint or url) from exc
        check_response(resp, label, endpoint)
        body = resp.content
        if resp.status_code == 206:
            m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            if m and m.group(3) != "*":
                total = int(m.group(3))
            if m and int(m.group(1)) != start:
                raise HubError(f"The server sent the wrong part of {label}.", hint="Try again; a proxy may be interfering.")
        else:
            # Server ignored Range: it sent the whole file from byte 0.
            if start:
                parser = HeaderParser(limit=HEADER_LIMIT)
            total = len(body)
        meta = parser.feed(body)
        if meta is not None:
            return meta, total
        at_end = (total is not None and parser.received >= total) or not body
        if at_end:
            raise GGUFError(f"{label} ends inside its GGUF header.", hint="The file on the hub is incomplete or not a model.")
        want = max(parser.needed, parser.received + chunk)
        if want > HEADER_LIMIT:
            raise GGUFError(f"The GGUF header of {label} is larger than {HEADER_LIMIT // (1024 * 1024)} MB.")
        if total is not None:
            want = min(want, total)
