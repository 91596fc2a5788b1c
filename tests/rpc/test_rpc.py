"""RPC pooling through real parts: two rpc-server workers, llama-server with --rpc, the chat."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx
import pytest

from strata_gui.core.base.errors import EngineError, ServerError
from strata_gui.core.chat.records import COMPLETE
from strata_gui.core.chat.service import ChatService, MessageDelta, Notice
from strata_gui.core.chat.store import ConversationStore
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.models.fit import MIB, MemoryTarget
from strata_gui.core.pool import EnginePool
from strata_gui.core.rpc.service import RpcPool
from strata_gui.core.rpc.workers import parse_address, parse_devices
from strata_gui.core.runtime.client import SamplingParams
from strata_gui.core.runtime.rpc_server import RpcServerProcess
from tests.rpc.conftest import make_worker, rpc_spec
from tests.support.engines import TestEngines
from tests.support.pool import launcher
from tests.support.settings import settings_service

# The tests that start an engine are marked `engine` by the test_engines fixture (tests/conftest.py).


def test_addresses() -> None:
    assert parse_address("10.0.0.5") == "10.0.0.5:50052"
    assert parse_address(" host:1234 ") == "host:1234"
    for bad in ("", "host:0", "host:abc", "a b:1"):
        with pytest.raises(EngineError):
            parse_address(bad)
    out = "Available devices:\n  RPC0: 127.0.0.1:50111 (24105 MiB, 24000 MiB free)\n"
    [dev] = parse_devices(out)
    assert (dev.name, dev.address, dev.total_mb, dev.free_mb) == ("RPC0", "127.0.0.1:50111", 24105, 24000)


def test_check_workers_lists_their_devices(two_workers: list[RpcServerProcess], test_engines: TestEngines) -> None:
    settings = settings_service()
    pool = RpcPool(settings, lambda: [rpc_spec(test_engines)])
    for w in two_workers:
        pool.add_worker(w.address)
    dead = f"127.0.0.1:{two_workers[0].port + 1 if two_workers[0].port < 65535 else 1}"

    async def main() -> None:
        statuses = await pool.check_all()
        assert [s.address for s in statuses] == [w.address for w in two_workers]
        for s in statuses:
            assert s.reachable and len(s.devices) == 1 and s.devices[0].free_mb > 0, s
        assert pool.remote_memory_mb() == sum(s.memory_mb for s in statuses)
        local = MemoryTarget("RX 7900 XTX", vram_bytes=24 * 1024 * MIB)
        pooled = pool.extend_target(local)
        assert pooled.usable_bytes == local.usable_bytes + pool.remote_memory_mb() * MIB
        assert pooled.name == "RX 7900 XTX + 2 RPC workers"
        pool.set_enabled(False)
        assert pool.extend_target(local) == local
        pool.set_enabled(True)
        gone = await pool.check(dead)
        assert not gone.reachable and gone.error

    asyncio.run(main())
    assert settings.current.rpc_enabled and settings.current.rpc_workers == [w.address for w in two_workers]
    # Adding workers is remembered for the next start.
    saved, _ = settings.store.load()
    assert saved.rpc_enabled and saved.rpc_workers == [w.address for w in two_workers]


def test_lending_refuses_a_taken_port(test_engines: TestEngines, two_workers: list[RpcServerProcess]) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            engines = EnginePool(launcher(http))
            pool = RpcPool(settings_service(), lambda: [rpc_spec(test_engines)], pool=engines)
            with pytest.raises(ServerError, match="Cannot lend this computer"):
                await pool.serve("127.0.0.1", two_workers[0].port, devices=["CPU"])
            assert pool.server is None
            await engines.aclose()

    asyncio.run(main())


def test_chat_spreads_over_workers_and_recovers_when_one_drops(
        two_workers: list[RpcServerProcess], test_engines: TestEngines, test_model: Path) -> None:
    paths = AppPaths.from_environment()
    paths.ensure()
    settings = settings_service(context_size=2048)
    pool = RpcPool(settings, lambda: [rpc_spec(test_engines)])
    for w in two_workers:
        pool.add_worker(w.address)
    victim = two_workers[1]

    async def main() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            engines = EnginePool(pool.wrap(launcher(http)), advisor=pool.advisor())
            pool.pool = engines
            chat = ChatService(ConversationStore(paths.database_file).open(), engines, http, settings)
            chat.set_plan([rpc_spec(test_engines)])
            chat.set_model(test_model)
            events: list[object] = []
            chat.events.subscribe(events.append)
            try:
                conv = chat.new_conversation()
                chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=8, seed=1))
                first = await chat.send(conv.id, "hi")
                assert first.status == COMPLETE and first.content
                sup = chat.supervisor
                assert sup is not None
                assert sup.command[sup.command.index("--rpc") + 1] == ",".join(w.address for w in two_workers)

                # A longer reply (this tiny model's random text trips the chat parser when long);
                # the second worker dies as soon as text arrives.
                conv = chat.new_conversation()
                chat.store.update_settings(conv.id, sampling=SamplingParams(max_tokens=80, seed=2,
                                                                            temperature=1.0))

                def kill_on_text(event: object) -> None:
                    if isinstance(event, MessageDelta) and victim.running:
                        os.kill(victim.pid or 0, signal.SIGKILL)

                chat.events.subscribe(kill_on_text)
                second = await chat.send(conv.id, "Write a long story")
                chat.events.unsubscribe(kill_on_text)
                notices = [e for e in events if isinstance(e, Notice)]
                assert len(notices) == 1 and victim.address in notices[0].text
                assert "stopped answering" in notices[0].text
                assert second.status == COMPLETE and second.content
                sup = chat.supervisor
                assert sup is not None
                assert sup.command[sup.command.index("--rpc") + 1] == two_workers[0].address
                assert pool.dropped == {victim.address}
            finally:
                await chat.aclose()
                await engines.aclose()

    asyncio.run(main())


def test_worker_fixture_helper_is_real(test_engines: TestEngines) -> None:
    worker = make_worker(test_engines)

    async def main() -> None:
        await worker.start()
        assert worker.running and "-d" in worker.command()
        await worker.stop()
        assert not worker.running

    asyncio.run(main())
