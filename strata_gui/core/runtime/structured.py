"""Structured output: read a user's JSON schema, check a reply against it, show it pretty.

The engine enforces ``response_format`` with a grammar, so a complete local reply is valid JSON
that follows the schema; what still goes wrong is a reply cut short (output limit, Stop), a
remote server that ignores the format, and schema keywords the grammar cannot express (the
engine ignores them). :func:`check_json` says which, where, in words a user can act on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from strata_gui.core.base.errors import ChatError
from strata_gui.core.base.state_file import MAX_DEPTH, nested_too_deeply
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

# jsonschema is imported where it is used: it takes ~60 ms to import, and the chat store (loaded
# at start-up) imports this module for load_schema.

MAX_PROBLEMS = 20  # a reply wrong everywhere lists this many places, then a count


@dataclass(frozen=True)
class JsonCheck:
    """The outcome of :func:`check_json`.

    Attributes:
        value: The parsed JSON (None when the text is not JSON).
        pretty: The reply indented for reading (the text itself when it is not JSON).
        problems: Where the reply fails, one line each (``$.items[2].price: -1 is less than the
            minimum of 0``); empty when it is valid.
    """

    value: Any
    pretty: str
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One paragraph for the user: valid, or the problems as a list."""
        if self.ok:
            return "The reply is valid JSON" + (" and follows the schema." if self.value is not None else ".")
        return "\n".join(["The reply does not match:"] + [f"• {p}" for p in self.problems])


def load_schema(text: str) -> dict[str, Any]:
    """Read a JSON schema as a user typed it (the conversation's structured-output setting).

    Raises:
        ChatError: It is not JSON, not an object, or not a valid schema (with where and why).
    """
    import jsonschema
    from jsonschema.exceptions import SchemaError

    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "The schema is not valid JSON: {error}"), error=str(exc)),
                        hint=QT_TRANSLATE_NOOP("Core", "Write the schema as a JSON object, e.g. "
                                                       "{\"type\": \"object\"}.")) from exc
    if not isinstance(schema, dict):
        raise ChatError(QT_TRANSLATE_NOOP("Core", "The schema must be a JSON object."),
                        hint=QT_TRANSLATE_NOOP("Core", "Write the schema as a JSON object, e.g. "
                                                       "{\"type\": \"object\"}."))
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "The schema is not valid: {where}: {reason}"),
                          where=_where(exc.absolute_path), reason=exc.message),
                        hint=QT_TRANSLATE_NOOP("Core", "See json-schema.org for the keywords a schema may use.")) from exc
    return schema


def check_json(text: str, schema: Mapping[str, Any] | None = None) -> JsonCheck:
    """Parse a reply as JSON, check it against ``schema`` and indent it.

    A fenced block (```` ```json … ``` ````), which some remote servers wrap JSON in, is read
    as its content.

    Args:
        text: The reply's answer text.
        schema: The schema it must follow (None: any JSON).
    """
    body = _unfenced(text)
    if nested_too_deeply(body):  # json.loads (and the schema check after it) would recurse until Python gives up
        return JsonCheck(None, text, (f"Nested more than {MAX_DEPTH} levels deep: not checked",))
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        problem = ("The reply ends before its JSON does (cut short?)" if body and _cut_short(body, exc)
                   else f"Not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")
        return JsonCheck(None, text, (problem,))
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    if schema is None:
        return JsonCheck(value, pretty)
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(value), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    problems = [f"{_where(e.absolute_path)}: {e.message}" for e in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"… and {len(errors) - MAX_PROBLEMS} more")
    return JsonCheck(value, pretty, tuple(problems))


def _where(path: Iterable[Any]) -> str:
    """A JSON path: ``$``, ``$.items[2].price``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if str(part).isidentifier() else f"[{part!r}]")
    return out


_PARTIAL_NUMBER = re.compile(r"-?\d*\.?\d*(?:[eE][+-]?\d*)?")


def _cut_short(body: str, exc: json.JSONDecodeError) -> bool:
    """Whether ``body`` is the start of some JSON (a reply cut off), not JSON gone wrong: the
    parser stopped in an open string, or at a literal or number that was still being written."""
    if exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg.startswith("Extra data"):
        return False
    rest = body[exc.pos:].rstrip()
    return not rest or any(w.startswith(rest) for w in ("true", "false", "null")) \
        or _PARTIAL_NUMBER.fullmatch(rest) is not None


def _unfenced(text: str) -> str:
    body = text.strip()
    if body.startswith("```"):
        first_line_end = body.find("\n")
        if first_line_end > 0 and body.endswith("```"):
            return body[first_line_end + 1:-3]
    return body
