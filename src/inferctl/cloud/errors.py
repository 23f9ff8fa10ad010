"""Google Cloud failures users will hit, each as one sentence that says what to do.

    CloudError (InferctlError)
    ├── ApiNotEnabled        SERVICE_DISABLED: the API is off in this project
    ├── PermissionDenied     403: the caller lacks an IAM role
    ├── QuotaExceeded        RESOURCE_EXHAUSTED / quota messages
    ├── ZoneExhausted        a TPU (or VM) zone has no capacity right now
    ├── AlreadyExists        409: a resource with that name exists
    ├── ResourceNotFound     404
    ├── NotManaged           destroy/scale refused: inferctl did not create it
    ├── DeployFailed         the service / VM / queued resource reached a failed state
    └── CloudTimeout         still not ready when the wait ran out

``translate`` turns a ``google.api_core`` exception into one of these; it imports nothing from
google at module import time so ``inferctl --help`` stays fast.
"""

from __future__ import annotations

import re

from inferctl.errors import InferctlError


class CloudError(InferctlError):
    """A Google Cloud call failed in a way the user can act on."""


class ApiNotEnabled(CloudError):
    pass


class PermissionDenied(CloudError):
    pass


class QuotaExceeded(CloudError):
    pass


class ZoneExhausted(CloudError):
    pass


class AlreadyExists(CloudError):
    pass


class ResourceNotFound(CloudError):
    pass


class NotManaged(CloudError):
    pass


class DeployFailed(CloudError):
    pass


class CloudTimeout(CloudError):
    pass


_SERVICE = re.compile(r"([a-z0-9-]+\.googleapis\.com)(?= API)|([a-z0-9-]+\.googleapis\.com)(?![^ ]*/)")
_ZONE_WORDS = ("ZONE_RESOURCE_POOL_EXHAUSTED", "does not have enough resources", "no more capacity",
               "insufficient capacity", "stockout", "resource pool exhausted")


def is_stockout(message: str) -> bool:
    """Whether a Google message says the zone is out of capacity (docs/cloud.md lists the messages and sources)."""
    low = message.lower()
    return any(w.lower() in low for w in _ZONE_WORDS)


def _first_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text[:300]


def classify(code: int | None, message: str, reason: str = "", *, what: str = "the request",
             service: str | None = None) -> CloudError:
    """Map an HTTP-ish status and message to a CloudError with advice (pure; used by the fake's tests too)."""
    msg = _first_line(message)
    low = msg.lower()
    if reason == "SERVICE_DISABLED" or "has not been used in project" in low or "it is disabled" in low:
        if not service:
            found = [m.group(1) or m.group(2) for m in _SERVICE.finditer(msg)]
            service = found[0] if found else "the API"
        return ApiNotEnabled(f"{service} is not enabled in this project; enable it in the console "
                             f"(APIs & Services) and retry {what}.")
    if is_stockout(msg):
        return ZoneExhausted(f"The zone has no capacity for {what} right now ({msg}); try another zone "
                             "(`inferctl capacity`) or retry later.")
    if code == 429 or reason in ("RATE_LIMIT_EXCEEDED", "QUOTA_EXCEEDED") or "quota" in low:
        return QuotaExceeded(f"Quota exceeded for {what} ({msg}); request more quota or pick a region with "
                             "quota left (`inferctl capacity`).")
    if code == 403:
        return PermissionDenied(f"Permission denied for {what} ({msg}); grant your account the needed IAM role "
                                "or check the project id.")
    if code == 409:
        return AlreadyExists(f"{what} already exists ({msg}); use `inferctl describe` or `inferctl destroy` first.")
    if code == 404:
        return ResourceNotFound(f"Not found: {what} ({msg}).")
    if code == 401:
        return PermissionDenied(f"Not authenticated for {what}; set up Application Default Credentials "
                                "(GOOGLE_APPLICATION_CREDENTIALS or a Google Cloud runtime).")
    return CloudError(f"Google Cloud refused {what}: {msg}")


def translate(exc: BaseException, what: str) -> CloudError:
    """A CloudError for a google.api_core / google.auth exception (anything else: a generic CloudError)."""
    if isinstance(exc, CloudError):
        return exc
    reason = ""
    code: int | None = getattr(exc, "code", None)
    if not isinstance(code, int):  # gRPC-style enums carry the HTTP code elsewhere
        code = None
    reason = getattr(exc, "reason", None) or ""
    message = getattr(exc, "message", None) or str(exc)
    try:
        import google.auth.exceptions

        if isinstance(exc, google.auth.exceptions.DefaultCredentialsError):
            return PermissionDenied(f"No Google credentials for {what}; set GOOGLE_APPLICATION_CREDENTIALS to a "
                                    "service account key or run on Google Cloud (a dry run needs none).")
    except ImportError:  # pragma: no cover - google-auth is a dependency
        pass
    metadata = getattr(exc, "metadata", None)
    service = metadata.get("service") if isinstance(metadata, dict) else None  # from google.rpc.ErrorInfo
    return classify(code, str(message), str(reason), what=what, service=service)
