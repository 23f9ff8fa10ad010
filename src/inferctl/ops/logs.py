"""`logs`: recent log lines of a target — Cloud Logging for a deployed profile, the log file for `local`.

Which logs a target has:

    deployment profile    Cloud Logging, filtered to its Cloud Run service / VM / TPU node
    local (the default)   the local engine's own log file (from its state file)
    --log FILE            any saved vLLM log
    a plain URL target    none reachable over HTTP: pass --log FILE
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.cloud.logging import LogRecord
from inferctl.errors import ConfigError, LocalEngineError


class LogsResult(BaseModel):
    """Log lines, oldest first, and where they came from."""

    target: str | None = Field(default=None, description="Target / profile name, when one was used.")
    source: Literal["cloud-logging", "file"] = Field(description="Cloud Logging or a log file.")
    location: str = Field(description="The Cloud Logging filter, or the file path.")
    records: list[LogRecord] = Field(description="Log lines, oldest first.")


def _default_target_name() -> str:
    from inferctl.config import LOCAL, config_path, load_config, settings

    s = settings()
    return s.target or load_config(config_path(s)).default_target or LOCAL


async def fetch_logs(target: str | None = None, *, since: str = "1h", severity: str | None = None,
                     limit: int = 200, log_path: Path | None = None, project: str | None = None) -> LogsResult:
    """The last ``limit`` lines of the target's logs (see the module docstring for which logs)."""
    from inferctl.cloud.logging import normalise_severity, parse_since, read_local_logs
    from inferctl.profiles.profile import is_profile, load_profile

    sev = normalise_severity(severity)
    since_s = parse_since(since)
    if limit <= 0:
        raise ConfigError("--limit must be positive.")
    if log_path is not None:
        return LogsResult(target=target, source="file", location=str(log_path),
                          records=read_local_logs(log_path, severity=sev, limit=limit))
    name = target or _default_target_name()
    from inferctl.config import LOCAL, config_path, load_config

    if name in load_config(config_path()).targets:
        raise ConfigError(f"Target '{name}' is a plain URL with no log access; use a deployment profile or 'local' "
                          "(CLI: or pass --log FILE with a saved log).")
    if name == LOCAL:
        from inferctl.local.state import read_state

        state = read_state()
        if state is None:
            raise LocalEngineError("The local engine has not been started, so it has no log yet; start it with "
                                   "`inferctl local up` or the manage_local_engine tool (CLI: or pass --log FILE).")
        path = Path(state.log_path)
        return LogsResult(target=name, source="file", location=str(path),
                          records=read_local_logs(path, severity=sev, limit=limit))
    if not is_profile(name):
        raise ConfigError(f"Unknown target '{name}'; logs come from a deployment profile or `local` (CLI: or --log "
                          "FILE).")
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.logging import fetch_cloud_logs

    profile = load_profile(name)
    if project:
        profile = profile.model_copy(update={"project": project})
    profile = profile.with_project()
    flt, records = await fetch_cloud_logs(CloudContext(profile.project or ""), profile, since_s=since_s,
                                          severity=sev, limit=limit)
    return LogsResult(target=name, source="cloud-logging", location=flt, records=records)
