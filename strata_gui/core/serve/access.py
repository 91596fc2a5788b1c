"""Who may use the local API: the address it listens on and the API key (cheap to import)."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this computer only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def generate_api_key() -> str:
    return "strata-" + secrets.token_urlsafe(32)


def presented_key(headers: Mapping[str, str]) -> str:
    """The key a client sent: ``Authorization: Bearer KEY`` (OpenAI, Ollama) or ``x-api-key`` (Anthropic).

    Args:
        headers: The request headers (case-insensitive mapping).
    """
    scheme, _, token = headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key", "").strip()


def key_matches(presented: str, key: str) -> bool:
    """Constant-time comparison of the key a client sent with the server's."""
    # A header with bytes that are not UTF-8 reaches here with them as lone surrogates: compare
    # them as the bytes they were (never equal to a key), so the answer is 401, not a 500.
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), key.encode())


def _host_of(authority: str) -> str:
    """``localhost:8765`` → ``localhost``, ``[::1]:8765`` → ``::1``."""
    try:
        host = urlsplit("//" + authority).hostname
    except ValueError:
        return ""
    return host or ""


def _origin_host(origin: str) -> str:
    """``http://localhost:3000`` → ``localhost``; ``null`` or anything unreadable → ""."""
    try:
        return urlsplit(origin).hostname or ""
    except ValueError:
        return ""


def browser_refusal(headers: Mapping[str, str]) -> str | None:
    """Why a request to a server without a key (loopback only) must be refused, or None.

    Without a key the only guard is that the caller runs on this computer, and a web page in the
    user's browser does too: it may post to ``127.0.0.1`` (its ``Origin`` then names the page's
    site), or rename its own site to ``127.0.0.1`` through its DNS (DNS rebinding: the ``Host``
    header still says its name) and read the answers. Both are refused; apps on this computer,
    browser front-ends served from it (``http://localhost:3000``) included, pass. ``Origin: null``
    is refused too: any site's page can send it from a sandboxed frame.
    """
    if not is_loopback(_host_of(headers.get("Host", ""))):
        return "This server answers requests addressed to this computer only (Host header)."
    origin = headers.get("Origin")
    if origin is not None and not is_loopback(_origin_host(origin)):
        return "Web pages from other sites may not use this server (Origin header); set an API key to allow it."
    return None
