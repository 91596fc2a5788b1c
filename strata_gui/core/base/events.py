"""The one way core code calls its listeners (UI pages, the CLI, recorders).

A broken listener must never kill the app or the work that emitted the event, so
:func:`emit` catches what a listener raises. It logs it with its traceback on the dedicated
``strata.listener`` logger (:data:`LISTENER_LOGGER`) at ERROR level: that is a bug, and the test
suite fails any test during which such a record appears (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Generic, ParamSpec, TypeVar

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


E = TypeVar("E")


class Listeners(Generic[E]):
    """The one listener list every core service announces its changes through.

    ``subscribe`` returns the unsubscribe function (so a page that goes away can let go); the
    events are delivered by :func:`emit`, so one broken listener never stops the others or the
    service. Events are objects (one small frozen dataclass per kind of change), never bare
    arguments: a listener can ``isinstance``-check what it cares about.
    """

    __slots__ = ("_fns",)

    def __init__(self) -> None:
        self._fns: list[Callable[[E], object]] = []

    def subscribe(self, fn: Callable[[E], object]) -> Callable[[], None]:
        """Call ``fn(event)`` for every event from now on; returns the unsubscribe."""
        self._fns.append(fn)
        return lambda: self.unsubscribe(fn)

    def unsubscribe(self, fn: Callable[[E], object]) -> None:
        """Stop calling ``fn`` (no error when it was not subscribed)."""
        with contextlib.suppress(ValueError):
            self._fns.remove(fn)

    def emit(self, event: E) -> None:
        """Deliver ``event`` to every listener (see :func:`emit`)."""
        if self._fns:
            emit(self._fns, event)

    def __len__(self) -> int:
        return len(self._fns)
