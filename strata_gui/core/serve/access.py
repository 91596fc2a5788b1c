"""Who may use the local API: the address it listens on and the API key (cheap to import)."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping


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
    return hmac.compare_digest(presented.encode(), key.encode())
