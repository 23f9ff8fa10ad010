"""Where a command acts: target resolution for every face.

``config.resolve_target`` knows the flags, the environment and the config file; a name the file does not
define is asked of two sources that live above the data layer: the local engine (its port is in
``local/state.py``'s state file) and then a deployment profile (``cloud/discovery.py`` asks Google Cloud where
it runs). A config-file target with the same name wins over both.
"""

from __future__ import annotations

from inferctl.config import LOCAL, Target, configured_targets
from inferctl.config import resolve_target as _resolve


def resolve_target(
    name: str | None = None,
    url: str | None = None,
    *,
    model: str | None = None,
    token_env: str | None = None,
) -> Target:
    """Turn the --target / --url flags into a Target: --url > --target > INFERCTL_TARGET > default_target > local."""
    return _resolve(name, url, model=model, token_env=token_env, sources=(_local, _profile))


def list_targets() -> list[Target]:
    """The local target plus every named target in the config file."""
    return [_local_target(), *configured_targets()]


def _local_target() -> Target:
    from inferctl.local.state import local_url

    return Target(name=LOCAL, url=local_url(), local=True)


def _local(name: str) -> Target | None:
    return _local_target() if name == LOCAL else None


def _profile(name: str) -> Target | None:
    """A deployment profile: ask Google Cloud where it runs (blocking; google libraries load only here)."""
    from inferctl.profiles.profile import is_profile

    if not is_profile(name):
        return None
    from inferctl.cloud.discovery import profile_target

    return profile_target(name)
