"""Server-Sent Events, read as the WHATWG HTML standard says ("event stream interpretation").

The one reader of Strata's event streams: the chat's replies (:mod:`strata_gui.core.runtime.client`),
and the local API's view of the engine streams it passes through or translates
(:mod:`strata_gui.core.serve.wire`, :mod:`strata_gui.core.serve.translate`).

What the standard asks, and this reader does:

- lines end with CRLF, LF or CR, also where a CRLF is cut between two network reads;
- a leading byte order mark is dropped; a line starting with ``:`` is a comment;
- ``field: value`` (one space after the colon dropped, once); a line without a colon is a field
  with an empty value; unknown fields are ignored;
- ``data`` lines of one event are joined with ``"\\n"``; ``event`` names the event (``"message"``
  by default); ``id`` sets the last event id, which stays for later events (not when it holds a
  NUL); ``retry`` (ASCII digits only) sets the reconnection time;
- a blank line dispatches the event; an event with no ``data`` line is not dispatched;
- at the end of the stream an event not closed by a blank line is discarded.

It works on bytes: line ends are the ASCII bytes CR and LF, which never occur inside a multi-byte
UTF-8 sequence, so nothing is decoded that is not used. A ``data`` value is handed over as bytes
(``json.loads`` takes them as they are), and it is not split on U+2028/U+2029/U+0085: JSON allows
those unescaped inside strings and llama-server sends them so (a reader of decoded lines, like
httpx's ``aiter_lines``, would cut such a reply in two).
"""

from __future__ import annotations

from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"


class SseEvent(NamedTuple):
    """One dispatched event (a named tuple: one is made per streamed token).

    Attributes:
        data: The ``data`` lines joined with ``b"\\n"`` (UTF-8 bytes; may be empty).
        event: The event's type (``"message"`` unless an ``event`` field named one).
        id: The last event id set so far in the stream ("" when none was).
    """

    data: bytes
    event: str = "message"
    id: str = ""


class SseReader:
    """Turns a byte stream, fed as it arrives, into :class:`SseEvent` s (see the module's text).

    Feed every network read to :meth:`feed`; it returns the events the read completed. Nothing
    needs to be called at the end: an event the stream left unfinished is discarded.

    Attributes:
        retry: The reconnection time the stream asked for, in milliseconds (None: never said).
    """

    __slots__ = ("_data", "_event", "_last_id", "_pending", "_skip_lf", "_started", "retry")

    def __init__(self) -> None:
        self._pending = b""  # the start of a line not ended yet
        self._skip_lf = False  # the last read ended with a CR: a LF first in the next one ends no line
        self._started = False  # past a possible byte order mark
        self._data: list[bytes] = []  # data lines of the event being read
        self._event = b""
        self._last_id = ""
        self.retry: int | None = None

    @property
    def pending(self) -> bytes:
        """The start of a line that has not ended yet (what a reader started later would miss)."""
        return self._pending

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by ``chunk`` (the next bytes of the stream), in order."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 0x0A:  # the LF of a CRLF cut between two reads
                chunk = chunk[1:]
        if self._pending:
            chunk = self._pending + chunk
        if not self._started:
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._pending = chunk  # may still be a byte order mark
                return []
            self._started = True
            chunk = chunk.removeprefix(_BOM)
        if b"\r" in chunk:  # CRLF and lone CR end lines as LF does (rare: llama-server sends LF)
            self._skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        self._pending = lines.pop()
        out: list[SseEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    out.append(self._dispatch())
                else:
                    self._event = b""  # no data: nothing to dispatch, and the type is forgotten
            elif line.startswith(b"data:"):  # the usual line first: one test per token
                self._data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif line[0] != 0x3A:  # not a comment
                self._field(line)
        return out

    def _field(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":  # "data" without a colon: an empty data line
            self._data.append(value)
        elif name == b"event":
            self._event = value
        elif name == b"id" and b"\0" not in value:
            self._last_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():  # bytes.isdigit: ASCII digits only, as the standard asks
            self.retry = int(value)

    def _dispatch(self) -> SseEvent:
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        event = self._event.decode("utf-8", "replace") if self._event else "message"
        self._data = []
        self._event = b""
        return SseEvent(data, event, self._last_id)
