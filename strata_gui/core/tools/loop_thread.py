"""One asyncio event loop on a thread of its own, awaited from any other loop (asyncio or qasync).

Why the MCP host needs it: the SDK's stdio client starts each server with an asyncio subprocess
(through anyio), and the app's loop is qasync's, which on Windows cannot run asyncio
subprocesses (DESIGN.md). A plain loop on a worker thread can, on every OS: on Windows it is a
``ProactorEventLoop`` (pipes and subprocesses through IOCP), on Linux a selector loop whose
children are reaped by asyncio's child watcher. The SDK's anyio task groups and cancel scopes then
run on a stock asyncio loop, as the SDK is tested, whatever loop the caller runs.

:meth:`LoopThread.run` is the bridge. Cancelling the task that awaits it cancels the coroutine on
the worker loop *and waits until it has unwound* (the MCP request is cancelled, its pipes and
processes are released) before the caller sees :class:`asyncio.CancelledError`, so "Stop" means
the call is over, not merely abandoned.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from strata_gui.core.base.blocking import run_blocking

log = logging.getLogger(__name__)

T = TypeVar("T")


def new_worker_loop() -> asyncio.AbstractEventLoop:
    """A loop that runs subprocesses on this OS, whatever event loop policy the app installed."""
    if sys.platform == "win32":  # pragma: no cover - Windows only
        return asyncio.ProactorEventLoop()  # type: ignore[attr-defined,unused-ignore]
    return asyncio.SelectorEventLoop()


class LoopThread:
    """A worker thread running one event loop, started on first use and stopped by :meth:`stop`.

    Args:
        name: The thread's name (shown by debuggers and the test suite's leftover check).
    """

    def __init__(self, name: str = "strata-loop") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the thread and its loop are up."""
        return self._loop is not None

    def loop(self) -> asyncio.AbstractEventLoop:
        """The worker loop, started if it is not running."""
        with self._lock:
            if self._loop is None:
                loop = new_worker_loop()
                started = threading.Event()
                thread = threading.Thread(target=self._main, args=(loop, started), name=self._name, daemon=True)
                thread.start()
                started.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _main(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        try:
            loop.run_forever()
            # Whatever is still pending (nothing, after an orderly stop) is cancelled and awaited
            # so its finally blocks run before the loop closes.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the worker loop from the caller's loop.

        Cancelling the awaiting task cancels ``coro`` there and waits for it to finish unwinding,
        then raises :class:`asyncio.CancelledError` here.
        """
        loop = self.loop()
        caller = asyncio.get_running_loop()
        done: asyncio.Future[T] = caller.create_future()
        box: list[asyncio.Task[T]] = []

        def copy_state(task: asyncio.Task[T]) -> None:  # on the caller's loop
            if done.done():
                return
            if task.cancelled():
                done.cancel()
            elif (exc := task.exception()) is not None:
                done.set_exception(exc)
            else:
                done.set_result(task.result())

        def deliver(task: asyncio.Task[T]) -> None:  # on the worker loop
            try:
                caller.call_soon_threadsafe(copy_state, task)
            except RuntimeError:  # the caller's loop is closed: nobody waits any more
                log.debug("a worker-loop result arrived after its caller's loop closed")

        def start() -> None:  # on the worker loop
            task = loop.create_task(coro)
            box.append(task)
            task.add_done_callback(deliver)

        loop.call_soon_threadsafe(start)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            def cancel() -> None:  # on the worker loop, after start(): callbacks run in order
                box[0].cancel()

            loop.call_soon_threadsafe(cancel)
            try:
                await asyncio.shield(done)
            except asyncio.CancelledError:
                pass
            except Exception:  # it failed while unwinding; the caller asked to cancel, so that wins
                log.debug("a cancelled worker-loop call failed while unwinding", exc_info=True)
            raise

    async def stop(self) -> None:
        """Stop the loop and join the thread (after the caller has finished its work on it)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        await run_blocking(thread.join, name=self._name + "-join")
