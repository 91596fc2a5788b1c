"""The "Serve to other apps" feature: the local API's lifecycle, its key, and where requests are recorded."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import httpx

from strata_gui.core.base.errors import ServerError, SettingsError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.bench.service import DashboardService
from strata_gui.core.config.settings import Settings, SettingsService
from strata_gui.core.serve.access import generate_api_key, is_loopback
from strata_gui.core.serve.activity import Activity
from strata_gui.core.serve.autostart import Autostart, serve_command
from strata_gui.core.serve.records import ApiRequest, Counters, ServerLimits
from strata_gui.core.serve.router import KIND_TEXT, ModelRouter

if TYPE_CHECKING:
    from strata_gui.core.serve.handover import HandedOver
    from strata_gui.core.serve.model_admin import ModelAdmin
    from strata_gui.core.serve.server import ApiServer

log = logging.getLogger(__name__)

KEY_NAME = "serve-api-key"
LAN_HOST = "0.0.0.0"
LOOPBACK_HOST = "127.0.0.1"


class SecretStore(Protocol):
    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


Recorder = Callable[[ApiRequest], None]


class ServeService:
    """Starts and stops the local API with the user's settings.

    Args:
        settings_service: ``serve_port`` and ``serve_lan`` are read at each start; :meth:`configure`
            saves them through it.
        secrets: Keeps the generated API key (never the settings file).
        router: Lends an engine per request (:class:`LibraryRouter`: the library over the engine pool).
        limits: Sizes and time-outs of the server (tests make them short).
        autostart: How this platform starts programs at sign-in (None: not offered).
        http: The engines' client: the app's loopback client, shared with the chat and every
            other feature (None: the server makes its own while it listens).
        admin: Ollama's model routes over the library (pull, delete, copy); None: not offered.
    """

    def __init__(self, settings_service: SettingsService, secrets: SecretStore, router: ModelRouter,
                 *, limits: ServerLimits | None = None,
                 autostart: Autostart | None = None, http: httpx.AsyncClient | None = None,
                 admin: ModelAdmin | None = None) -> None:
        self.settings_service = settings_service
        self.admin = admin
        # Every request of every server this starts, for the Activity view and --log-requests.
        self.activity = Activity(capture=lambda: self.settings.serve_capture_bodies)
        self._http = http
        self.autostart = autostart
        self._secrets = secrets
        self.router = router
        self._limits = limits
        self.server: ApiServer | None = None
        self._last_counters = Counters()
        # Each finished request, of every server this starts (the app subscribes the dashboard's
        # recorder first, so later listeners see the request recorded).
        self.requests: Listeners[ApiRequest] = Listeners()
        # Set when the app took the place of the headless server that ran in the background
        # (core/serve/handover.py): it is started again when the app closes with this one on.
        self.taken_over: HandedOver | None = None

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: :meth:`configure` changes them through the service)."""
        return self.settings_service.current

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.running

    @property
    def counters(self) -> Counters:
        return self.server.counters if self.server is not None else self._last_counters

    @property
    def port(self) -> int:
        """The port listened on (the real one when the settings say 0), or the configured one."""
        return self.server.port if self.server is not None else self.settings.serve_port

    @property
    def url(self) -> str:
        """The OpenAI base URL (``.../v1``); Ollama clients take the same address without ``/v1``."""
        if self.server is not None:
            return self.server.url
        return f"http://{LOOPBACK_HOST}:{self.settings.serve_port}/v1"

    @property
    def has_key(self) -> bool:
        return bool(self._secrets.get(KEY_NAME))

    def api_key(self) -> str | None:
        """The stored key (for the CLI's --show-key and for clients set up on this machine)."""
        return self._secrets.get(KEY_NAME)

    def generate_key(self) -> str:
        """Make a new key, keep it, and return it so it can be shown once. Old clients stop working."""
        key = generate_api_key()
        self._secrets.set(KEY_NAME, key)
        log.info("local API key regenerated")
        return key

    def forget_key(self) -> None:
        self._secrets.delete(KEY_NAME)

    def configure(self, *, port: int, lan: bool) -> None:
        """Remember the port and whether to listen on the network (used at the next start).

        Raises:
            SettingsError: the port is invalid or the settings could not be saved (nothing changed).
        """
        self.settings_service.update(serve_port=port, serve_lan=lan)

    def allow_model_routes(self, on: bool) -> None:
        """Whether apps may pull, copy and delete library models (Ollama's model routes; saved).

        Raises:
            SettingsError: The settings could not be saved (nothing changed).
        """
        self.settings_service.update(serve_model_routes=on)

    def capture_bodies(self, on: bool) -> None:
        """Whether the activity list keeps request bodies (redacted, capped; saved, from the next request).

        Raises:
            SettingsError: The settings could not be saved (nothing changed).
        """
        self.settings_service.update(serve_capture_bodies=on)

    async def start(self, *, lan: bool | None = None, port: int | None = None, host: str | None = None) -> str:
        """Listen (loopback unless ``lan``); returns the URL. A running server is restarted.

        Raises:
            ServerError: a non-loopback address without an API key, or the port cannot be used.
        """
        await self.stop()
        lan = self.settings.serve_lan if lan is None else lan
        bind = host or (LAN_HOST if lan else LOOPBACK_HOST)
        key = self._secrets.get(KEY_NAME)
        if not is_loopback(bind) and not key:
            raise ServerError(QT_TRANSLATE_NOOP("Core", "Exposing Strata on the network requires an API key."),
                              hint=QT_TRANSLATE_NOOP("Core", "Generate a key first (Network page or "
                                                             "`strata serve --new-key`)."))
        from strata_gui.core.serve.server import ApiServer  # the HTTP stack loads when serving starts

        server = ApiServer(self.router, host=bind,
                           port=self.settings.serve_port if port is None else port,
                           api_key=key, limits=self._limits, http=self._http, admin=self.admin,
                           activity=self.activity)
        server.requests.subscribe(self.requests.emit)
        await self.router.refresh()
        await server.start()
        self.server = server
        return server.url

    async def stop(self, grace_s: float | None = None) -> None:
        """Stop listening; requests in flight get ``grace_s`` (default: the limits') to finish."""
        server, self.server = self.server, None
        if server is not None:
            self._last_counters = server.counters
            await server.stop(grace_s)

    # -- at sign-in ----------------------------------------------------------------------------------
    @property
    def starts_at_login(self) -> bool:
        """Whether ``strata serve`` starts when the user signs in (read from the entry itself)."""
        return self.autostart is not None and self.autostart.enabled()

    def set_start_at_login(self, on: bool, command: Sequence[str] | None = None) -> None:
        """Add (or remove, leaving nothing behind) the sign-in entry that serves the library headless.

        Raises:
            SettingsError: the entry could not be written or removed.
        """
        if self.autostart is None:
            raise SettingsError(QT_TRANSLATE_NOOP("Core", "Starting at sign-in is not available on this system."))
        if on:
            self.autostart.enable(command or serve_command())
        else:
            self.autostart.disable()

    def curl_example(self, key_placeholder: str = "$STRATA_API_KEY") -> str:
        auth = f' -H "Authorization: Bearer {key_placeholder}"' if self.has_key else ""
        models = [m.id for m in self.router.models() if m.kind == KIND_TEXT]
        model = models[0] if models else "local"
        return (f"curl {self.url}/chat/completions -H \"Content-Type: application/json\"{auth} "
                f"-d '{{\"model\": \"{model}\", \"stream\": true, "
                "\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]}'")


# The dashboard's names for where a request came from (besides the chat's "chat").
SOURCE_OPENAI, SOURCE_OLLAMA, SOURCE_ANTHROPIC = "api-openai", "api-ollama", "api-anthropic"


def api_source(path: str) -> str:
    """Which API a request used, from its path: the dashboard counts requests per model and API."""
    if path.startswith("/api/"):
        return SOURCE_OLLAMA
    if path.startswith("/v1/messages"):
        return SOURCE_ANTHROPIC
    return SOURCE_OPENAI


def dashboard_recorder(dashboard: DashboardService) -> Recorder:
    """Record each API request in the throughput dashboard, with the API it used as its source."""

    def record(req: ApiRequest) -> None:
        up = req.upstream
        # The file name, as the chat's own replies are recorded: one model, one row in the dashboard.
        dashboard.record(model=up.model.path.name, engine=up.engine or "unknown", backend=up.backend,
                         source=api_source(req.path),
                         prompt_tokens=req.prompt_tokens, cached_tokens=req.cached_tokens,
                         output_tokens=req.output_tokens, prefill_tps=req.prefill_tps,
                         decode_tps=req.decode_tps, ttft_s=req.ttft_s)

    return record
