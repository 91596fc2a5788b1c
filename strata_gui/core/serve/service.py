"""The "Serve to other apps" feature: the local API's lifecycle, its key, and where requests are recorded."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import httpx

from strata_gui.core.bench.service import DashboardService
from strata_gui.core.chat.service import ChatService
from strata_gui.core.errors import ServerError
from strata_gui.core.events import emit
from strata_gui.core.serve.proxy import (
    ApiProxy,
    ApiRequest,
    Counters,
    Upstream,
    generate_api_key,
    is_loopback,
)
from strata_gui.core.settings import Settings, SettingsService

log = logging.getLogger(__name__)

KEY_NAME = "serve-api-key"
LAN_HOST = "0.0.0.0"
LOOPBACK_HOST = "127.0.0.1"


class SecretStore(Protocol):
    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


class ChatUpstream:
    """The chat's managed engine as the proxy's upstream (the same engine the Chat page uses)."""

    def __init__(self, chat: ChatService) -> None:
        self._chat = chat

    def model_name(self) -> str | None:
        return self._chat.model.name if self._chat.model else None

    async def upstream(self) -> Upstream:
        client = await self._chat.ensure_engine()
        sup = self._chat.supervisor
        engine = sup.engine if sup is not None else None
        return Upstream(base_url=client.base_url, headers=sup.auth_headers() if sup is not None else {},
                        model=self.model_name() or "unknown", engine=engine.label if engine else "unknown",
                        backend=engine.backend if engine else "")


Recorder = Callable[[ApiRequest], None]


class ServeService:
    """Starts and stops the local API with the user's settings.

    Args:
        settings_service: ``serve_port`` and ``serve_lan`` are read at each start; :meth:`configure`
            saves them through it.
        secrets: Keeps the generated API key (never the settings file).
        http: Loopback client for the engine.
        source: The engine requests go to.
        record: Receives each finished request (the dashboard, ``source="api"``).
    """

    def __init__(self, settings_service: SettingsService, secrets: SecretStore, http: httpx.AsyncClient,
                 source: ChatUpstream, record: Recorder | None = None) -> None:
        self.settings_service = settings_service
        self._secrets = secrets
        self._http = http
        self._source = source
        self._record = record
        self.proxy: ApiProxy | None = None
        self._last_counters = Counters()
        self._listeners: list[Recorder] = []

    @property
    def settings(self) -> Settings:
        """The live settings (read-only here: :meth:`configure` changes them through the service)."""
        return self.settings_service.current

    def add_listener(self, fn: Recorder) -> None:
        """``fn(request)`` after each finished request (after it was recorded)."""
        self._listeners.append(fn)

    def remove_listener(self, fn: Recorder) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    @property
    def running(self) -> bool:
        return self.proxy is not None and self.proxy.running

    @property
    def counters(self) -> Counters:
        return self.proxy.counters if self.proxy is not None else self._last_counters

    @property
    def url(self) -> str:
        if self.proxy is not None:
            return self.proxy.url
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

    async def start(self, *, lan: bool | None = None, port: int | None = None, host: str | None = None) -> str:
        """Listen (loopback unless ``lan``); returns the URL. A running server is restarted."""
        await self.stop()
        lan = self.settings.serve_lan if lan is None else lan
        bind = host or (LAN_HOST if lan else LOOPBACK_HOST)
        key = self._secrets.get(KEY_NAME)
        if not is_loopback(bind) and not key:
            raise ServerError("Exposing Strata on the network requires an API key.",
                              hint="Generate a key first (Network page or `strata serve --new-key`).")
        proxy = ApiProxy(self._source, self._http, host=bind,
                         port=self.settings.serve_port if port is None else port,
                         api_key=key, on_request=self._on_request)
        await proxy.start()
        self.proxy = proxy
        return proxy.url

    async def stop(self) -> None:
        proxy, self.proxy = self.proxy, None
        if proxy is not None:
            self._last_counters = proxy.counters
            await proxy.stop()

    def _on_request(self, req: ApiRequest) -> None:
        emit(([self._record] if self._record is not None else []) + self._listeners, req)

    def curl_example(self, key_placeholder: str = "$STRATA_API_KEY") -> str:
        auth = f' -H "Authorization: Bearer {key_placeholder}"' if self.has_key else ""
        return (f"curl {self.url}/chat/completions -H \"Content-Type: application/json\"{auth} "
                "-d '{\"model\": \"local\", \"stream\": true, "
                "\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]}'")


def dashboard_recorder(dashboard: DashboardService) -> Recorder:
    """Record each API request in the throughput dashboard as ``source="api"``."""

    def record(req: ApiRequest) -> None:
        up = req.upstream
        dashboard.record(model=up.model, engine=up.engine, backend=up.backend, source="api",
                         prompt_tokens=req.prompt_tokens, cached_tokens=req.cached_tokens,
                         output_tokens=req.output_tokens, prefill_tps=req.prefill_tps,
                         decode_tps=req.decode_tps, ttft_s=req.ttft_s)

    return record
