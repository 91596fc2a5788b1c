"""Split a reply into Markdown text and fenced code blocks (pure, no Qt).

Code blocks get their own widget with a Copy button; while a reply streams, only the segments
that changed since the last render are touched, so earlier paragraphs are not re-laid out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^(```|~~~)([^\n`]*)$", re.MULTILINE)


@dataclass(frozen=True)
class Segment:
    kind: str  # "text" | "code"
    text: str
    lang: str = ""
    closed: bool = True


def split_segments(source: str) -> list[Segment]:
    """Text and code segments in order; an unclosed fence (still streaming) is an open code block."""
    out: list[Segment] = []
    pos = 0
    while True:
        m = _FENCE.search(source, pos)
        if m is None:
            tail = source[pos:]
            if tail.strip():
                out.append(Segment("text", tail))
            return out
        before = source[pos:m.start()]
        if before.strip():
            out.append(Segment("text", before))
        fence, lang = m.group(1), m.group(2).strip()
        body_start = m.end() + 1
        close = re.compile(rf"^{re.escape(fence)}\s*$", re.MULTILINE).search(source, body_start)
        if close is None:
            out.append(Segment("code", source[body_start:], lang, closed=False))
            return out
        out.append(Segment("code", source[body_start:close.start()].rstrip("\n"), lang))
        pos = close.end()
