"""Suite-wide rules: user folders in tmp, no leftover processes/threads, real test parts."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from strata_gui.core.base.events import LISTENER_LOGGER
from tests.support import engines as engine_support
from tests.support import gguf_model

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Keep huggingface_hub from reaching out or printing progress bars during tests.
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"


def _dump_running_tasks(nodeid: str, after: float) -> None:
    """Print every task of every running event loop with the line it waits on: a test stuck in
    ``run_until_complete`` shows only that call in its thread's stack, and the awaited thing that
    never finishes is what a hang report needs (printed to the test's captured stderr, which
    pytest-timeout prints when it ends the run)."""
    out = sys.stderr
    print(f"\n=== {nodeid} still running after {after:.0f} s; tasks of the running event loops:", file=out)
    try:
        loops = [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()]
        for loop in loops:
            tasks = asyncio.all_tasks(loop)
            print(f"--- {loop!r}: {len(tasks)} task(s)", file=out)
            for task in tasks:
                print(f"{task!r}", file=out)
                task.print_stack(limit=12, file=out)
    except Exception as exc:  # a diagnostic from another thread: never let it raise
        print(f"(could not list the tasks: {exc!r})", file=out)
    out.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Shortly before pytest-timeout ends a hung test (its thread method: it dumps every thread's
    stack and exits, where the signal method's exception is swallowed by a Qt event loop or an
    asyncio callback and the run hangs until CI's own limit), list the event loops' tasks."""
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0]) if marker and marker.args else float(item.config.getini("timeout") or 0)
    watchdog = None
    if limit > 15:
        watchdog = threading.Timer(limit - 10, _dump_running_tasks, (item.nodeid, limit - 10))
        watchdog.daemon = True
        watchdog.name = "hang-report"
        watchdog.start()
    try:
        yield
    finally:
        if watchdog is not None:
            watchdog.cancel()


@pytest.fixture(autouse=True)
def _user_dirs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every user folder (Strata's and the hub cache) points into this test's tmp folder."""
    home = tmp_path / "strata-home"
    monkeypatch.setenv("STRATA_HOME", str(home))
    for var in ("STRATA_CONFIG_DIR", "STRATA_DATA_DIR", "STRATA_CACHE_DIR", "STRATA_LOG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    # The hub's own environment (a mirror, a token) must not leak in from the developer's shell.
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_ENDPOINT", "HF_HUB_DISABLE_IMPLICIT_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return home


def _children() -> set[int]:
    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


@pytest.fixture(autouse=True)
def _no_leftovers(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves child processes or threads running."""
    threads_before = set(threading.enumerate())
    children_before = _children()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        extra_children = _children() - children_before
        # A _DummyThread is Python's record of a thread it did not start (one of Qt's, say, that
        # logged a line): it never leaves threading.enumerate(), even when that thread has ended.
        extra_threads = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()
                         and not isinstance(t, threading._DummyThread)]
        if not extra_children and not extra_threads:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for pid in extra_children:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass
    problems = []
    if extra_children:
        problems.append(f"child processes left running: {sorted(extra_children)}")
    if extra_threads:
        problems.append(f"threads left running: {[t.name for t in extra_threads]}")
    pytest.fail("; ".join(problems), pytrace=False)


class ListenerErrors(logging.Handler):
    """Collects the ERROR records of the listener helper (``strata_gui.core.base.events.emit``)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def listener_failures(records: list[logging.LogRecord]) -> str:
    """Why the test fails ("" when no listener raised): each failure with its traceback."""
    out = []
    for r in records:
        text = r.getMessage()
        if r.exc_info and r.exc_info[1] is not None:
            text += "\n" + "".join(traceback.format_exception(*r.exc_info))
        out.append(text)
    return ("an event listener raised (production only logs it):\n" + "\n".join(out)) if out else ""


@pytest.fixture(autouse=True)
def _listener_errors() -> Iterator[ListenerErrors]:
    """Fail a test during which an event listener raised: the app only logs it, so it would go unseen."""
    handler = ListenerErrors()
    logger = logging.getLogger(LISTENER_LOGGER)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
    problem = listener_failures(handler.records)
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.fixture(autouse=True)
def _gc_on_the_gui_thread(request: pytest.FixtureRequest) -> Iterator[None]:
    """Widget tests collect cyclic garbage on the GUI thread, as the app does (ui/gc_pump.py): an
    automatic collection in a worker or server thread would destroy Qt objects there."""
    if "qapp" not in request.fixturenames:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.enable()


# Fixtures that start or need a real engine build: a test using one (directly or through other
# fixtures) is an ``engine`` test, which the fast tier (scripts/check --fast) leaves out.
ENGINE_FIXTURES = frozenset({"test_engines"})


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by mark
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``engine`` mark follows the fixtures: a test that uses an engine fixture gets it, and a
    test marked by hand that uses none is an error (the fast tier would skip it for nothing)."""
    needless = []
    for item in items:
        uses = not ENGINE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
        marked = item.get_closest_marker("engine") is not None
        if uses and not marked:
            item.add_marker(pytest.mark.engine)
        elif marked and not uses:
            needless.append(item.nodeid)
    if needless:
        raise pytest.UsageError("marked `engine` but uses no engine fixture (test_engines); drop the mark:\n  "
                                + "\n  ".join(needless))


def pytest_collection_finish(session: pytest.Session) -> None:
    # What importing every test module built lives for the whole run: later collections skip it.
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _english_plurals(request: pytest.FixtureRequest) -> None:
    """Widget tests see English as users do: with its plural catalogue ("1 model", not "1 model(s)")."""
    if "qapp" not in request.fixturenames:
        return
    from strata_gui.ui.i18n import install_language, translators_of

    qapp = request.getfixturevalue("qapp")
    if translators_of(qapp).language == "en" and not translators_of(qapp).installed:
        install_language(qapp, "en")


@pytest.fixture(scope="session")
def test_engines() -> engine_support.TestEngines:
    """The real CPU and Vulkan llama-server builds (scripts/test-engines.sh); a test that takes it is
    marked ``engine`` (pytest_collection_modifyitems below)."""
    return engine_support.locate()


@pytest.fixture(scope="session")
def llama_source() -> Path:
    """The pinned llama.cpp source (vocabularies, chat templates): no engine build needed."""
    return engine_support.locate_source()


@pytest.fixture(scope="session")
def _models_dir(tmp_path_factory: pytest.TempPathFactory, llama_source: Path) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def test_model(_models_dir: Path) -> Path:
    """A real llama GGUF (2 layers, width 64, real SPM vocab, ChatML template)."""
    return gguf_model.write_model(_models_dir / "strata-test-llama-F16.gguf")


@pytest.fixture(scope="session")
def split_model(_models_dir: Path) -> list[Path]:
    """The same model as three shards ``-0000N-of-00003.gguf``."""
    return gguf_model.write_split_model(_models_dir / "split", "strata-test-llama-F16", 3)


@pytest.fixture(scope="session")
def broken_models(_models_dir: Path, test_model: Path) -> dict[str, Path]:
    """``bad_magic`` and ``truncated`` copies of the test model."""
    d = _models_dir / "broken"
    d.mkdir(exist_ok=True)
    return {
        "bad_magic": gguf_model.write_bad_magic(d / "bad-magic.gguf", test_model),
        "truncated": gguf_model.write_truncated(d / "truncated.gguf", test_model),
    }


@pytest.fixture(scope="session")
def whisper_model(test_engines: engine_support.TestEngines, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real whisper.cpp model (``ggml-*.bin``: the real English vocabulary, small seeded random
    weights; tests/support/whisper_model.py) the CPU whisper-server loads."""
    from tests.support.whisper_model import write_whisper_model

    return write_whisper_model(tmp_path_factory.mktemp("speech") / "ggml-strata-test.en.bin",
                               test_engines.whisper_vocab_model())


@pytest.fixture(scope="session")
def virtual_microphone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Path], subprocess.Popen[bytes]]]:
    """A PulseAudio server of the test session's own with a null sink ``vmic`` and, over its
    monitor, a source Qt lists as the default microphone; yields ``play(wav)`` (into the sink).
    It lives as long as the session: Qt's sound system stays connected to it once opened."""
    if shutil.which("pulseaudio") is None:
        pytest.fail("pulseaudio is missing: scripts/setup-system.sh installs it")
    run = tmp_path_factory.mktemp("pulse")
    socket = run / "native"
    env = {**os.environ, "PULSE_RUNTIME_PATH": str(run), "PULSE_STATE_PATH": str(run), "HOME": str(run),
           "PULSE_SERVER": f"unix:{socket}"}
    # Daemonised (not a child of the tests, which must leave none running), stopped at the end.
    subprocess.run(
        ["pulseaudio", "-n", "--daemonize=yes", "--exit-idle-time=-1", "--log-target=stderr",
         f"--load=module-native-protocol-unix socket={socket} auth-anonymous=1",
         "--load=module-null-sink sink_name=vmic",
         "--load=module-remap-source master=vmic.monitor source_name=virtmic "
         "source_properties=device.description=VirtualMicrophone"],
        env=env, capture_output=True, check=True, timeout=30)

    def play(wav: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["paplay", "--device=vmic", str(wav)], env=env)

    try:
        deadline = time.monotonic() + 20
        while subprocess.run(["pactl", "set-default-source", "virtmic"], env=env, capture_output=True).returncode:
            assert time.monotonic() < deadline, "the test's PulseAudio server did not start"
            time.sleep(0.05)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("PULSE_SERVER", env["PULSE_SERVER"])
            yield play
    finally:
        subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True, timeout=30)


@pytest.fixture
def qasync_loop(qapp: object) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync event loop on the test QApplication (the app's own: ui/event_loop.py)."""
    from strata_gui.ui.event_loop import new_event_loop

    loop = new_event_loop(qapp)
    try:
        yield loop
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            asyncio.set_event_loop(None)


@pytest.fixture(scope="session")
def vision_model(_models_dir: Path) -> Path:
    """The test llama model with a random-weight vision projector (``mmproj-*.gguf``) beside it."""
    folder = _models_dir / "vision"
    model = gguf_model.write_model(folder / "strata-test-llava-F16.gguf")
    gguf_model.write_mmproj(folder / "mmproj-strata-test-llava-F16.gguf")
    return model
