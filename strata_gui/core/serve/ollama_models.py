"""Ollama's model routes on the library: ``/api/pull``, ``/api/delete``, ``/api/copy``.

Shapes as Ollama's API documentation gives them and its clients parse them (``ollama`` for Python,
Open WebUI): ``/api/pull`` streams NDJSON lines ``{"status": "pulling manifest"}``,
``{"status": "pulling <digest>", "digest", "total", "completed"}``, ... ``{"status": "success"}``
(one ``{"status": "success"}`` with ``"stream": false``), an error as a last ``{"error": "..."}`` line;
``/api/delete`` and ``/api/copy`` answer 200 with an empty body. The work is
:class:`~strata_gui.core.serve.model_admin.ModelAdmin`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from aiohttp import web

from strata_gui.core.base.errors import HubError, ModelError, StrataError, UnknownModelError
from strata_gui.core.serve.model_admin import PROGRESS_INTERVAL_S, ModelAdmin, NotDeletableHere, PullStep
from strata_gui.core.serve.wire import (
    FAILED,
    NDJSON_TYPE,
    STARTED,
    ApiError,
    Route,
    ServeContext,
    context,
    from_strata_error,
    json_response,
    read_json,
    write_chunk,
)

TURNED_OFF = ("Pulling, copying and deleting models through the API is turned off in Strata "
              "(Network page, or `strata serve` was started with --no-model-routes).")


def _admin(ctx: ServeContext) -> ModelAdmin:
    admin = ctx.admin
    if admin is None:
        raise ApiError(501, "This server does not manage a model library.", "unsupported")
    if not admin.enabled:
        raise ApiError(403, TURNED_OFF, "forbidden")
    return admin


def _name(body: dict[str, Any], key: str = "model") -> str:
    value = body.get(key) or (body.get("name") if key == "model" else None)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, f"'{key}' is required.")
    return value.strip()


def _as_api_error(exc: StrataError) -> ApiError:
    text = exc.user_text().replace("\n", " ")
    if isinstance(exc, UnknownModelError):
        return ApiError(404, text, "not_found")
    if isinstance(exc, NotDeletableHere):
        return ApiError(403, text, "forbidden")
    if isinstance(exc, ModelError) and not isinstance(exc, HubError):
        return ApiError(400, text)
    return from_strata_error(exc)


def _line(step: PullStep) -> bytes:
    data: dict[str, Any] = {"status": step.status}
    if step.digest is not None:
        data["digest"] = step.digest
    if step.total is not None:
        data.update(total=step.total, completed=step.completed or 0)
    return json.dumps(data).encode() + b"\n"


async def _next_steps(queue: asyncio.Queue[PullStep | None]) -> list[PullStep | None]:
    """The next steps to send: a run of progress lines of one status is sent as its last (the
    download reports every chunk; a client needs a few lines a second)."""
    steps = [await queue.get()]
    while not queue.empty():
        step = queue.get_nowait()
        last = steps[-1]
        if step is not None and last is not None and step.status == last.status and step.total is not None:
            steps[-1] = step
        else:
            steps.append(step)
    return steps


async def pull(request: web.Request) -> web.StreamResponse:
    ctx = context(request)
    admin = _admin(ctx)
    _raw, body = await read_json(request, ctx)
    name = _name(body)
    if body.get("stream") is False:
        try:
            await admin.pull(name, lambda _step: None)
        except StrataError as exc:
            raise _as_api_error(exc) from exc
        return json_response({"status": "success"})
    queue: asyncio.Queue[PullStep | None] = asyncio.Queue()
    task = asyncio.ensure_future(admin.pull(name, queue.put_nowait))
    task.add_done_callback(lambda _t: queue.put_nowait(None))
    out = web.StreamResponse(status=200, headers={"Content-Type": NDJSON_TYPE, "Cache-Control": "no-cache"})
    try:
        await out.prepare(request)
        request[STARTED] = True
        while True:
            steps = await _next_steps(queue)
            data = b"".join(_line(s) for s in steps if s is not None)
            if data:
                await write_chunk(request, out, data)
            if None in steps:
                break
            # A few lines a second are enough for a progress bar (ModelAdmin sends at most ten):
            # written as they come, each would cost the client and this loop a wake-up.
            await asyncio.wait({task}, timeout=PROGRESS_INTERVAL_S)
        await write_chunk(request, out, _pull_end(request, task))
        await out.write_eof()
    finally:
        if not task.done():  # the client left: the download pauses (resumable), nothing half-listed
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, StrataError):
                await task
    return out


def _pull_end(request: web.Request, task: asyncio.Future[Any]) -> bytes:
    """The last line of a pull: success, or the error in Ollama's shape."""
    exc = task.exception()
    if exc is None:
        return b'{"status": "success"}\n'
    request[FAILED] = True
    message = exc.user_text() if isinstance(exc, StrataError) else f"{type(exc).__name__}: {exc}"
    return json.dumps({"error": message.replace("\n", " ")}).encode() + b"\n"


async def delete(request: web.Request) -> web.Response:
    ctx = context(request)
    admin = _admin(ctx)
    _raw, body = await read_json(request, ctx)
    name = _name(body)
    try:
        await admin.delete(name)
    except UnknownModelError as exc:
        raise ApiError(404, f"model '{name}' not found", "not_found") from exc
    except StrataError as exc:
        raise _as_api_error(exc) from exc
    return web.Response(status=200)


async def copy(request: web.Request) -> web.Response:
    ctx = context(request)
    admin = _admin(ctx)
    _raw, body = await read_json(request, ctx)
    source, destination = _name(body, "source"), _name(body, "destination")
    try:
        await admin.copy(source, destination)
    except UnknownModelError as exc:
        raise ApiError(404, f"model '{source}' not found", "not_found") from exc
    except StrataError as exc:
        raise _as_api_error(exc) from exc
    return web.Response(status=200)


def routes() -> list[Route]:
    """(method, path, handler, runs a model) for each of Ollama's library routes."""
    return [
        ("POST", "/api/pull", pull, False),
        ("DELETE", "/api/delete", delete, False),
        ("POST", "/api/copy", copy, False),
    ]
