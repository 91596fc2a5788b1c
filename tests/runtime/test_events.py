"""The listener helper: a broken listener is logged, never fatal, and fails the test that caused it."""

from __future__ import annotations

import logging

from strata_gui.core.base.events import LISTENER_LOGGER, emit
from tests.conftest import ListenerErrors, listener_failures


def test_a_broken_listener_does_not_stop_the_others_and_is_reported(_listener_errors: ListenerErrors) -> None:
    got: list[int] = []

    def broken(event: int) -> None:
        raise ZeroDivisionError(event)

    emit([broken, got.append], 7)  # production: no exception reaches the emitter
    assert got == [7]
    [record] = _listener_errors.records
    assert record.name == LISTENER_LOGGER and record.levelno == logging.ERROR
    problem = listener_failures(_listener_errors.records)
    # This is what the autouse fixture fails the test with: the listener, the event, the traceback.
    assert "broken" in problem and "int" in problem and "ZeroDivisionError: 7" in problem
    _listener_errors.records.clear()  # the failure above was on purpose


def test_quiet_listeners_leave_nothing_to_report(_listener_errors: ListenerErrors) -> None:
    seen: list[tuple[str, int]] = []
    emit([lambda a, b: seen.append((a, b))], "x", 1)
    assert seen == [("x", 1)]
    assert listener_failures(_listener_errors.records) == ""


def test_a_listener_may_unsubscribe_while_called() -> None:
    listeners: list = []  # type: ignore[type-arg]
    calls: list[str] = []

    def once(event: str) -> None:
        calls.append(event)
        listeners.remove(once)

    listeners.append(once)
    emit(listeners, "a")
    emit(listeners, "b")
    assert calls == ["a"]
