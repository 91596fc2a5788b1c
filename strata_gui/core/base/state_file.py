"""The one way Strata reads its own JSON state files (settings, ledgers, lists, caches).

A state file is written by Strata, but anything can end up in it: a crash halfway, a sync tool,
a hand edit, another program. ``json.loads`` takes brackets nested until Python's recursion limit
(and then raises RecursionError, which no caller expects), ``NaN`` and ``1e300`` (which break the
date and size arithmetic that follows). So every state file is read here, with bounds:

- at most :data:`MAX_DEPTH` levels of nesting (Strata's files use four);
- numbers finite and within ±2**63 (timestamps, sizes and counts all fit): any other number is read
  as ``null``, which no field takes, so the reader falls back for that one value and keeps the rest;
- at most :data:`MAX_BYTES`, valid UTF-8, and the top level of the expected type.

What a reader does with an unusable file depends on what is in it:

- :func:`load_cache`: a cache is rebuilt, so it falls back to empty (and says so in the log);
- :func:`load_record`: a ledger or configuration is the user's, so it is kept aside under a new
  name, and the reader gets a sentence that names it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T, Text

log = logging.getLogger(__name__)

MAX_DEPTH = 32
MAX_BYTES = 64 * 1024 * 1024
_LIMIT = 2**63
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")

Shape = TypeVar("Shape", dict[str, Any], list[Any])


class UnusableStateFile(ValueError):
    """A state file that cannot be used as it is; ``reason`` says why, in words for a user."""

    def __init__(self, reason: Text) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_state(text: str, expect: type[Shape]) -> Shape:
    """``text`` as JSON of type ``expect``, within the bounds above.

    Raises:
        UnusableStateFile: It is not JSON, is nested too deeply, or its top level is of another type.
    """
    if nested_too_deeply(text):
        raise UnusableStateFile(T(QT_TRANSLATE_NOOP("Core", "it is nested too deeply")))
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_bounded_float, parse_int=_bounded_int)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; so is a 5,000-digit int
        raise UnusableStateFile(T(QT_TRANSLATE_NOOP("Core", "it is not valid JSON ({reason})"),
                                  reason=str(exc)[:120])) from exc
    if not isinstance(value, expect):
        raise UnusableStateFile(T(QT_TRANSLATE_NOOP("Core", "it does not hold what Strata wrote there")))
    return value


def read_state(path: Path, expect: type[Shape]) -> Shape | None:
    """The JSON in ``path``; None when there is no such file.

    Raises:
        UnusableStateFile: The file is there but damaged (see :func:`parse_state`), too large, or not UTF-8.
        OSError: The file could not be read (permissions, a locked or vanished disk).
    """
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_BYTES:
        raise UnusableStateFile(T(QT_TRANSLATE_NOOP("Core", "it is larger than {size} MiB"),
                                  size=MAX_BYTES // (1024 * 1024)))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnusableStateFile(T(QT_TRANSLATE_NOOP("Core", "it is not UTF-8 text"))) from exc
    return parse_state(text, expect)


def load_cache(path: Path, expect: type[Shape]) -> Shape | None:
    """A cache file's JSON, or None when it is missing, damaged or unreadable (it is rebuilt).

    Never raises. A damaged cache is logged once per read and left for the next write to replace.
    """
    try:
        return read_state(path, expect)
    except UnusableStateFile as exc:
        log.warning("ignoring the cache %s, it will be rebuilt: %s", path, exc.reason)
    except OSError as exc:
        log.warning("could not read the cache %s: %s", path, exc.strerror or exc)
    return None


@dataclass(frozen=True)
class Loaded:
    """What :func:`load_record` read.

    Attributes:
        data: The file's JSON; None when the file is missing, was damaged or could not be read.
        notice: For the user when the file could not be used: what happened and where it went.
        moved: Where a damaged file was kept (None when it was not moved).
        unreadable: The file is there but could not be read (permissions, I/O): it is left as it is,
            and a store must not write over it.
    """

    data: Any
    notice: Text | None = None
    moved: Path | None = None
    unreadable: bool = False


def load_record(path: Path, expect: type[Shape], what: str,
                clock: Callable[[], float] = time.time) -> Loaded:
    """A ledger's or configuration's JSON; a damaged file is kept aside and named.

    Never raises. ``what`` names the file for the user (a sentence's subject, already marked for
    translation, e.g. "the engine update ledger"). A file that cannot be read at all (permissions)
    stays where it is, untouched; a damaged one is renamed to ``NAME.corrupt-EPOCH`` next to it so
    the next save starts afresh without losing it.
    """
    try:
        return Loaded(read_state(path, expect))
    except OSError as exc:
        notice = T(QT_TRANSLATE_NOOP("Core", "Could not read {what} ({path}): {reason}. Strata goes on without it."),
                   what=what, path=path, reason=exc.strerror or exc)
        log.warning("%s", notice)
        return Loaded(None, notice, unreadable=True)
    except UnusableStateFile as exc:
        moved = keep_aside(path, clock)
        if moved is None:
            notice = T(QT_TRANSLATE_NOOP("Core", "Could not use {what} ({path}): {reason}. Strata goes on without "
                                                 "it and left the file as it is."),
                       what=what, path=path, reason=exc.reason)
        else:
            notice = T(QT_TRANSLATE_NOOP("Core", "Could not use {what} ({path}): {reason}. The file was kept as "
                                                 "{name}, and Strata goes on without it."),
                       what=what, path=path, reason=exc.reason, name=moved.name)
        log.warning("%s", notice)
        return Loaded(None, notice, moved)


def write_state(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` as JSON, whole or not at all: a temporary file beside it, then a
    rename, so a crash or a full disk never leaves half a file for :func:`read_state` to meet.

    Raises:
        OSError: The folder or the file could not be written (the old file is then unchanged).
    """
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def keep_aside(path: Path, clock: Callable[[], float] = time.time) -> Path | None:
    """Rename a damaged ``path`` to ``NAME.corrupt-EPOCH`` beside it; None when that failed."""
    target = path.with_name(f"{path.name}.corrupt-{int(clock())}")
    try:
        os.replace(path, target)
    except OSError as exc:
        log.warning("could not keep the damaged %s aside: %s", path, exc.strerror or exc)
        return None
    return target


def nested_too_deeply(text: str) -> bool:
    """Whether the JSON ``text`` nests more than :data:`MAX_DEPTH` levels (json.loads would recurse)."""
    # Brackets inside strings do not nest: blank the strings first (one linear pass each).
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_DEPTH:
            return True
    return False


def _no_constant(name: str) -> None:
    return None  # NaN, Infinity: no field takes null, so the reader falls back for that value alone


def _bounded_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) and abs(value) < _LIMIT else None


def _bounded_int(text: str) -> int | None:
    if len(text) > 20:  # more digits than 2**63 has (int() of thousands of digits is slow, or refused)
        return None
    value = int(text)
    return value if abs(value) < _LIMIT else None
