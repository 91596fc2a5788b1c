"""The worker loop the MCP host runs on, awaited from asyncio and from qasync."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

import pytest

from strata_gui.core.tools.loop_thread import LoopThread


def _scenario() -> Coroutine[Any, Any, None]:
    async def main() -> None:
        lane = LoopThread("test-lane")
        caller = threading.current_thread()
        try:
            async def where() -> threading.Thread:
                return threading.current_thread()

            worker = await lane.run(where())
            assert worker is not caller and worker.name == "test-lane"

            async def boom() -> None:
                raise ValueError("from the worker")

            with pytest.raises(ValueError, match="from the worker"):
                await lane.run(boom())

            steps: list[str] = []
            started = threading.Event()

            async def slow() -> None:
                try:
                    started.set()
                    await asyncio.sleep(3600)
                finally:
                    await asyncio.sleep(0.05)  # unwinding takes a while; the caller waits for it
                    steps.append("unwound")

            call = asyncio.ensure_future(lane.run(slow()))
            while not started.is_set():
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert steps == ["unwound"]

            # Cancelled before the worker even started it: nothing runs, nothing hangs.
            early = asyncio.ensure_future(lane.run(slow()))
            await asyncio.sleep(0)
            early.cancel()
            with pytest.raises(asyncio.CancelledError):
                await early
        finally:
            await lane.stop()
        assert not lane.running and not worker.is_alive()

    return main()


def test_on_asyncio() -> None:
    asyncio.run(_scenario())


def test_on_qasync(qasync_loop: asyncio.AbstractEventLoop) -> None:
    qasync_loop.run_until_complete(_scenario())
