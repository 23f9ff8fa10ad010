"""Scraping /metrics, and remembering the last scrape per target so rates need no waiting.

`status` shows token throughput "since the previous scrape". The previous snapshot is kept in the
state directory, one file per target URL. When there is none, or it is older than
``MAX_PREVIOUS_AGE`` (rates over hours say little about now), we scrape twice ``interval`` apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

from pydantic import ValidationError

from inferctl.config import state_dir
from inferctl.server.client import VLLMClient
from inferctl.server.metrics import MetricsSnapshot, parse_metrics
from inferctl.server.rates import MetricsRates, delta

MAX_PREVIOUS_AGE = 600.0


async def snapshot(client: VLLMClient) -> MetricsSnapshot:
    text = await client.metrics_text()
    return parse_metrics(text, taken_at=time.time(), model_name=client.target.model)


def _previous_path(url: str) -> Path:
    return state_dir() / "scrapes" / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".json")


def load_previous(url: str) -> MetricsSnapshot | None:
    path = _previous_path(url)
    try:
        return MetricsSnapshot.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None  # a missing or stale-format file only costs us one extra scrape


def save_latest(url: str, snap: MetricsSnapshot) -> None:
    path = _previous_path(url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(snap.model_dump_json(), encoding="utf-8")
    except OSError:
        pass  # remembering is a convenience; never fail a read-only command over it


async def snapshot_with_rates(
    client: VLLMClient, *, interval: float = 1.0
) -> tuple[MetricsSnapshot, MetricsRates | None]:
    """The current snapshot and rates since the previous scrape (or over ``interval`` seconds)."""
    prev = load_previous(client.url)
    now = await snapshot(client)
    if (prev is None or now.taken_at - prev.taken_at > MAX_PREVIOUS_AGE
            or now.taken_at <= prev.taken_at) and interval > 0:
        await asyncio.sleep(interval)
        prev, now = now, await snapshot(client)
    save_latest(client.url, now)
    if prev is None or now.taken_at <= prev.taken_at:
        return now, None
    return now, delta(prev, now)
