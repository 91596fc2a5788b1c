"""Read a remote GGUF header with HTTP Range requests (no full download)."""

from __future__ import annotations

import re

import httpx

from strata_gui.core.base.errors import GGUFError, HubError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.models.gguf_meta import GGUFMetadata, HeaderParser
from strata_gui.core.models.hub_errors import check_response, error_for_transport
from strata_gui.core.net.transfer import within

CHUNK = 2 * 1024 * 1024
# Token lists of big vocabularies make headers a few MB; anything past this is not a header.
HEADER_LIMIT = 64 * 1024 * 1024
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


async def ranged_get(client: httpx.AsyncClient, url: str, headers: dict[str, str] | None, start: int, end: int, *,
                     label: str, endpoint: str, deadline: float | None = None) -> tuple[httpx.Response, bytes]:
    """GET bytes ``start..end`` of ``url``: the response (status, headers) and its body.

    The body's size is judged from the headers before a byte of it is read: a part must declare
    a ``Content-Length`` no larger than asked for; a server that ignores ``Range`` (200, the whole
    file) is read only when the file is at most :data:`HEADER_LIMIT`. A compressed body is refused
    (a range of an encoded body means nothing, and decoding it has no size bound). The request has
    ``deadline`` seconds in all (default :data:`~strata_gui.core.net.transfer.REQUEST_DEADLINE`).

    Raises:
        HubError: network failure, time-out, redirect loop, an HTTP error status, or a body that
            would not fit the bounds above.
    """
    req_headers = {**(headers or {}), "Range": f"bytes={start}-{end}", "Accept-Encoding": "identity"}

    async def fetch() -> tuple[httpx.Response, bytes]:
        async with client.stream("GET", url, headers=req_headers, follow_redirects=True) as resp:
            check_response(resp, label, endpoint)  # status and headers only; an error body is not read
            where = endpoint or str(httpx.URL(url).copy_with(query=None))
            if resp.headers.get("Content-Encoding", "identity").strip().lower() not in ("", "identity"):
                raise HubError(T(QT_TRANSLATE_NOOP("Core", "The server at {where} sent a compressed part of "
                                                           "{label}."), where=where, label=label),
                               hint=QT_TRANSLATE_NOOP("Core", "A proxy may be altering the traffic; try "
                                                              "again or check the hub endpoint in Settings."))
            cap = end - start + 1 if resp.status_code == 206 else max(end + 1, HEADER_LIMIT)
            length = resp.headers.get("Content-Length", "").strip()
            if not length.isdigit() or int(length) > cap:
                wrong = (T(QT_TRANSLATE_NOOP("Core", "The server at {where} did not send the part of {label} "
                                                     "Strata asked for ({length} bytes instead of at most "
                                                     "{cap})."),
                           where=where, label=label, length=length, cap=cap) if length
                         else T(QT_TRANSLATE_NOOP("Core", "The server at {where} did not send the part of "
                                                          "{label} Strata asked for (no bytes instead of at "
                                                          "most {cap})."),
                                where=where, label=label, cap=cap))
                raise HubError(wrong, hint=QT_TRANSLATE_NOOP("Core", "The hub endpoint must support ranged "
                                                                     "requests; check it in Settings."))
            return resp, await resp.aread()

    try:
        return await within(fetch(), deadline, f"a part of {label}")
    except httpx.RequestError as exc:
        raise error_for_transport(exc, endpoint or url) from exc


async def read_remote_header(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    label: str = "the model file",
    endpoint: str = "",
    chunk: int = CHUNK,
    deadline: float | None = None,
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
        resp, body = await ranged_get(client, url, headers, start, want - 1, label=label, endpoint=endpoint,
                                      deadline=deadline)
        if resp.status_code == 206:
            m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
            if m and m.group(3) != "*":
                total = int(m.group(3))
            if m and int(m.group(1)) != start:
                raise HubError(T(QT_TRANSLATE_NOOP("Core", "The server sent the wrong part of {label}."),
                                 label=label),
                               hint=QT_TRANSLATE_NOOP("Core", "Try again; a proxy may be interfering."))
        else:
            # Server ignored Range: it sent the whole (small) file from byte 0.
            if start:
                parser = HeaderParser(limit=HEADER_LIMIT)
            total = len(body)
        meta = parser.feed(body)
        if meta is not None:
            return meta, total
        at_end = (total is not None and parser.received >= total) or not body
        if at_end:
            raise GGUFError(T(QT_TRANSLATE_NOOP("Core", "{label} ends inside its GGUF header."), label=label),
                            hint=QT_TRANSLATE_NOOP("Core", "The file on the hub is incomplete or not a "
                                                           "model."))
        want = max(parser.needed, parser.received + chunk)
        if want > HEADER_LIMIT:
            raise GGUFError(T(QT_TRANSLATE_NOOP("Core", "The GGUF header of {label} is larger than {size} "
                                                        "MB."),
                              label=label, size=HEADER_LIMIT // (1024 * 1024)))
        if total is not None:
            want = min(want, total)
