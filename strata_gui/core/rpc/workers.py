"""RPC workers: the ``rpc-server`` that lends this machine's devices, and checks of remote ones.

``rpc-server`` has no authentication and no encryption: anyone who can reach its port can run
code on the GPU and read the model. It must only listen on a trusted network.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from strata_gui.core.errors import EngineError, ServerError
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.process_guard import WindowsJob, linux_preexec

DEFAULT_RPC_PORT = 50052
TRUST_WARNING = ("rpc-server has no password and no encryption: anyone who can reach this port can use "
                 "this computer's GPU and memory. Only expose it on a network you trust.")
RPC_SERVER_NAMES = ("rpc-server", "ggml-rpc-server")
_DEVICE_LINE = re.compile(r"^\s*(RPC\d+):\s*(\S+)\s*\((\d+)\s*MiB,\s*(\d+)\s*MiB free\)")


def rpc_server_executable(folder: Path) -> Path | None:
    """The engine's rpc-server (``rpc-server`` or ``ggml-rpc-server``), if it ships one."""
    suffix = ".exe" if sys.platform == "win32" else ""
    for name in RPC_SERVER_NAMES:
        exe = folder / (name + suffix)
        if exe.is_file():
            return exe
    return None


def supports_rpc(engine: EngineSpec) -> bool:
    """Whether the engine's llama-server can use RPC workers (it ships the RPC backend)."""
    folder = engine.server_path.parent
    if rpc_server_executable(folder) is not None:
        return True
    return any(p.name.startswith(("libggml-rpc", "ggml-rpc")) for p in folder.iterdir()) if folder.is_dir() else False


def parse_address(text: str, default_port: int = DEFAULT_RPC_PORT) -> str:
    """``host[:port]`` → ``host:port``; raises EngineError on anything else."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = text, str(default_port)
    host = host.strip("[]")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536 or any(c.isspace() for c in host):
        raise EngineError(f"'{text}' is not a worker address.", hint="Use host:port, e.g. 192.168.1.30:50052.")
    return f"{host}:{int(port_text)}"


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


@dataclass(frozen=True)
class RpcDevice:
    name: str  # RPC0, RPC1 ... as llama-server numbers them
    address: str
    total_mb: int
    free_mb: int


@dataclass(frozen=True)
class WorkerStatus:
    address: str
    reachable: bool
    devices: list[RpcDevice] = field(default_factory=list)
    error: str = ""

    @property
    def memory_mb(self) -> int:
        return sum(d.free_mb for d in self.devices)


def parse_devices(output: str) -> list[RpcDevice]:
    """Devices from ``llama-server --rpc ... --list-devices``."""
    devices = []
    for line in output.splitlines():
        m = _DEVICE_LINE.match(line)
        if m:
            devices.append(RpcDevice(m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return devices


async def tcp_reachable(address: str, timeout: float = 2.0) -> str:
    """"" when a TCP connection to ``address`` opens, else why not."""
    host, port = split_address(address)
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return f"no answer from {address} within {timeout:.0f} s"
    except OSError as exc:
        return f"{address}: {exc.strerror or exc}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ""


async def check_worker(address: str, engine: EngineSpec | None, environ: Mapping[str, str] | None = None,
                       timeout: float = 2.0) -> WorkerStatus:
    """Is the worker reachable, and which devices does it offer (asked through ``engine``'s server)?"""
    problem = await tcp_reachable(address, timeout)
    if problem:
        return WorkerStatus(address, False, error=problem)
    if engine is None or not supports_rpc(engine):
        return WorkerStatus(address, True, error="no installed engine with RPC support to list its devices")
    env = {**(environ if environ is not None else os.environ), **engine.env}
    cmd = [str(engine.server_path), "--rpc", address, "--list-devices"]
    loop = asyncio.get_running_loop()
    try:
        out = await loop.run_in_executor(None, _run_quiet, cmd, env, timeout + 10.0)
    except (OSError, subprocess.SubprocessError) as exc:
        return WorkerStatus(address, True, error=f"could not list its devices: {exc}")
    devices = [d for d in parse_devices(out) if d.address == address]
    return WorkerStatus(address, True, devices, "" if devices else "it did not report any device")


def _bind_problem(host: str, port: int) -> str:
    """"" when ``host:port`` is free to listen on, else why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            return str(exc.strerror or exc)
    return ""


def _run_quiet(cmd: list[str], env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    return proc.stdout + proc.stderr


class RpcServerProcess:
    """One ``rpc-server`` lending this machine's devices.

    Args:
        executable: The engine's rpc-server.
        host: Interface to bind; anything but loopback is reachable by the whole network.
        port: TCP port.
        env: Variables added to ``environ`` (the engine's library path, device selection).
        devices: ``-d`` list (e.g. ``["Vulkan0"]`` or ``["CPU"]``); empty: the server's default.
        log_file: Where its output goes.
        job: Windows job object (the server dies with Strata).
    """

    def __init__(self, executable: Path, host: str, port: int, *, env: Mapping[str, str] | None = None,
                 environ: Mapping[str, str] | None = None, devices: list[str] | None = None,
                 threads: int = 0, log_file: Path | None = None, job: WindowsJob | None = None) -> None:
        self.executable = executable
        self.host, self.port = host, port
        self._env = {**(environ if environ is not None else os.environ), **(env or {})}
        self.devices = devices or []
        self.threads = threads
        self.log_file = log_file
        self._job = job
        self._proc: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        cmd = [str(self.executable), "-H", self.host, "-p", str(self.port)]
        if self.devices:
            cmd += ["-d", ",".join(self.devices)]
        if self.threads:
            cmd += ["-t", str(self.threads)]
        return cmd

    async def start(self, timeout: float = 15.0) -> None:
        """Start and wait until the port accepts connections.

        Raises:
            ServerError: It exited (port taken, bad device) or never listened.
        """
        if self.running:
            return
        busy = _bind_problem(self.host, self.port)
        if busy:
            raise ServerError(f"Cannot lend this computer on {self.address}: {busy}",
                              hint="Another program (or another RPC server) uses this port; choose another one.")
        self._spawn()
        if self._job is not None and self._proc is not None:
            self._job.assign(self._proc)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        probe = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        while True:
            proc = self._proc
            assert proc is not None
            if proc.poll() is not None:
                tail = self.log_tail()
                await self.stop()
                raise ServerError(f"The RPC server stopped at once (exit code {proc.returncode}).",
                                  hint=f"Is port {self.port} already in use, or the device name wrong?",
                                  details=tail)
            if not await tcp_reachable(f"{probe}:{self.port}", 1.0):
                return
            if loop.time() > deadline:
                await self.stop()
                raise ServerError("The RPC server did not start listening.", details=self.log_tail())
            await asyncio.sleep(0.1)

    def _spawn(self) -> None:
        # On the loop's thread, never an executor's: the parent-death signal is tied to the forking thread.
        try:
            if self.log_file is not None:
                self.log_file.parent.mkdir(parents=True, exist_ok=True)
                self._log = open(self.log_file, "w", encoding="utf-8")  # noqa: SIM115 (closed in stop)
            kwargs: dict[str, object] = {}
            if sys.platform == "win32":
                kwargs["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
            self._proc = subprocess.Popen(
                self.command(), env=self._env, stdin=subprocess.DEVNULL,
                stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT, text=True,
                preexec_fn=linux_preexec(os.getpid()), **kwargs)  # type: ignore[call-overload]  # noqa: PLW1509
        except OSError as exc:
            self._close_log()
            raise ServerError(f"Could not start {self.executable.name}: {exc.strerror or exc}",
                              hint="Reinstall the engine on the Engines page.") from exc

    def log_tail(self, lines: int = 30) -> str:
        if self.log_file is None or not self.log_file.exists():
            return ""
        with contextlib.suppress(OSError):
            return "\n".join(self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        return ""

    async def stop(self, timeout: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while proc.poll() is None and loop.time() < deadline:
                await asyncio.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
                while proc.poll() is None:
                    await asyncio.sleep(0.05)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
