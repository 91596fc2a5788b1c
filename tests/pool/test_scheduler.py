"""The pool's one scheduler with real llama-server processes: who is served first, exclusive
leases, waiting limits, and nobody starved by later requests."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import ServerBusyError
from strata_gui.core.pool import EnginePool, Lease, PoolActivity, PoolEvent, Waiting
from strata_gui.core.runtime.launch import ServerSettings
from tests.pool.test_pool import SMALL, Budget, with_pool
from tests.runtime.conftest import cpu_spec
from tests.support import gguf_model
from tests.support.engines import TestEngines
from tests.support.poll import until

pytestmark = pytest.mark.engine

TWO_SLOTS = dataclasses.replace(SMALL, parallel=2)


@pytest.fixture(scope="module")
def other_model(tmp_path_factory: pytest.TempPathFactory, test_model: Path) -> Path:
    return gguf_model.write_model(tmp_path_factory.mktemp("other") / "strata-other-F16.gguf",
                                  gguf_model.ModelSpec(seed=5, name="Strata Other"))


def waiting_users(pool: EnginePool) -> list[str]:
    return [w.user for w in pool.activity().waiting]


def test_the_users_chat_goes_before_api_requests_that_came_first(test_engines: TestEngines,
                                                                   test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, _events: list[PoolEvent]) -> None:
        holder = await pool.acquire(spec, test_model, SMALL, user="api")
        order: list[str] = []

        async def ask(user: str) -> Lease:
            lease = await pool.acquire(spec, test_model, SMALL, user=user)
            order.append(user)
            return lease

        first = asyncio.create_task(ask("api"))
        await until(lambda: waiting_users(pool) == ["api"], 10)
        chat = asyncio.create_task(ask("chat"))
        await until(lambda: waiting_users(pool) == ["chat", "api"], 10)  # the queue's order
        holder.release()
        (await chat).release()
        (await first).release()
        assert order == ["chat", "api"]

    with_pool(body)


def test_a_benchmark_waits_for_the_chat_then_holds_the_whole_engine(test_engines: TestEngines,
                                                                     test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        chat = await pool.acquire(spec, test_model, TWO_SLOTS, user="chat")
        bench = asyncio.create_task(pool.acquire(spec, test_model, TWO_SLOTS, user="benchmark", exclusive=True))
        await until(lambda: waiting_users(pool) == ["benchmark"], 10)
        # A free slot is not enough for it: it waits for the chat's request to end.
        [said] = [e for e in events if isinstance(e, Waiting) and e.user == "benchmark"]
        assert said.reason == "Waiting: 1 request ahead for strata-test-llama-F16.gguf" and said.ahead == 1
        chat.release()
        held = await bench
        assert held.exclusive and held.engine.free_slots == 0
        again = asyncio.create_task(pool.acquire(spec, test_model, TWO_SLOTS, user="chat"))
        await until(lambda: waiting_users(pool) == ["chat"], 10)
        told = [e.reason for e in events if isinstance(e, Waiting) and e.user == "chat"]
        assert told == ["Waiting for the benchmark to finish with strata-test-llama-F16.gguf"]
        held.release()
        (await again).release()
        assert pool.starts == 1

    with_pool(body)


def test_a_request_that_may_wait_only_so_long_is_told_the_engine_is_busy_and_why(
        test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, _events: list[PoolEvent]) -> None:
        holder = await pool.acquire(spec, test_model, SMALL, user="chat")
        with pytest.raises(ServerBusyError) as info:
            await pool.acquire(spec, test_model, SMALL, user="api", wait_limit=1.0)
        assert info.value.message == "Waited 1 s: Waiting: 1 request ahead for strata-test-llama-F16.gguf"
        assert info.value.retry_after > 0
        assert pool.activity().waiting == ()  # it left the queue
        with pytest.raises(ServerBusyError, match="1 request ahead"):
            await pool.acquire(spec, test_model, SMALL, user="api", wait=False)
        holder.release()

    with_pool(body)


def test_a_lease_now_is_a_free_slot_or_nothing(test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, _events: list[PoolEvent]) -> None:
        lease = await pool.acquire(spec, test_model, TWO_SLOTS, user="chat")
        engine = lease.engine
        extra = await pool.lease_now(engine, "chat")
        assert extra is not None and engine.leases == 2
        assert await pool.lease_now(engine, "chat") is None  # both slots taken: no waiting
        extra.release()
        lease.release()
        await pool.unload(engine, "test")
        assert await pool.lease_now(engine, "chat") is None and pool.engines() == []  # never loads
        assert pool.starts == 1

    with_pool(body)


def test_a_request_waiting_for_memory_is_not_starved_by_later_requests(
        test_engines: TestEngines, test_model: Path, other_model: Path) -> None:
    """Memory for one model: a request for the other waits for the loaded one's request to end,
    and requests for the loaded model that come after it wait behind it (else a steady stream of
    them would keep the memory for ever)."""
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        order: list[Path] = []

        async def use(model: Path) -> None:
            lease = await pool.acquire(spec, model, TWO_SLOTS, user="api")
            order.append(model)
            lease.release()

        first = await pool.acquire(spec, test_model, TWO_SLOTS, user="api")
        other = asyncio.create_task(use(other_model))
        await until(lambda: waiting_users(pool) == ["api"], 10)
        later = asyncio.create_task(use(test_model))  # a slot is free, but it queues behind
        await until(lambda: len(pool.activity().waiting) == 2, 10)
        told = [e.reason for e in events if isinstance(e, Waiting) and e.model == test_model]
        assert told == ["Waiting: a request for strata-other-F16.gguf goes first"]
        first.release()
        await asyncio.wait_for(asyncio.gather(other, later), 60)
        assert order == [other_model, test_model]

    mib = 1024 * 1024
    with_pool(body, memory=Budget(need=100 * mib, budget=150 * mib))


def test_the_whole_pool_held_for_a_trial_waits_for_the_chat_and_makes_the_chat_wait(
        test_engines: TestEngines, test_model: Path) -> None:
    spec = cpu_spec(test_engines)

    async def body(pool: EnginePool, events: list[PoolEvent]) -> None:
        chat = await pool.acquire(spec, test_model, SMALL, user="chat")
        told: list[str] = []
        entered = asyncio.Event()
        leave = asyncio.Event()

        async def trial() -> None:
            async with pool.turn("engine update", "Trying an engine update", on_progress=lambda p: told.append(p.message)):
                entered.set()
                await leave.wait()

        task = asyncio.create_task(trial())
        await until(lambda: told, 10)
        assert told == ["Waiting for the chat to finish"] and not entered.is_set()
        chat.release()
        await entered.wait()
        again = asyncio.create_task(pool.acquire(spec, test_model, SMALL, user="chat"))
        await until(lambda: waiting_users(pool) == ["chat"], 10)
        assert [e.reason for e in events if isinstance(e, Waiting) and e.user == "chat"] == ["Trying an engine update"]
        leave.set()
        await task
        (await again).release()

        def last_activity() -> PoolActivity:
            return [e for e in events if isinstance(e, PoolActivity)][-1]

        await until(lambda: last_activity().active == 0, 10)  # announced by the scheduler's next pass
        assert last_activity().waiting == ()

    with_pool(body)


def test_two_streams_on_one_engine_decode_side_by_side(test_engines: TestEngines, test_model: Path) -> None:
    """Two slots: a second request's first token comes while the first one still streams (with
    one slot it came after the first one's last token)."""
    spec = cpu_spec(test_engines)
    settings = ServerSettings(ctx_size=1024, jinja=False, metrics=False, parallel=2)
    long_tokens = 600

    async def body(pool: EnginePool, _events: list[PoolEvent]) -> None:
        one = await pool.acquire(spec, test_model, settings, user="chat")
        two = await pool.acquire(spec, test_model, settings, user="api")
        assert one.engine is two.engine
        seen = {"long": 0}
        long_started = asyncio.Event()
        long_at_short_first: list[int] = []

        async def stream(lease: Lease, name: str, n: int) -> None:
            body = {"prompt": "Once upon a time", "n_predict": n, "stream": True, "ignore_eos": True,
                    "temperature": 0}
            async with httpx.AsyncClient(timeout=120) as http, http.stream(
                    "POST", lease.base_url + "/completion", json=body, headers=lease.auth_headers()) as resp:
                assert resp.status_code == 200
                async for line in resp.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    if name == "long":
                        seen["long"] += 1
                        long_started.set()
                    elif not long_at_short_first:
                        long_at_short_first.append(seen["long"])

        long = asyncio.create_task(stream(one, "long", long_tokens))
        await long_started.wait()
        await stream(two, "short", 8)
        await long
        assert seen["long"] >= long_tokens
        assert long_at_short_first[0] < long_tokens * 0.75, long_at_short_first
        one.release()
        two.release()

    with_pool(body)
