"""The one SSE reader, against the WHATWG standard's event stream interpretation: each stream is
read whole, cut at every position into two reads, and one byte at a time; the events must not
depend on where the network cut it."""

from __future__ import annotations

import pytest

from strata_gui.core.runtime.sse import SseEvent, SseReader

M = "message"

# (name, stream, events as (type, data, last id), retry at the end)
CASES: list[tuple[str, bytes, list[tuple[str, bytes, str]], int | None]] = [
    ("lf", b"data: a\n\n", [(M, b"a", "")], None),
    ("crlf", b"data: a\r\n\r\n", [(M, b"a", "")], None),
    ("cr", b"data: a\r\r", [(M, b"a", "")], None),
    ("mixed line ends", b"data: a\r\ndata: b\rdata: c\n\r\n", [(M, b"a\nb\nc", "")], None),
    ("a CR then a CRLF", b"data: a\r\r\ndata: b\n\n", [(M, b"a", ""), (M, b"b", "")], None),
    ("a LF then a CRLF", b"data: a\n\r\ndata: b\r\r", [(M, b"a", ""), (M, b"b", "")], None),
    ("comments", b": hello\n\ndata: x\n: in between\ndata: y\n\n:\n\n", [(M, b"x\ny", "")], None),
    ("event names, reset after each event", b"event: add\ndata: 1\n\ndata: 2\n\n",
     [("add", b"1", ""), (M, b"2", "")], None),
    ("an event without data is not dispatched and forgets its name",
     b"event: ping\n\ndata: y\n\n", [(M, b"y", "")], None),
    ("ids stay for later events; an empty id clears it",
     b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", [(M, b"a", "7"), (M, b"b", "7"), (M, b"c", "")], None),
    ("an id holding NUL is ignored", b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
     [(M, b"a", "1"), (M, b"b", "1")], None),
    ("retry: digits only", b"retry: 1500\ndata: a\n\nretry: 15x\nretry:\nretry: -1\n\n", [(M, b"a", "")], 1500),
    ("a field without a colon has an empty value", b"data\n\ndata\ndata\n\n", [(M, b"", ""), (M, b"\n", "")], None),
    ("one leading space is dropped, once", b"data:  two\n\ndata:none\n\ndata: \n\n",
     [(M, b" two", ""), (M, b"none", ""), (M, b"", "")], None),
    ("a colon in the value stays", b"data: {\"a\": \"b:c\"}\n\n", [(M, b'{"a": "b:c"}', "")], None),
    ("unknown fields are ignored", b"foo: bar\nDATA: x\ndata : y\ndata: a\n\n", [(M, b"a", "")], None),
    ("an event left unfinished at the end is discarded", b"data: a\n\ndata: b\n", [(M, b"a", "")], None),
    ("a last line without its end is discarded", b"data: a\n\ndata: b", [(M, b"a", "")], None),
    ("a leading byte order mark is dropped", b"\xef\xbb\xbfdata: a\n\n", [(M, b"a", "")], None),
    ("only one byte order mark is dropped", b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n",
     [(M, b"b", "")], None),
    ("U+2028 and U+0085 inside data are not line ends",
     'data: {"t": "a\u2028b\u0085c"}\n\n'.encode(), [(M, '{"t": "a\u2028b\u0085c"}'.encode(), "")], None),
    ("several events in one read, llama-server's shape",
     b'data: {"x":1}\n\ndata: {"x":2}\n\ndata: [DONE]\n\n',
     [(M, b'{"x":1}', ""), (M, b'{"x":2}', ""), (M, b"[DONE]", "")], None),
    ("an Anthropic stream", b"event: message_start\r\ndata: {\"a\":1}\r\n\r\n: comment\n\ndata: x\ndata: y\n\n",
     [("message_start", b'{"a":1}', ""), (M, b"x\ny", "")], None),
]


def _read(parts: list[bytes]) -> tuple[list[tuple[str, bytes, str]], int | None]:
    reader = SseReader()
    events: list[SseEvent] = []
    for part in parts:
        events.extend(reader.feed(part))
    return [(e.event, e.data, e.id) for e in events], reader.retry


@pytest.mark.parametrize(("stream", "expected", "retry"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_stream_gives_the_same_events_wherever_it_is_cut(stream: bytes, expected: list[tuple[str, bytes, str]],
                                                          retry: int | None) -> None:
    assert _read([stream]) == (expected, retry)
    for cut in range(len(stream) + 1):
        assert _read([stream[:cut], stream[cut:]]) == (expected, retry), f"cut at {cut}: {stream[:cut]!r}"
    assert _read([stream[i:i + 1] for i in range(len(stream))]) == (expected, retry)


def test_every_cut_into_three_reads_of_a_stream_with_every_line_end() -> None:
    stream = b"\xef\xbb\xbfid: 1\rdata: a\r\ndata: b\n\r: c\r\nevent: e\ndata:\r\r\n\rdata: [DONE]\r\n\r\n"
    expected = ([(M, b"a\nb", "1"), ("e", b"", "1"), (M, b"[DONE]", "1")], None)
    assert _read([stream]) == expected
    for i in range(len(stream) + 1):
        for j in range(i, len(stream) + 1):
            assert _read([stream[:i], stream[i:j], stream[j:]]) == expected, (i, j)


def test_an_empty_read_changes_nothing() -> None:
    reader = SseReader()
    assert reader.feed(b"data: a\r") == []
    assert reader.feed(b"") == []  # the CR's possible LF is still awaited
    assert reader.feed(b"\n\r\n") == [SseEvent(b"a")]


def test_pending_is_the_line_not_ended_yet() -> None:
    reader = SseReader()
    reader.feed(b'data: {"a": 1}\n\ndata: {"b"')
    assert reader.pending == b'data: {"b"'
    reader.feed(b": 2}\r")
    assert reader.pending == b""
