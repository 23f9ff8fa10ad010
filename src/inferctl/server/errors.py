"""One place that turns HTTP-level failures into the sentence a user reads."""

from __future__ import annotations

import json

from inferctl.errors import (
    AuthFailed,
    EndpointError,
    EndpointTimeout,
    EngineDead,
    MalformedReply,
    ModelNotServed,
    RequestRejected,
    Unreachable,
)
from inferctl.redact import redact_url


def unreachable(url: str, detail: str, *, local: bool = False) -> Unreachable:
    url = redact_url(url)
    if local:
        return Unreachable(
            f"The local engine is not answering at {url}; start it with `inferctl local up`.", url=url
        )
    return Unreachable(f"Cannot connect to {url} ({detail}); check the URL and that the server is up.", url=url)


def timeout(url: str, seconds: float) -> EndpointTimeout:
    url = redact_url(url)
    return EndpointTimeout(
        f"{url} did not answer within {seconds:g} s; the server may be overloaded or still starting.", url=url
    )


def http_error(url: str, status: int, message: str) -> EndpointError:
    """The exception for a non-2xx answer from an OpenAI-compatible endpoint."""
    url = redact_url(url)
    message = message.strip().rstrip(".")
    if status in (401, 403):
        what = "401 Unauthorized" if status == 401 else "403 Forbidden"
        return AuthFailed(
            f"{url} answered {what}; give the target a valid token (auth=bearer with token_env, "
            "or auth=google-id-token for Cloud Run IAM).",
            url=url,
            status=status,
        )
    if status == 404 and "does not exist" in message:
        return ModelNotServed(f"{message}.", url=url, status=status)
    if status == 503:
        return EngineDead(f"{url} answered 503 Service Unavailable: the engine is not serving ({message}).",
                          url=url, status=status)
    detail = f": {message}" if message else ""
    return RequestRejected(f"{url} rejected the request with HTTP {status}{detail}.", url=url, status=status)


def malformed(url: str, what: str) -> MalformedReply:
    """A 2xx reply of the wrong shape from ``url`` (the endpoint's full URL); ``what`` says what was wrong."""
    url = redact_url(url)
    return MalformedReply(f"{url} sent a malformed reply: {what.rstrip('.')}.", url=url)


def short_text(value: object, limit: int = 500) -> str:
    """A server-sent value as at most ``limit`` characters; one nested too deeply to print is described."""
    if isinstance(value, str):
        return value[:limit]
    try:
        return str(value)[:limit]
    except RecursionError:  # nested just shallow enough to decode, too deep to print
        return f"a {type(value).__name__} nested too deeply to show"


def error_for_status(status: str, url: str, error: str, http_status: int | None = None) -> EndpointError:
    """The exception for a failed streamed request, from its outcome (``StreamResult.status`` and ``.error``).

    Takes the fields rather than the ``StreamResult`` so this module needs nothing from ``stream.py``
    (which imports it): no import cycle.
    """
    url = redact_url(url)
    if status == "http_error":
        return http_error(url, http_status or 0, error)
    if status == "timeout":
        return EndpointTimeout(f"{url} stopped answering mid-request ({error}).", url=url)
    if status == "connection_error":
        return unreachable(url, error)
    return EndpointError(f"The stream from {url} broke: {error.rstrip('.')}.", url=url)


def error_message(body: str) -> str:
    """The server's error message from an OpenAI-style error body, else a short excerpt."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return " ".join(body.split())[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and "message" in err:
            return short_text(err["message"])
        if isinstance(data.get("detail"), str):
            return data["detail"][:500]
    return " ".join(body.split())[:300]
