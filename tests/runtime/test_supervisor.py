"""ServerSupervisor against the real CPU llama-server and real broken engines/models."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import psutil
import pytest

from strata_gui.core.base.errors import ServerError
from strata_gui.core.runtime.outcome import OutcomeKind, describe_outcome
from strata_gui.core.runtime.supervisor import ServerSettings, ServerState, ServerSupervisor
from tests.runtime.conftest import cpu_spec, rocm_without_libraries
from tests.support import engines as _engines

Engines = _engines.TestEngines

# The tests that start an engine are marked `engine` by the test_engines fixture (tests/conftest.py).

SMALL = ServerSettings(ctx_size=512)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def _start(engines: Engines, model: Path, settings: ServerSettings = SMALL, **kw):  # type: ignore[no-untyped-def]
    async with httpx.AsyncClient(trust_env=False) as http:
        sup = ServerSupervisor(cpu_spec(engines), model, settings, http=http, **kw)
        states: list[ServerState] = []
        sup.states.subscribe(lambda e: states.append(e.state))
        try:
            await sup.start()
            return sup, states, None
        except ServerError as exc:
            return sup, states, exc
        finally:
            await sup.stop()


def test_starts_ready_and_stops_the_real_engine(test_engines: Engines, test_model: Path) -> None:
    async def scenario() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(cpu_spec(test_engines), test_model, SMALL, http=http)
            states: list[ServerState] = []
            progress: list[str] = []
            sup.states.subscribe(lambda e: states.append(e.state))
            base = await sup.start(lambda p: progress.append(p.message))
            assert (await http.get(base + "/health")).status_code == 200
            assert sup.state is ServerState.READY
            assert sup.n_ctx == 512
            pid = sup.pid
            assert pid is not None and psutil.pid_exists(pid)
            assert any("main" in line or "srv" in line for line in sup.log_tail())
            await sup.stop()
            assert sup.state is ServerState.STOPPED
            assert sup.outcome is not None and sup.outcome.kind is OutcomeKind.STOPPED
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            assert states[:2] == [ServerState.STARTING, ServerState.LOADING]
            assert ServerState.READY in states and states[-1] is ServerState.STOPPED
            assert progress[0] == "Loading model…" and progress[-1] == "Ready"

    run(scenario())


def test_command_line_carries_the_settings(test_engines: Engines, test_model: Path) -> None:
    settings = ServerSettings(ctx_size=1024, gpu_layers="20", flash_attention="off", threads=2, parallel=2,
                              api_key="k1")
    from strata_gui.core.runtime.engine import EngineSpec
    from strata_gui.core.runtime.kinds import llama_command as build_command
    from strata_gui.core.runtime.kinds import llama_env

    cmd = build_command(EngineSpec("v", "Vulkan", "vulkan", Path("/e/llama-server")), test_model, settings, 4242)
    joined = " ".join(cmd)
    # Two requests at once, 1,024 tokens each: "-c" is both slots' cache, split evenly between them.
    for part in ("--port 4242", "-c 2048", "-ngl 20", "-fa off", "-t 2", "-np 2", "--jinja", "--metrics",
                 "--host 127.0.0.1"):
        assert part in joined
    env = llama_env(settings)
    assert env["LLAMA_ARG_KV_UNIFIED"] == "0"  # not one buffer a single request could fill
    assert "k1" not in joined and env["LLAMA_API_KEY"] == "k1"  # not readable with ps
    cpu = build_command(cpu_spec(test_engines), test_model, ServerSettings(), 1)
    assert "-ngl" not in cpu and "-fa" not in cpu  # engine defaults are left to the engine


def test_bad_gguf_gives_a_clear_message(test_engines: Engines, broken_models: dict[str, Path]) -> None:
    for name in ("bad_magic", "truncated"):
        sup, _, err = run(_start(test_engines, broken_models[name]))
        assert err is not None, name
        assert sup.outcome.kind is OutcomeKind.BAD_MODEL, (name, sup.outcome, sup.log_tail()[-5:])
        assert "could not load the model file" in err.message
        assert err.hint and err.details
        assert sup.state is ServerState.FAILED


def test_port_taken_is_reported(test_engines: Engines, test_model: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(1)
        port = blocker.getsockname()[1]
        sup, _, err = run(_start(test_engines, test_model, ServerSettings(ctx_size=512, port=port)))
    assert err is not None
    assert sup.outcome.kind is OutcomeKind.PORT_TAKEN, sup.log_tail()[-5:]
    assert "port is already in use" in err.message


def test_missing_library_is_reported(test_engines: Engines, test_model: Path, tmp_path: Path) -> None:
    async def scenario() -> tuple[ServerSupervisor, ServerError | None]:
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(rocm_without_libraries(test_engines, tmp_path), test_model, SMALL, http=http)
            try:
                await sup.start()
            except ServerError as exc:
                return sup, exc
            finally:
                await sup.stop()
            return sup, None

    sup, err = run(scenario())
    assert err is not None
    assert sup.outcome is not None and sup.outcome.kind is OutcomeKind.MISSING_LIBRARY
    assert err.message.startswith("ROCm engine could not start: a library it needs was not found")
    assert ".so" in err.message


def test_missing_engine_binary(test_model: Path, tmp_path: Path) -> None:
    from strata_gui.core.runtime.engine import EngineSpec

    async def scenario() -> ServerSupervisor:
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(EngineSpec("x", "ROCm", "rocm", tmp_path / "llama-server"), test_model, SMALL,
                                   http=http)
            with pytest.raises(ServerError, match="not installed"):
                await sup.start()
            return sup

    assert run(scenario()).outcome.kind is OutcomeKind.NOT_FOUND  # type: ignore[union-attr]


def test_ready_timeout_stops_the_engine(test_engines: Engines, test_model: Path) -> None:
    sup, _, err = run(_start(test_engines, test_model, ready_timeout=0.0))
    assert err is not None and "did not become ready" in err.message
    assert sup.outcome.kind is OutcomeKind.TIMEOUT
    assert sup.process is not None and sup.process.returncode is not None


def test_engine_killed_after_ready_is_a_crash(test_engines: Engines, test_model: Path) -> None:
    async def scenario() -> ServerSupervisor:
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(cpu_spec(test_engines), test_model, SMALL, http=http)
            seen: list[ServerState] = []
            sup.states.subscribe(lambda e: seen.append(e.state))
            try:
                await sup.start()
                assert sup.pid is not None
                os.kill(sup.pid, signal.SIGKILL)
                await asyncio.wait_for(sup.wait_exited(), 10)
                assert seen[-1] is ServerState.CRASHED
            finally:
                await sup.stop()
            return sup

    sup = run(scenario())
    assert sup.outcome is not None and sup.outcome.kind is OutcomeKind.CRASHED
    message = describe_outcome(sup.outcome)
    assert "crashed while running" in message and "SIGKILL" in message


CHILD = textwrap.dedent('''
    import asyncio, sys
    from pathlib import Path
    import httpx
    from strata_gui.core.runtime.engine import EngineSpec
    from strata_gui.core.runtime.supervisor import ServerSettings, ServerSupervisor

    async def main():
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(EngineSpec("cpu", "CPU", "cpu", Path(sys.argv[1])), Path(sys.argv[2]),
                                   ServerSettings(ctx_size=512), http=http)
            await sup.start()
            print(sup.pid, flush=True)
            await asyncio.sleep(3600)

    asyncio.run(main())
''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux-only")
def test_no_engine_outlives_a_killed_app(test_engines: Engines, test_model: Path) -> None:
    app = subprocess.Popen([sys.executable, "-c", CHILD, str(test_engines.cpu_server), str(test_model)],
                           stdout=subprocess.PIPE, text=True, cwd=str(Path(__file__).parents[2]))
    try:
        assert app.stdout is not None
        engine_pid = int(app.stdout.readline())
        engine = psutil.Process(engine_pid)
        assert engine.is_running() and engine.ppid() == app.pid
        app.send_signal(signal.SIGKILL)
        app.wait(10)
        deadline = time.monotonic() + 10
        gone = False
        while time.monotonic() < deadline:
            try:
                gone = engine.status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                gone = True
            if gone:
                break
            time.sleep(0.05)
        assert gone, "llama-server survived the app being killed"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        if app.stdout:
            app.stdout.close()


def test_the_engine_answers_strata_only(test_engines: Engines, test_model: Path) -> None:
    """Another program on the computer, or a web page that finds the port, cannot use the engine:
    every route but /health needs the key only this supervisor holds, and no other site gets CORS."""
    async def scenario() -> None:
        async with httpx.AsyncClient(trust_env=False) as http:
            sup = ServerSupervisor(cpu_spec(test_engines), test_model, SMALL, http=http)
            other = ServerSupervisor(cpu_spec(test_engines), test_model, SMALL, http=http)
            key = sup.api_key
            assert len(key) >= 32 and key != other.api_key and not sup.settings.api_key  # random, one per engine
            try:
                base = await sup.start()
                assert sup.n_ctx == 512  # /props read with the key
                assert key not in " ".join(psutil.Process(sup.pid).cmdline())  # ps shows no key
                chat = {"messages": [{"role": "user", "content": "hi"}], "prompt": "hi", "max_tokens": 2,
                        "n_predict": 2}
                for method, path in (("GET", "/slots"), ("GET", "/props"), ("GET", "/metrics"),
                                     ("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/completion")):
                    r = await http.request(method, base + path, json=chat if method == "POST" else None)
                    assert r.status_code == 401, (path, r.status_code)
                    r = await http.request(method, base + path, json=chat if method == "POST" else None,
                                           headers={"Authorization": "Bearer not-the-key"})
                    assert r.status_code == 401, (path, r.status_code)
                    r = await http.request(method, base + path, json=chat if method == "POST" else None,
                                           headers=sup.auth_headers())
                    assert r.status_code == 200, (path, r.status_code, r.text[:200])
                assert (await http.get(base + "/health")).status_code == 200  # readiness stays open
                # A page of another site: no CORS grant, with or without credentials.
                evil = {"Origin": "https://evil.example"}
                for r in (await http.options(base + "/v1/chat/completions",
                                             headers={**evil, "Access-Control-Request-Method": "POST"}),
                          await http.get(base + "/v1/models", headers={**evil, **sup.auth_headers()})):
                    assert r.headers.get("Access-Control-Allow-Origin") in (None, ""), r.headers
                    assert r.headers.get("Access-Control-Allow-Credentials") != "true"
            finally:
                await sup.stop()

    run(scenario())
