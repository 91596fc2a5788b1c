"""One engine pool per machine: the app takes the place of a headless `strata serve` (the sign-in
server) and gives it back when it closes. Real `strata serve` processes, the real composed core,
real HTTP over loopback, the real engine."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
import pytest

from strata_gui.core.app_services import build_app_services
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.services import build_services
from strata_gui.core.platform.instance import InstanceAddress
from strata_gui.core.serve import take_over
from tests.support.engines import TestEngines, free_port

# The tests that start an engine are marked `engine` by the test_engines fixture (tests/conftest.py).

ROOT = Path(__file__).resolve().parents[2]


def wait_until(check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def background(tmp_path: Path, test_model: Path, test_engines: TestEngines) -> Callable[..., subprocess.Popen[str]]:
    """Starts a headless `strata serve` over a library holding the test model, loaded."""
    library = tmp_path / "library"
    library.mkdir()
    shutil.copy2(test_model, library / "alpha-F16.gguf")
    build_services().settings_service.update(model_dirs=[str(library)])
    subprocess.run([sys.executable, "-m", "strata_gui", "engines", "add-local", str(test_engines.cpu_dir),
                    "--backend", "cpu"], check=True, capture_output=True, cwd=ROOT)
    started: list[subprocess.Popen[str]] = []

    def start(*extra: str) -> subprocess.Popen[str]:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "strata_gui", "serve", "--port", str(port), *extra],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(proc)
        wait_until(lambda: _answers(f"http://127.0.0.1:{port}/health"), 60)
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60, trust_env=False,
                           json={"model": "alpha-F16", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]})
        assert reply.status_code == 200  # the model is loaded in the background server's pool
        wait_until(lambda: InstanceAddress.read(AppPaths.from_environment().serve_address_file) is not None, 30)
        proc.port = port  # type: ignore[attr-defined]
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    left = InstanceAddress.read(AppPaths.from_environment().serve_address_file)
    if left is not None and psutil.pid_exists(left.pid) and left.pid != os.getpid():  # a failed test's relaunch
        with contextlib.suppress(psutil.Error):
            psutil.Process(left.pid).kill()


def test_the_app_serves_in_the_background_servers_place_and_gives_it_back(
        background: Callable[..., subprocess.Popen[str]]) -> None:
    proc = background()
    port = proc.port  # type: ignore[attr-defined]
    engines = psutil.Process(proc.pid).children(recursive=True)
    assert engines  # its engine holds the model

    async def main() -> None:
        app = build_app_services(build_services())
        try:
            await app.prepare()
            handed = await take_over(app.base.paths, app.serve)
            assert handed is not None and handed.port == port and not handed.lan
            assert app.serve.running and app.serve.port == port and app.serve.taken_over is handed
            # The background server ended cleanly, its engine with it (one copy of the model, not two).
            assert proc.wait(30) == 0
            assert not [p for p in engines if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
            async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
                reply = await http.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                                        json={"model": "alpha-F16", "max_tokens": 2,
                                              "messages": [{"role": "user", "content": "hi"}]})
            assert reply.status_code == 200 and app.serve.counters.completed == 1  # served by this process
        finally:
            running = app.serve.running
            await app.aclose()
        assert running  # the app closes with its server on: it goes back to the background
        relaunched.append(handed.start_again())

    relaunched: list[subprocess.Popen[bytes] | None] = []
    asyncio.run(main())
    assert relaunched[0] is not None
    _, err = proc.communicate()
    assert "the Strata app serves in this server's place now" in err and "Traceback" not in err
    wait_until(lambda: _answers(f"http://127.0.0.1:{port}/health"), 60)  # the background server is back
    back = InstanceAddress.read(AppPaths.from_environment().serve_address_file)
    assert back is not None and back.pid != proc.pid
    assert back.pid == relaunched[0].pid
    assert psutil.Process(back.pid).cmdline()[-3:] == ["serve", "--port", str(port)]
    relaunched[0].send_signal(signal.SIGINT)  # Ctrl+C: it unloads and stops
    assert relaunched[0].wait(30) in (0, 130)  # 130: stopped by Ctrl+C, as a shell reports it


def test_a_server_started_with_its_own_models_is_left_alone(
        background: Callable[..., subprocess.Popen[str]], test_model: Path) -> None:
    proc = background("--model", str(test_model))

    async def main() -> None:
        app = build_app_services(build_services())
        try:
            assert await take_over(app.base.paths, app.serve) is None
            assert not app.serve.running and app.serve.taken_over is None
        finally:
            await app.aclose()

    asyncio.run(main())
    assert proc.poll() is None and _answers(f"http://127.0.0.1:{proc.port}/health")  # type: ignore[attr-defined]


def test_no_background_server_means_nothing_happens(tmp_path: Path) -> None:
    async def main() -> None:
        app = build_app_services(build_services())
        try:
            paths = app.base.paths
            # An address left by a server that ended without removing it (killed): nobody holds its lock.
            InstanceAddress(pid=1, port=free_port(), token="t").write(paths.serve_address_file)
            assert await take_over(paths, app.serve) is None and not app.serve.running
        finally:
            await app.aclose()

    asyncio.run(main())
