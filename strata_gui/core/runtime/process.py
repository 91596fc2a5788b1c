"""One child process Strata owns (llama-server, rpc-server, sd-server), from launch to its outcome.

The process is a plain :class:`subprocess.Popen` started on the event loop's thread (qasync's
loop cannot run asyncio subprocesses on Windows, and Linux's parent-death signal is tied to the
thread that forks), with one reader thread that keeps a bounded tail of its output (optionally
mirrored to a log file) and posts lines and the exit back to the loop. Readiness is a strategy
passed in (``/health`` over HTTP for llama-server, an accepted TCP connection for rpc-server).
Stopping terminates the whole process tree, waits, then kills what is left. Every ending, even a
launch that never happened, leaves a typed :class:`Outcome`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.events import Listeners
from strata_gui.core.runtime.engine_http import EngineHttp
from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, Phase, ProcessEnded, classify_exit
from strata_gui.core.runtime.process_guard import WindowsJob, guarded_launch

if TYPE_CHECKING:  # psutil (~8 ms) loads when a process tree is first stopped, not at start-up
    import psutil

log = logging.getLogger(__name__)

QUICK_POLL_S = 2.0  # s: readiness is asked every 10 ms this long after the launch, then every poll_interval
KILL_GRACE_S = 10.0  # s: how long a killed process may take to be gone before stop() gives up on it
OUTPUT_GRACE_S = 2.0  # s: how long its output may stay open after it is gone (something it started holds it)

ReadyCheck = Callable[[], Awaitable[bool]]
"""One readiness probe: True once the process serves. Polled until then (or until it exits)."""


def http_ready(engine: EngineHttp | Callable[[], EngineHttp], path: str, timeout: float = 2.0) -> ReadyCheck:
    """Ready when ``GET path`` on the engine answers 200 (llama-server's ``/health`` answers 503 while
    loading). ``engine`` may be a callable: an engine's address can change while it starts (the port
    read from its log)."""

    async def check() -> bool:
        try:
            resp = await (engine() if callable(engine) else engine).get(path, timeout=timeout)
        except ServerError:
            return False
        return resp.status_code == 200

    return check


def tcp_ready(host: str, port: int, timeout: float = 1.0) -> ReadyCheck:
    """Ready when a TCP connection to ``host:port`` is accepted (rpc-server speaks no HTTP)."""

    async def check() -> bool:
        try:
            _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    return check


def resolve_binary(program: str | Path) -> tuple[Path | None, str]:
    """The executable to launch, or None with why not ("" when it simply does not exist)."""
    path = Path(program)
    if path.parent == Path() and not path.is_file():
        found = shutil.which(str(program))
        return (Path(found), "") if found else (None, "")
    if not path.is_file():
        return None, ""
    if sys.platform != "win32" and not os.access(path, os.X_OK):
        return None, f"{path} is not executable"
    return path, ""


class ManagedProcess:
    """One run of a child process: launch, readiness, log tail, stop, and how it ended.

    One instance is one run; start another instance to run again. Its :attr:`lines` listeners get
    every output line and its :attr:`ended` listeners the outcome of its ending (also a failed
    launch), both on the loop's thread.

    Args:
        command: Program and arguments; the program is resolved before anything is launched.
        subject: Who it is, as the user names it ("ROCm engine", "RPC server") in outcomes.
        env: The complete environment of the child (default: Strata's).
        cwd: Working directory of the child.
        ready: Readiness probe; None means ready as soon as it is launched.
        ready_timeout: Seconds to wait for readiness before stopping it (outcome TIMEOUT).
        poll_interval: Seconds between readiness probes.
        log_lines: Size of the kept log tail.
        log_file: Also write every line there (truncated at launch).
        job: Windows job object shared by all engines of the app (they die with it).
        clock: Monotonic clock (seconds).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        subject: str,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        ready: ReadyCheck | None = None,
        ready_timeout: float = 300.0,
        poll_interval: float = 0.1,
        log_lines: int = 400,
        log_file: Path | None = None,
        job: WindowsJob | None = None,
        clock: Callable[[], float] = time.monotonic,
        ready_hint: Callable[[str], bool] | None = None,
    ) -> None:
        self.command = list(command)
        self.subject = subject
        self._env = dict(os.environ if env is None else env)
        self._cwd = cwd
        self._ready = ready
        self.ready_timeout = ready_timeout
        self._poll_interval = poll_interval
        self._tail: collections.deque[str] = collections.deque(maxlen=log_lines)
        self._tail_lock = threading.Lock()
        self.log_file = log_file
        self._job = job
        self.lines: Listeners[str] = Listeners()
        self.ended: Listeners[Outcome] = Listeners()
        self._clock = clock
        # A log line that says the process may serve now ("listening on …"): the readiness probe
        # runs at once instead of at its next poll (up to 10 ms before a first request).
        self._ready_hint = ready_hint
        self._wake: asyncio.Event | None = None  # set by that line or by the exit
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._exited: asyncio.Event | None = None
        self._timed_out = False
        self.phase = Phase.STARTING
        self.outcome: Outcome | None = None
        self.started_at: float | None = None

    # -- observation -------------------------------------------------------------------------
    @property
    def environment(self) -> dict[str, str]:
        """The whole environment it is launched with."""
        return dict(self._env)

    @property
    def folder(self) -> Path | None:
        """Its working folder."""
        return self._cwd

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """The process was launched and has not exited (ready or not)."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def log_tail(self) -> list[str]:
        with self._tail_lock:
            return list(self._tail)

    # -- start -----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Launch and wait until ready.

        Raises:
            ProcessEnded: It could not be launched, exited, or was not ready in time (it is then
                stopped); :attr:`outcome` says which.
        """
        self.spawn()
        await self.wait_ready()

    def spawn(self, adopt: subprocess.Popen[str] | None = None) -> None:
        """Launch the process (call on the loop's thread) and start reading its output.

        Args:
            adopt: A process already launched with exactly this command, environment and folder
                (and the same pipes, see :mod:`strata_gui.core.platform.warm`): it is watched
                instead of launching another.

        Raises:
            ProcessEnded: The program is missing or the OS refused to run it (phase STARTING).
        """
        if self._proc is not None or self.outcome is not None:
            raise RuntimeError("a ManagedProcess runs once; make a new one")
        loop = asyncio.get_running_loop()
        self._exited = asyncio.Event()
        self._wake = asyncio.Event()
        if adopt is not None:
            log.info("adopting %s started early (pid %s): %s", self.subject, adopt.pid,
                     subprocess.list2cmdline(self.command))
            self._watch(adopt, loop, self._open_log_file())
            return
        program, why = resolve_binary(self.command[0])
        if program is None:
            self._end_unlaunched(reason=why)
        log.info("starting %s: %s", self.subject, subprocess.list2cmdline(self.command))
        kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            kwargs["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
        log_file = self._open_log_file()
        try:
            # Popen on the loop's thread, never an executor's: the parent-death signal is tied
            # to the thread that forks.
            argv, preexec = guarded_launch([str(program), *self.command[1:]], os.getpid())
            proc = subprocess.Popen(
                argv, env=self._env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8",
                errors="replace", bufsize=1,
                preexec_fn=preexec,  # noqa: PLW1509 (prctl only, where setpriv is missing)
                cwd=str(self._cwd) if self._cwd is not None else None, **kwargs,
            )
        except OSError as exc:
            if log_file is not None:
                log_file.close()
            self._end_unlaunched(reason=str(exc.strerror or exc))
        self._watch(proc, loop, log_file)

    def _watch(self, proc: subprocess.Popen[str], loop: asyncio.AbstractEventLoop, log_file: IO[str] | None) -> None:
        self._proc = proc
        self.started_at = self._clock()
        if self._job is not None:
            self._job.assign(proc)
        self.phase = Phase.LOADING if self._ready is not None else Phase.RUNNING
        self._reader = threading.Thread(target=self._read_output, args=(proc, loop, log_file),
                                        name=f"process-log-{proc.pid}", daemon=True)
        self._reader.start()

    def _open_log_file(self) -> IO[str] | None:
        if self.log_file is None:
            return None
        try:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            return open(self.log_file, "w", encoding="utf-8")  # the reader thread closes it
        except OSError as exc:  # a read-only or full disk: the engine runs without its log
            log.warning("cannot write the log of %s to %s (%s)", self.subject, self.log_file, exc.strerror or exc)
            return None

    def _end_unlaunched(self, *, reason: str) -> NoReturn:
        outcome = Outcome(OutcomeKind.NOT_FOUND, Phase.STARTING, None, (), self.subject,
                          path=str(self.command[0]), reason=reason)
        self._finish(outcome)
        raise ProcessEnded(outcome)

    async def wait_ready(self) -> None:
        """Poll the readiness probe until it succeeds; stops the process if cancelled or too slow.

        Raises:
            ProcessEnded: It exited, or did not become ready within ``ready_timeout``.
        """
        exited, wake = self._exited, self._wake
        if exited is None or wake is None or self._proc is None:
            raise RuntimeError("wait_ready() before spawn()")
        try:
            if self._ready is not None:
                started = self._clock()
                deadline = started + self.ready_timeout
                while True:
                    if exited.is_set():
                        break
                    if await self._ready():
                        break
                    if exited.is_set():
                        break
                    if self._clock() > deadline:
                        self._timed_out = True
                        await self.stop()
                        break
                    # Small models load in a fraction of a second: ask often at first, so the
                    # first request is not kept waiting for the next probe (10 ms of loopback
                    # polling costs about a millisecond of CPU), then at the usual pace.
                    early = self._clock() - started < QUICK_POLL_S
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), min(self._poll_interval, 0.01) if early
                                               else self._poll_interval)
                    wake.clear()
        except BaseException:  # cancelled, or a probe failed unexpectedly: never leave it running
            await self.stop()
            raise
        if exited.is_set():
            outcome = self.outcome or Outcome(OutcomeKind.CRASHED, Phase.LOADING, self.returncode,
                                              tuple(self.log_tail()), self.subject)
            raise ProcessEnded(outcome)
        self.phase = Phase.RUNNING

    # -- output reader (its own thread) ---------------------------------------------------------
    def _read_output(self, proc: subprocess.Popen[str], loop: asyncio.AbstractEventLoop,
                     log_file: IO[str] | None) -> None:
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                line = raw.rstrip("\r\n")
                with self._tail_lock:
                    self._tail.append(line)
                if log_file is not None:
                    with contextlib.suppress(OSError, ValueError):
                        log_file.write(line + "\n")
                        log_file.flush()
                if self.lines or self._ready_hint is not None:
                    _post(loop, self._deliver_line, line)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdout.close()
            if log_file is not None:
                with contextlib.suppress(OSError):
                    log_file.close()
        code = proc.wait()
        _post(loop, self._deliver_exit, code)

    def _deliver_line(self, line: str) -> None:
        if self._ready_hint is not None and self._wake is not None and self._ready_hint(line):
            self._wake.set()
        self.lines.emit(line)

    def _deliver_exit(self, code: int) -> None:
        if self.outcome is not None:
            return
        tail = tuple(self.log_tail())
        if self._timed_out:
            outcome = Outcome(OutcomeKind.TIMEOUT, Phase.LOADING, code, tail, self.subject,
                              waited=self.ready_timeout)
        elif self.phase is Phase.STOPPING:
            outcome = Outcome(OutcomeKind.STOPPED, Phase.STOPPING, code, tail, self.subject)
        else:
            outcome = classify_exit(code, tail, phase=self.phase, subject=self.subject)
        self._finish(outcome)

    def _finish(self, outcome: Outcome) -> None:
        self.outcome = outcome
        if self._exited is not None:
            self._exited.set()
        if self._wake is not None:
            self._wake.set()
        log.info("%s ended: %s (%s, exit code %s)", self.subject, outcome.kind.value, outcome.phase.value,
                 outcome.exit_code)
        self.ended.emit(outcome)

    # -- stop ------------------------------------------------------------------------------------
    async def wait_exited(self) -> None:
        """Return once the process has exited and its outcome is known (at once if it never ran)."""
        if self._exited is not None and self._proc is not None:
            await self._exited.wait()

    async def stop(self, timeout: float = 5.0) -> None:
        """Terminate the whole process tree, wait up to ``timeout``, then kill what is left.

        Returns once the process is gone and its outcome delivered.
        """
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None and self.outcome is None:
            self.phase = Phase.STOPPING
        deadline = time.monotonic() + timeout
        if proc.poll() is None and _no_children(proc.pid):
            # A lone process (llama-server is one, with threads): no need for psutil (~10 ms to
            # import, the last thing a one-shot `strata chat` did) to find and stop its tree.
            await self._stop_alone(proc, deadline, timeout)
        elif not await self._stop_tree(proc, deadline, timeout):
            # psutil cannot see the tree (denied, or the process just went): stop what Popen holds.
            await self._stop_alone(proc, deadline, timeout)
        # Each wait below is bounded: stopping is what quitting the app and unloading a model wait
        # on, and a process the OS will not end, or a pipe something else holds, must not hang them.
        gone_by = time.monotonic() + KILL_GRACE_S
        delay = 0.002
        while proc.poll() is None and time.monotonic() < gone_by:
            await asyncio.sleep(delay)
            delay = min(0.02, delay * 2)
        if proc.poll() is None:
            log.error("%s process %s is still running %.0f s after it was killed; leaving it", self.subject,
                      proc.pid, KILL_GRACE_S)
        reader = self._reader
        read_by = time.monotonic() + OUTPUT_GRACE_S
        delay = 0.002
        while reader is not None and reader.is_alive() and time.monotonic() < read_by:
            await asyncio.sleep(delay)
            delay = min(0.02, delay * 2)
        if reader is not None and reader.is_alive():
            # A process it started outside its tree (a daemon, a double fork) still holds its output,
            # so the reader never sees the end and would never report the exit: report it here.
            log.warning("%s process %s ended but something it started still holds its output", self.subject,
                        proc.pid)
            self._deliver_exit(proc.returncode if proc.returncode is not None else -9)
        if self._exited is not None:
            # The reader posted the exit; let the loop deliver it before returning.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), 1.0)

    async def _stop_alone(self, proc: subprocess.Popen[str], deadline: float, timeout: float) -> None:
        with contextlib.suppress(OSError):
            proc.terminate()
        # Polling, not an executor wait: no thread may outlive the call. Often at first (llama-server
        # exits within ~10 ms of SIGTERM; a flat 50 ms step made each stop cost 50 ms), then 50 ms.
        delay = 0.002
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(delay)
            delay = min(0.05, delay * 2)
        if proc.poll() is None:
            log.warning("%s process %s did not stop in %.0f s; killing it", self.subject, proc.pid, timeout)
            with contextlib.suppress(OSError):
                proc.kill()

    async def _stop_tree(self, proc: subprocess.Popen[str], deadline: float, timeout: float) -> bool:
        """Stop the process and every descendant psutil can see; False when it sees none of them."""
        import psutil  # loaded when a process tree is first stopped, not at start-up

        procs = _tree(proc.pid)
        if not procs:
            return proc.poll() is not None
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        delay = 0.002
        while any(_alive(p) for p in procs) and time.monotonic() < deadline:
            await asyncio.sleep(delay)
            delay = min(0.05, delay * 2)
        for p in procs:
            if _alive(p):
                log.warning("%s process %s did not stop in %.0f s; killing it", self.subject, p.pid, timeout)
                with contextlib.suppress(psutil.Error):
                    p.kill()
        return True

    def kill_now(self) -> None:
        """Blocking kill of the whole tree (app exit paths without a running loop)."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        if self.outcome is None:
            self.phase = Phase.STOPPING
        import psutil

        for p in _tree(proc.pid):
            with contextlib.suppress(psutil.Error):
                p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        if self._reader is not None:
            self._reader.join(5)


def _post(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # loop already closed (app shutting down)
        pass


def _no_children(pid: int) -> bool:
    """True when ``pid`` surely has no child process (Linux: every thread's ``children`` list in
    /proc is empty); False when it has one or this cannot be told (then psutil walks the tree)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as fh:
                if fh.read().strip():
                    return False
    except (OSError, ValueError):  # gone, or a kernel without CONFIG_PROC_CHILDREN
        return False
    return True


def _tree(pid: int) -> list[psutil.Process]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _alive(p: psutil.Process) -> bool:
    import psutil

    try:
        return bool(p.is_running() and p.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False
