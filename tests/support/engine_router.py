"""A :class:`~strata_gui.core.serve.router.ModelRouter` over real engines, for tests of the local API.

Stands in for the engine pool: each model is either an engine already running (a module fixture
shares it between tests; the router never stops it) or one the router starts on first use (a real
``llama-server`` or ``sd-server`` process) and stops on unload or at :meth:`aclose`. ``max_busy``
bounds the requests in flight over all models; one more is refused with ServerBusyError, as the
pool refuses a start that would not fit.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from strata_gui.core.base.blocking import run_blocking
from strata_gui.core.base.errors import ServerBusyError, ServerError, UnknownModelError
from strata_gui.core.serve.router import KEEP_FOREVER, LoadedModel, ServedModel, Upstream
from tests.support.engines import free_port


@dataclass
class EngineProcess:
    """A real engine process on a loopback port."""

    proc: subprocess.Popen[bytes]
    base_url: str

    @classmethod
    def start(cls, cmd: list[str], ready_path: str, port: int, timeout: float = 120.0) -> EngineProcess:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise ServerError(f"{Path(cmd[0]).name} exited with {proc.returncode} while starting")
            try:
                if httpx.get(base + ready_path, timeout=2).status_code == 200:
                    return cls(proc, base)
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise ServerError(f"{Path(cmd[0]).name} did not become ready")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def llama_command(exe: Path, model: Path, port: int, *extra: str, api_key: str = "") -> list[str]:
    cmd = [str(exe), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "1024", "--jinja",
           "-t", "2", *extra]
    return cmd + (["--api-key", api_key] if api_key else [])


@dataclass
class TestModel:
    """One model the router serves.

    Attributes:
        served: What clients see.
        apis: What its engine speaks (the test may leave one out to force a translation).
        base_url: An engine already running (never stopped here); or None to start ``command``.
        command: Builds the engine's command line for a port (when ``base_url`` is None).
        ready_path: What answers 200 once the engine is ready.
        api_key: The engine's own key.
    """

    __test__ = False

    served: ServedModel
    apis: frozenset[str]
    base_url: str | None = None
    command: object = None  # Callable[[int], list[str]]
    ready_path: str = "/health"
    api_key: str = ""
    engine: str = "CPU"
    backend: str = "cpu"
    process: EngineProcess | None = None
    busy: int = 0
    last_used: float = field(default_factory=time.monotonic)
    keep_alive: float | None = None
    starts: int = 0


def served(model_id: str, kind: str, path: Path, **details: object) -> ServedModel:
    st = path.stat()
    return ServedModel(id=model_id, kind=kind, path=path, size_bytes=st.st_size, modified=st.st_mtime,
                       details={"format": "gguf", "family": "llama", "parameter_size": "1M",
                                "quantization_level": "F16", "capabilities": ["completion"], **details})


class EngineRouter:
    """Lends real engines per request (see the module doc)."""

    def __init__(self, models: Sequence[TestModel], *, max_busy: int = 8, retry_after: float = 2.0) -> None:
        self._models = {m.served.id: m for m in models}
        self.max_busy = max_busy
        self.retry_after = retry_after
        self.borrows: list[tuple[str, str | None, float | None]] = []  # (model, kind, keep_alive) asked
        self.unloads: list[str] = []

    def models(self) -> Sequence[ServedModel]:
        return [m.served for m in self._models.values()]

    async def refresh(self) -> None:
        return None

    def _running(self, m: TestModel) -> str | None:
        return m.base_url or (m.process.base_url if m.process is not None else None)

    @asynccontextmanager
    async def borrow(self, model_id: str, *, kind: str | None = None,
                     keep_alive: float | None = None) -> AsyncIterator[Upstream]:
        self.borrows.append((model_id, kind, keep_alive))
        m = self._models.get(model_id)
        if m is None or (kind is not None and m.served.kind != kind):
            what = f"{kind} model" if kind else "model"
            raise UnknownModelError(f"No {what} named '{model_id}' is served here.")
        if sum(x.busy for x in self._models.values()) >= self.max_busy:
            raise ServerBusyError("Every engine slot is in use.", retry_after=self.retry_after)
        m.busy += 1
        try:
            base = self._running(m)
            if base is None:
                port = free_port()
                cmd = m.command(port)  # type: ignore[operator]
                m.process = await run_blocking(EngineProcess.start, cmd, m.ready_path, port)
                m.starts += 1
                base = m.process.base_url
            if keep_alive is not None:
                m.keep_alive = keep_alive
            yield Upstream(base_url=base, api_key=m.api_key, model=m.served, apis=m.apis, engine=m.engine,
                           backend=m.backend)
        finally:
            m.busy -= 1
            m.last_used = time.monotonic()
            if m.busy == 0 and m.keep_alive == 0:
                await self._stop(m)

    async def _stop(self, m: TestModel) -> None:
        if m.process is not None:
            proc, m.process = m.process, None
            await run_blocking(proc.stop)

    def loaded(self) -> Sequence[LoadedModel]:
        out = []
        for m in self._models.values():
            if self._running(m) is None:
                continue
            expires = None if m.keep_alive in (None, KEEP_FOREVER) else m.keep_alive
            out.append(LoadedModel(model=m.served, memory_bytes=m.served.size_bytes, busy=m.busy,
                                   idle_s=0.0 if m.busy else time.monotonic() - m.last_used, expires_in_s=expires,
                                   engine=m.engine))
        return out

    async def unload(self, model_id: str) -> None:
        self.unloads.append(model_id)
        m = self._models.get(model_id)
        if m is not None and m.busy == 0:
            await self._stop(m)

    async def aclose(self) -> None:
        for m in self._models.values():
            await self._stop(m)
