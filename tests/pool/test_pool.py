"""The engine pool with real llama-server processes: sharing, starting once, making room, idle
time-outs, crashes and the one fallback loop."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import httpx
import psutil
import pytest

from strata_gui.core.base.errors import ServerBusyError, ServerError
from strata_gui.core.pool import (
    EnginePool,
    EngineUnloaded,
    FailedOver,
    Lease,
    PoolEvent,
    Waiting,
    run_along_plan,
)
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EngineKind, llama_command
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.outcome import OutcomeKind, ProcessEnded
from tests.runtime.conftest import cpu_spec, rocm_without_libraries
from tests.support import gguf_model
from tests.support.engines import TestEngines
from tests.support.poll import until
from tests.support.pool import launcher

pytestmark = pytest.mark.engine

T = TypeVar("T")
SMALL = ServerSettings(ctx_size=256, jinja=False, metrics=False)


def engines_of(model: Path) -> list[psutil.Process]:
    """The llama-server processes of this test that have ``model`` loaded."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if str(model) in p.cmdline():
                out.append(p)
        except psutil.Error:
            continue
    return out


class Budget:
    """A memory policy: every model needs ``need`` bytes, the budget is ``budget`` bytes."""

    def __init__(self, need: int, budget: int) -> None:
        self.need, self.limit = need, budget

    def estimate(self, engine: EngineSpec, model: Path, settings: ServerSettings) -> int:
        return self.need

    def budget(self, group: str) -> int:
        return self.limit


def with_pool(body: Callable[[EnginePool, list[PoolEvent]], Awaitable[T]], **kw: object) -> T:
    async def main() -> T:
        async with httpx.AsyncClient(trust_env=False) as http:
            pool = EnginePool(launcher(http), **kw)  # type: ignore[arg-type]
            events: list[PoolEvent] = []
            pool.events.subscribe(events.append)
            try:
                return await body(pool, events)
            finally:
                await pool.aclose()

    return asyncio.run(main())


@pytest.fixture(scope="module")
def second_model(tmp_path_factory: pytest.TempPathFactory, test_model: Path) -> Path:
    return gguf_model.write_model(tmp_path_factory.mktemp("second") / "strata-second-F16.gguf",
                                  gguf_model.ModelSpec(seed=99, name="Strata Second"))


def test_ten_requests_during_a_load_start_the_engine_once_and_share_its_slots_in_order(
        test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)
    slots4 = dataclasses.replace(SMALL, parallel=4)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        tasks = [asyncio.create_task(pool.acquire(spec, test_model, slots4, user=f"api-{i}")) for i in range(10)]
        await until(lambda: sum(t.done() for t in tasks) == 4 and len(pool.activity().waiting) == 6, 60)
        assert [t.done() for t in tasks] == [True] * 4 + [False] * 6  # the first four, in arrival order
        leases = [t.result() for t in tasks[:4]]
        engine = leases[0].engine
        assert {id(lease.engine) for lease in leases} == {id(engine)} and engine.leases == 4 and engine.slots == 4
        assert pool.starts == 1 and len(engines_of(test_model)) == 1
        # Each waiter knows its place: 4 slots taken, then those ahead of it.
        aheads = [w.ahead for w in pool.activity().waiting]
        assert aheads == [4, 5, 6, 7, 8, 9]
        said = [e.reason for e in events if isinstance(e, Waiting) and e.user == "api-9"]
        assert said and said[-1] == "Waiting: 9 requests ahead for strata-test-llama-F16.gguf"
        async with httpx.AsyncClient() as http:
            health = await http.get(leases[0].base_url + "/health")
        assert health.status_code == 200
        # A slot given back goes to the next in line, not to whoever asks later.
        late = asyncio.create_task(pool.acquire(spec, test_model, slots4, user="late"))
        leases[0].release()
        await asyncio.wait([tasks[4]], timeout=10)
        assert not any(t.done() for t in tasks[5:]) and not late.done()
        for lease in [*leases[1:], tasks[4].result()]:
            lease.release()
        for task in [*tasks[5:], late]:  # in arrival order, each as a slot comes free
            (await task).release()
        assert not engine.busy and pool.engines() == [engine] and pool.starts == 1  # stays loaded

    with_pool(body)


def test_same_model_other_settings_replaces_the_idle_engine_and_waits_for_a_busy_one(
        test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)
    bigger = dataclasses.replace(SMALL, ctx_size=512)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        chat = await pool.acquire(spec, test_model, SMALL, user="chat")
        first_pid = chat.engine.pid
        bench = asyncio.create_task(pool.acquire(spec, test_model, bigger, user="benchmark", exclusive=True))
        # The chat's engine is in use: the benchmark waits instead of loading a second copy.
        await until(lambda: any(isinstance(e, Waiting) for e in events), 10)
        assert not bench.done()
        waits = [e for e in events if isinstance(e, Waiting)]
        assert waits and "in use by the chat" in waits[-1].reason and waits[-1].user == "benchmark"
        assert len(engines_of(test_model)) == 1
        chat.release()
        lease = await bench
        assert lease.engine.pid != first_pid and len(engines_of(test_model)) == 1
        assert lease.engine.server.command[lease.engine.server.command.index("-c") + 1] == "512"
        unloaded = [e for e in events if isinstance(e, EngineUnloaded)]
        assert [e.reason for e in unloaded] == ["reloaded with other settings"]
        lease.release()

    with_pool(body)


def test_memory_budget_unloads_the_least_recently_used_idle_engine(
        test_engines: TestEngines, test_model: Path, second_model: Path, tmp_path: Path) -> None:
    spec = cpu_spec(test_engines)
    third = gguf_model.write_model(tmp_path / "strata-third-F16.gguf", gguf_model.ModelSpec(seed=7))

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        a = await pool.acquire(spec, test_model, SMALL, user="api")
        a.release()
        b = await pool.acquire(spec, second_model, SMALL, user="api")
        b.release()
        assert {e.model for e in pool.engines()} == {test_model, second_model}  # two fit side by side
        a = await pool.acquire(spec, test_model, SMALL, user="api")  # test_model is now the most recent
        a.release()
        c = await pool.acquire(spec, third, SMALL, user="api")
        assert {e.model for e in pool.engines()} == {test_model, third}
        [unloaded] = [e for e in events if isinstance(e, EngineUnloaded)]
        assert unloaded.engine.model == second_model and "make room" in unloaded.reason
        assert not engines_of(second_model)
        # Both loaded engines in use: a fourth start waits, or is refused when it may not wait.
        a = await pool.acquire(spec, test_model, SMALL, user="chat")
        with pytest.raises(ServerBusyError, match="Waiting for memory") as info:
            await pool.acquire(spec, second_model, SMALL, user="api", wait=False)
        assert info.value.retry_after > 0
        waiting = asyncio.create_task(pool.acquire(spec, second_model, SMALL, user="api"))
        await until(lambda: any(isinstance(e, Waiting) and e.model == second_model for e in events), 10)
        assert not waiting.done()
        c.release()
        b = await waiting
        assert {e.model for e in pool.engines()} == {test_model, second_model}
        b.release()
        a.release()

    mib = 1024 * 1024  # above what the tiny model really holds (the pool counts the larger)
    with_pool(body, memory=Budget(need=100 * mib, budget=250 * mib))


def test_two_models_asked_for_at_once_where_one_fits_are_served_in_turn(
        test_engines: TestEngines, test_model: Path, second_model: Path) -> None:
    """Memory for one model, two asked for at the same moment: the engine just loaded for one waiter
    was unloaded for the other before its waiter took it, and back, for ever (both requests hung)."""
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        async def use(model: Path) -> Path:
            lease = await pool.acquire(spec, model, SMALL, user="api")
            try:
                await asyncio.sleep(0.05)  # a short request
                return lease.engine.model
            finally:
                lease.release()

        served = await asyncio.wait_for(asyncio.gather(use(test_model), use(second_model)), 60)
        assert served == [test_model, second_model]
        assert len([e for e in events if isinstance(e, EngineUnloaded)]) <= 2

    mib = 1024 * 1024
    with_pool(body, memory=Budget(need=100 * mib, budget=150 * mib))


def test_a_keep_alive_of_a_month_keeps_the_engine_in_the_apps_event_loop(
        test_engines: TestEngines, test_model: Path, qasync_loop: asyncio.AbstractEventLoop) -> None:
    """Qt's timers count milliseconds in 31 bits (~24.8 days): a lease asking to stay loaded 720 h
    made every later release of that engine raise OverflowError in the app (its model server
    answered 500 to every request to that model)."""
    spec = cpu_spec(test_engines)

    async def body() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            pool = EnginePool(launcher(http))
            try:
                lease = await pool.acquire(spec, test_model, SMALL, user="api", keep_alive=720 * 3600.0)
                lease.release()
                again = await pool.acquire(spec, test_model, SMALL, user="api")
                assert again.engine is lease.engine  # still loaded, no time-out armed
                again.release()
                assert lease.engine.expires_at is None and pool.engines() == [lease.engine]
            finally:
                await pool.aclose()

    qasync_loop.run_until_complete(asyncio.wait_for(body(), 60))


def test_idle_engines_unload_after_the_time_out_and_keep_alive_wins(test_engines: TestEngines,
                                                                     test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        loop = asyncio.get_running_loop()
        unloaded_at: list[float] = []
        pool.events.subscribe(lambda e: unloaded_at.append(loop.time()) if isinstance(e, EngineUnloaded) else None)
        lease = await pool.acquire(spec, test_model, SMALL, user="api")
        released_at = loop.time()
        lease.release()
        assert pool.engines() and engines_of(test_model)
        await until(lambda: not pool.engines(), 10)
        assert unloaded_at[0] - released_at >= 1.5  # the pool's time-out is 1.5 s: not before
        assert not pool.engines() and not engines_of(test_model)
        assert [e.reason.startswith("idle for") for e in events if isinstance(e, EngineUnloaded)] == [True]
        # keep_alive 0 (Ollama's "unload after this request") unloads at once after the release.
        lease = await pool.acquire(spec, test_model, SMALL, user="api", keep_alive=0)
        lease.release()
        await until(lambda: not pool.engines(), 10)
        assert not pool.engines()

    with_pool(body, idle_timeout=lambda: 1.5)


def test_an_engine_that_dies_while_idle_is_started_again(test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, _events: list[PoolEvent]) -> None:
        lease = await pool.acquire(spec, test_model, SMALL, user="chat")
        engine = lease.engine
        lease.release()
        os.kill(engine.pid or 0, signal.SIGKILL)
        await engine.server.wait_exited()
        assert engine.state is ServerState.CRASHED and pool.engines() == []
        again = await pool.acquire(spec, test_model, SMALL, user="chat")
        assert again.engine is not engine and again.engine.ready
        again.release()

    with_pool(body)


def test_cancelling_the_only_waiter_stops_the_load(test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, _events: list[PoolEvent]) -> None:
        task = asyncio.create_task(pool.acquire(spec, test_model, SMALL, user="chat"))
        await until(lambda: engines_of(test_model), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The scheduler's next pass sees nobody wants the load any more and stops it.
        await until(lambda: not pool.engines(), 10)
        await until(lambda: not engines_of(test_model), 10)
        assert pool.starts == 1
        assert not engines_of(test_model)

    with_pool(body)


def test_the_fallback_loop_moves_on_says_why_and_sends_the_job_again(
        test_engines: TestEngines, test_model: Path, tmp_path: Path) -> None:
    broken = rocm_without_libraries(test_engines, tmp_path)
    cpu = cpu_spec(test_engines)
    seen: list[FailedOver] = []

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        calls: list[str] = []

        async def job(lease: Lease) -> str:
            calls.append(lease.spec.id)
            async with httpx.AsyncClient() as http:
                resp = await http.post(lease.base_url + "/tokenize", json={"content": "hello"}, headers=lease.auth_headers())
            if resp.status_code != 200:
                raise ServerError("no tokens")
            return lease.spec.id

        ran = await run_along_plan(pool, [broken, cpu], test_model, lambda _s: SMALL, job, user="api",
                                   on_failover=seen.append)
        assert (ran.value, ran.index, calls) == ("cpu-test", 1, ["cpu-test"])
        [moved] = seen
        assert moved.failed.id == "rocm-nolibs" and moved.next.id == "cpu-test" and not moved.during_job
        assert "library it needs was not found" in moved.text and moved.text.endswith("Continuing on CPU.")
        assert moved in events  # the pool announces it too

        # A job that fails on an engine's first request moves on as well; a later failure does not.
        attempts: list[str] = []

        async def fails_on_cpu_once(lease: Lease) -> str:
            attempts.append(lease.spec.id)
            if len(attempts) == 1:
                raise ServerError("the first request failed")
            return lease.spec.id

        other = dataclasses.replace(cpu, id="cpu-second", label="CPU 2")
        ran = await run_along_plan(pool, [other, cpu], test_model, lambda _s: dataclasses.replace(SMALL, ctx_size=300),
                                   fails_on_cpu_once, user="api")
        assert attempts == ["cpu-second", "cpu-test"] and ran.index == 1

        with pytest.raises(ProcessEnded) as info:
            await run_along_plan(pool, [broken], test_model, lambda _s: SMALL, job, user="api")
        assert info.value.outcome.kind is OutcomeKind.MISSING_LIBRARY

    with_pool(body)


def test_a_fourth_kind_is_a_descriptor_and_nothing_else(test_engines: TestEngines, test_model: Path) -> None:
    """A kind the app does not ship (a tokenizer service): the pool starts it along a plan, shares
    it, times it out and stops it, with no code of its own anywhere."""

    def command(engine: EngineSpec, model: Path, settings: ServerSettings, port: int) -> list[str]:
        return [*llama_command(engine, model, settings, port), "--no-warmup"]

    tokenizer = EngineKind(name="tokenizer", label="tokenizer", builds="text", binary="llama-server",
                           project="llama.cpp", lists_devices=True, ready_path="/health", command=command,
                           apis=frozenset({"tokenize"}), subject="{engine} tokenizer", parallel_slots=True)
    spec = dataclasses.replace(cpu_spec(test_engines), kind=tokenizer)
    two_slots = dataclasses.replace(SMALL, parallel=2)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        one, two = await asyncio.gather(pool.acquire(spec, test_model, two_slots, user="a"),
                                        pool.acquire(spec, test_model, two_slots, user="b"))
        assert one.engine is two.engine and len(engines_of(test_model)) == 1
        assert pool.engines(kind=tokenizer) == [one.engine] and one.engine.kind is tokenizer
        assert "--no-warmup" in one.engine.server.command
        assert one.engine.server.subject == "CPU tokenizer"
        async with httpx.AsyncClient() as http:
            resp = await http.post(one.base_url + "/tokenize", json={"content": "hello world"},
                                   headers=one.auth_headers())
        assert resp.status_code == 200 and resp.json()["tokens"]
        one.release()
        two.release()
        await until(lambda: not pool.engines(), 10)
        assert not pool.engines() and not engines_of(test_model)
        assert [e.reason.startswith("idle") for e in events if isinstance(e, EngineUnloaded)] == [True]
        three = await pool.acquire(spec, test_model, two_slots, user="a")
        three.release()
        await pool.aclose()
        assert not engines_of(test_model)
        assert [e.reason for e in events if isinstance(e, EngineUnloaded)][-1] == "Strata is closing"

    with_pool(body, idle_timeout=lambda: 1.0)
