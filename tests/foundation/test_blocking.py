"""run_blocking: the answer of a call that outlives its event loop (the app quit while a start-up
check still ran) is dropped quietly, not printed as a thread's traceback on exit."""

from __future__ import annotations

import asyncio
import threading

import pytest

from strata_gui.core.base.blocking import run_blocking


@pytest.mark.parametrize("fails", [False, True])
def test_an_answer_after_the_loop_closed_is_dropped_quietly(monkeypatch: pytest.MonkeyPatch, fails: bool) -> None:
    release = threading.Event()
    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    workers: list[threading.Thread] = []

    def slow_check() -> int:
        workers.append(threading.current_thread())
        release.wait(10)
        if fails:
            raise OSError("the check failed after all")
        return 1

    async def app() -> None:
        check = asyncio.ensure_future(run_blocking(slow_check, name="strata-test-late"))
        await asyncio.sleep(0.05)
        check.cancel()  # the app quits: its tasks are cancelled, the worker thread still runs

    loop = asyncio.new_event_loop()
    loop.run_until_complete(app())
    loop.close()
    release.set()
    workers[0].join(10)
    assert not workers[0].is_alive()
    assert raised == []
