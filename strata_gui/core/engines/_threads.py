"""Run one blocking call on its own short-lived thread.

Used instead of the loop's default executor so no idle pool threads outlive the work (the
test suite fails on leftover threads), and so it behaves the same under asyncio and qasync.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def run_in_thread(fn: Callable[[], T], name: str = "strata-worker") -> T:
    """Await ``fn()`` run on a new thread. Cancelling the await does not stop ``fn``."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def deliver_result(value: T) -> None:
        if not fut.done():
            fut.set_result(value)

    def deliver_error(exc: BaseException) -> None:
        if not fut.done():
            fut.set_exception(exc)

    def target() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the awaiting coroutine
            loop.call_soon_threadsafe(deliver_error, exc)
        else:
            loop.call_soon_threadsafe(deliver_result, value)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return await fut
