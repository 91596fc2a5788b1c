"""The local API's HTTP server: OpenAI, Ollama and Anthropic APIs over a :class:`ModelRouter`.

Why aiohttp: a maintained HTTP/1.1 server (llhttp parser in C, keep-alive, chunked streaming,
header and body limits) that runs on whatever asyncio loop is current, the Qt (qasync) loop of
the app included, through ``AppRunner``/``TCPSite`` with no thread or loop of its own. It is only
the server: the engines are reached with the app's one HTTP client stack, httpx, through the
engine client every feature uses (see :func:`~strata_gui.core.serve.wire.upstream_post`).

Time-outs, what each one stops:

- aiohttp's keep-alive timer starts when a connection opens and again after each response, and
  data arriving does not reset it; a connection that has not sent a complete request head when it
  fires is closed. So ``header_timeout_s`` both drops idle keep-alive connections and a client
  that trickles its headers byte by byte (slowloris).
- a body that does not arrive within ``body_timeout_s`` is answered 408;
- a client that stops reading a response is dropped after ``write_timeout_s``.

At most ``max_connections`` connections are open (:mod:`~strata_gui.core.serve.connections`): past
it a new one closes the oldest that is not in a request, so clients that hold half-sent requests
cannot keep an app that sends whole ones out. A request the parser cannot read (a malformed chunk
size, say) is answered 400 and logged in one line.

Stop: the listening socket closes at once, new requests on open connections are refused (503),
requests in flight get ``stop_grace_s`` to finish; streams still running are then ended with an
error item in their API's format and a proper end of the body, and every connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx
from aiohttp import web

from strata_gui.core.base.errors import ServerError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.net.transfer import loopback_client
from strata_gui.core.serve.access import browser_refusal, is_loopback, key_matches, presented_key
from strata_gui.core.serve.activity import CURRENT, Activity
from strata_gui.core.serve.anthropic_api import routes as anthropic_routes
from strata_gui.core.serve.connections import ClientErrorLog, ConnectionGuard, connection_cap
from strata_gui.core.serve.metrics import CONTENT_TYPE as METRICS_TYPE
from strata_gui.core.serve.metrics import ServerMetrics
from strata_gui.core.serve.ollama_api import routes as ollama_routes
from strata_gui.core.serve.ollama_models import routes as ollama_model_routes
from strata_gui.core.serve.openai_api import routes as openai_routes
from strata_gui.core.serve.records import ApiRequest, Counters, ServerLimits
from strata_gui.core.serve.router import ModelRouter
from strata_gui.core.serve.wire import (
    CTX,
    FAILED,
    STARTED,
    ApiError,
    Flavor,
    ServeContext,
    error_response,
    flavor_of,
    json_response,
)

if TYPE_CHECKING:
    from strata_gui.core.serve.model_admin import ModelAdmin

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
# Routes answered without the API key: liveness probes that tell nothing about models or data
# ("/" is the one Ollama's clients send before anything else, HEAD / in its Go client).
OPEN_ROUTES = frozenset({("GET", "/health"), ("HEAD", "/health"), ("GET", "/"), ("HEAD", "/")})
# What a browser may send to this server once its page is allowed (see :func:`build_app`).
CORS_METHODS = "GET, POST, DELETE, OPTIONS"
CORS_MAX_AGE_S = "600"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _health(_request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def _root(_request: web.Request) -> web.Response:
    return web.Response(text="Ollama is running")  # the words Ollama's own server answers with


def _preflight(request: web.Request) -> web.Response:
    """A browser asking whether its page may call (CORS preflight): yes, for what it asked. Sent
    without credentials by every browser, so answered without the key; a page refused by
    :func:`browser_refusal` never gets here."""
    headers = {"Access-Control-Allow-Methods": CORS_METHODS, "Access-Control-Max-Age": CORS_MAX_AGE_S}
    asked = request.headers.get("Access-Control-Request-Headers")
    if asked:
        headers["Access-Control-Allow-Headers"] = asked
    return web.Response(status=204, headers=headers)


def build_app(ctx: ServeContext, api_key: str | None) -> web.Application:
    """The aiohttp application: every route of every API behind one guard.

    The guard, for every route (unknown paths included): without a key refuses requests from web
    pages of other sites (:func:`~strata_gui.core.serve.access.browser_refusal`), with one checks
    the key (all routes but :data:`OPEN_ROUTES`), refuses new requests while the server stops, counts model requests,
    tracks the handlers in flight (for a graceful stop) and answers every error in the shape of
    the path's API.

    Args:
        ctx: Shared state of the routes (router, engine client, limits, counters).
        api_key: The key every route but :data:`OPEN_ROUTES` requires (None: no key, loopback only).
    """
    model_routes: set[str] = set()

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        flavor = flavor_of(request.path)
        task = asyncio.current_task()
        if task is not None:
            ctx.inflight.add(task)
        connection = request.protocol
        ctx.requests[connection] = request
        try:
            instead = _answer_instead(ctx, request, api_key, flavor)
            if instead is not None:
                return instead
            resource = request.match_info.route.resource
            if resource is not None and resource.canonical in model_routes:
                return await _counted(ctx, request, handler)
            return await handler(request)
        except ApiError as err:
            return error_response(flavor, err)
        except web.HTTPException as exc:  # routing: unknown path, wrong method
            return error_response(flavor, _routing_error(request, exc))
        except ConnectionError:
            raise  # the client went away: nobody to answer
        except Exception as exc:  # a bug: still an answer the client's library can read
            log.exception("local API: %s %s failed", request.method, request.path)
            if request.get(STARTED):
                raise  # the stream already started: aiohttp closes the connection
            return error_response(flavor, ApiError(500, f"Internal error in Strata: {type(exc).__name__}: {exc}",
                                                   "internal"))
        finally:
            if task is not None:
                ctx.inflight.discard(task)
            if ctx.requests.get(connection) is request:
                del ctx.requests[connection]

    app = web.Application(middlewares=[guard], client_max_size=ctx.limits.max_body_bytes,
                          handler_args={"max_line_size": ctx.limits.max_header_bytes,
                                        "max_field_size": ctx.limits.max_header_bytes,
                                        "logger": ClientErrorLog(logging.getLogger("aiohttp.server"))})
    app[CTX] = ctx
    app.on_response_prepare.append(functools.partial(_allow_the_page, api_key))
    app.router.add_get("/health", _health)
    app.router.add_get("/", _root)
    app.router.add_get("/metrics", _metrics)
    for routes in (openai_routes, anthropic_routes, ollama_routes, ollama_model_routes):
        for method, path, fn, runs_model in routes():
            app.router.add_route(method, path, fn)
            if runs_model:
                model_routes.add(path)
    return app


def _answer_instead(ctx: ServeContext, request: web.Request, api_key: str | None,
                    flavor: Flavor) -> web.StreamResponse | None:
    """What the guard answers instead of the route (a CORS preflight, a stopping server), or None.

    Raises:
        ApiError: A web page of another site without a key, or a wrong or missing key.
    """
    if api_key is None:
        refusal = browser_refusal(request.headers)
        if refusal is not None:
            raise ApiError(403, refusal, "forbidden")
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        return _preflight(request)
    if api_key is not None and (request.method, request.path) not in OPEN_ROUTES \
            and not key_matches(presented_key(request.headers), api_key):
        ctx.counters.unauthorized += 1
        raise ApiError(401, "Invalid or missing API key.", "authentication")
    if ctx.stopping:
        resp = error_response(flavor, ApiError(503, "Strata's server is stopping.", "busy"))
        resp.force_close()
        return resp
    return None


def _routing_error(request: web.Request, exc: web.HTTPException) -> ApiError:
    """aiohttp's routing refusal (unknown path, wrong method) as an error of the path's API."""
    message = f"No {request.method} {request.path} here." if exc.status in (404, 405) else exc.reason
    routing = ApiError(exc.status, message, "no_route" if exc.status == 404 else "invalid_request")
    if "Allow" in exc.headers:
        routing.headers["Allow"] = exc.headers["Allow"]
    return routing


async def _counted(ctx: ServeContext, request: web.Request, handler: Handler) -> web.StreamResponse:
    """Run a model route, counted as active, then completed or failed, and traced: its entry goes
    to the activity list, the request log and ``/metrics``."""
    c = ctx.counters
    c.total += 1
    c.active += 1
    ok = False
    status = 500
    trace = ctx.activity.begin(request.remote or "", request.method, request.path, request.headers)
    token = CURRENT.set(trace)
    try:
        resp = await handler(request)
        ok = resp.status < 400 and not request.get(FAILED)
        status = resp.status if ok or resp.status >= 400 else 500
        return resp
    except ApiError as err:
        status = err.status
        raise
    finally:
        CURRENT.reset(token)
        c.active -= 1
        if ok:
            c.completed += 1
        else:
            c.failed += 1
        entry = ctx.activity.end(trace, status)
        if ctx.metrics is not None:
            ctx.metrics.observe(entry)


async def _metrics(request: web.Request) -> web.Response:
    """Prometheus' scrape (see :mod:`~strata_gui.core.serve.metrics`)."""
    metrics = request.app[CTX].metrics
    if metrics is None:
        raise ApiError(404, "No metrics here.", "no_route")
    return web.Response(body=metrics.exposition(), headers={"Content-Type": METRICS_TYPE})


async def _allow_the_page(api_key: str | None, request: web.Request, response: web.StreamResponse) -> None:
    """A page that may use the server (a browser front-end served from this computer, or any
    page once a key is set: the key is the guard) may also read the answers."""
    origin = request.headers.get("Origin")
    if origin is None or (api_key is None and browser_refusal(request.headers) is not None):
        return
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers.add("Vary", "Origin")


def route_table(app: web.Application) -> list[tuple[str, str]]:
    """Every (method, path) the application answers (the HEAD twins aiohttp adds to GET routes left out)."""
    return [(r.method, r.resource.canonical) for r in app.router.routes()
            if r.resource is not None and r.method != "HEAD"]


class ApiServer:
    """Serves the OpenAI, Ollama and Anthropic APIs for the models of a :class:`ModelRouter`.

    Args:
        router: Lends engines per request.
        host: Interface to listen on; anything but loopback requires ``api_key``.
        port: TCP port (0: any free one).
        api_key: Key clients must send (``Authorization: Bearer`` or ``x-api-key``) on every route
            but ``/health``; None: no check (loopback only).
        limits: Sizes and time-outs (see :class:`ServerLimits`).
        clock: Monotonic clock for time to first token.
        http: The engines' client: the app's shared loopback client (never closed here). None: the
            server makes one of its own (:func:`~strata_gui.core.net.transfer.loopback_client`) for as
            long as it listens.
        admin: Pulls, deletes and names library models (Ollama's ``/api/pull``, ``/api/delete``,
            ``/api/copy``); None: those routes answer 501.
        activity: Where finished requests are listed (shared by the servers a service starts;
            None: one of its own).
    """

    def __init__(self, router: ModelRouter, *, host: str = "127.0.0.1",
                 port: int = DEFAULT_PORT, api_key: str | None = None, limits: ServerLimits | None = None,
                 clock: Callable[[], float] = time.perf_counter, http: httpx.AsyncClient | None = None,
                 admin: ModelAdmin | None = None, activity: Activity | None = None) -> None:
        if not is_loopback(host) and not api_key:
            raise ServerError(T(QT_TRANSLATE_NOOP("Core", "Refusing to serve on {host} without an API key."),
                                host=host),
                              hint=QT_TRANSLATE_NOOP("Core", "Other computers could use your GPU freely: generate "
                                                             "an API key first."))
        self.host = host
        self.port = port
        self._api_key = api_key or None
        self.ctx = ServeContext(router, limits or ServerLimits(), clock, admin=admin,
                                activity=activity or Activity(clock=clock))
        self.ctx.metrics = ServerMetrics(router.loaded, lambda: self.ctx.counters.active, lambda: self.ctx.waiting)
        self.requests: Listeners[ApiRequest] = self.ctx.finished  # each completed model request
        self._http = http
        self.app = build_app(self.ctx, self._api_key)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.connections: ConnectionGuard | None = None

    @property
    def counters(self) -> Counters:
        return self.ctx.counters

    @property
    def running(self) -> bool:
        return self._runner is not None

    @property
    def url(self) -> str:
        """The OpenAI base URL (``.../v1``); Ollama clients take it without ``/v1``."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "localhost") else self.host
        if host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

    async def start(self) -> None:
        """Listen. Raises ServerError when the port is taken or the address is not on this machine.

        One server listens once: make a new one to listen again after :meth:`stop`.
        """
        if self._runner is not None:
            return
        limits = self.ctx.limits
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, handler_cancellation=True,
                               keepalive_timeout=limits.header_timeout_s, lingering_time=2.0,
                               shutdown_timeout=1.0)
        await runner.setup()
        assert runner.server is not None  # set up just now
        # Our own listening socket rather than web.TCPSite: its protocol factory caps the connections.
        guard = ConnectionGuard(runner.server, self.ctx, connection_cap(limits.max_connections))
        # asyncio accepts up to ``backlog`` connections per wake-up, before the ones the guard closed
        # have given their files back: a small burst keeps a flood within the file limit.
        backlog = max(8, min(128, guard.max_connections // 8))
        try:
            listener = await asyncio.get_running_loop().create_server(guard, self.host, self.port, backlog=backlog)
        except OSError as exc:
            await runner.cleanup()
            raise ServerError(T(QT_TRANSLATE_NOOP("Core", "Cannot listen on {host}:{port}: {reason}"),
                                host=self.host, port=self.port, reason=str(exc.strerror or exc)),
                              hint=QT_TRANSLATE_NOOP("Core", "Another program may use this port; choose another "
                                                             "one.")) from exc
        if listener.sockets:
            self.port = int(listener.sockets[0].getsockname()[1])
        self.ctx.http = self._http or loopback_client()
        self._runner, self._listener, self.connections = runner, listener, guard
        log.info("local API listening on %s:%d (key %s)", self.host, self.port,
                 "required" if self._api_key else "not required")

    async def stop(self, grace_s: float | None = None) -> None:
        """Stop listening, let requests in flight finish for ``grace_s`` (default: the limits'),
        end the streams still running cleanly, close every connection."""
        runner, listener = self._runner, self._listener
        if runner is None:
            return
        self._runner = self._listener = None
        self.ctx.stopping = True
        grace = self.ctx.limits.stop_grace_s if grace_s is None else grace_s
        if listener is not None:
            listener.close()  # no new connections; open ones are closed by the runner's cleanup
        pending = {t for t in self.ctx.inflight if not t.done()}
        if pending:
            _done, pending = await asyncio.wait(pending, timeout=grace)
        for task in pending:
            task.cancel()  # the handlers see ctx.stopping: streams end with an error item
        if pending:
            await asyncio.wait(pending, timeout=2.0)
        await runner.cleanup()
        if listener is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.wait_closed(), 2.0)
        http, self.ctx.http = self.ctx.http, None
        if http is not None and http is not self._http:
            await http.aclose()  # the server's own
        log.info("local API stopped")
