"""One running stable-diffusion.cpp ``sd-server`` for one model on one engine.

It is a :class:`~strata_gui.core.runtime.process.ManagedProcess` like every engine: a free
loopback port, readiness over HTTP (sd-server loads the model before it listens, so the first
answer means "loaded"), a log tail and a typed outcome. Jobs go through the native async API
(``POST /sdcpp/v1/img_gen``, ``GET /sdcpp/v1/jobs/{id}``); sd-server reports no step progress over
HTTP, so the steps are read from its log, where stable-diffusion.cpp prints a progress bar
(``|=====>   | 3/20 - 1.52s/it``) after each sampling step. A job that is already generating
cannot be cancelled by the API (``cancel_generating`` is false in its capabilities), so Cancel
stops the process: that frees the engine at once, and the next job starts a fresh one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from strata_gui.core.errors import ImageError
from strata_gui.core.images.params import ImageRequest
from strata_gui.core.models.image_models import model_parts
from strata_gui.core.runtime.engine import EngineSpec
from strata_gui.core.runtime.outcome import Outcome, ProcessEnded
from strata_gui.core.runtime.process import ManagedProcess, http_ready
from strata_gui.core.runtime.process_guard import WindowsJob
from strata_gui.core.runtime.supervisor import free_loopback_port

log = logging.getLogger(__name__)

_STEP_RE = re.compile(r"\|\s*(\d+)/(\d+)\s+-\s+([0-9.]+)(s/it|it/s)")
_IMAGE_RE = re.compile(r"generating image: (\d+)/(\d+)")
_LOAD_RE = re.compile(r"\|\s*(\d+)/(\d+)\s+-\s+[0-9.]+[MG]B/s")


@dataclass(frozen=True)
class StepLine:
    """A sampling progress line: step ``step`` of ``steps`` took ``seconds_per_step`` on average."""

    step: int
    steps: int
    seconds_per_step: float


def launch_args(model: Path) -> list[str]:
    """The model options for ``model``: ``--model`` for a complete file, else ``--diffusion-model``
    with the text encoder / VAE files found beside it (blocking: reads the file's header)."""
    parts = model_parts(model) if model.is_file() else None
    return parts.launch_args(model) if parts is not None else ["--model", str(model)]


def parse_step(line: str) -> StepLine | None:
    """The sampling step a log line reports (``| 3/20 - 1.52s/it`` or ``| 3/20 - 2.10it/s``), else None."""
    m = _STEP_RE.search(line)
    if not m:
        return None
    value = float(m.group(3))
    spp = value if m.group(4) == "s/it" else (1.0 / value if value > 0 else 0.0)
    return StepLine(int(m.group(1)), int(m.group(2)), spp)


def parse_image_start(line: str) -> tuple[int, int] | None:
    """``generating image: 2/4 - seed 43`` → (2, 4)."""
    m = _IMAGE_RE.search(line)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_load(line: str) -> tuple[int, int] | None:
    """Tensor loading progress (``| 302/610 - 49.00MB/s``) → (302, 610)."""
    m = _LOAD_RE.search(line)
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class JobResult:
    """A finished job: PNG bytes per image, in seed order."""

    images: tuple[bytes, ...]


class SdServer:
    """A managed ``sd-server`` with ``model`` loaded on ``engine``.

    Args:
        engine: The image engine (from the resolver's image plan).
        model: The image model file.
        http: Loopback HTTP client (no proxy).
        environ: The app's environment; ``engine.env`` is laid over it.
        threads: CPU threads for sd.cpp (None: its default).
        log_file: Mirror of the server's output (for bug reports).
        job: The app's Windows job object.
        on_line: Every output line (the service parses progress from it).
        on_end: The outcome when the process ends.
        ready_timeout: Seconds the model may take to load.
        model_args: sd-server's model options (:func:`launch_args`); default ``--model MODEL``.
    """

    def __init__(self, engine: EngineSpec, model: Path, http: httpx.AsyncClient, *,
                 environ: Mapping[str, str], threads: int | None = None, log_file: Path | None = None,
                 job: WindowsJob | None = None, on_line: Callable[[str], None] | None = None,
                 on_end: Callable[[Outcome], None] | None = None, ready_timeout: float = 600.0,
                 model_args: list[str] | None = None) -> None:
        self.engine = engine
        self.model = model
        self._http = http
        self.port = free_loopback_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        model_args = model_args or ["--model", str(model)]
        cmd = [str(engine.server_path), *model_args, "--listen-ip", "127.0.0.1", "--listen-port", str(self.port)]
        if threads:
            cmd += ["--threads", str(threads)]
        self.process = ManagedProcess(
            cmd, subject=f"The {engine.label} image engine", env={**environ, **engine.env},
            cwd=engine.server_path.parent, ready=http_ready(http, self.base_url + "/sdcpp/v1/capabilities"),
            ready_timeout=ready_timeout, log_file=log_file, job=job, on_line=on_line, on_end=on_end)
        self.capabilities: dict[str, Any] = {}

    @property
    def running(self) -> bool:
        return self.process.running and self.process.outcome is None

    async def start(self) -> None:
        """Launch it and wait until the model is loaded.

        Raises:
            ProcessEnded: it could not start or load the model (its outcome says why).
        """
        if not self.model.is_file():
            raise ImageError(f"The model file {self.model} does not exist.", hint="Choose another image model.")
        await self.process.start()
        try:
            resp = await self._http.get(self.base_url + "/sdcpp/v1/capabilities", timeout=10.0)
            self.capabilities = resp.json() if resp.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            self.capabilities = {}

    @property
    def samplers(self) -> list[str]:
        value = self.capabilities.get("samplers")
        return [str(s) for s in value] if isinstance(value, list) else []

    async def submit(self, request: ImageRequest) -> str:
        """Queue a job; returns its id.

        Raises:
            ImageError: the server refused the request (its message says which setting).
            ProcessEnded: the server is gone.
        """
        try:
            resp = await self._http.post(self.base_url + "/sdcpp/v1/img_gen", json=request.sdcpp_job(), timeout=30.0)
        except httpx.HTTPError as exc:
            raise await self._gone(exc) from exc
        if resp.status_code not in (200, 202):
            raise ImageError(f"The image engine refused the request: {_error_text(resp)}.",
                             hint="Check the size, steps and sampler.")
        return str(resp.json()["id"])

    async def wait(self, job_id: str, *, poll: float = 0.1) -> JobResult:
        """Poll the job until it completes.

        Raises:
            ImageError: the job failed in the engine.
            ProcessEnded: the server ended while the job ran.
        """
        while True:
            try:
                resp = await self._http.get(f"{self.base_url}/sdcpp/v1/jobs/{job_id}", timeout=30.0)
                data = resp.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise await self._gone(exc) from exc
            status = data.get("status")
            if status == "completed":
                images = (data.get("result") or {}).get("images") or []
                return JobResult(tuple(base64.b64decode(i["b64_json"]) for i in images))
            if status in ("failed", "cancelled") or resp.status_code in (404, 410):
                err = data.get("error") or {}
                raise ImageError(f"The image engine could not make the image: {err.get('message') or status}.",
                                 hint="The engine log has details.", details="\n".join(self.process.log_tail()))
            try:
                await asyncio.wait_for(self.process.wait_exited(), poll)
            except TimeoutError:
                continue
            raise await self._gone(None)

    async def cancel_queued(self, job_id: str) -> bool:
        """Cancel a job that has not started (sd-server cannot stop one that is generating)."""
        try:
            resp = await self._http.post(f"{self.base_url}/sdcpp/v1/jobs/{job_id}/cancel", timeout=5.0)
        except httpx.HTTPError:
            return False
        return resp.status_code == 200

    async def stop(self) -> None:
        await self.process.stop()

    async def _gone(self, exc: BaseException | None) -> Exception:
        # A refused connection usually means the process just died: let its exit arrive first.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait_exited(), 3.0)
        outcome = self.process.outcome
        if outcome is not None:
            return ProcessEnded(outcome)
        return ImageError(f"The image engine stopped answering ({exc}).", hint="Try again; the engine log has details.",
                          details="\n".join(self.process.log_tail()))


def _error_text(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text.strip()[:200] or f"HTTP {resp.status_code}"
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err)
    return str(err or data)[:200]
