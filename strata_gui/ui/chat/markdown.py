"""Split a reply into Markdown text and fenced code blocks (pure, no Qt).

Code blocks get their own widget with a Copy button; while a reply streams, only the segments
that changed since the last render are touched, so earlier paragraphs are not re-laid out, and
text that only extends the last line with plain words is appended as is instead of parsing the
whole segment again (:func:`plain_extension`).
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


# Characters that can open, close or change Markdown structure (emphasis, code spans, links and
# images, HTML, entities, escapes, tables, strike-through, autolinks, breaks). Appended text holds
# none of them, and the last character shown is none of them (the new text could change how that
# one reads, and would take its format: bold after "**bold**").
_ACTIVE = frozenset("*_`[]()<>#|\\!~&;:@$\t\r\n")
# What a line can start with to become something else than paragraph text: list items, headings,
# setext underlines, thematic breaks, block quotes, indented code.
_LINE_START = re.compile(r"^(?: {0,3}(?:[-+=>#]|\d+[.)])| {4})")


def plain_extension(shown: str, source: str) -> str | None:
    """The text to append to the rendering of ``shown`` so it renders ``source``, or None.

    Only when ``source`` is ``shown`` plus plain words on its last, non-empty line: the words and
    the character before them have no Markdown meaning, the line does not start a list, heading
    or quote and holds no autolink (``:``, ``@``, ``www.``), and the paragraph holds no HTML or
    table. Markdown drops the spaces that end a paragraph, so those that ended ``shown`` are sent
    with the new words and those that end ``source`` are held back.
    """
    if len(source) <= len(shown) or not shown or not source.startswith(shown):
        return None
    added = source[len(shown):]
    kept = shown.rstrip(" ")  # what the rendering ends with: the new words take that text's format
    if not kept or kept[-1] in _ACTIVE or not _ACTIVE.isdisjoint(added):
        return None
    line = source[source.rfind("\n") + 1:]
    if not line[:len(line) - len(added)].strip():
        return None  # the last line is new or was blank: a new paragraph may begin
    if _LINE_START.match(line) or ":" in line or "@" in line or "www." in line.lower():
        return None
    paragraph = source[source.rfind("\n\n") + 2:]
    if "<" in paragraph or "|" in paragraph:
        return None
    return (shown[len(kept):] + added).rstrip(" ")
