"""ManagedProcess with the real llama-server and the real rpc-server: every ending has a typed outcome."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import psutil
import pytest

from strata_gui.core.base.errors import ServerError
from strata_gui.core.rpc.workers import rpc_server_executable
from strata_gui.core.runtime.engine_http import EngineHttp
from strata_gui.core.runtime.kinds import llama_command as build_command
from strata_gui.core.runtime.launch import ServerSettings, free_loopback_port
from strata_gui.core.runtime.outcome import (
    Outcome,
    OutcomeKind,
    Phase,
    ProcessEnded,
    describe_outcome,
    listening_port,
)
from strata_gui.core.runtime.process import ManagedProcess, http_ready
from strata_gui.core.runtime.rpc_server import RpcServerProcess
from tests.rpc.conftest import rpc_env
from tests.runtime.conftest import cpu_spec
from tests.support import engines as _engines

Engines = _engines.TestEngines

# The tests that start an engine are marked `engine` by the test_engines fixture (tests/conftest.py).


def llama(engines: Engines, model: Path, port: int, http: httpx.AsyncClient,
          ended: list[Outcome] | None = None) -> ManagedProcess:
    """The real CPU llama-server as a bare managed process, ready on ``/health``."""
    cmd = build_command(cpu_spec(engines), model, ServerSettings(ctx_size=512), port)
    proc = ManagedProcess(cmd, subject="CPU engine", cwd=engines.cpu_dir, ready_timeout=60,
                          ready=http_ready(EngineHttp(http, f"http://127.0.0.1:{port}"), "/health"))
    if ended is not None:
        proc.ended.subscribe(ended.append)
    return proc


def run_with_http(scenario: Callable[[httpx.AsyncClient], Awaitable[None]]) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            await scenario(http)

    asyncio.run(main())


@pytest.mark.parametrize(("line", "port"), [
    ("main: server is listening on http://127.0.0.1:8080 - starting the main loop", 8080),  # older llama-server
    ("0.00.105.861 I srv  llama_server: listening on http://127.0.0.1:51521", 51521),  # the test engine's build
    ("[INFO ] main.cpp:912  - listening on: 127.0.0.1:41235", 41235),  # sd-server
    ("0.00.008.380 I srv    load_model: loading model '/tmp/listening on:9.gguf'", None),
])
def test_the_listening_line_of_each_engine_build_is_recognised(line: str, port: int | None) -> None:
    assert listening_port(line) == port


def test_the_listening_line_makes_it_ready_without_waiting_for_the_next_poll(
        test_engines: Engines, test_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-server's "listening on" line runs the readiness probe at once: with a poll every
    30 s, the engine is ready as soon as it serves, after a probe or two."""
    monkeypatch.setattr("strata_gui.core.runtime.process.QUICK_POLL_S", 0.0)  # no quick first polls

    async def scenario(http: httpx.AsyncClient) -> None:
        port = free_loopback_port()
        probe = http_ready(EngineHttp(http, f"http://127.0.0.1:{port}"), "/health")
        probes: list[bool] = []

        async def counted() -> bool:
            probes.append(await probe())
            return probes[-1]

        cmd = build_command(cpu_spec(test_engines), test_model, ServerSettings(ctx_size=512), port)
        proc = ManagedProcess(cmd, subject="CPU engine", cwd=test_engines.cpu_dir, ready_timeout=60,
                              ready=counted, poll_interval=30.0,
                              ready_hint=lambda line: listening_port(line) is not None)
        try:
            await asyncio.wait_for(proc.start(), 20)
            assert probes[-1] is True and len(probes) <= 3
            assert (await http.get(f"http://127.0.0.1:{port}/health")).status_code == 200
        finally:
            await proc.stop()

    run_with_http(scenario)


def test_a_bad_model_ends_before_ready(test_engines: Engines, broken_models: dict[str, Path]) -> None:
    ended: list[Outcome] = []

    async def scenario(http: httpx.AsyncClient) -> None:
        proc = llama(test_engines, broken_models["bad_magic"], free_loopback_port(), http, ended)
        with pytest.raises(ProcessEnded) as info:
            await proc.start()
        outcome = info.value.outcome
        assert outcome is proc.outcome and ended == [outcome]
        assert (outcome.kind, outcome.phase) == (OutcomeKind.BAD_MODEL, Phase.LOADING)
        assert outcome.exit_code is not None and outcome.exit_code > 0
        assert outcome.log_tail and outcome.log_tail == tuple(proc.log_tail())
        assert info.value.message == describe_outcome(outcome)
        assert info.value.hint and info.value.details
        assert not proc.running

    run_with_http(scenario)


def test_kill_9_while_running_is_a_crash_after_ready(test_engines: Engines, test_model: Path) -> None:
    ended: list[Outcome] = []

    async def scenario(http: httpx.AsyncClient) -> None:
        port = free_loopback_port()
        proc = llama(test_engines, test_model, port, http, ended)
        try:
            await proc.start()
            assert proc.phase is Phase.RUNNING and proc.outcome is None and proc.running
            assert (await http.get(f"http://127.0.0.1:{port}/health")).status_code == 200
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)
            await asyncio.wait_for(proc.wait_exited(), 10)
        finally:
            await proc.stop()
        assert ended == [proc.outcome]
        outcome = proc.outcome
        assert outcome is not None
        assert (outcome.kind, outcome.phase, outcome.exit_code) == (OutcomeKind.CRASHED, Phase.RUNNING, -9)
        assert not outcome.during_load and outcome.log_tail

    run_with_http(scenario)


def test_a_stop_we_asked_for_is_stopped(test_engines: Engines, test_model: Path) -> None:
    async def scenario(http: httpx.AsyncClient) -> None:
        proc = llama(test_engines, test_model, free_loopback_port(), http)
        await proc.start()
        pid = proc.pid
        await proc.stop()
        outcome = proc.outcome
        assert outcome is not None
        assert (outcome.kind, outcome.phase) == (OutcomeKind.STOPPED, Phase.STOPPING)
        assert outcome.exit_code is not None
        assert not psutil.pid_exists(pid or 0) or psutil.Process(pid or 0).status() == psutil.STATUS_ZOMBIE

    run_with_http(scenario)


def test_a_taken_port_is_reported(test_engines: Engines, test_model: Path) -> None:
    async def scenario(http: httpx.AsyncClient) -> None:
        with socket.socket() as blocker:
            blocker.bind(("127.0.0.1", 0))
            blocker.listen(1)
            proc = llama(test_engines, test_model, blocker.getsockname()[1], http)
            with pytest.raises(ProcessEnded) as info:
                await proc.start()
        outcome = info.value.outcome
        assert (outcome.kind, outcome.phase) == (OutcomeKind.PORT_TAKEN, Phase.LOADING), outcome.log_tail[-5:]
        assert outcome.exit_code is not None and outcome.exit_code != 0

    run_with_http(scenario)


def test_a_missing_binary_is_not_found_before_launch(tmp_path: Path) -> None:
    ended: list[Outcome] = []

    async def scenario(http: httpx.AsyncClient) -> None:
        proc = ManagedProcess([str(tmp_path / "llama-server"), "--version"], subject="ROCm engine",
                              ready=http_ready(EngineHttp(http, "http://127.0.0.1:9"), "/health"))
        proc.ended.subscribe(ended.append)
        with pytest.raises(ProcessEnded) as info:
            await proc.start()
        outcome = info.value.outcome
        assert (outcome.kind, outcome.phase, outcome.exit_code) == (OutcomeKind.NOT_FOUND, Phase.STARTING, None)
        assert outcome.path == str(tmp_path / "llama-server")
        assert info.value.message == f"ROCm engine is not installed ({tmp_path / 'llama-server'} is missing)."
        assert ended == [outcome] and proc.pid is None
        await proc.stop()  # nothing to stop: returns at once

    run_with_http(scenario)


def test_a_file_that_is_not_executable_is_not_found(tmp_path: Path) -> None:
    exe = tmp_path / "llama-server"
    exe.write_text("not a program")

    async def scenario() -> Outcome:
        proc = ManagedProcess([str(exe)], subject="ROCm engine")
        with pytest.raises(ProcessEnded) as info:
            await proc.start()
        return info.value.outcome

    outcome = asyncio.run(scenario())
    assert outcome.kind is OutcomeKind.NOT_FOUND and outcome.phase is Phase.STARTING
    if sys.platform != "win32":
        assert "not executable" in describe_outcome(outcome)


RPC_WRAPPER = '''#!{python}
"""Starts the real rpc-server as a child and waits for it (like a launcher script would)."""
import subprocess, sys
sys.exit(subprocess.call([{real!r}, *sys.argv[1:]]))
'''


def test_rpc_server_stop_ends_the_whole_tree(test_engines: Engines, tmp_path: Path) -> None:
    real = rpc_server_executable(test_engines.vulkan_dir)
    assert real is not None
    wrapper = tmp_path / "rpc-server"
    wrapper.write_text(RPC_WRAPPER.format(python=sys.executable, real=str(real)))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    log_file = tmp_path / "logs" / "rpc-server.log"
    server = RpcServerProcess(wrapper, "127.0.0.1", free_loopback_port(), env=rpc_env(test_engines),
                              devices=["CPU"], log_file=log_file)

    async def scenario() -> list[psutil.Process]:
        await server.start()
        assert server.running and server.pid is not None
        tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
        assert len(tree) == 2 and tree[1].name().endswith("rpc-server")
        await server.stop()
        return tree

    tree = asyncio.run(scenario())
    for p in tree:
        assert not p.is_running() or p.status() == psutil.STATUS_ZOMBIE, f"{p.pid} survived the stop"
    assert not server.running
    assert server.process is not None and server.process.outcome is not None
    assert server.process.outcome.kind is OutcomeKind.STOPPED
    # Its output was kept in the tail and mirrored to the log file.
    assert server.log_text() and log_file.read_text().splitlines()[-1] == server.log_text().splitlines()[-1]


def test_rpc_server_that_exits_at_once_says_so(test_engines: Engines) -> None:
    exe = rpc_server_executable(test_engines.vulkan_dir)
    assert exe is not None
    server = RpcServerProcess(exe, "127.0.0.1", free_loopback_port(), env=rpc_env(test_engines),
                              devices=["NoSuchDevice"])

    async def scenario() -> ServerError:
        with pytest.raises(ServerError) as info:
            await server.start()
        return info.value

    err = asyncio.run(scenario())
    assert err.message.startswith("The RPC server stopped at once (exit code ")
    assert err.details and "NoSuchDevice" in err.details
    outcome = server.process.outcome if server.process is not None else None
    assert outcome is not None and outcome.phase is Phase.LOADING and outcome.exit_code != 0


def test_rpc_server_binary_missing(tmp_path: Path) -> None:
    server = RpcServerProcess(tmp_path / "rpc-server", "127.0.0.1", free_loopback_port())

    async def scenario() -> ServerError:
        with pytest.raises(ServerError) as info:
            await server.start()
        return info.value

    err = asyncio.run(scenario())
    assert err.message == f"Could not start rpc-server: {tmp_path / 'rpc-server'} is missing"
    assert err.hint == "Reinstall the engine on the Engines page."


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_lone_process_and_a_parent_are_told_apart() -> None:
    """A lone engine is stopped without walking a process tree; one with a child gets the walk."""
    import subprocess
    import time

    from strata_gui.core.runtime.process import _no_children

    lone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
                               "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _no_children(lone.pid)
        assert not _no_children(parent.pid)
        assert not _no_children(2**22 + 7)  # gone (or never was): the careful path
    finally:
        for p in (lone, parent):
            for child in psutil.Process(p.pid).children(recursive=True):
                child.kill()
            p.kill()
        lone.wait()
        parent.wait()

