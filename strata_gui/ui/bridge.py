"""The one doorway between Qt widgets and the asyncio core.

The app runs a qasync event loop, so core coroutines run on the GUI thread's loop and blocking
work goes to executors inside the core. :class:`AsyncBridge.run` starts a coroutine and returns
a :class:`TaskHandle` whose Qt signals carry progress, the result, or the error. Errors are
translated to :class:`~strata_gui.core.base.errors.StrataError` and, unless the caller handles them,
reported once through :attr:`AsyncBridge.error_occurred` — the single place the main window
shows errors from.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from strata_gui.core.base import Listeners, Progress, ProgressCallback, StrataError, describe

log = logging.getLogger(__name__)

CoroutineFactory = Callable[[ProgressCallback], Awaitable[Any]]


class TaskHandle(QObject):
    """A running core coroutine, seen from Qt.

    Signals:
        progress(Progress): each snapshot the coroutine reports (any thread; delivered queued).
        succeeded(object): the coroutine's return value.
        failed(StrataError): the error it raised, translated.
        cancelled(): it was cancelled (its ``finally`` blocks have run).
        finished(): always last, after exactly one of the three above.
    """

    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object)
    cancelled = Signal()
    finished = Signal()

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._task: asyncio.Task[Any] | None = None
        self.result: Any = None
        self.error: StrataError | None = None
        self.was_cancelled = False
        self.last_progress: Progress | None = None
        self._settled = False  # the outcome is out (its signals may still be running)

    @property
    def is_running(self) -> bool:
        """True until the outcome is known: a slot connected to ``succeeded`` (or ``failed``,
        ``cancelled``) already reads False, though the task finishes its last line after it."""
        return self._task is not None and not self._task.done() and not self._settled

    def cancel(self) -> None:
        """Ask the coroutine to stop; ``cancelled`` follows once its cleanup ran."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait(self) -> Any:
        """Await the underlying task (tests and chained work). Never raises."""
        if self._task is not None:
            try:
                await asyncio.shield(self._task)
            except BaseException:  # the handle's signals carry the outcome
                pass
        return self.result

    def _report_progress(self, p: Progress) -> None:
        self.last_progress = p
        self.progress.emit(p)


class AsyncBridge(QObject):
    """Starts core coroutines for widgets and funnels their errors to one signal.

    Signals:
        error_occurred(StrataError): an unhandled task error, to be shown once by the window.
        busy_changed(int): number of tasks running (for a global busy indicator).
    """

    error_occurred = Signal(object)
    busy_changed = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._handles: set[TaskHandle] = set()

    @property
    def running(self) -> list[TaskHandle]:
        return [h for h in self._handles if h.is_running]

    def run(self, make_coro: CoroutineFactory, *, name: str, show_errors: bool = True) -> TaskHandle:
        """Start ``make_coro(on_progress)`` on the running loop.

        Args:
            make_coro: Called at once with the progress callback; returns the awaitable.
            name: Short description for logs ("Download Vulkan engine").
            show_errors: When True, a failure is also emitted on :attr:`error_occurred`.
        """
        handle = TaskHandle(name, self)
        loop = asyncio.get_event_loop()

        async def runner() -> None:
            try:
                handle.result = await make_coro(handle._report_progress)
            except asyncio.CancelledError:
                handle.was_cancelled = True
                handle._settled = True
                log.info("task cancelled: %s", name)
                handle.cancelled.emit()
            except Exception as exc:
                err = describe(exc)
                handle.error = err
                handle._settled = True
                if isinstance(exc, StrataError):
                    log.warning("task failed: %s: %s", name, err)
                else:
                    log.error("task crashed: %s", name, exc_info=exc)
                handle.failed.emit(err)
                if show_errors:
                    self.error_occurred.emit(err)
            else:
                handle._settled = True
                handle.succeeded.emit(handle.result)
            finally:
                self._handles.discard(handle)
                self.busy_changed.emit(len(self._handles))
                handle.finished.emit()

        self._handles.add(handle)
        handle._task = loop.create_task(runner(), name=name)
        self.busy_changed.emit(len(self._handles))
        return handle

    def cancel_all(self) -> None:
        for handle in list(self._handles):
            handle.cancel()

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Cancel every task and wait (bounded) for their cleanup."""
        tasks = [h._task for h in self._handles if h._task is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)


E = TypeVar("E")


def follow(widget: QObject, listeners: Listeners[E], fn: Callable[[E], object]) -> None:
    """Call ``fn(event)`` for each core event while ``widget`` lives (pages subscribe to the core's
    changes themselves; nothing relays them). Core events arrive on the loop's thread, which is the
    GUI thread, so ``fn`` may touch widgets."""
    unsubscribe = listeners.subscribe(fn)
    widget.destroyed.connect(lambda *_: unsubscribe())
