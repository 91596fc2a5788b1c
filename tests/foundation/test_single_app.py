"""One Strata app per user: a second launch shows the running window instead of starting a second
app (and a second engine). Real processes, real locks, real loopback sockets, the real app."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strata_gui import __version__
from strata_gui.cli import run_command
from strata_gui.core.config.paths import AppPaths
from strata_gui.core.config.settings import SettingsService, SettingsStore
from strata_gui.core.platform.instance import (
    ActivationServer,
    InstanceAddress,
    InstanceLock,
    ask,
    claim_or_ask,
)
from tests.support import engines as _engines

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from pathlib import Path
from strata_gui.core.platform.instance import InstanceLock
lock = InstanceLock.try_acquire(Path(sys.argv[1]))
print("held" if lock else "refused", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _end(proc: subprocess.Popen[str], *, kill: bool = True) -> None:
    if kill:
        proc.kill()  # a crash: nobody releases anything
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _holder(lock_file: Path, seconds: float = 60) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_file), str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_one_process_holds_the_lock_and_a_crash_frees_it(tmp_path: Path) -> None:
    lock_file = tmp_path / "data" / "app.lock"
    holder = _holder(lock_file)
    try:
        assert InstanceLock.try_acquire(lock_file) is None
    finally:
        _end(holder)
    lock = InstanceLock.try_acquire(lock_file)
    assert lock is not None and lock.held
    assert InstanceLock.try_acquire(lock_file) is None  # held by this process now, refused again
    lock.release()
    assert not lock.held
    again = InstanceLock.try_acquire(lock_file)
    assert again is not None
    again.release()


def test_a_launch_waits_for_a_starting_app_then_gives_up_or_takes_over(tmp_path: Path) -> None:
    lock_file, address_file = tmp_path / "app.lock", tmp_path / "app-instance.json"
    holder = _holder(lock_file)
    try:
        t = time.monotonic()
        claim = claim_or_ask(lock_file, address_file, grace_s=0.5)  # held, never answering
        assert claim.unanswered and claim.lock is None and claim.shown_by is None
        assert 0.5 <= time.monotonic() - t < 5
    finally:
        _end(holder)
    # An app that ends while the launch waits: the launch becomes the app.
    ending = _holder(lock_file, seconds=0.4)
    try:
        claim = claim_or_ask(lock_file, address_file, grace_s=10)
        assert claim.lock is not None and not claim.unanswered
        claim.lock.release()
    finally:
        _end(ending, kill=False)


def _send_raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(data)
        return conn.recv(100)


def test_the_running_app_answers_its_token_only_and_is_not_held_up_by_a_silent_client(tmp_path: Path) -> None:
    address_file = tmp_path / "app-instance.json"
    actions: list[str] = []

    async def scenario() -> None:
        server = ActivationServer(address_file, actions.append)
        address = await server.start()
        assert InstanceAddress.read(address_file) == address and address.pid == os.getpid()
        if sys.platform != "win32":
            assert stat.S_IMODE(address_file.stat().st_mode) == 0o600  # the token is this user's
        silent = socket.create_connection(("127.0.0.1", address.port))  # connects, never writes
        try:
            assert await asyncio.to_thread(ask, address)  # answered meanwhile
            assert actions == ["show"]
            wrong = InstanceAddress(address.pid, address.port, "not-the-token")
            assert not await asyncio.to_thread(ask, wrong)
            assert not await asyncio.to_thread(ask, address, "quit")  # no other action exists
            assert b'"ok": false' in await asyncio.to_thread(_send_raw, address.port, b"x" * 100_000 + b"\n")
            assert b'"ok": false' in await asyncio.to_thread(_send_raw, address.port, b"\xff\xfe{not json\n")
            assert actions == ["show"]
        finally:
            silent.close()
        await server.aclose()
        assert not address_file.exists()  # a launch from now on starts a new app
        assert not await asyncio.to_thread(ask, address, "show", 1.0)  # nobody listens any more

    asyncio.run(scenario())


def test_an_address_file_that_is_damaged_or_of_a_dead_app_is_not_an_answer(tmp_path: Path) -> None:
    address_file = tmp_path / "app-instance.json"
    address_file.write_text('{"pid": 1, "port": "x"', encoding="utf-8")
    assert InstanceAddress.read(address_file) is None
    with socket.socket() as s:  # a port nobody listens on any more
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    InstanceAddress(pid=1, port=port, token="t").write(address_file)
    assert not ask(InstanceAddress.read(address_file) or InstanceAddress(1, port, "t"), timeout=1.0)
    claim = claim_or_ask(tmp_path / "app.lock", address_file, grace_s=0)  # nobody holds the lock
    assert claim.lock is not None
    claim.lock.release()


def test_bring_to_front_restores_a_minimized_window(qtbot: object) -> None:
    from PySide6.QtWidgets import QWidget

    from strata_gui.app import bring_to_front

    window = QWidget()
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    window.show()
    window.showMinimized()
    assert window.isMinimized()
    bring_to_front(window)
    assert window.isVisible() and not window.isMinimized()


@pytest.mark.engine
def test_a_second_launch_shows_the_running_window_and_starts_no_second_engine(
        test_engines: _engines.TestEngines, test_model: Path, tmp_path: Path) -> None:
    """The app runs with the last model loading; `strata` again exits at once (saying the window is in
    front), the first app is asked to show its window, and only one engine was ever started."""
    assert run_command(["engines", "add-local", str(test_engines.cpu_dir)]) == 0
    assert run_command(["chat", "--model", str(test_model), "--max-tokens", "2", "Hi"]) == 0  # remembers the launch
    paths = AppPaths.from_environment()
    SettingsService.load(SettingsStore(paths.settings_file)).update(last_model=str(test_model), first_run_done=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "STRATA_UI_REPORT": str(tmp_path / "report.json")}
    first = subprocess.Popen([sys.executable, "-m", "strata_gui"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while InstanceAddress.read(paths.instance_address_file) is None:
            assert first.poll() is None, first.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the app never listened for a second launch"
            time.sleep(0.05)
        second = subprocess.run([sys.executable, "-m", "strata_gui"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=60, check=False)
        assert second.returncode == 0, second.stderr[-2000:]
        assert f"already running (process {first.pid})" in second.stdout
        while not (tmp_path / "report.json").exists():  # the first app is still up, however slow the machine
            assert first.poll() is None, first.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the app never wrote its report"
            time.sleep(0.05)
        first.terminate()  # closes as closing its window does (the SIGTERM test below)
        _, err = first.communicate(timeout=90)
        assert first.returncode == 0, err[-2000:]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    log = paths.log_file.read_text(encoding="utf-8")
    runs = log.split(f"Strata {__version__} starting")
    assert len(runs) == 2  # the chat above, then one app: the second launch never started Strata
    app_run = runs[-1]
    assert "asked on the instance port to show" in app_run
    assert app_run.count("started early") <= 1 and "starting CPU" not in app_run  # one engine, adopted
    assert not paths.instance_address_file.exists()  # closed: the next launch starts the app
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["visible"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_closes_the_app_as_closing_its_window_does(tmp_path: Path) -> None:
    """A session logout sends SIGTERM: the app shuts down cleanly (exit 0, its shutdown logged, the
    address for second launches removed) instead of dying mid-write."""
    paths = AppPaths.from_environment()
    SettingsService.load(SettingsStore(paths.settings_file)).update(first_run_done=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    app = subprocess.Popen([sys.executable, "-m", "strata_gui"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while InstanceAddress.read(paths.instance_address_file) is None:  # up and listening
            assert app.poll() is None, app.communicate()[1][-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        app.terminate()
        _, err = app.communicate(timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
            app.communicate()
    assert app.returncode == 0, err[-2000:]
    log = paths.log_file.read_text(encoding="utf-8")
    assert "SIGTERM received: closing" in log and log.rstrip().endswith("Strata exiting with 0")
    assert not paths.instance_address_file.exists()
