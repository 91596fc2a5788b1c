"""A seeded random workload against a real engine pool: the scheduler's stress test.

Clients chat, stream, stop mid-stream, embed, ask for ``keep_alive`` 0 and switch load options
over three models in a memory budget for two, while engines are killed (``SIGKILL``) and some
starts hang (a server that never answers, failed by its load time-out). The report says what a
scheduler must never do: start an engine that then serves nobody, hold two copies of one model,
leave a request waiting for ever, lose a lease, or leave an engine running. The test suite runs
a short form (``tests/pool/test_stress.py``), ``bench/pool_stress.py`` a long one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import signal
import stat
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from strata_gui.core.base.errors import StrataError
from strata_gui.core.pool import (
    EnginePool,
    EngineStateChanged,
    EngineUnloaded,
    Lease,
    PoolEvent,
)
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.kinds import EMBEDDING
from strata_gui.core.runtime.launch import ServerSettings, ServerState
from strata_gui.core.runtime.supervisor import ServerSupervisor

MIB = 1024 * 1024
OPERATIONS = ("chat", "stream", "stop", "embed", "switch")


@dataclass(frozen=True)
class StressConfig:
    """The workload. ``duration_s`` set: clients go on until then, else ``ops_per_client`` each."""

    seed: int = 1
    clients: int = 30
    ops_per_client: int = 3
    duration_s: float | None = None
    kill_every_s: float = 4.0  # an engine is killed (SIGKILL) about this often (0: never)
    hang_rate: float = 0.1  # share of starts that never become ready
    keep_alive_zero_rate: float = 0.15
    request_limit_s: float = 240.0  # a request that waits longer "waits for ever"
    hang_timeout_s: float = 3.0  # the load time-out that fails a hanging start
    need_mib: int = 100  # what each engine counts against the budget
    budget_mib: int = 250  # room for two


@dataclass
class StressReport:
    """What happened, and what must never have."""

    ops: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    granted: int = 0
    released: int = 0
    waited_forever: int = 0
    starts: int = 0
    kills: int = 0
    hangs: int = 0
    served: Counter[int] = field(default_factory=Counter)  # leases per engine serial
    ready: set[int] = field(default_factory=set)
    wasted: list[str] = field(default_factory=list)  # loaded, then unloaded without serving anyone
    two_copies: list[str] = field(default_factory=list)
    leases_left: int = 0
    engines_left: int = 0
    processes_left: int = 0
    longest_wait_s: float = 0.0
    elapsed_s: float = 0.0

    def problems(self) -> list[str]:
        out = []
        if self.wasted:
            out.append(f"{len(self.wasted)} start(s) beyond demand: {self.wasted[:3]}")
        if self.two_copies:
            out.append(f"two copies of a model at once: {self.two_copies[:3]}")
        if self.waited_forever:
            out.append(f"{self.waited_forever} request(s) waited over the limit")
        if self.granted != self.released or self.leases_left:
            out.append(f"leases lost: {self.granted} granted, {self.released} released, {self.leases_left} held")
        if self.engines_left or self.processes_left:
            out.append(f"engines left: {self.engines_left} in the pool, {self.processes_left} processes")
        return out

    def summary(self) -> str:
        return (f"{sum(self.ops.values())} operations {dict(self.ops)} in {self.elapsed_s:.0f} s; "
                f"{self.granted} leases, {self.starts} engine starts ({self.hangs} made to hang), {self.kills} "
                f"engines killed; failures {dict(self.failures)}; longest wait {self.longest_wait_s:.1f} s; "
                f"problems: {self.problems() or 'none'}")


class FlatBudget:
    """Every engine needs the same memory; the budget holds ``budget // need`` of them."""

    def __init__(self, need: int, budget: int) -> None:
        self.need, self.limit = need, budget

    def estimate(self, engine: EngineSpec, model: Path, settings: ServerSettings) -> int:
        return self.need

    def budget(self, group: str) -> int:
        return self.limit


def hanging_server(folder: Path) -> Path:
    """A "server" that starts and never answers (a load that hangs)."""
    path = folder / "hanging-llama-server"
    path.write_text("#!/bin/sh\nexec sleep 600\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def stress_launcher(http: httpx.AsyncClient, folder: Path, cfg: StressConfig, report: StressReport
                    ) -> Callable[[EngineSpec, Path, ServerSettings], ServerSupervisor]:
    """Real servers, except a seeded share of starts that hang until their load time-out."""
    rng = random.Random(cfg.seed * 7919)
    hang = hanging_server(folder)

    def make(engine: EngineSpec, model: Path, settings: ServerSettings) -> ServerSupervisor:
        report.starts += 1
        if rng.random() < cfg.hang_rate:
            report.hangs += 1
            return ServerSupervisor(dataclasses.replace(engine, server_path=hang), model, settings, http=http,
                                    ready_timeout=cfg.hang_timeout_s)
        return ServerSupervisor(engine, model, settings, http=http, ready_timeout=120.0)

    return make


class Workload:
    """The clients and the chaos, over one pool."""

    def __init__(self, pool: EnginePool, spec: EngineSpec, models: Sequence[Path], cfg: StressConfig,
                 report: StressReport) -> None:
        self.pool, self.spec, self.models, self.cfg, self.report = pool, spec, list(models), cfg, report
        self.base = ServerSettings(ctx_size=256, jinja=False, metrics=False, parallel=2)
        self.deadline = time.monotonic() + cfg.duration_s if cfg.duration_s else None
        self.some_ready = asyncio.Event()
        pool.events.subscribe(self._watch)

    # -- what the pool does ---------------------------------------------------------------------
    def _watch(self, event: PoolEvent) -> None:
        report = self.report
        if isinstance(event, EngineStateChanged) and event.state is ServerState.READY:
            report.ready.add(event.engine.serial)
            self.some_ready.set()
        if isinstance(event, EngineUnloaded):
            e = event.engine
            if (e.serial in report.ready and not report.served[e.serial] and e.doomed is None
                    and "closing" not in event.reason):
                report.wasted.append(f"{e.describe()} #{e.serial}: {event.reason}")
        live = [e for e in self.pool.engines() if not e.closing and e.state is not ServerState.FAILED]
        slots = Counter(e.key.model_slot for e in live)
        report.two_copies += [f"{kind}:{Path(model).name}" for (kind, model), n in slots.items() if n > 1]

    # -- the clients ----------------------------------------------------------------------------
    async def client(self, index: int, http: httpx.AsyncClient) -> None:
        rng = random.Random(self.cfg.seed * 1000 + index)
        done = 0
        while (self.deadline is None and done < self.cfg.ops_per_client) or \
                (self.deadline is not None and time.monotonic() < self.deadline):
            done += 1
            await self.operation(rng, http)

    async def operation(self, rng: random.Random, http: httpx.AsyncClient) -> None:
        op = rng.choice(OPERATIONS)
        self.report.ops[op] += 1
        model = rng.choice(self.models)
        spec, settings = self.spec, self.base
        if op == "embed":
            spec = dataclasses.replace(spec, kind=EMBEDDING)
            settings = dataclasses.replace(settings, extra_args=("--pooling", "mean"))
        elif op == "switch":
            settings = dataclasses.replace(settings, ctx_size=rng.choice((384, 512)))
        keep_alive = 0.0 if rng.random() < self.cfg.keep_alive_zero_rate else None
        user = rng.choice(("chat", "api", "api"))
        lease = await self._acquire(spec, model, settings, user, keep_alive)
        if lease is None:
            return
        try:
            await self._work(op, lease, http)
            lease.succeeded()
        except (httpx.HTTPError, AssertionError) as exc:
            self.report.failures[f"{op} request failed ({type(exc).__name__})"] += 1
        finally:
            lease.release()
            self.report.released += 1

    async def _acquire(self, spec: EngineSpec, model: Path, settings: ServerSettings, user: str,
                       keep_alive: float | None) -> Lease | None:
        asked = time.monotonic()
        try:
            lease = await asyncio.wait_for(self.pool.acquire(spec, model, settings, user=user, keep_alive=keep_alive),
                                           self.cfg.request_limit_s)
        except TimeoutError:
            self.report.waited_forever += 1
            return None
        except StrataError as exc:  # a hanging start's time-out, an engine killed while it loaded
            self.report.failures[type(exc).__name__] += 1
            return None
        finally:
            self.report.longest_wait_s = max(self.report.longest_wait_s, time.monotonic() - asked)
        self.report.granted += 1
        self.report.served[lease.engine.serial] += 1
        return lease

    @staticmethod
    async def _work(op: str, lease: Lease, http: httpx.AsyncClient) -> None:
        headers = lease.auth_headers()
        if op == "embed":
            resp = await http.post(lease.base_url + "/v1/embeddings", json={"input": "hello"}, headers=headers)
            assert resp.status_code == 200, resp.text
            return
        if op in ("chat", "switch"):
            resp = await http.post(lease.base_url + "/completion", json={"prompt": "Hi", "n_predict": 8},
                                   headers=headers)
            assert resp.status_code == 200, resp.text
            return
        body = {"prompt": "Once upon a time", "n_predict": 24, "stream": True}
        async with http.stream("POST", lease.base_url + "/completion", json=body, headers=headers) as resp:
            assert resp.status_code == 200
            pieces = 0
            async for line in resp.aiter_lines():
                pieces += line.startswith("data: ")
                if op == "stop" and pieces >= 2:
                    break  # the user pressed Stop: the connection closes mid-stream

    # -- the chaos ----------------------------------------------------------------------------------
    async def chaos(self, stop: asyncio.Event) -> None:
        if self.cfg.kill_every_s <= 0:
            return
        rng = random.Random(self.cfg.seed * 31)
        waits = [asyncio.ensure_future(self.some_ready.wait()), asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        while not stop.is_set():  # the first kill as soon as an engine is up, then every so often
            ready = [e for e in self.pool.engines() if e.ready and e.pid is not None]
            if ready and not stop.is_set():
                victim = rng.choice(ready)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim.pid or 0, signal.SIGKILL)
                    self.report.kills += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), rng.uniform(0.5, 1.5) * self.cfg.kill_every_s)


def engine_processes(binary: Path) -> list[psutil.Process]:
    """This process's children running ``binary`` (engines left behind)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if str(binary) in " ".join(p.cmdline()):
                out.append(p)
    return out


async def run_stress(spec: EngineSpec, models: Sequence[Path], folder: Path, cfg: StressConfig) -> StressReport:
    """Run the workload on a fresh pool, close it, and report."""
    report = StressReport()
    started = time.monotonic()
    async with httpx.AsyncClient(trust_env=False, timeout=120) as http:
        pool = EnginePool(stress_launcher(http, folder, cfg, report),
                          memory=FlatBudget(cfg.need_mib * MIB, cfg.budget_mib * MIB), idle_timeout=lambda: 2.0)
        work = Workload(pool, spec, models, cfg, report)
        stop = asyncio.Event()
        chaos = asyncio.create_task(work.chaos(stop))
        try:
            await asyncio.gather(*(work.client(i, http) for i in range(cfg.clients)))
        finally:
            stop.set()
            await chaos
            report.leases_left = sum(e.leases for e in pool.engines())
            await pool.aclose()
            report.engines_left = len(pool.engines())
    report.processes_left = len(engine_processes(spec.server_path))
    report.elapsed_s = time.monotonic() - started
    return report
