"""`memory`: the KV-cache / memory layout, read from the engine's startup log.

Only the log says how much memory the weights took and how much went to the KV cache; /metrics
says the resulting capacity (cache_config_info). When both are available we report both, and
whether they agree — the log line and the gauge come from the same engine computation.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.config import Target
from inferctl.errors import ConfigError, EndpointError, LocalEngineError, MetricsParseError
from inferctl.server.client import VLLMClient
from inferctl.server.logs import MemoryLayout, parse_startup_log
from inferctl.server.metrics import CacheConfigInfo, parse_metrics

MAX_LOG_BYTES = 64 * 2**20  # a long-lived engine's log can grow; the startup we want is near its end anyway


class MemoryReport(BaseModel):
    target: str | None = Field(default=None, description="Target name, when a target was asked.")
    source: str = Field(description="The log file read, or 'unavailable'.")
    log_available: bool
    layout: MemoryLayout | None = Field(default=None, description="What the startup log says.")
    server_cache_config: CacheConfigInfo | None = Field(
        default=None, description="cache_config_info from /metrics, when the target answered."
    )
    kv_cache_tokens_agree: bool | None = Field(
        default=None, description="The log's KV cache size in tokens equals the server's gauge."
    )
    note: str | None = Field(default=None, description="What could not be shown, and why.")


def read_log(path: Path) -> str:
    if path.is_dir():
        raise ConfigError(f"The log to read is a directory ({path.resolve()}); name a vLLM log file.")
    if not path.is_file():
        raise ConfigError(f"Log file {path} does not exist.")
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - MAX_LOG_BYTES))
        return fh.read().decode("utf-8", "replace")


async def _cache_config(target: Target) -> CacheConfigInfo | None:
    try:
        async with VLLMClient(target) as client:
            return parse_metrics(await client.metrics_text(), taken_at=time.time()).cache_config
    except (EndpointError, MetricsParseError):
        return None


async def memory_layout(target: Target | None, *, log_path: Path | None = None) -> MemoryReport:
    """The layout from ``log_path``, or from the local engine's own log; remote targets have none."""
    name = target.name if target else None
    if log_path is None and target is not None and target.local:
        from inferctl.local.state import read_state

        state = read_state()
        if state is None:
            raise LocalEngineError("The local engine has not been started; run `inferctl local up`.")
        log_path = Path(state.log_path)
    server = await _cache_config(target) if target is not None else None
    if log_path is None:
        assert target is not None
        return MemoryReport(
            target=name, source="unavailable", log_available=False, server_cache_config=server,
            note=(f"The memory layout comes from the engine's startup log, which {target.display_url} does not serve "
                  "over HTTP (CLI: pass --log FILE with a saved log). "
                  + ("The KV capacity below is from /metrics." if server else "")).strip(),
        )
    layout = parse_startup_log(read_log(log_path))
    report = MemoryReport(target=name, source=str(log_path), log_available=True, layout=layout,
                          server_cache_config=server)
    if not layout.found_any:
        report.note = f"No vLLM startup lines found in {log_path}; is it a vLLM log?"
    elif server is not None and server.kv_cache_size_tokens is not None and layout.kv_cache_tokens is not None:
        report.kv_cache_tokens_agree = server.kv_cache_size_tokens == layout.kv_cache_tokens
    return report
