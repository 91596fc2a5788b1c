"""RPC pooling: launch llama-server with ``--rpc`` over the user's workers, lend this machine's
devices with an ``rpc-server``, and drop a worker that stopped answering.

A dropped worker makes llama-server abort mid-reply. The engine pool's fallback loop then asks
this pool's crash advisor (:meth:`RpcPool.advisor`) which workers still answer; the dead ones are
left out of the next launch, and the same engine is reloaded without them and the job sent again.
The rpc-server that lends this machine runs in the engine pool like every engine process.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from strata_gui.core.base.errors import EngineError
from strata_gui.core.base.progress import format_bytes
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.engines.devices import DEVICE_ARG_ENV, SPLIT_ENV
from strata_gui.core.models.fit import MIB, MemoryTarget
from strata_gui.core.models.load_options import model_bytes
from strata_gui.core.pool import CrashAdvisor, EnginePool, Launcher
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.runtime.outcome import Outcome
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.runtime.rpc_server import RpcServerProcess

from .workers import (
    DEFAULT_RPC_PORT,
    WorkerStatus,
    check_worker,
    parse_address,
    rpc_server_executable,
    supports_rpc,
    tcp_reachable,
)

if TYPE_CHECKING:
    from strata_gui.core.runtime.supervisor import ServerSupervisor

log = logging.getLogger(__name__)


class RpcPool:
    """The user's RPC workers and the local rpc-server.

    Args:
        settings_service: Holds ``rpc_workers`` / ``rpc_enabled``; worker changes are saved through it.
        engines: Installed engines, best first (for rpc-server and device listing).
        environ: The app's environment (engines inherit it).
        log_dir: Where the local rpc-server writes its log.
        job: Windows job object (processes die with Strata).
        pool: The engine pool the lending rpc-server runs in (set by the app once the pool exists:
            the pool's launcher is this class's :meth:`wrap`).
    """

    SERVICE = "rpc-server"

    def __init__(self, settings_service: SettingsService, engines: Callable[[], list[EngineSpec]], *,
                 environ: Mapping[str, str] | None = None,
                 log_dir: Path | None = None, job: WindowsJob | None = None,
                 pool: EnginePool | None = None) -> None:
        self.pool = pool
        self.settings_service = settings_service
        self._engines = engines
        self._environ = environ
        self._log_dir = log_dir
        self._job = job
        self.dropped: set[str] = set()
        self.in_use: list[str] = []  # workers of the engine launched last
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
    def wrap(self, inner: Launcher) -> Launcher:
        """The engine pool's launcher, adding ``--rpc`` with the active workers to engines that support it."""

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

    def advisor(self, target: Callable[[], MemoryTarget] | None = None) -> CrashAdvisor:
        """The engine pool's crash advisor: :meth:`after_crash`, and when the model no longer fits
        in the memory left without the dropped worker (``target``), says so."""

        async def advise(outcome: Outcome | None, model: Path) -> str | None:
            notice = await self.after_crash(outcome, model)
            if notice and target is not None:
                notice += fit_after_drop(model, target())
            return notice

        return advise

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
    @property
    def server(self) -> RpcServerProcess | None:
        """The rpc-server lending this machine, while it runs."""
        process = self.pool.service(self.SERVICE) if self.pool is not None else None
        return process if isinstance(process, RpcServerProcess) else None

    async def serve(self, host: str = "127.0.0.1", port: int = DEFAULT_RPC_PORT, *, engine: EngineSpec | None = None,
                    devices: list[str] | None = None, env: Mapping[str, str] | None = None) -> RpcServerProcess:
        """Start an rpc-server from ``engine`` (default: the first installed engine that ships one)
        in the engine pool (a running one is stopped first)."""
        if self.pool is None:
            raise EngineError(QT_TRANSLATE_NOOP("Core", "Lending this computer needs the engine pool."))
        await self.stop_serving()
        spec = engine or next((e for e in self._engines() if rpc_server_executable(e.server_path.parent)), None)
        exe = rpc_server_executable(spec.server_path.parent) if spec is not None else None
        if spec is None or exe is None:
            raise EngineError(QT_TRANSLATE_NOOP("Core", "No installed engine ships an RPC server."),
                              hint=QT_TRANSLATE_NOOP("Core", "Install a Vulkan or ROCm engine that includes rpc-server."))
        log_file = self._log_dir / "rpc-server.log" if self._log_dir is not None else None
        server = RpcServerProcess(exe, host, port, env={**spec.env, **(env or {})}, environ=self._environ,
                                  devices=devices, log_file=log_file, job=self._job)
        await self.pool.start_service(self.SERVICE, server, server.start)
        log.info("rpc-server lending this machine on %s", server.address)
        return server

    async def stop_serving(self) -> None:
        if self.pool is not None:
            await self.pool.stop_service(self.SERVICE)

    async def aclose(self) -> None:
        """Stop lending this machine (the pool stops the engines)."""
        await self.stop_serving()


def fit_after_drop(model: Path, target: MemoryTarget) -> str:
    """" It no longer fits ..." when the model outgrows the GPU memory left (else "")."""
    try:
        needed = model_bytes(model)
    except OSError:
        return ""
    usable = target.usable_bytes
    if usable <= 0 or needed <= usable:
        return ""
    return (f" The model ({format_bytes(needed)}) no longer fits in the GPU memory left "
            f"({format_bytes(usable)}): part of it will run on the processor, which is slower.")
