"""Sentences the core writes for people, translatable at the edge.

The core is Qt-free and writes English. A :class:`Text` is such a sentence that also keeps its
template and arguments, so the GUI can look the template up in its catalogue and fill in the same
arguments (``ui/i18n.core_text``); the CLI prints it as it is (a ``Text`` *is* the English ``str``).
Templates are marked with :func:`QT_TRANSLATE_NOOP` in context ``"Core"``, which is how
``pyside6-lupdate`` finds them (scripts/update-translations.sh scans the core files that use it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

CONTEXT = "Core"


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Mark ``text`` for the catalogue; returns it unchanged."""
    return text


class Text(str):
    """An English sentence made from ``template`` and ``args`` (``str.format`` fields)."""

    template: str
    args: Mapping[str, Any]

    def __new__(cls, template: str, /, **args: Any) -> Text:
        made = super().__new__(cls, template.format(**args) if args else template)
        made.template = template
        made.args = args
        return made


def T(template: str, /, **args: Any) -> Text:
    """``Text(template, **args)``; the template must also be marked with :func:`QT_TRANSLATE_NOOP`."""
    return Text(template, **args)


def joined(parts: Sequence[str], sep: str = " ") -> Text:
    """Sentences written one after the other, as one :class:`Text` whose arguments are the parts.

    The joint is no sentence of its own (the catalogue has nothing for it), so ``core_text`` keeps it
    and translates each part: ``T(QT_TRANSLATE_NOOP("Core", "Not saved: {problems}"), problems=joined(found))``.
    """
    fields = {f"part{i}": part for i, part in enumerate(parts)}
    joint = sep.replace("{", "{{").replace("}", "}}")
    return Text(joint.join("{" + name + "}" for name in fields), **fields)


def to_json(text: str) -> Any:
    """``text`` as JSON data that :func:`from_json` turns back into the same :class:`Text` (a plain
    string stays a string), so a sentence saved to a file is still translated when read back."""
    if not isinstance(text, Text):
        return str(text)
    args = {k: to_json(v) if isinstance(v, str) else v if isinstance(v, (int, float, bool)) or v is None else str(v)
            for k, v in text.args.items()}
    return {"template": text.template, "args": args}


def from_json(data: Any) -> str:
    """What :func:`to_json` wrote, as a :class:`Text` again (raises KeyError/TypeError/ValueError on
    data it did not write)."""
    if isinstance(data, str):
        return data
    template, args = data["template"], data["args"]
    if not isinstance(template, str) or not isinstance(args, dict):
        raise TypeError("not a saved text")
    return Text(template, **{str(k): from_json(v) if isinstance(v, (str, dict)) else v for k, v in args.items()})


# C0 and C1 controls (terminal escapes start with ESC or CSI) and the bidirectional overrides that
# reorder what follows them; tab and newline stay, they are how text is laid out.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: str) -> str:
    """Text another program sent (a tool server, a remote engine), safe to show anywhere.

    Control characters become visible escapes (ESC is shown as ``\\x1b``), so a terminal does not act
    on them (hide the next question, move the cursor, retitle the window) and a bubble or log shows
    what was sent; tabs and newlines stay. Lone surrogates (half an emoji from a JSON ``\\ud83d``)
    become U+FFFD, so the text can be encoded and saved.
    """
    return _CONTROLS.sub(_escaped, well_formed(text))


def well_formed(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so it encodes as UTF-8.

    They come from JSON escapes of half an emoji, or from bytes that were not UTF-8 (Python keeps
    those as ``\\udcXX`` in a command line). Text without them is returned as it is.
    """
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


# What json.dumps(ensure_ascii=False) leaves as it is and a terminal may act on (DEL, C1 controls,
# bidirectional overrides), and lone surrogates, which cannot be printed at all.
_RAW_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def shown_json(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) safe to print: the characters
    :func:`shown` escapes are written as JSON's own ``\\u`` escapes (four hex digits), read back as the same
    characters, so the data is unchanged (half an emoji stays ``\\ud83d``). Other letters stay as
    they are, readable."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
