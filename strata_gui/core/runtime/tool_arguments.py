"""A tool call's arguments, as the model (or a remote engine) wrote them, read within bounds.

The arguments are another program's text. Python's ``json`` recurses once per level of nesting,
so a few thousand nested brackets (2 KB) raise ``RecursionError``, which no caller expected: the
reply ended as "Internal error … This is a bug" and nothing was kept. A number of more than 4,300
digits raises a plain ``ValueError``. Every place that reads a call's arguments (the tool host
before it asks and calls, the chat's record, ``strata chat --json``, the app's call box) reads
them with :func:`parse_tool_arguments`, which refuses such text with a sentence the model and the
user can read.
"""

from __future__ import annotations

import json
import re
from typing import Any

from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

# Real tool schemas nest a handful of levels; this leaves room for any of them and stays far below
# the depth at which json (or the SDK's serializer, when the call is sent) would recurse too deep.
MAX_ARGUMENT_DEPTH = 64

# A JSON string (skipped whole: brackets inside it do not nest), or one bracket.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def nesting_depth(text: str, limit: int = MAX_ARGUMENT_DEPTH) -> int:
    """How deep ``text``'s brackets nest, counted up to just past ``limit`` (the scan stops there).

    Brackets inside JSON strings do not count. For text that is not JSON the count is a bound, not
    exact; it never recurses, whatever the text.
    """
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        mark = text[match.start()]
        if mark in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif mark in "]}":
            depth -= 1
    return deepest


def parse_tool_arguments(text: str | None) -> dict[str, Any]:
    """The arguments of a tool call as a JSON object (``{}`` for none).

    Raises:
        ChatError: They are nested too deeply, are not valid JSON, or are not a JSON object. The
            message is a sentence for the model and the user; ``details`` holds the start of the text.
    """
    if text is None or not text.strip():
        return {}
    details = text[:2000]
    if nesting_depth(text) > MAX_ARGUMENT_DEPTH:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "The tool arguments are nested more than {depth} levels "
                                                    "deep; they were not used."), depth=MAX_ARGUMENT_DEPTH),
                        hint=QT_TRANSLATE_NOOP("Core", "The model wrote arguments no tool takes; ask again or "
                                                       "rephrase."),
                        details=details)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "The tool arguments are not valid JSON ({error} at "
                                                    "character {position})."), error=exc.msg, position=exc.pos),
                        details=details) from None
    except ValueError as exc:  # valid JSON Python will not read: a number of more than 4,300 digits
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "The tool arguments could not be read ({error})."),
                          error=str(exc).split(";")[0]),
                        details=details) from None
    if not isinstance(value, dict):
        raise ChatError(QT_TRANSLATE_NOOP("Core", "The tool arguments must be a JSON object."), details=details)
    return value
