"""Which hub Strata talks to, which token it sends and where its cache is: one decision, made here.

Users behind a mirror point every hub tool elsewhere with ``HF_ENDPOINT``, keep their token in
``HF_TOKEN`` or the file ``hf auth login`` writes, and move the cache with ``HF_HOME`` or
``HF_HUB_CACHE``; Strata honours these the way ``huggingface_hub`` does, and a value set in Strata
itself wins:

- endpoint: the Settings value when set → ``HF_ENDPOINT`` → https://huggingface.co;
- token: the token saved in Strata (Models page "Save token") → ``HF_TOKEN`` (or the older
  ``HUGGING_FACE_HUB_TOKEN``) → the token file ``$HF_TOKEN_PATH``, else ``$HF_HOME/token``. As in
  huggingface_hub, ``HF_HUB_DISABLE_IMPLICIT_TOKEN`` stops the implicit ones (environment and
  file); the token saved in Strata is an explicit choice and is still sent;
- cache: the Settings folder when set → ``HF_HUB_CACHE`` (or the older ``HUGGINGFACE_HUB_CACHE``)
  → ``$HF_HOME/hub``.

These rules are Strata's own code, not calls into huggingface_hub, which the app does not ship:
huggingface_hub reads them from ``os.environ`` once, when it is imported, into module constants,
while Strata reads them from the environment it was built with (``Services.environ``) whenever
asked; and its ``get_token()`` may exchange or refresh a token over the network with its own HTTP
client. ``tests/models/test_hub_config.py`` runs huggingface_hub itself on the same environments
and holds these rules to its answers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from strata_gui.core.base.errors import HubError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP
from strata_gui.core.config.settings import Settings

DEFAULT_ENDPOINT = "https://huggingface.co"
SAVED_TOKEN_NAME = "hf-token"
# huggingface_hub's constants.ENV_VARS_TRUE_VALUES (compared upper-cased).
_TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})
_VAR = re.compile(r"\$(\w+)|\$\{([^}]*)\}")


class SecretStore(Protocol):
    """Named secrets kept out of the settings file (``core.remote.secrets.FileSecretStore``)."""

    def get(self, name: str) -> str | None: ...

    def set(self, name: str, value: str) -> None: ...

    def delete(self, name: str) -> None: ...


@dataclass(frozen=True)
class HubConfig:
    """The effective hub endpoint and token, and where each came from.

    Attributes:
        endpoint: Base URL without a trailing slash.
        token: The token to send, or None.
        source: Where the endpoint came from: "settings", "HF_ENDPOINT" or "default".
        token_source: "strata", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "token file", or "" (no token).
    """

    endpoint: str
    token: str | None
    source: str
    token_source: str = ""

    def describe(self) -> str:
        """One line for logs and bug reports (never the token itself)."""
        where = {"settings": "from Settings", "HF_ENDPOINT": "from HF_ENDPOINT", "default": "default"}[self.source]
        token = f"token from {self.token_source}" if self.token else "no token"
        return f"hub {self.endpoint} ({where}), {token}"


def _is_true(value: str | None) -> bool:
    return value is not None and value.upper() in _TRUE_VALUES


def _clean_token(token: str | None) -> str | None:
    # huggingface_hub's _clean_token: a pasted token often carries a newline.
    if token is None:
        return None
    return token.replace("\r", "").replace("\n", "").strip() or None


def _expand(value: str, environ: Mapping[str, str]) -> Path:
    """``os.path.expandvars`` + ``expanduser`` (as huggingface_hub does) over ``environ``."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return environ.get(name, m.group(0))
    return Path(_VAR.sub(sub, os.path.expanduser(value)))


def hf_home(environ: Mapping[str, str]) -> Path:
    """huggingface_hub's home: ``$HF_HOME``, else ``$XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``."""
    if environ.get("HF_HOME"):
        return _expand(environ["HF_HOME"], environ)
    xdg = environ.get("XDG_CACHE_HOME")
    return _expand(os.path.join(xdg or "~/.cache", "huggingface"), environ)


def token_file(environ: Mapping[str, str]) -> Path:
    """Where ``hf auth login`` keeps the token: ``$HF_TOKEN_PATH``, else ``$HF_HOME/token``."""
    if environ.get("HF_TOKEN_PATH"):
        return _expand(environ["HF_TOKEN_PATH"], environ)
    return hf_home(environ) / "token"


def hub_cache_dir(environ: Mapping[str, str]) -> Path:
    """The hub cache for this environment: ``$HF_HUB_CACHE`` (or the older
    ``HUGGINGFACE_HUB_CACHE``), else ``$HF_HOME/hub``."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if environ.get(name):
            return _expand(environ[name], environ)
    return hf_home(environ) / "hub"


def environment_endpoint(environ: Mapping[str, str]) -> tuple[str, str]:
    """The hub base URL when Settings leaves it unset: ``HF_ENDPOINT``, else the hub; and its source."""
    env = environ.get("HF_ENDPOINT", "").strip().rstrip("/")
    return (env, "HF_ENDPOINT") if env else (DEFAULT_ENDPOINT, "default")


def resolve_endpoint(settings: Settings, environ: Mapping[str, str]) -> tuple[str, str]:
    """The hub base URL and its source ("settings", "HF_ENDPOINT" or "default")."""
    if settings.hub_endpoint.strip():
        return settings.hub_endpoint.strip().rstrip("/"), "settings"
    return environment_endpoint(environ)


def resolve_token(environ: Mapping[str, str], saved: SavedHubToken | None) -> tuple[str | None, str]:
    """The token to send and its source (see the module docstring for the order)."""
    own = saved.get() if saved is not None else None
    if own:
        return own, "strata"
    if _is_true(environ.get("HF_HUB_DISABLE_IMPLICIT_TOKEN")):
        return None, ""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        value = _clean_token(environ.get(name))
        if value:
            return value, name
    try:
        from_file = _clean_token(token_file(environ).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        # Missing or unreadable: huggingface_hub treats a missing file as "not logged in".
        return None, ""
    return (from_file, "token file") if from_file else (None, "")


def resolve_hub(settings: Settings, environ: Mapping[str, str], saved: SavedHubToken | None = None) -> HubConfig:
    """The effective hub configuration: Settings first, then huggingface_hub's environment rules.

    Args:
        settings: ``hub_endpoint`` ("" = not set).
        environ: The environment Strata runs in (``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HOME`` ...).
        saved: The token saved in Strata, if any.
    """
    endpoint, source = resolve_endpoint(settings, environ)
    token, token_source = resolve_token(environ, saved)
    return HubConfig(endpoint, token, source, token_source)


class SavedHubToken:
    """The token saved in Strata (Models page "Save token"), kept in the user-only key store.

    It is Strata's own, separate from ``$HF_HOME/token``: saving it never changes what other hub
    tools send, and it wins over ``HF_TOKEN`` inside Strata.

    Args:
        secrets: The key store (``secrets.json`` in the config folder; DPAPI-protected on Windows).
    """

    def __init__(self, secrets: SecretStore) -> None:
        self._secrets = secrets

    def get(self) -> str | None:
        return _clean_token(self._secrets.get(SAVED_TOKEN_NAME))

    def set(self, token: str) -> None:
        """Save ``token``.

        Raises:
            HubError: the token is empty.
            StorageError: the key store could not be written.
        """
        cleaned = _clean_token(token)
        if not cleaned:
            raise HubError(QT_TRANSLATE_NOOP("Core", "The access token is empty."),
                           hint=QT_TRANSLATE_NOOP("Core", "Paste a token from your hub account settings."))
        self._secrets.set(SAVED_TOKEN_NAME, cleaned)

    def clear(self) -> None:
        """Forget the saved token (the environment's or the token file's is used again)."""
        self._secrets.delete(SAVED_TOKEN_NAME)


class HubTokens:
    """What the hub client and downloader ask for a token, resolved at each request.

    Resolving each time means a token saved on the Models page is used by the very next request.

    Args:
        saved: The token saved in Strata.
        environ: The environment (``HF_TOKEN``, ``HF_TOKEN_PATH`` ...).
    """

    def __init__(self, saved: SavedHubToken, environ: Mapping[str, str]) -> None:
        self.saved = saved
        self._environ = dict(environ)

    def get(self) -> str | None:
        return resolve_token(self._environ, self.saved)[0]

    def set(self, token: str) -> None:
        self.saved.set(token)
