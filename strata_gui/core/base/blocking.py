"""The one way core code leaves the event loop for blocking work (file I/O, hashing, subprocess
waits, psutil scans, WMI/PDH).

- :func:`run_blocking` runs one call on its own short-lived thread. It is used instead of the
  loop's default executor so no idle pool threads outlive the work (the test suite fails on
  leftover threads), and it behaves the same under asyncio and qasync.
- :class:`SerialLane` runs calls one after another on a single worker thread, in submission
  order, for pipelines that must keep order (a download writing and hashing chunks while the
  loop reads the next ones). Use it as an async context manager so the thread always ends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")


async def run_blocking(fn: Callable[..., T], *args: Any, name: str = "strata-worker") -> T:
    """Await ``fn(*args)`` run on a new thread. Cancelling the await does not stop ``fn``."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()

    def deliver_result(value: T) -> None:
        if not fut.done():
            fut.set_result(value)

    def deliver_error(exc: BaseException) -> None:
        if not fut.done():
            fut.set_exception(exc)

    def hand_over(deliver: Callable[[Any], None], value: Any) -> None:
        try:
            loop.call_soon_threadsafe(deliver, value)
        except RuntimeError:
            # The loop closed meanwhile (the app quit while a start-up check still ran): nobody
            # waits for the answer. asyncio says "Event loop is closed", qasync "Signal source
            # has been deleted"; left alone, each printed a traceback as the app exited.
            pass

    def target() -> None:
        try:
            value = fn(*args)
        except BaseException as exc:  # handed to the awaiting coroutine
            hand_over(deliver_error, exc)
        else:
            hand_over(deliver_result, value)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return await fut


class SerialLane:
    """One worker thread that runs submitted calls in order (``async with SerialLane() as lane``)."""

    def __init__(self, name: str = "strata-lane") -> None:
        self._name = name
        self._pool: ThreadPoolExecutor | None = None

    async def __aenter__(self) -> SerialLane:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # No await here: a cancel arriving while we leave must not undo work that completed (a
        # finished download already renamed into place). On the normal path every submitted call
        # was awaited, so the worker is idle and joining it is immediate; after an error or a
        # cancel, queued calls are dropped and the thread ends on its own.
        pool.shutdown(wait=et is None, cancel_futures=True)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)``; the returned future resolves on the loop."""
        if self._pool is None:
            raise RuntimeError("SerialLane used outside 'async with'")
        return asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
