"""The server's own view of a cell: /metrics before, during and after it.

Counters come from two snapshots (``server.rates.delta``); peaks of gauges (KV-cache usage, running
and waiting requests) from polling /metrics about once a second while the cell runs. A server
without /metrics (or not vLLM) yields ``ServerCellStats(available=False)``: the benchmark goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from pydantic import BaseModel, Field

from inferctl.bench.agreement import ServerP50, server_p50
from inferctl.errors import InferctlError
from inferctl.server.client import VLLMClient
from inferctl.server.metrics import MetricsSnapshot, parse_metrics
from inferctl.server.rates import delta

POLL_SECONDS = 1.0


class ServerCellStats(BaseModel):
    """What the server's /metrics said about one cell (deltas between the before and after scrape)."""

    available: bool = Field(default=False, description="False when /metrics could not be read.")
    interval_s: float | None = None
    restarted: bool = Field(default=False, description="The server restarted during the cell.")
    requests_finished: float | None = Field(default=None, description="Requests the server finished.")
    finished_by_reason: dict[str, float] = Field(default_factory=dict)
    prompt_tokens: float | None = Field(default=None, description="Prefill tokens the server processed.")
    generation_tokens: float | None = Field(default=None, description="Output tokens the server generated.")
    preemptions: float | None = None
    prefix_cache_hit_rate: float | None = None
    spec_decode_acceptance_rate: float | None = None
    spec_decode_mean_acceptance_length: float | None = None
    kv_cache_usage_peak: float | None = Field(default=None, description="Highest KV-cache usage seen (0..1).")
    requests_running_peak: float | None = None
    requests_waiting_peak: float | None = Field(default=None, description="Deepest server queue seen.")
    server_ttft_p50_ms: float | None = None
    server_queue_p50_ms: float | None = None
    latency_p50: dict[str, ServerP50] = Field(
        default_factory=dict, description="ttft/tpot/itl/e2e/queue: the server's median and its histogram bucket.")


class ServerMonitor:
    """Snapshot /metrics around a cell and poll its gauges while the cell runs."""

    def __init__(self, client: VLLMClient, model: str | None = None, poll: float = POLL_SECONDS) -> None:
        self.client = client
        self.model = model
        self.poll = poll
        self.before: MetricsSnapshot | None = None
        self.after: MetricsSnapshot | None = None
        self.peaks: dict[str, float] = {}
        self._task: asyncio.Task | None = None
        self._stop = asyncio.Event()

    async def _snap(self) -> MetricsSnapshot | None:
        try:
            text = await self.client.metrics_text()
            return parse_metrics(text, taken_at=time.time(), model_name=None)
        except InferctlError:
            return None

    def _note(self, snap: MetricsSnapshot) -> None:
        for key, value in (("kv", snap.kv_cache_usage_max), ("running", snap.requests_running),
                           ("waiting", snap.requests_waiting)):
            if value is not None:
                self.peaks[key] = max(self.peaks.get(key, 0.0), value)

    async def _poller(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.poll)
            snap = await self._snap()
            if snap is not None:
                self._note(snap)

    async def start(self) -> None:
        self.before = await self._snap()
        if self.before is not None:
            self._task = asyncio.create_task(self._poller())

    async def stop(self) -> ServerCellStats:
        self._stop.set()
        if self._task is not None:
            await self._task
        self.after = await self._snap()
        return self.stats()

    def stats(self) -> ServerCellStats:
        b, a = self.before, self.after
        if b is None or a is None or a.taken_at <= b.taken_at:
            return ServerCellStats()
        self._note(a)
        d = delta(b, a)

        def inc(field: str) -> float | None:
            x, y = getattr(b, field), getattr(a, field)
            if y is None:
                return None
            return y if d.restarted or x is None else max(0.0, y - x)

        return ServerCellStats(
            available=True, interval_s=round(d.interval_seconds, 3), restarted=d.restarted,
            requests_finished=d.requests_finished, finished_by_reason=d.finished_by_reason,
            prompt_tokens=inc("prompt_tokens"), generation_tokens=inc("generation_tokens"),
            preemptions=inc("preemptions"), prefix_cache_hit_rate=d.prefix_cache_hit_rate,
            spec_decode_acceptance_rate=d.spec_decode_acceptance_rate,
            spec_decode_mean_acceptance_length=d.spec_decode_mean_acceptance_length,
            kv_cache_usage_peak=self.peaks.get("kv"), requests_running_peak=self.peaks.get("running"),
            requests_waiting_peak=self.peaks.get("waiting"),
            server_ttft_p50_ms=_p50_ms(d.ttft), server_queue_p50_ms=_p50_ms(d.queue),
            latency_p50={k: p for k in ("ttft", "tpot", "itl", "e2e", "queue")
                         if (p := server_p50(getattr(d, k))) is not None},
        )

    def raw(self) -> list[dict[str, Any]]:
        """The before/after snapshots for server_metrics.jsonl."""
        out = []
        for phase, snap in (("before", self.before), ("after", self.after)):
            if snap is not None:
                out.append({"phase": phase, "snapshot": snap.model_dump(mode="json", exclude_none=True)})
        return out


def _p50_ms(h: Any) -> float | None:
    if h is None:
        return None
    for name in ("p50", "median"):
        v = getattr(h, name, None)
        if v is not None:
            return round(v * 1000.0, 3)
    return None
