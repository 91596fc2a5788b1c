"""The ``rpc-server`` that lends this machine's devices to llama.cpp on another computer.

It is an :class:`~strata_gui.core.runtime.supervisor.EngineProcess` like every engine (one run at
a time of a managed process, a state, an outcome, a log), ready once its port accepts a TCP
connection (rpc-server speaks no HTTP). Only the engine pool starts it.

``rpc-server`` has no authentication and no encryption: anyone who can reach its port can run
code on the GPU and read the model. It must only listen on a trusted network.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from pathlib import Path

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.launch import ServerState
from strata_gui.core.runtime.outcome import Outcome, OutcomeKind, ProcessEnded
from strata_gui.core.runtime.process import ManagedProcess, tcp_ready
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.runtime.supervisor import EngineProcess


def _bind_problem(host: str, port: int) -> str:
    """"" when ``host:port`` is free to listen on, else why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            return str(exc.strerror or exc)
    return ""


class RpcServerProcess(EngineProcess):
    """One ``rpc-server`` lending this machine's devices.

    Args:
        executable: The engine's rpc-server.
        host: Interface to bind; anything but loopback is reachable by the whole network.
        port: TCP port.
        env: Variables added to ``environ`` (the engine's library path, device selection).
        environ: Base environment (default: Strata's).
        devices: ``-d`` list (e.g. ``["Vulkan0"]`` or ``["CPU"]``); empty: the server's default.
        threads: ``-t`` (0: the server's default).
        log_file: Where its output is also written.
        job: Windows job object (the server dies with Strata).
    """

    def __init__(self, executable: Path, host: str, port: int, *, env: Mapping[str, str] | None = None,
                 environ: Mapping[str, str] | None = None, devices: list[str] | None = None,
                 threads: int = 0, log_file: Path | None = None, job: WindowsJob | None = None) -> None:
        super().__init__("RPC server", job=job)
        self.executable = executable
        self.host, self.port = host, port
        self._env = {**(environ if environ is not None else os.environ), **(env or {})}
        self.devices = devices or []
        self.threads = threads
        self.log_file = log_file

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

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
            ServerError: It could not be launched, exited (port taken, bad device) or never listened.
        """
        if self.running:
            return
        busy = _bind_problem(self.host, self.port)
        if busy:
            raise ServerError(T(QT_TRANSLATE_NOOP("Core", "Cannot lend this computer on {address}: {reason}"),
                                address=self.address, reason=busy),
                              hint=QT_TRANSLATE_NOOP("Core", "Another program (or another RPC server) uses this port; "
                                                             "choose another one."))
        probe = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        run = self._run = object()
        process = ManagedProcess(self.command(), subject=self.subject, env=self._env,
                                 ready=tcp_ready(probe, self.port), ready_timeout=timeout,
                                 log_file=self.log_file, job=self._job)
        process.ended.subscribe(functools.partial(self._on_end, run))
        self._process = process
        self.outcome = None
        self._set_state(ServerState.STARTING, f"Lending this computer on {self.address}…")
        try:
            await process.start()
        except ProcessEnded as exc:
            raise _start_error(exc.outcome, self.executable, self.port) from exc
        self.started_at = process.started_at
        self._set_state(ServerState.READY, f"Lending this computer on {self.address}")

    def log_text(self, lines: int = 30) -> str:
        """The last ``lines`` lines it printed (of the current or last run)."""
        return "\n".join(self.log_tail()[-lines:])


def _start_error(outcome: Outcome, executable: Path, port: int) -> ServerError:
    """rpc-server's own words for a start that failed (it has no model to load, only a port to bind)."""
    details = outcome.details() or None
    if outcome.kind is OutcomeKind.NOT_FOUND:
        why = outcome.reason or f"{outcome.path} is missing"
        return ServerError(T(QT_TRANSLATE_NOOP("Core", "Could not start {program}: {reason}"), program=executable.name,
                             reason=why), hint=QT_TRANSLATE_NOOP("Core", "Reinstall the engine on the Engines page."))
    if outcome.kind is OutcomeKind.TIMEOUT:
        return ServerError(QT_TRANSLATE_NOOP("Core", "The RPC server did not start listening."), details=details)
    return ServerError(T(QT_TRANSLATE_NOOP("Core", "The RPC server stopped at once (exit code {code})."),
                         code=outcome.exit_code),
                       hint=T(QT_TRANSLATE_NOOP("Core", "Is port {port} already in use, or the device name wrong?"),
                              port=port), details=details)
