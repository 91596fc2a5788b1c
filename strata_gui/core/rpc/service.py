"""RPC pooling for the chat: launch llama-server with ``--rpc`` over the user's workers, lend this
machine's devices with an ``rpc-server``, and drop a worker that stopped answering.

A dropped worker makes llama-server abort mid-reply. The chat then asks :meth:`RpcPool.after_crash`
which workers still answer; the dead ones are left out of the next launch, and the chat reloads
the model without them and sends the interrupted request again.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from strata_gui.core.engines.devices import DEVICE_ARG_ENV, SPLIT_ENV
from strata_gui.core.errors import EngineError
from strata_gui.core.models.fit import MIB, MemoryTarget
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.runtime.supervisor import ServerSettings, ServerSupervisor, SupervisorFactory
from strata_gui.core.settings import Settings, SettingsService

from .workers import (
    DEFAULT_RPC_PORT,
    RpcServerProcess,
    WorkerStatus,
    check_worker,
    parse_address,
    rpc_server_executable,
    supports_rpc,
    tcp_reachable,
)

log = logging.getLogger(__name__)


class RpcPool:
    """The user's RPC workers and the local rpc-server.

    Args:
        settings_service: Holds ``rpc_workers`` / ``rpc_enabled``; worker changes are saved through it.
        engines: Installed engines, best first (for rpc-server and device listing).
        environ: The app's environment (engines inherit it).
        log_dir: Where the local rpc-server writes its log.
        job: Windows job object (processes die with Strata).
    """

    def __init__(self, settings_service: SettingsService, engines: Callable[[], list[EngineSpec]], *,
                 environ: Mapping[str, str] | None = None,
                 log_dir: Path | None = None, job: WindowsJob | None = None) -> None:
        self.settings_service = settings_service
        self._engines = engines
        self._environ = environ
        self._log_dir = log_dir
        self._job = job
        self.dropped: set[str] = set()
        self.in_use: list[str] = []  # workers of the engine launched last
        self.server: RpcServerProcess | None = None
        self.last_status: dict[str, WorkerStatus] = {}

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: worker changes go through the settings service)."""
        return self.settings_service.current

    def use_engines(self, engines: Callable[[], list[EngineSpec]]) -> None:
        """Take rpc-server and device listings from these engines instead (an explicit choice)."""
        self._engines = engines

    # -- workers ----------------------------------------------------------------------------------
    @property
    def workers(self) -> list[str]:
        return list(self.settings.rpc_workers)

    def active_workers(self) -> list[str]:
        if not self.settings.rpc_enabled:
            return []
        return [w for w in self.settings.rpc_workers if w not in self.dropped]

    def add_worker(self, address: str) -> str:
        """Remember a worker (``host[:port]``) and turn RPC on; returns the normalised address.

        Raises:
            EngineError: the address cannot be parsed.
            SettingsError: the settings could not be saved (nothing changed).
        """
        addr = parse_address(address)
        workers = self.settings.rpc_workers
        self.settings_service.update(rpc_workers=workers if addr in workers else [*workers, addr],
                                     rpc_enabled=True)
        self.dropped.discard(addr)
        return addr

    def remove_worker(self, address: str) -> None:
        """Forget a worker (saved at once)."""
        addr = parse_address(address)
        self.settings_service.update(rpc_workers=[w for w in self.settings.rpc_workers if w != addr])
        self.dropped.discard(addr)

    def set_enabled(self, enabled: bool) -> None:
        """Launch the chat's engine over the workers (or not), saved at once."""
        self.settings_service.update(rpc_enabled=enabled)

    def rpc_engine(self) -> EngineSpec | None:
        """The first installed engine whose llama-server can use RPC workers."""
        return next((e for e in self._engines() if supports_rpc(e)), None)

    async def check(self, address: str) -> WorkerStatus:
        """Reachable? Which devices? A worker that answers again is no longer left out."""
        status = await check_worker(parse_address(address), self.rpc_engine(), self._environ)
        self.last_status[status.address] = status
        if status.reachable:
            self.dropped.discard(status.address)
        return status

    async def check_all(self) -> list[WorkerStatus]:
        return [await self.check(w) for w in self.settings.rpc_workers]

    def remote_memory_mb(self) -> int:
        """Free memory the active workers reported at their last check (for the fit verdict)."""
        return sum(s.memory_mb for a, s in self.last_status.items() if a in self.active_workers())

    def extend_target(self, target: MemoryTarget) -> MemoryTarget:
        """The fit target counting the active workers' free memory (layers spread over them)."""
        extra = self.remote_memory_mb() * MIB
        if not extra:
            return target
        n = len([a for a in self.active_workers() if a in self.last_status])
        return dataclasses.replace(
            target, name=f"{target.name} + {n} RPC worker{'s' if n != 1 else ''}",
            vram_bytes=target.vram_bytes + extra,
            budget_bytes=target.budget_bytes + extra if target.budget_bytes else 0)

    # -- the chat's engine ----------------------------------------------------------------------------
    def wrap(self, inner: SupervisorFactory) -> SupervisorFactory:
        """A supervisor factory that adds ``--rpc`` with the active workers to engines that support it."""

        def make(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
            workers = self.active_workers() if supports_rpc(engine) else []
            self.in_use = workers
            if workers:
                settings = dataclasses.replace(settings, extra_args=(*settings.extra_args, "--rpc", ",".join(workers)))
                local_only = (DEVICE_ARG_ENV, *SPLIT_ENV)
                if any(k in engine.env for k in local_only):
                    # --device and --tensor-split name local devices only and would leave the workers'
                    # RPC devices out; the visibility variables still keep a left-out local GPU hidden.
                    engine = dataclasses.replace(
                        engine, env={k: v for k, v in engine.env.items() if k not in local_only})
                log.info("launching %s with RPC workers %s", engine.label, ", ".join(workers))
            return inner(engine, model, settings)

        return make

    async def after_crash(self, outcome: Outcome | None, model: Path | None = None) -> str | None:
        """A reply failed: drop workers that no longer answer; say so (None: no worker to blame)."""
        if not self.in_use:
            return None
        gone = [w for w in self.in_use if await tcp_reachable(w, 2.0)]
        if not gone:
            return None
        self.dropped.update(gone)
        left = [w for w in self.in_use if w not in gone]
        where = ", ".join(left) if left else "this computer alone"
        names = ", ".join(gone)
        log.warning("RPC worker(s) %s stopped answering; reloading on %s", names, where)
        return (f"RPC worker {names} stopped answering. Reloading the model without it "
                f"(on {where}) and sending the message again.")

    # -- lending this machine ---------------------------------------------------------------------------
    async def serve(self, host: str = "127.0.0.1", port: int = DEFAULT_RPC_PORT, *, engine: EngineSpec | None = None,
                    devices: list[str] | None = None, env: Mapping[str, str] | None = None) -> RpcServerProcess:
        """Start an rpc-server from ``engine`` (default: the first installed engine that ships one)."""
        await self.stop_serving()
        spec = engine or next((e for e in self._engines() if rpc_server_executable(e.server_path.parent)), None)
        exe = rpc_server_executable(spec.server_path.parent) if spec is not None else None
        if spec is None or exe is None:
            raise EngineError("No installed engine ships an RPC server.",
                              hint="Install a Vulkan or ROCm engine that includes rpc-server.")
        log_file = self._log_dir / "rpc-server.log" if self._log_dir is not None else None
        server = RpcServerProcess(exe, host, port, env={**spec.env, **(env or {})}, environ=self._environ,
                                  devices=devices, log_file=log_file, job=self._job)
        await server.start()
        self.server = server
        log.info("rpc-server lending this machine on %s", server.address)
        return server

    async def stop_serving(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await server.stop()

    async def aclose(self) -> None:
        await self.stop_serving()
