"""Benchmark while chatting, through the composed core: the machine holds one copy of the model,
the benchmark measures the same engine a cold start would, and the chat answers afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest

from strata_gui.core.app_services import build_app_services
from strata_gui.core.bench.workload import BenchConfig
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.config.services import build_services
from strata_gui.core.pool import EngineStateChanged, PoolEvent, Waiting
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.launch import ServerState
from tests.support.engines import TestEngines

pytestmark = pytest.mark.engine

CONFIG = BenchConfig(prefill_tokens=32, gen_tokens=8, reps=1, warmup=False, depth=0)


def model_engines(model: Path) -> int:
    count = 0
    for p in psutil.Process().children(recursive=True):
        try:
            count += str(model) in p.cmdline()
        except psutil.Error:
            continue
    return count


async def sample_most(model: Path, stop: asyncio.Event, seen: list[int]) -> None:
    """The most engines with ``model`` loaded at once, sampled every 20 ms until ``stop``."""
    while not stop.is_set():
        seen.append(model_engines(model))
        await asyncio.sleep(0.02)


BENCH_CTX = CONFIG.prefill_tokens + CONFIG.gen_tokens + 64  # the workload's context


def benchmark_commands(events: list[PoolEvent]) -> list[list[str]]:
    """The command lines of the benchmark's engines (ready with the workload's context), port left out."""
    out = []
    for e in events:
        if isinstance(e, EngineStateChanged) and e.state is ServerState.READY \
                and e.engine.settings.ctx_size == BENCH_CTX:
            cmd = e.engine.server.command
            port = cmd.index("--port")
            out.append(cmd[:port] + cmd[port + 2:])
    return out


def test_benchmark_while_chatting_keeps_one_copy_of_the_model(test_engines: TestEngines, test_model: Path) -> None:
    async def main() -> None:
        app = build_app_services(build_services())
        events: list[PoolEvent] = []
        app.pool.events.subscribe(events.append)
        try:
            await app.prepare()
            await app.engines.add_local(test_engines.cpu_dir, "cpu")
            app.chat.set_model(test_model)
            conv = app.chat.new_conversation()
            app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=8, seed=1))
            first = await app.chat.send(conv.id, "hello")
            assert first.status == COMPLETE
            chat_engine = app.chat.running_engine
            assert chat_engine is not None and model_engines(test_model) == 1

            # A reply is streaming when the benchmark starts: it waits for it, then swaps the model.
            app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=300, seed=2, temperature=1.0))
            reply = asyncio.create_task(app.chat.send(conv.id, "tell me more"))
            await asyncio.sleep(0.05)
            stop, seen = asyncio.Event(), []
            sampler = asyncio.create_task(sample_most(test_model, stop, seen))
            streaming = not reply.done()  # (a random model may end its reply at once)
            warm, _rec = await app.dashboard.run_benchmark(test_model, config=CONFIG)
            assert (await reply).status == COMPLETE
            stop.set()
            await sampler
            assert warm and all(r.ok for r in warm), [r.error for r in warm]
            assert max(seen) == 1, seen  # never two copies of the model at once
            if streaming:
                assert any(isinstance(e, Waiting) and e.user == "benchmark" and "in use by the chat" in e.reason
                           for e in events)

            # The benchmark's engine was its own (its context sized to the workload), as from cold.
            warm_commands = benchmark_commands(events)
            assert len(warm_commands) == 1 and warm_commands[0][warm_commands[0].index("-c") + 1] == str(BENCH_CTX)
            events.clear()
            assert app.pool.engines() == []  # unloaded once measured
            cold, _rec = await app.dashboard.run_benchmark(test_model, config=CONFIG)
            assert cold and all(r.ok for r in cold)
            assert benchmark_commands(events) == warm_commands

            # The chat answers afterwards, on its own engine again.
            app.chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=8, seed=3))
            after = await app.chat.send(conv.id, "and now?")
            assert after.status == COMPLETE and after.content
            engine = app.chat.running_engine
            assert engine is not None and engine.settings == chat_engine.settings
            assert model_engines(test_model) == 1
        finally:
            await app.aclose()

    asyncio.run(main())
