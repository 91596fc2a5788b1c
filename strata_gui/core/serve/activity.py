"""What the local API did lately: one entry per model request, for the Network page's Activity view,
``/metrics`` and ``strata serve --log-requests FILE``.

Each model request is traced while it runs (:class:`Trace`, found through a context variable, so
the layers that learn something, the engine borrow, the body reader, the statistics, note it
without being handed the request): the client's address, the model, how long it waited for an
engine, its tokens and times. When it ends it becomes an :class:`ActivityEntry`, kept in a bounded
list and announced to listeners.

Bodies are kept only when the user turns capture on (Settings, the Network page): redacted (keys,
tokens and passwords as ``<redacted>``, images as ``<image 123 KB>``) and cut at
:data:`CAPTURE_LIMIT`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import json
import logging
import os
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from strata_gui.core.base.errors import StorageError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.platform.logging_setup import redact
from strata_gui.core.serve.records import ApiRequest

log = logging.getLogger(__name__)

KEEP = 500  # entries kept for the Activity view
CAPTURE_LIMIT = 64 * 1024  # characters of a captured body
REDACTED = "<redacted>"
UNKNOWN_MODEL = "unknown"  # what a request naming no model the library serves is recorded as
MODEL_NAME_LIMIT = 200  # characters of a model name kept in an entry (a library's ids are shorter)
PARSE_LIMIT = 1024 * 1024  # bodies up to this size are parsed and shown indented; larger ones are cut first
# Names (body keys, form fields, headers) whose values are secrets wherever they appear: the whole
# name or its last part ("x-goog-api-key", "hf_token", "credentials").
_SECRET_NAME = (r"(?:api[_-]?key|key|auth|authorization|credentials?|passw(?:or)?d|secret|"
                r"(?:access[_-]?|refresh[_-]?|id[_-]?)?token|cookie|session)")
_SECRET_KEY = re.compile(rf"(?i)(?:^|[_\-.]){_SECRET_NAME}$")
_DATA_URL = re.compile(r"data:image/[\w.+-]+;base64,", re.ASCII)
# In text that is not parsed: "key": "value" pairs (a value the cut ends included), form fields
# (key=value) and multipart fields.
_JSON_SECRET = re.compile(rf'(?i)("(?:[^"\\]{{0,60}}[_\-.])?{_SECRET_NAME}"\s*:\s*)("(?:[^"\\]|\\.)*(?:"|$)|[\w.+-]+)')
_FORM_SECRET = re.compile(rf"(?i)((?:^|[&\s;?])(?:[\w.-]{{0,60}}[_\-.])?{_SECRET_NAME}=)[^&\s]+")
_MULTIPART_SECRET = re.compile(rf'(?i)(name="(?:[^"]{{0,60}}[_\-.])?{_SECRET_NAME}"[^\n]*\r?\n(?:[^\r\n]+\r?\n)*\r?\n)[^\r\n]*')
# A run of base64 long enough to be an image (checked further by _looks_like_base64_image).
_BASE64_RUN = re.compile(rb"(data:image/[\w.+-]+;base64,)?([A-Za-z0-9+/]{256,}={0,2})")


@dataclass
class Trace:
    """A model request while it runs (what its layers learn about it on the way)."""

    started: float
    client: str
    method: str
    path: str
    model: str = ""
    wait_s: float | None = None
    stats: ApiRequest | None = None
    body: bytes | None = None  # kept only while capture is on
    headers: Mapping[str, str] = field(default_factory=dict)


CURRENT: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("strata_serve_trace", default=None)
"""The trace of the request the running task serves (None outside a model request)."""


def api_of(path: str) -> str:
    """Which API a path belongs to: "ollama", "anthropic" or "openai"."""
    if path.startswith("/api/"):
        return "ollama"
    if path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


@dataclass(frozen=True)
class ActivityEntry:
    """One model request the server answered (or refused), as the Activity view lists it.

    Attributes:
        at: When it started, epoch seconds.
        client: The client's address ("127.0.0.1").
        method: "POST".
        path: "/v1/chat/completions".
        api: "openai", "ollama" or "anthropic".
        model: The served model it named ("unknown" when it named none the library serves, "" when
            it never got to name one), at most :data:`MODEL_NAME_LIMIT` characters.
        status: The HTTP status (a stream that broke off counts as 500).
        duration_s: From its arrival to its last byte.
        wait_s: Waiting for an engine or a slot (None: it never got that far).
        prompt_tokens: Prompt tokens (None: not told).
        output_tokens: Generated tokens.
        ttft_s: Time to the first token.
        decode_tps: Generation speed, tokens per second.
        request_body: The redacted body, when capture was on.
    """

    at: float
    client: str
    method: str
    path: str
    api: str
    model: str
    status: int
    duration_s: float
    wait_s: float | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    ttft_s: float | None = None
    decode_tps: float | None = None
    request_body: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Activity:
    """The recent requests of the local API (every server a :class:`ServeService` starts).

    Args:
        capture: Whether request bodies are kept (read per request: a setting).
        clock: Monotonic clock of the durations (the server's).
        wall: Wall clock of the entries' ``at``.
    """

    def __init__(self, capture: Callable[[], bool] = lambda: False, *,
                 clock: Callable[[], float] = time.perf_counter, wall: Callable[[], float] = time.time) -> None:
        self.capture = capture
        self._clock = clock
        self._wall = wall
        self.entries: deque[ActivityEntry] = deque(maxlen=KEEP)
        self.finished: Listeners[ActivityEntry] = Listeners()
        self._log: IO[str] | None = None
        self.log_path: Path | None = None

    def begin(self, client: str, method: str, path: str, headers: Mapping[str, str]) -> Trace:
        keep = self.capture()
        return Trace(self._clock(), client, method, path, headers=dict(headers) if keep else {})

    def end(self, trace: Trace, status: int) -> ActivityEntry:
        """Turn a finished request's trace into an entry: kept, logged, announced."""
        now = self._clock()
        s = trace.stats
        body = redact_body(trace.body, trace.headers) if trace.body is not None and self.capture() else None
        entry = ActivityEntry(
            at=self._wall() - (now - trace.started), client=trace.client, method=trace.method, path=trace.path,
            api=api_of(trace.path), model=trace.model[:MODEL_NAME_LIMIT], status=status, duration_s=now - trace.started,
            wait_s=trace.wait_s, prompt_tokens=s.prompt_tokens if s else None,
            output_tokens=s.output_tokens if s else None, ttft_s=s.ttft_s if s else None,
            decode_tps=s.decode_tps if s else None, request_body=body)
        self.entries.append(entry)
        self._write(entry)
        self.finished.emit(entry)
        return entry

    # -- the JSON-lines log (strata serve --log-requests) ------------------------------------------------
    def log_to(self, path: Path) -> None:
        """Append each request to ``path`` as one JSON line from now on (a new file is created
        readable by its owner only: it holds prompts when capture is on).

        Raises:
            StorageError: The file cannot be opened for writing.
        """
        try:
            # A line at a time: readable while it runs. Created owner-only: prompts are private.
            handle = open(path, "a", encoding="utf-8", buffering=1, opener=_owner_only)  # noqa: SIM115
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Cannot write the request log {path}: {reason}"),
                                 path=str(path), reason=str(exc.strerror or exc))) from exc
        self.close_log()
        self._log, self.log_path = handle, path

    def close_log(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
        self._log = self.log_path = None

    def _write(self, entry: ActivityEntry) -> None:
        if self._log is None:
            return
        try:
            self._log.write(json.dumps(entry.to_json(), ensure_ascii=False) + "\n")
        except OSError as exc:  # a full disk stops the log, never the request
            log.warning("request log %s stopped: %s", self.log_path, exc)
            self.close_log()


def _owner_only(path: str, flags: int) -> int:
    """``os.open`` creating the file readable by its owner alone (POSIX; Windows keeps its ACLs)."""
    return os.open(path, flags, 0o600)


# -- redaction ------------------------------------------------------------------------------------------
def _image_label(base64_chars: int) -> str:
    return f"<image {max(1, round(base64_chars * 3 / 4 / 1024))} KB>"


def _image_size(text: str) -> str:
    return _image_label(len(text))


def _looks_like_base64_image(text: str) -> bool:
    """An Ollama ``images`` item: long base64 (checked on its start only: a few MB are not decoded)."""
    if len(text) < 256:
        return False
    with contextlib.suppress(binascii.Error, ValueError):
        head = base64.b64decode(text[:64], validate=True)
        return head[:4] in (b"\x89PNG", b"GIF8", b"RIFF") or head[:3] == b"\xff\xd8\xff"
    return False


def _redact(value: Any, key: str = "") -> Any:
    if key and _SECRET_KEY.search(key) and value is not None and not isinstance(value, bool):
        return REDACTED  # a nested {"token": {"value": ...}} included
    if isinstance(value, dict):
        return {k: _redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, key) for v in value]
    if isinstance(value, str):
        match = _DATA_URL.match(value)
        if match:
            return _image_size(value[match.end():])
        if _looks_like_base64_image(value):
            return _image_size(value)
    return value


def _redact_text(text: str) -> str:
    """Secrets in text that was not parsed as JSON: JSON pairs, form and multipart fields."""
    text = _JSON_SECRET.sub(lambda m: f'{m[1]}"{REDACTED}"', text)
    text = _FORM_SECRET.sub(lambda m: f"{m[1]}{REDACTED}", text)
    return _MULTIPART_SECRET.sub(lambda m: f"{m[1]}{REDACTED}", text)


def _cut_with_images(body: bytes, limit: int) -> tuple[str, int]:
    """About the first ``limit`` bytes of ``body`` as text, base64 images in it shown as their size
    (an image running past the cut is measured to its closing quote, a memchr, never parsed);
    and how many bytes of ``body`` were left out."""
    parts: list[bytes] = []
    kept = pos = 0
    while pos < len(body) and kept < limit:
        window = body[pos:pos + limit - kept]
        match = _BASE64_RUN.search(window)
        while match is not None and not (match[1] or _looks_like_base64_image(match[2][:256].decode())):
            match = _BASE64_RUN.search(window, match.end())
        if match is None:
            parts.append(window)
            kept, pos = kept + len(window), pos + len(window)
            break
        end = pos + match.end()
        if match.end() == len(window):  # the image goes on past the window
            quote = body.find(b'"', end)
            end = len(body) if quote < 0 else quote
        marker = _image_label(end - pos - match.start(2))
        parts += [window[:match.start()], marker.encode()]
        kept, pos = kept + match.start() + len(marker), end
    return b"".join(parts).decode("utf-8", "replace"), len(body) - pos


def redact_body(body: bytes, headers: Mapping[str, str] | None = None) -> str:
    """A request body as the Activity view may keep it: secrets and images replaced, at most
    :data:`CAPTURE_LIMIT` characters (the rest counted). The request's headers go in front, their
    credentials redacted. Everything then goes through the log's own
    :func:`~strata_gui.core.platform.logging_setup.redact` (bearer tokens, keys in addresses, every
    key Strata holds, the server's own included, wherever a client pasted it).

    A body over :data:`PARSE_LIMIT` is cut before anything else is done with it: parsing and
    indenting 32 MB per request would stall the server's event loop.
    """
    left_out = 0
    if len(body) <= PARSE_LIMIT:
        try:
            text = json.dumps(_redact(json.loads(body)), ensure_ascii=False, indent=1)
        except (ValueError, RecursionError):
            text, left_out = _cut_with_images(body, CAPTURE_LIMIT)
            text = _redact_text(text)
    else:
        text, left_out = _cut_with_images(body, CAPTURE_LIMIT)
        text = _redact_text(text)
    if headers:
        head = "\n".join(f"{k}: {REDACTED if _SECRET_KEY.search(k) else v}" for k, v in headers.items())
        text = head + "\n\n" + text
    text = redact(text)
    more = max(0, len(text) - CAPTURE_LIMIT) + left_out
    if more:
        text = text[:CAPTURE_LIMIT] + f"\n… ({more} more characters not kept)"
    return text
