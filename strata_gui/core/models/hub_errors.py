"""Turning hub HTTP failures (httpx, huggingface_hub) into HubError with a message and a hint."""

from __future__ import annotations

import httpx

from strata_gui.core.errors import HubError, RateLimitedError

TOKEN_HINT = "This repository is gated or private: accept its terms on the hub, then enter an access token."


class HubRateLimitedError(HubError, RateLimitedError):
    title = "Hugging Face hub rate limit"


class HubAuthError(HubError):
    """401/403: the repository needs a token (or a different one)."""

    title = "Access token needed"


def error_for_status(status: int, what: str, *, retry_after: str | None = None, endpoint: str = "") -> HubError:
    """A HubError for an HTTP status the hub (or a mirror) answered with."""
    where = f" ({endpoint})" if endpoint else ""
    if status == 401:
        return HubAuthError(f"The hub needs an access token for {what}.", hint=TOKEN_HINT)
    if status == 403:
        return HubAuthError(
            f"The hub refused access to {what}.",
            hint="Your token does not grant access: accept the model's terms on its page or use a token with read access.",
        )
    if status == 404:
        return HubError(f"{what} was not found on the hub{where}.", hint="Check the repository and file name (they are case-sensitive).")
    if status == 416:
        return HubError(f"The hub could not serve the requested part of {what}.", hint="Delete the partial download and start it again.")
    if status == 429:
        wait = f" Retry after {retry_after} s." if retry_after else ""
        return HubRateLimitedError(f"The hub is rate-limiting requests.{wait}",
                                   hint="Wait a minute and try again; signing in with a token raises the limit.")
    if 500 <= status < 600:
        return HubError(f"The hub had a server error ({status}) for {what}.",
                        hint="The hub or your mirror is having trouble; try again later or switch the hub endpoint in Settings.")
    return HubError(f"The hub answered {status} for {what}.", hint="Try again later.")


def error_for_transport(exc: BaseException, endpoint: str) -> HubError:
    """A HubError for a failed request: connection (DNS, refused, time-out, TLS), redirect loop, bad body."""
    if isinstance(exc, httpx.TimeoutException):
        msg = f"The hub at {endpoint} did not answer in time."
    elif isinstance(exc, httpx.TooManyRedirects):
        return HubError(f"The hub at {endpoint} sent Strata round in a loop of redirects.",
                        hint="The hub or your mirror is misconfigured; try again later or check the hub endpoint in Settings.",
                        details=f"{type(exc).__name__}: {exc}")
    elif isinstance(exc, httpx.DecodingError):
        return HubError(f"The hub at {endpoint} sent an answer Strata could not decode.",
                        hint="A proxy may be altering the download; try again later or check the hub endpoint in Settings.",
                        details=f"{type(exc).__name__}: {exc}")
    else:
        msg = f"Could not reach the hub at {endpoint}."
    return HubError(msg, hint="Check your network or proxy, set a mirror as hub endpoint in Settings, or turn on offline mode.",
                    details=f"{type(exc).__name__}: {exc}")


def check_response(resp: httpx.Response, what: str, endpoint: str) -> None:
    """Raise the matching HubError unless ``resp`` is a success."""
    if resp.is_success:
        return
    raise error_for_status(resp.status_code, what, retry_after=resp.headers.get("Retry-After"), endpoint=endpoint)
