"""`secrets set-hf-token`: the HF token goes to Secret Manager and nowhere else."""

from __future__ import annotations

import os

from inferctl.cloud.secrets import HF_TOKEN_SECRET, SecretResult
from inferctl.errors import ConfigError


def read_token(*, from_env: str | None, stdin_text: str | None) -> bytes:
    """The token from an environment variable or stdin (never from a command-line argument)."""
    if from_env:
        value = os.environ.get(from_env, "")
        if not value.strip():
            raise ConfigError(f"${from_env} is empty or unset.")
        return value.strip().encode()
    if stdin_text is None or not stdin_text.strip():
        raise ConfigError("No token on stdin; pipe it in (`inferctl secrets set-hf-token < token.txt`) or use "
                          "--from-env HF_TOKEN.")
    return stdin_text.strip().encode()


async def set_hf_token(token: bytes, *, secret: str = HF_TOKEN_SECRET, project: str | None = None) -> SecretResult:
    """Store ``token`` as the newest version of ``secret`` (created when missing, labelled managed-by=inferctl)."""
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.secrets import set_secret
    from inferctl.profiles.profile import resolve_project

    return await set_secret(CloudContext(resolve_project(project)), secret, token)
