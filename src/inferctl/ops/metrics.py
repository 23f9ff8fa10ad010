"""`metrics`: the parsed /metrics summary, the raw text, or live rates."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from pydantic import BaseModel

from inferctl.config import Target
from inferctl.ops.scrape import save_latest, snapshot
from inferctl.server.client import VLLMClient
from inferctl.server.metrics import MetricsSnapshot
from inferctl.server.rates import MetricsRates, delta


class MetricsReport(BaseModel):
    target: str
    url: str
    snapshot: MetricsSnapshot
    rates: MetricsRates | None = None


async def get_metrics(target: Target) -> MetricsReport:
    async with VLLMClient(target) as client:
        snap = await snapshot(client)
    save_latest(target.display_url, snap)
    return MetricsReport(target=target.name, url=target.display_url, snapshot=snap)


async def raw_metrics(target: Target) -> str:
    async with VLLMClient(target) as client:
        return await client.metrics_text()


async def watch_metrics(target: Target, interval: float) -> AsyncIterator[MetricsReport]:
    """Yield a report with rates over each ``interval`` until cancelled."""
    async with VLLMClient(target) as client:
        prev = await snapshot(client)
        while True:
            deadline = prev.taken_at + interval
            await asyncio.sleep(max(0.0, deadline - time.time()))
            now = await snapshot(client)
            yield MetricsReport(target=target.name, url=target.display_url, snapshot=now, rates=delta(prev, now))
            prev = now
