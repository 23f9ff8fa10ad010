"""Settings and named targets.

A *target* says where a vLLM server is and how to authenticate to it. Resolution order for a
command (first match wins):

    --url URL               an ad-hoc target, no auth unless --token-env is given
    --target NAME           a named target from the config file
    INFERCTL_TARGET         the same, from the environment
    default_target          from the config file
    "local"                 the embedded local engine (its port comes from its state file)

A name the config file does not define is handed to the ``sources`` the caller passes (the local
engine, then deployment profiles): this module is data and imports nothing of ``local/``, ``cloud/``
or ``plan/``; ``inferctl.ops.targets`` supplies those sources and is what every face calls.

The config file is TOML at ``~/.config/inferctl/config.toml`` (``INFERCTL_CONFIG`` overrides)::

    default_target = "l4"

    [targets.l4]
    url = "https://gemma-l4-abc123-uc.a.run.app"
    auth = "google-id-token"          # none | bearer | google-id-token
    model = "gemma-4-12b"             # optional: which served model to use

    [targets.lab]
    url = "http://192.0.2.5:8000"
    auth = "bearer"
    token_env = "LAB_VLLM_TOKEN"      # the token itself never lives in the file

Secrets never live in the config file: a bearer target names the environment variable that
holds the token.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from inferctl.errors import ConfigError

LOCAL = "local"

AuthKind = Literal["none", "bearer", "google-id-token"]


class Target(BaseModel):
    """Where a vLLM server is and how to reach it."""

    name: str = Field(description="Target name ('local', a config entry, or 'url' for --url).")
    url: str = Field(description="Base URL of the OpenAI-compatible server, without /v1.")
    auth: AuthKind = "none"
    token_env: str | None = Field(
        default=None, description="Environment variable holding the bearer token (auth=bearer)."
    )
    audience: str | None = Field(
        default=None, description="ID-token audience for Cloud Run IAM (defaults to the URL)."
    )
    model: str | None = Field(default=None, description="Served model to use; default: the first served.")
    local: bool = Field(default=False, description="True for the managed local engine.")
    image: str | None = Field(default=None, description="Container image a deployment profile's server runs.")

    @field_validator("url")
    @classmethod
    def _url_has_scheme(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"target URL must start with http:// or https:// (got {value!r})")
        # A URL that cannot be split (an unclosed IPv6 bracket) or a port outside 1-65535 is refused
        # here, before any client sees it. The URL itself is not repeated: it may carry credentials.
        try:
            parts = urlsplit(value)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"target URL is not valid ({exc}); use http(s)://HOST[:PORT] with PORT 1-65535") from None
        if not parts.hostname:
            raise ValueError("target URL has no host; use http(s)://HOST[:PORT]")
        if port == 0:
            raise ValueError("target URL has port 0; use a port from 1 to 65535")
        if value.endswith("/v1"):
            value = value[: -len("/v1")]
        return value

    @property
    def display_url(self) -> str:
        """The URL to show or store: without userinfo or token-like query values (``url`` connects)."""
        from inferctl.redact import redact_url

        return redact_url(self.url)


class TargetEntry(BaseModel):
    """A target as written in the config file (the name is the table key)."""

    url: str
    auth: AuthKind = "none"
    token_env: str | None = None
    audience: str | None = None
    model: str | None = None


class Settings(BaseSettings):
    """Process-wide settings from ``INFERCTL_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="INFERCTL_", extra="ignore")

    config: Path | None = Field(default=None, description="Path of the TOML config file.")
    target: str | None = Field(default=None, description="Default target name.")
    home: Path | None = Field(
        default=None, description="Where inferctl keeps state and caches (default: user dirs)."
    )


class ConfigFile(BaseModel):
    default_target: str | None = None
    targets: dict[str, TargetEntry] = Field(default_factory=dict)


def settings() -> Settings:
    return Settings()


def config_path(s: Settings | None = None) -> Path:
    s = s or settings()
    if s.config is not None:
        return s.config
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "inferctl" / "config.toml"


def load_config(path: Path | None = None) -> ConfigFile:
    """Read the config file; a missing file is an empty config, a broken one a ConfigError."""
    path = path or config_path()
    if not path.exists():
        return ConfigFile()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}.") from None
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"Config file {path} is invalid at '{where}': {first['msg']}.") from None


def state_dir() -> Path:
    """Where runtime state lives (the local engine's state file and logs)."""
    s = settings()
    if s.home is not None:
        return s.home / "state"
    from platformdirs import user_state_dir

    return Path(user_state_dir("inferctl"))


def cache_dir() -> Path:
    """Where built artifacts live (the tiny local checkpoint)."""
    s = settings()
    if s.home is not None:
        return s.home / "cache"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("inferctl"))


def data_dir() -> Path:
    """Where results live (benchmark run directories)."""
    s = settings()
    if s.home is not None:
        return s.home / "data"
    from platformdirs import user_data_dir

    return Path(user_data_dir("inferctl"))


TargetSource = Callable[[str], "Target | None"]
"""Resolves a target name the config file does not define (``local``, a deployment profile), or says None."""


def resolve_target(
    name: str | None = None,
    url: str | None = None,
    *,
    model: str | None = None,
    token_env: str | None = None,
    sources: Sequence[TargetSource],
) -> Target:
    """Turn the --target / --url flags into a Target (see the module docstring for the order).

    ``sources`` are asked in order for a name that is not in the config file; the first answer wins.
    Faces call ``inferctl.ops.targets.resolve_target``, which passes the local engine and deployment profiles.
    """
    try:
        if url:
            auth: AuthKind = "bearer" if token_env else "none"
            return Target(name="url", url=url, auth=auth, token_env=token_env, model=model)
        s = settings()
        cfg = load_config(config_path(s))
        chosen = name or s.target or cfg.default_target or LOCAL
        if chosen in cfg.targets:
            entry = cfg.targets[chosen]
            target = Target(name=chosen, **entry.model_dump())
        else:
            found = next((t for t in (source(chosen) for source in sources) if t is not None), None)
            if found is None:
                known = ", ".join(sorted([LOCAL, *cfg.targets])) or LOCAL
                raise ConfigError(f"Unknown target '{chosen}'; known targets: {known}, or a deployment profile "
                                  "(`inferctl profiles list`).")
            target = found
    except ValidationError as exc:
        msg = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise ConfigError(f"Invalid target: {msg}.") from None
    if model:
        target = target.model_copy(update={"model": model})
    if token_env:
        target = target.model_copy(update={"auth": "bearer", "token_env": token_env})
    return target


def configured_targets() -> list[Target]:
    """Every named target in the config file (``ops.targets.list_targets`` puts the local engine first)."""
    cfg = load_config()
    return [Target(name=n, **e.model_dump()) for n, e in sorted(cfg.targets.items())]
