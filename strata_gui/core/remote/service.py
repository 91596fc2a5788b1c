"""Remote engines: named OpenAI-compatible endpoints the user added, and chatting through them.

Names and URLs are kept in ``remote_engines.json`` in the config folder; API keys only in the
:class:`~strata_gui.core.remote.secrets.FileSecretStore`. Keys are never logged: errors carry the
server's message, never the request headers.
"""

from __future__ import annotations

import json
import logging
import os
import secrets as _secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from strata_gui.core.base.errors import ChatError, NetworkError, StorageError
from strata_gui.core.base.events import Listeners
from strata_gui.core.base.state_file import UnusableStateFile, read_state
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.runtime.client import (
    ChatClient,
    ChatReply,
    PieceCallback,
    RequestOptions,
    SamplingParams,
    StreamPiece,
    counted_rate,
)

log = logging.getLogger(__name__)

BACKEND = "remote"


class SecretStore(Protocol):
    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


@dataclass(frozen=True)
class RemoteEndpoint:
    """One endpoint. ``base_url`` is the server root (``/v1`` is added per request)."""

    id: str
    name: str
    base_url: str
    has_key: bool = False
    model: str = ""  # the model chosen on it ("" = the server's first)

    @property
    def label(self) -> str:
        """Where a reply ran, as the chat shows it: ``name · model``."""
        return f"{self.name} · {self.model}" if self.model else self.name


def split_credentials(url: str) -> tuple[str, str | None]:
    """``http://user:KEY@host/v1`` → (``http://host/v1``, ``KEY``): a key written into an address
    goes to the key store, never into ``remote_engines.json``, a log line or ``remote list``.

    The password is the key; an address with a user name only (``http://KEY@host``) is taken as
    the key, as servers that read HTTP basic auth do with the user name alone.
    """
    parts = urlsplit(url.strip())
    if "@" not in parts.netloc:
        return url.strip(), None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    key = unquote(password if sep else user) or None
    return urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment)), key


def normalize_base_url(url: str) -> str:
    """``https://host/v1/`` → ``https://host``; raises ChatError on anything that is not http(s).

    Credentials in the address are dropped (see :func:`split_credentials`); the message of the
    error never repeats them.
    """
    url, _key = split_credentials(url)
    url = url.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "'{url}' is not a server address."), url=url),
                        hint=QT_TRANSLATE_NOOP("Core", "Use the form http://host:port or https://host/path."))
    if url.endswith("/v1"):
        url = url[:-3]
    return url


@dataclass(frozen=True)
class RemotesChanged:
    """The user's remote engines changed (``endpoints`` is the saved list)."""

    endpoints: tuple[RemoteEndpoint, ...]


class RemoteService:
    """The user's remote endpoints.

    Args:
        path: ``remote_engines.json`` in the config folder.
        secrets: Where API keys are kept.
        http: Client for the network (remote servers may be behind the user's proxy).
        clock: Monotonic clock for client-side statistics.
    """

    def __init__(self, path: Path, secrets: SecretStore, http: httpx.AsyncClient,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.path = path
        self._secrets = secrets
        self._http = http
        self._clock = clock
        self.events: Listeners[RemotesChanged] = Listeners()  # added, changed or removed endpoints

    # -- persistence ---------------------------------------------------------------------------
    def endpoints(self) -> list[RemoteEndpoint]:
        try:
            raw = read_state(self.path, dict)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "The list of remote engines {path} cannot be read."),
                                 path=self.path),
                               hint=QT_TRANSLATE_NOOP("Core", "Check the file's permissions.")) from exc
        except UnusableStateFile as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "The list of remote engines {path} cannot be used "
                                                           "({reason})."), path=self.path, reason=exc.reason),
                               hint=QT_TRANSLATE_NOOP("Core", "Delete the file and add the remote engines "
                                                              "again.")) from exc
        items = raw.get("endpoints", []) if raw is not None else []
        if not isinstance(items, list):
            items = []
        known = set(RemoteEndpoint.__dataclass_fields__)
        endpoints = [RemoteEndpoint(**{k: v for k, v in item.items() if k in known})
                     for item in items if isinstance(item, dict) and "id" in item]
        return self._move_keys_out_of_urls(endpoints)

    def _move_keys_out_of_urls(self, endpoints: list[RemoteEndpoint]) -> list[RemoteEndpoint]:
        """Endpoints saved before keys were split out of addresses: the key goes to the key store
        and the file is rewritten without it (once)."""
        if not any("@" in urlsplit(e.base_url).netloc for e in endpoints):
            return endpoints
        fixed = []
        for e in endpoints:
            url, key = split_credentials(e.base_url)
            if key:
                self._secrets.set(e.id, key)
            fixed.append(RemoteEndpoint(e.id, e.name, url, e.has_key or bool(key), e.model))
        self._save(fixed)
        log.info("moved API keys written in remote engine addresses to the key store")
        return fixed

    def _save(self, endpoints: Sequence[RemoteEndpoint]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"version": 1, "endpoints": [asdict(e) for e in endpoints]}, indent=2),
                           encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            raise StorageError(T(QT_TRANSLATE_NOOP("Core", "Could not save the remote engines: {reason}"),
                                 reason=exc.strerror or exc)) from exc
        self.events.emit(RemotesChanged(tuple(endpoints)))

    def get(self, name_or_id: str) -> RemoteEndpoint:
        for e in self.endpoints():
            if name_or_id in (e.id, e.name):
                return e
        raise ChatError(T(QT_TRANSLATE_NOOP("Core", "No remote engine named '{name}'."), name=name_or_id),
                        hint=QT_TRANSLATE_NOOP("Core", "Add it first (Network page, or `strata remote add`)."))

    def add(self, name: str, base_url: str, api_key: str | None = None, model: str = "") -> RemoteEndpoint:
        """Add (or replace, by name) an endpoint; the key goes to the key store only."""
        name, url = _checked_name(name), normalize_base_url(base_url)
        api_key = api_key or split_credentials(base_url)[1]  # http://user:KEY@host: KEY is the key
        current = self.endpoints()
        old = next((e for e in current if e.name == name), None)
        ident = old.id if old else "remote-" + _secrets.token_hex(4)
        key = (api_key or "").strip()
        if key:
            self._secrets.set(ident, key)
        elif old is not None and old.has_key:
            self._secrets.delete(ident)
        endpoint = RemoteEndpoint(ident, name, url, bool(key), model)
        self._save([e for e in current if e.id != ident] + [endpoint])
        log.info("remote engine %s saved (%s, key %s)", name, url, "set" if key else "none")
        return endpoint

    async def add_checked(self, name: str, base_url: str, api_key: str | None = None,
                          model: str = "") -> tuple[RemoteEndpoint, list[str]]:
        """Add an endpoint only if it answers: list its models first, then save it.

        Nothing is saved when the check fails (an endpoint already saved under ``name`` stays as
        it was). Without a ``model`` the server's first one is chosen.

        Returns:
            The saved endpoint and the models it serves.

        Raises:
            ChatError: Bad name or address, key rejected, not an OpenAI-compatible server.
            NetworkError: The server cannot be reached.
        """
        name, url = _checked_name(name), normalize_base_url(base_url)
        api_key = api_key or split_credentials(base_url)[1]
        models = await self._list_models(name, url, (api_key or "").strip() or None)
        if not model and models:
            model = models[0]
        return self.add(name, url, api_key, model), models

    def set_model(self, endpoint: RemoteEndpoint, model: str) -> RemoteEndpoint:
        updated = RemoteEndpoint(endpoint.id, endpoint.name, endpoint.base_url, endpoint.has_key, model)
        self._save([updated if e.id == endpoint.id else e for e in self.endpoints()])
        return updated

    def remove(self, endpoint: RemoteEndpoint) -> None:
        self._save([e for e in self.endpoints() if e.id != endpoint.id])
        self._secrets.delete(endpoint.id)

    def api_key(self, endpoint: RemoteEndpoint) -> str | None:
        return self._secrets.get(endpoint.id) if endpoint.has_key else None

    # -- talking to it -------------------------------------------------------------------------
    async def list_models(self, endpoint: RemoteEndpoint) -> list[str]:
        """Model ids from ``GET /v1/models``.

        Raises:
            NetworkError: The server cannot be reached.
            ChatError: It refused the key or is not an OpenAI-compatible server.
        """
        return await self._list_models(endpoint.name, endpoint.base_url, self.api_key(endpoint))

    async def _list_models(self, name: str, base_url: str, key: str | None) -> list[str]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            resp = await self._http.get(base_url + "/v1/models", headers=headers, timeout=10.0)
        except httpx.HTTPError as exc:
            raise NetworkError(T(QT_TRANSLATE_NOOP("Core", "Could not reach {name} at {url}."), name=name,
                                 url=base_url),
                               hint=QT_TRANSLATE_NOOP("Core", "Check the address and that the server is running."),
                               details=type(exc).__name__ + ": " + str(exc)) from exc
        if resp.status_code in (401, 403):
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{name} rejected the API key."), name=name),
                            hint=QT_TRANSLATE_NOOP("Core", "Check the API key of this remote engine on the Network "
                                                           "page."))
        if resp.status_code != 200:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{name} answered {status} to the model list."), name=name,
                              status=resp.status_code),
                            hint=QT_TRANSLATE_NOOP("Core", "Is this an OpenAI-compatible server (vLLM, SGLang, "
                                                           "llama-server)?"))
        try:
            data = resp.json()
        except ValueError as exc:
            raise ChatError(T(QT_TRANSLATE_NOOP("Core", "{name} did not send a model list."), name=name),
                            hint=QT_TRANSLATE_NOOP("Core", "Is this an OpenAI-compatible server?")) from exc
        items = data.get("data", []) if isinstance(data, dict) else []
        return [str(m["id"]) for m in items if isinstance(m, dict) and "id" in m]

    def client(self, endpoint: RemoteEndpoint) -> RemoteChat:
        return RemoteChat(endpoint, ChatClient(self._http, endpoint.base_url, self.api_key(endpoint),
                                               clock=self._clock), self._clock)


class RemoteChat:
    """Chats through one endpoint and fills statistics on the client when the server has none."""

    def __init__(self, endpoint: RemoteEndpoint, client: ChatClient, clock: Callable[[], float]) -> None:
        self.endpoint = endpoint
        self._client = client
        self._clock = clock

    @property
    def label(self) -> str:
        return self.endpoint.label

    async def stream(self, messages: Sequence[Mapping[str, Any]], *, sampling: SamplingParams | None = None,
                     options: RequestOptions | None = None, on_piece: PieceCallback | None = None,
                     on_sent: Callable[[], None] | None = None) -> ChatReply:
        """Stream one reply through the endpoint (see :meth:`ChatClient.stream`): thinking, answer
        and tool calls; a server that does not time its replies gets a client-side decode rate.

        Raises:
            ServerError, ChatFormatError, ChatError: As :meth:`ChatClient.stream`.
        """
        count = [0, 0]  # tokens (as the pieces say), pieces

        def piece(p: StreamPiece) -> None:
            count[0] = p.total
            count[1] += 1
            if on_piece is not None:
                on_piece(p)

        reply = await self._client.stream(messages, sampling=sampling, options=options, on_piece=piece,
                                          model=self.endpoint.model or "default", on_sent=on_sent)
        s = reply.stats
        s.engine, s.backend = self.endpoint.label, BACKEND
        if s.decode_tps is None and s.total_s is not None and s.ttft_s is not None:
            # Without the server's count, the pieces streamed (one token each on llama.cpp and vLLM).
            tokens = s.predicted_n if s.predicted_n is not None else count[0]
            s.decode_tps = counted_rate(tokens, count[1], s.total_s - s.ttft_s)
            if s.decode_tps is not None:
                s.extra["client_side"] = True
        return reply

    async def decoded_tokens(self) -> int | None:
        """The endpoint's progress on the reply it is writing, when it says (a llama-server does)."""
        return await self._client.decoded_tokens()


def _checked_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise ChatError(QT_TRANSLATE_NOOP("Core", "A remote engine needs a name."))
    return name


def describe(endpoint: RemoteEndpoint) -> dict[str, Any]:
    """JSON for ``strata remote list --json`` (never the key itself)."""
    return {"name": endpoint.name, "url": endpoint.base_url, "api_key": endpoint.has_key, "model": endpoint.model}


def build_remote_service(config_dir: Path, http: httpx.AsyncClient) -> RemoteService:
    """The app's remote engines: list and key store in the config folder."""
    from strata_gui.core.remote.secrets import FileSecretStore, default_protector

    return RemoteService(config_dir / "remote_engines.json",
                         FileSecretStore(config_dir / "secrets.json", default_protector()), http)
