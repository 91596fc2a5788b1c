"""The one way tests wait for something that happens on its own (an engine's exit, an idle
time-out, a stream's first token): poll a condition until it holds or a deadline passes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.01) -> None:
    """Poll ``predicate`` on the running loop until it is true.

    Raises:
        TimeoutError: it is still false after ``timeout`` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError(f"condition not met within {timeout:.1f} s")
        await asyncio.sleep(interval)


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.02) -> None:
    """:func:`until` for code without an event loop (threads, processes)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout:.1f} s")
        time.sleep(interval)
