"""Cloud Logging for a deployment's service, VM or TPU; the local engine's log file for `local`.

Filters are built from the profile, never from user text (the seed pasted tool arguments into
filters and shell commands). vLLM's lines arrive as ``textPayload`` (or ``jsonPayload.message``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext, plain
from inferctl.errors import ConfigError
from inferctl.profiles.profile import Profile

Severity = Literal["DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"]
SEVERITIES = ("DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class LogRecord(BaseModel):
    """One log line."""

    timestamp: str | None = Field(default=None, description="RFC 3339 (Cloud) or 'MM-DD HH:MM:SS' (vLLM).")
    severity: str = Field(default="DEFAULT", description="Cloud Logging severity or vLLM's level.")
    text: str = Field(description="The message.")


def parse_since(value: str) -> float:
    """'90s', '30m', '1h', '2d' -> seconds; anything else is a one-sentence ConfigError."""
    m = _DURATION.match(value)
    if not m:
        raise ConfigError(f"--since must look like 30m, 1h or 2d (got {value!r}).")
    return float(m[1]) * _UNIT[m[2]]


def normalise_severity(value: str | None) -> str | None:
    if value is None:
        return None
    upper = value.upper()
    if upper == "WARN":
        upper = "WARNING"
    if upper not in SEVERITIES:
        raise ConfigError(f"--severity must be one of {', '.join(SEVERITIES)} (got {value!r}).")
    return upper


def _quote(value: str) -> str:
    # filter string literal: backslash-escape quotes so a name can never end the literal
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def log_filter(profile: Profile, *, since_s: float, severity: str | None, now: datetime | None = None) -> str:
    """The Cloud Logging filter for a profile's resource."""
    if profile.platform == "cloudrun":
        parts = ['resource.type="cloud_run_revision"', f"resource.labels.service_name={_quote(profile.resource_id)}",
                 f"resource.labels.location={_quote(profile.location)}"]
    elif profile.platform == "gce":
        parts = ['resource.type="gce_instance"',
                 f'labels."compute.googleapis.com/resource_name"={_quote(profile.resource_id)}']
    else:
        from inferctl.cloud.tpu import node_id

        parts = ['resource.type="tpu_worker"', f"resource.labels.node_id={_quote(node_id(profile))}",
                 f"resource.labels.zone={_quote(profile.location)}"]
    start = (now or datetime.now(UTC)) - timedelta(seconds=since_s)
    parts.append(f'timestamp>="{start.strftime("%Y-%m-%dT%H:%M:%SZ")}"')
    if severity:
        parts.append(f"severity>={severity}")
    return " AND ".join(parts)


def _entry_record(entry: Any) -> LogRecord:
    payload = getattr(entry, "payload", None)
    if isinstance(payload, dict):
        text = str(payload.get("message") or payload.get("textPayload") or payload)
    else:
        text = str(payload) if payload is not None else ""
    ts = getattr(entry, "timestamp", None)
    return LogRecord(timestamp=ts.isoformat() if ts else None, severity=str(getattr(entry, "severity", None)
                                                                             or "DEFAULT"), text=text.rstrip())


async def fetch_cloud_logs(ctx: CloudContext, profile: Profile, *, since_s: float, severity: str | None,
                           limit: int) -> tuple[str, list[LogRecord]]:
    """(filter used, newest ``limit`` records in time order)."""
    import google.cloud.logging

    flt = log_filter(profile, since_s=since_s, severity=severity)
    client = ctx.logging()

    def fetch() -> list[Any]:
        return list(client.list_entries(resource_names=[f"projects/{ctx.project}"], filter_=flt,
                                        order_by=google.cloud.logging.DESCENDING, page_size=min(limit, 1000),
                                        max_results=limit))

    entries = await ctx.call(plain(fetch), f"read logs of {profile.resource_id}")
    return flt, [_entry_record(e) for e in reversed(entries)]


def read_local_logs(path: Path, *, severity: str | None, limit: int, max_bytes: int = 8 * 2**20) -> list[LogRecord]:
    """The last ``limit`` lines of a vLLM log file (at or above ``severity``, when given)."""
    from inferctl.server.log_lines import split_lines

    if not path.is_file():
        raise ConfigError(f"Log file {path} does not exist.")
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - max_bytes))
        text = fh.read().decode("utf-8", "replace")
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    floor = rank.get(severity or "DEFAULT", 0)
    out = []
    for line in split_lines(text):
        level = line.level or "DEFAULT"
        if severity and rank.get(level, 0) < floor:
            continue
        out.append(LogRecord(timestamp=line.timestamp, severity=level, text=line.message))
    return out[-limit:]
