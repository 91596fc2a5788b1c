"""The event loop the app runs on: qasync's, with every asyncio callback run while it runs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import qasync

T = TypeVar("T")


class StrataEventLoop(qasync.QEventLoop):  # type: ignore[misc]  # qasync ships no type hints
    """qasync's loop, except that :meth:`run_until_complete` returns as soon as its future is done.

    qasync's own version then processes Qt's pending events once more with the loop no longer
    running. The asyncio callbacks it runs there find no running loop: an httpx request stepped
    there fails half-way through (anyio asks for the running loop) and leaves its connection's lock
    taken, so every later request on the shared client hangs. Here pending callbacks wait for the
    next run of the loop instead (the app runs it once, so only its tests and benches run it again).
    """

    def run_until_complete(self, future: Awaitable[T]) -> T:
        fut: asyncio.Future[T] = asyncio.ensure_future(future, loop=self)

        def stop(_fut: asyncio.Future[T]) -> None:
            self.stop()

        fut.add_done_callback(stop)
        try:
            self.run_forever()
        finally:
            fut.remove_done_callback(stop)
        if not fut.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return fut.result()


def new_event_loop(app: Any) -> StrataEventLoop:
    """The loop for ``app`` (a QApplication), set as the current event loop."""
    loop = StrataEventLoop(app)
    asyncio.set_event_loop(loop)
    return loop
