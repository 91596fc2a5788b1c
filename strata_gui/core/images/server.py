"""stable-diffusion.cpp's ``sd-server``: its launch options, its log lines and its job API.

The process is an engine like every other (the image kind in :mod:`strata_gui.core.runtime.kinds`;
the engine pool starts it: sd-server loads the model before it listens, so its first answer means
"loaded"). Jobs go through the native async API
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from strata_gui.core.base.errors import ImageError, ServerError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.images.params import ImageRequest
from strata_gui.core.models.image_models import model_parts
from strata_gui.core.runtime.engine_http import EngineHttp
from strata_gui.core.runtime.launch import ServerSettings
from strata_gui.core.runtime.outcome import ProcessEnded

if TYPE_CHECKING:
    from strata_gui.core.runtime.supervisor import ServerSupervisor

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


def image_launch_settings(model: Path, threads: int | None = None) -> ServerSettings:
    """How an image model is launched (the Images page and the local API alike, so they share
    the engine): its model options and sd.cpp's thread count (blocking: reads the model's header)."""
    return ServerSettings(threads=threads or 0, model_args=tuple(launch_args(model)))


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


class SdJobs:
    """stable-diffusion.cpp's job API on a running ``sd-server`` (borrowed from the engine pool).

    Args:
        http: Loopback HTTP client (no proxy).
        server: The running engine (its address, capabilities, process and log).
    """

    def __init__(self, http: httpx.AsyncClient, server: ServerSupervisor) -> None:
        self._engine = EngineHttp(http, server.base_url, server.api_key)
        self.server = server
        self.base_url = self._engine.base_url

    @property
    def samplers(self) -> list[str]:
        value = self.server.props.get("samplers")
        return [str(s) for s in value] if isinstance(value, list) else []

    def _log(self) -> str:
        return "\n".join(self.server.log_tail())

    async def submit(self, request: ImageRequest) -> str:
        """Queue a job; returns its id.

        Raises:
            ImageError: the server refused the request (its message says which setting).
            ProcessEnded: the server is gone.
        """
        try:
            # Not sent twice: a request the engine took before its connection broke would be two jobs.
            resp = await self._engine.post("/sdcpp/v1/img_gen", json=request.sdcpp_job(), timeout=30.0, resend=False)
        except ServerError as exc:
            raise await self._gone(exc) from exc
        if resp.status_code not in (200, 202):
            raise ImageError(T(QT_TRANSLATE_NOOP("Core", "The image engine refused the request: {reason}."),
                               reason=_error_text(resp)),
                             hint=QT_TRANSLATE_NOOP("Core", "Check the size, steps and sampler."))
        return str(resp.json()["id"])

    async def wait(self, job_id: str, *, poll: float = 0.1) -> JobResult:
        """Poll the job until it completes.

        Raises:
            ImageError: the job failed in the engine.
            ProcessEnded: the server ended while the job ran.
        """
        while True:
            try:
                resp = await self._engine.get(f"/sdcpp/v1/jobs/{job_id}", timeout=30.0)
                data = resp.json()
            except (ServerError, ValueError) as exc:
                raise await self._gone(exc) from exc
            status = data.get("status")
            if status == "completed":
                images = (data.get("result") or {}).get("images") or []
                return JobResult(tuple(base64.b64decode(i["b64_json"]) for i in images))
            if status in ("failed", "cancelled") or resp.status_code in (404, 410):
                err = data.get("error") or {}
                raise ImageError(T(QT_TRANSLATE_NOOP("Core", "The image engine could not make the image: "
                                                             "{reason}."),
                                   reason=str(err.get("message") or status)),
                                 hint=QT_TRANSLATE_NOOP("Core", "The engine log has details."),
                                 details=self._log())
            try:
                await asyncio.wait_for(self.server.wait_exited(), poll)
            except TimeoutError:
                continue
            raise await self._gone(None)

    async def cancel_queued(self, job_id: str) -> bool:
        """Cancel a job that has not started (sd-server cannot stop one that is generating)."""
        try:
            resp = await self._engine.post(f"/sdcpp/v1/jobs/{job_id}/cancel", timeout=5.0)
        except ServerError:
            return False
        return resp.status_code == 200

    async def _gone(self, exc: BaseException | None) -> Exception:
        # A refused connection usually means the process just died: let its exit arrive first.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.server.wait_exited(), 3.0)
        outcome = self.server.outcome
        if outcome is not None:
            return ProcessEnded(outcome)
        reason = (exc.details or exc.message) if isinstance(exc, ServerError) else str(exc)
        return ImageError(T(QT_TRANSLATE_NOOP("Core", "The image engine stopped answering ({reason})."),
                            reason=reason),
                          hint=QT_TRANSLATE_NOOP("Core", "Try again; the engine log has details."),
                          details=self._log())


def _error_text(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text.strip()[:200] or f"HTTP {resp.status_code}"
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        return str(err.get("message") or err)
    return str(err or data)[:200]
