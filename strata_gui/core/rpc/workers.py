"""RPC workers: the ``rpc-server`` that lends this machine's devices, and checks of remote ones.

``rpc-server`` has no authentication and no encryption: anyone who can reach its port can run
code on the GPU and read the model. It must only listen on a trusted network.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import EngineError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.engine import EngineSpec

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
        raise EngineError(T(QT_TRANSLATE_NOOP("Core", "'{address}' is not a worker address."), address=text),
                          hint=QT_TRANSLATE_NOOP("Core", "Use host:port, e.g. 192.168.1.30:50052."))
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
    try:
        out = await run_blocking(_run_quiet, cmd, env, timeout + 10.0, name="rpc-list-devices")
    except (OSError, subprocess.SubprocessError) as exc:
        return WorkerStatus(address, True, error=f"could not list its devices: {exc}")
    devices = [d for d in parse_devices(out) if d.address == address]
    return WorkerStatus(address, True, devices, "" if devices else "it did not report any device")


def _run_quiet(cmd: list[str], env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)
    return proc.stdout + proc.stderr
