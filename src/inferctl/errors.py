"""Exceptions a user can act on.

Every expected failure is an ``InferctlError`` whose ``str()`` is one sentence saying what
happened and what to do. The CLI prints it and exits non-zero (``--debug`` shows the traceback);
the MCP face turns it into a ``ToolError``. Anything else is a bug.

    InferctlError
    ├── ConfigError            bad config file, unknown target, bad flag value
    │   └── ProjectMissing     no Google Cloud project for a profile (inferctl.profiles.profile)
    ├── EndpointError          talking to a vLLM/OpenAI endpoint failed
    │   ├── Unreachable        connection refused, DNS failure
    │   ├── EndpointTimeout    no answer within the timeout
    │   ├── NotVLLM            something answered, but not an OpenAI-compatible server
    │   ├── AuthFailed         401 / 403
    │   ├── EngineDead         /health answered 503
    │   ├── ModelNotServed     the model asked for is not in /v1/models
    │   ├── RequestRejected    the server refused a request (4xx/5xx with its message)
    │   └── MalformedReply     the server answered 2xx with a body of the wrong shape
    ├── MetricsParseError      /metrics text that is not Prometheus exposition format
    └── LocalEngineError       the managed local vLLM could not start / is not running
"""

from __future__ import annotations


class InferctlError(Exception):
    """An expected failure with a message meant for the user."""

    exit_code = 1


class ConfigError(InferctlError):
    exit_code = 2


class EndpointError(InferctlError):
    """A failure talking to an endpoint; ``url`` is where we were talking to."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None):
        super().__init__(message)
        self.url = url
        self.status = status


class Unreachable(EndpointError):
    pass


class EndpointTimeout(EndpointError):
    pass


class NotVLLM(EndpointError):
    pass


class AuthFailed(EndpointError):
    pass


class EngineDead(EndpointError):
    pass


class ModelNotServed(EndpointError):
    pass


class RequestRejected(EndpointError):
    pass


class MalformedReply(EndpointError):
    """A 2xx answer whose body is not the shape the endpoint documents (wrong types, absurd nesting)."""


class MetricsParseError(InferctlError):
    pass


class LocalEngineError(InferctlError):
    pass
