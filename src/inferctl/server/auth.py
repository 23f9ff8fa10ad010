"""Authentication headers for a target.

- ``none``: no header.
- ``bearer``: ``Authorization: Bearer <token>`` with the token read from the environment variable
  the target names. The token is never stored, printed or logged.
- ``google-id-token``: a Google ID token minted with google-auth for the target's audience (Cloud
  Run IAM). Uses Application Default Credentials (a service account key via
  GOOGLE_APPLICATION_CREDENTIALS, or the metadata server); never shells out to gcloud.
"""

from __future__ import annotations

import os

from inferctl.config import Target
from inferctl.errors import AuthFailed, ConfigError


class Redacted(str):
    """A str whose repr never shows the value (in case a header dict ends up in a log)."""

    def __repr__(self) -> str:
        return "'<redacted>'"


def auth_headers(target: Target) -> dict[str, str]:
    """The headers that authenticate requests to ``target``."""
    if target.auth == "none":
        return {}
    if target.auth == "bearer":
        if not target.token_env:
            raise ConfigError(f"Target '{target.name}' uses auth=bearer but names no token_env variable.")
        token = os.environ.get(target.token_env, "").strip()
        if not token:
            raise ConfigError(
                f"Target '{target.name}' needs a bearer token in ${target.token_env}, which is empty or unset."
            )
        return {"Authorization": Redacted(f"Bearer {token}")}
    return {"Authorization": Redacted(f"Bearer {google_id_token(target.audience or target.url)}")}


def google_id_token(audience: str) -> str:
    """Mint an ID token for ``audience`` from Application Default Credentials."""
    try:
        import google.auth.exceptions
        import google.auth.transport.requests
        import google.oauth2.id_token
    except ImportError:
        raise ConfigError(
            "auth=google-id-token needs google-auth; install it with `pip install 'inferctl[gcp]'`."
        ) from None
    try:
        request = google.auth.transport.requests.Request()
        return google.oauth2.id_token.fetch_id_token(request, audience)
    except google.auth.exceptions.GoogleAuthError as exc:
        raise AuthFailed(
            f"Could not mint a Google ID token for {audience} ({type(exc).__name__}); set "
            "GOOGLE_APPLICATION_CREDENTIALS to a service account key or run on Google Cloud.",
            url=audience,
        ) from None
