"""Turning hub HTTP failures (httpx) into HubError with a message and a hint.

Messages and hints are core :class:`~strata_gui.core.base.texts.Text`: the GUI shows them in the user's
language (``ui/i18n.core_text``), the CLI in English.
"""

from __future__ import annotations

import httpx

from strata_gui.core.base.errors import HubError, RateLimitedError
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T

TOKEN_HINT = QT_TRANSLATE_NOOP(
    "Core", "This repository is gated or private: accept its terms on the hub, then enter an access token.")
_MIRROR_HINT = QT_TRANSLATE_NOOP(
    "Core", "Check your network or proxy, set a mirror as hub endpoint in Settings, or turn on offline mode.")


class HubRateLimitedError(HubError, RateLimitedError):
    title = "Hugging Face hub rate limit"


class HubAuthError(HubError):
    """401/403: the repository needs a token (or a different one)."""

    title = "Access token needed"


def error_for_status(status: int, what: str, *, retry_after: str | None = None, endpoint: str = "") -> HubError:
    """A HubError for an HTTP status the hub (or a mirror) answered with."""
    if status == 401:
        return HubAuthError(T(QT_TRANSLATE_NOOP("Core", "The hub needs an access token for {what}."), what=what),
                            hint=TOKEN_HINT)
    if status == 403:
        return HubAuthError(
            T(QT_TRANSLATE_NOOP("Core", "The hub refused access to {what}."), what=what),
            hint=QT_TRANSLATE_NOOP("Core", "Your token does not grant access: accept the model's terms on its page "
                                           "or use a token with read access."),
        )
    if status == 404:
        message = (T(QT_TRANSLATE_NOOP("Core", "{what} was not found on the hub ({endpoint})."), what=what,
                     endpoint=endpoint) if endpoint
                   else T(QT_TRANSLATE_NOOP("Core", "{what} was not found on the hub."), what=what))
        return HubError(message, hint=QT_TRANSLATE_NOOP(
            "Core", "Check the repository and file name (they are case-sensitive)."))
    if status == 416:
        return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub could not serve the requested part of {what}."), what=what),
                        hint=QT_TRANSLATE_NOOP("Core", "Delete the partial download and start it again."))
    if status == 429:
        message = (T(QT_TRANSLATE_NOOP("Core", "The hub is rate-limiting requests. Retry after {seconds} s."),
                     seconds=retry_after) if retry_after
                   else T(QT_TRANSLATE_NOOP("Core", "The hub is rate-limiting requests.")))
        return HubRateLimitedError(message, hint=QT_TRANSLATE_NOOP(
            "Core", "Wait a minute and try again; signing in with a token raises the limit."))
    if 500 <= status < 600:
        return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub had a server error ({status}) for {what}."),
                          status=status, what=what),
                        hint=QT_TRANSLATE_NOOP("Core", "The hub or your mirror is having trouble; try again later or "
                                                       "switch the hub endpoint in Settings."))
    return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub answered {status} for {what}."), status=status, what=what),
                    hint=QT_TRANSLATE_NOOP("Core", "Try again later."))


def error_for_transport(exc: BaseException, endpoint: str) -> HubError:
    """A HubError for a failed request: connection (DNS, refused, time-out, TLS), redirect loop, bad body."""
    details = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, httpx.TimeoutException):
        msg = T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} did not answer in time."), endpoint=endpoint)
    elif isinstance(exc, httpx.TooManyRedirects):
        return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent Strata round in a loop of redirects."),
                          endpoint=endpoint),
                        hint=QT_TRANSLATE_NOOP("Core", "The hub or your mirror is misconfigured; try again later or "
                                                       "check the hub endpoint in Settings."),
                        details=details)
    elif isinstance(exc, httpx.DecodingError):
        return HubError(T(QT_TRANSLATE_NOOP("Core", "The hub at {endpoint} sent an answer Strata could not decode."),
                          endpoint=endpoint),
                        hint=QT_TRANSLATE_NOOP("Core", "A proxy may be altering the download; try again later or "
                                                       "check the hub endpoint in Settings."),
                        details=details)
    else:
        msg = T(QT_TRANSLATE_NOOP("Core", "Could not reach the hub at {endpoint}."), endpoint=endpoint)
    return HubError(msg, hint=_MIRROR_HINT, details=details)


def check_response(resp: httpx.Response, what: str, endpoint: str) -> None:
    """Raise the matching HubError unless ``resp`` is a success."""
    if resp.is_success:
        return
    raise error_for_status(resp.status_code, what, retry_after=resp.headers.get("Retry-After"), endpoint=endpoint)
