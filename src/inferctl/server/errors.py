"""One place that turns HTTP-level failures into the sentence a user reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from inferctl.server.stream import StreamResult


def unreachable(url: str, detail: str, *, local: bool = False) -> Unreachable:
    if local:
        return Unreachable(
            f"The local engine is not answering at {url}; start it with `inferctl local up`.", url=url
        )
    return Unreachable(f"Cannot connect to {url} ({detail}); check the URL and that the server is up.", url=url)


def timeout(url: str, seconds: float) -> EndpointTimeout:
    return EndpointTimeout(
        f"{url} did not answer within {seconds:g} s; the server may be overloaded or still starting.", url=url
    )


def http_error(url: str, status: int, message: str) -> EndpointError:
    """The exception for a non-2xx answer from an OpenAI-compatible endpoint."""
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
    return MalformedReply(f"{url} sent a malformed reply: {what.rstrip('.')}.", url=url)


def error_for_status(result: StreamResult, url: str) -> EndpointError:
    if result.status == "http_error":
        return http_error(url, result.http_status or 0, result.error)
    if result.status == "timeout":
        return EndpointTimeout(f"{url} stopped answering mid-request ({result.error}).", url=url)
    if result.status == "connection_error":
        return unreachable(url, result.error)
    return EndpointError(f"The stream from {url} broke: {result.error.rstrip('.')}.", url=url)
