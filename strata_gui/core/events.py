"""The one way core code calls its listeners (UI pages, the CLI, recorders).

A broken listener must never kill the app or the work that emitted the event, so
:func:`emit` catches what a listener raises. It logs it with its traceback on the dedicated
``strata.listener`` logger (:data:`LISTENER_LOGGER`) at ERROR level: that is a bug, and the test
suite fails any test during which such a record appears (tests/conftest.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import ParamSpec

P = ParamSpec("P")

LISTENER_LOGGER = "strata.listener"
log = logging.getLogger(LISTENER_LOGGER)


def emit(listeners: Iterable[Callable[P, object]], /, *args: P.args, **kwargs: P.kwargs) -> None:
    """Call every listener with the event; one that raises is logged and the others still run.

    The listeners are copied first, so a listener may (un)subscribe while being called.
    """
    for fn in list(listeners):
        try:
            fn(*args, **kwargs)
        except Exception:
            log.exception("listener %s failed on %s", _name(fn), _event_name(args))


def _name(fn: Callable[..., object]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _event_name(args: tuple[object, ...]) -> str:
    return type(args[0]).__name__ if args else "an event"
