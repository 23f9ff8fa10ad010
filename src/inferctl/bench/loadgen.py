"""The load generator: drive one cell, closed loop or open loop, and record every request.

- **Closed loop** (``rate=None``): ``concurrency`` workers, each sends its next request as soon as
  its previous one ends. The scheduled time of a request is the moment its worker became free.
- **Open loop** (``rate=R``): arrivals at R requests/s with gamma-distributed gaps (shape =
  burstiness; 1 is Poisson), precomputed from the seed. ``concurrency`` optionally caps requests
  in flight; the wait for a slot is the request's queue wait, reported, never hidden in TTFT.

A cell runs ``warmup`` requests first (recorded, flagged, excluded from the metrics), then until
both minimums are met: ``requests`` measured requests issued and ``duration`` seconds elapsed.
Requests in flight at the end are awaited, so every issued request ends as exactly one record.

Errors are values: a transport returns a status, and nothing here raises for a request failure.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from inferctl.bench.records import RequestRecord
from inferctl.bench.transport import Transport
from inferctl.bench.workload import PromptSet

LOOP_TICK = 0.01


@dataclass
class LoadSpec:
    """How to load one cell."""

    concurrency: int | None = 1
    rate: float | None = None
    burstiness: float = 1.0
    requests: int | None = None
    duration: float | None = None
    warmup: int = 0
    seed: int = 0
    # Stop issuing when the cell is clearly failing: at least this many errors and error rate > 90%.
    abort_errors: int = 50

    def __post_init__(self) -> None:
        if self.requests is None and self.duration is None:
            self.requests = 1
        if self.rate is None and not self.concurrency:
            self.concurrency = 1


class LiveStats:
    """Counters the progress display reads from another thread (plain ints and a deque: GIL-safe)."""

    def __init__(self) -> None:
        self.issued = 0
        self.done = 0
        self.ok = 0
        self.errors = 0
        self.measured_done = 0
        self.measure_start: float | None = None
        self.ttfts: deque[float] = deque(maxlen=512)
        self.planned: int | None = None

    def add(self, rec: RequestRecord, now: float) -> None:
        self.done += 1
        if rec.status == "ok":
            self.ok += 1
            if rec.first_token is not None:
                self.ttfts.append(rec.first_token - rec.send)
        else:
            self.errors += 1
        if not rec.warmup:
            self.measured_done += 1

    def req_per_s(self, now: float) -> float:
        if self.measure_start is None or now <= self.measure_start:
            return 0.0
        return self.measured_done / (now - self.measure_start)

    def p50_ttft_ms(self) -> float | None:
        vals = sorted(self.ttfts)
        return vals[len(vals) // 2] * 1000.0 if vals else None


@dataclass
class CellRun:
    """What one run of a cell produced, besides the records already handed to the sink."""

    records: list[RequestRecord] = field(default_factory=list)
    t0: float = 0.0
    wall_start: float = 0.0
    elapsed: float = 0.0
    cpu_seconds: float = 0.0
    loop_lags: list[float] = field(default_factory=list)
    aborted: str | None = None
    workers: int = 1


def arrivals(rate: float, burstiness: float, seed: int):
    """Endless arrival offsets (seconds from start): gamma gaps with mean 1/rate."""
    rng = random.Random(seed)
    shape = burstiness
    scale = 1.0 / (rate * burstiness)
    t = 0.0
    while True:
        yield t
        t += rng.gammavariate(shape, scale)


async def _loop_monitor(lags: list[float], stop: asyncio.Event) -> None:
    """Measure event-loop lag: how late a 10 ms sleep wakes up (the client's own delay)."""
    perf = time.perf_counter
    while not stop.is_set():
        t = perf()
        await asyncio.sleep(LOOP_TICK)
        lags.append(max(0.0, perf() - t - LOOP_TICK))


async def run_cell(
    transport: Transport,
    prompts: PromptSet,
    spec: LoadSpec,
    *,
    sink: Callable[[RequestRecord], None] | None = None,
    live: LiveStats | None = None,
    t0: float | None = None,
    index_stride: int = 1,
    index_offset: int = 0,
    worker: int = 0,
) -> CellRun:
    """Run one cell against ``transport``; every issued request is passed to ``sink`` as it ends.

    ``index_stride``/``index_offset`` let worker processes share one index space (worker k of n
    takes k, k+n, ...); ``t0`` lets them share one clock origin (``perf_counter`` is system-wide).
    """
    perf = time.perf_counter
    live = live or LiveStats()
    run = CellRun(workers=1)
    path = prompts.path
    cell, attempt, target_prefill = prompts.cell, prompts.attempt, prompts.target_prefill
    warmup, requests, duration = spec.warmup, spec.requests, spec.duration
    if requests is not None:
        live.planned = warmup + requests
    stop_monitor = asyncio.Event()
    monitor = asyncio.create_task(_loop_monitor(run.loop_lags, stop_monitor))
    cpu0 = time.process_time()
    run.wall_start = time.time()
    if t0 is not None:
        delay = t0 - perf()
        if delay > 0:
            await asyncio.sleep(delay)
    else:
        t0 = perf()
    run.t0 = t0
    state = {"issued": 0, "measure_start": None, "errors": 0, "measured_done": 0}

    def next_index(now: float) -> int | None:
        """The next request's index, or None when the cell has issued enough."""
        n = state["issued"]
        if n >= warmup:
            ms = state["measure_start"]
            if ms is None:
                ms = state["measure_start"] = now
                live.measure_start = now
            measured = n - warmup
            enough_n = requests is None or measured >= requests
            enough_t = duration is None or now - ms >= duration
            if enough_n and enough_t:
                return None
            if run.aborted is not None:
                return None
        state["issued"] = n + 1
        live.issued += 1
        return index_offset + n * index_stride

    def local_warm(index: int) -> bool:
        return (index - index_offset) // index_stride < warmup

    async def one(index: int, scheduled: float) -> None:
        body = prompts.body_bytes(index)
        r = await transport.post(path, body)
        now = perf()
        rec = RequestRecord(
            cell=cell, attempt=attempt, index=index, warmup=local_warm(index), status=r.status,
            http_status=r.http_status, error=r.error, scheduled=scheduled - t0, send=r.send_time - t0,
            first_token=None if r.first_token_time is None else r.first_token_time - t0,
            end=None if r.end_time is None else r.end_time - t0, done=now - t0,
            chunks=[c - t0 for c in r.chunk_times], prompt_tokens_target=target_prefill,
            prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens, finish_reason=r.finish_reason,
            worker=worker,
        )
        run.records.append(rec)
        live.add(rec, now)
        if rec.status != "ok" and not rec.warmup:
            state["errors"] += 1
        if not rec.warmup:
            state["measured_done"] += 1
            e, d = state["errors"], state["measured_done"]
            if e >= spec.abort_errors and e > 0.9 * d and run.aborted is None:
                run.aborted = f"stopped issuing after {e} errors in {d} requests"
        if sink is not None:
            sink(rec)

    if spec.rate is None:
        async def worker_loop() -> None:
            while True:
                now = perf()
                i = next_index(now)
                if i is None:
                    return
                await one(i, now)

        await asyncio.gather(*(worker_loop() for _ in range(spec.concurrency or 1)))
    else:
        sem = asyncio.Semaphore(spec.concurrency) if spec.concurrency else None
        tasks: set[asyncio.Task] = set()

        async def capped(i: int, scheduled: float) -> None:
            if sem is None:
                await one(i, scheduled)
                return
            async with sem:
                await one(i, scheduled)

        # Worker k of n takes arrivals k, k+n, ... of the one global schedule (same seed everywhere).
        schedule = itertools.islice(arrivals(spec.rate, spec.burstiness, spec.seed), index_offset, None, index_stride)
        for offset in schedule:
            at = t0 + offset
            delay = at - perf()
            if delay > 0:
                await asyncio.sleep(delay)
            i = next_index(max(at, perf()) if delay > 0 else perf())
            if i is None:
                break
            task = asyncio.create_task(capped(i, at))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)
    stop_monitor.set()
    await monitor
    run.elapsed = perf() - t0
    run.cpu_seconds = time.process_time() - cpu0
    return run


def default_warmup(concurrency: int | None, rate: float | None) -> int:
    """One full wave (the engine reaches steady state), at most 256 requests."""
    if rate is not None:
        return max(1, min(256, math.ceil(rate * 2)))
    return max(1, min(256, concurrency or 1))


def default_requests(concurrency: int | None, rate: float | None, min_requests: int = 20, waves: int = 4) -> int:
    """Enough measured requests that the cell is not one wave: ``waves`` × concurrency, at least 20."""
    if rate is not None:
        return max(min_requests, math.ceil(rate * 10))
    return max(min_requests, waves * (concurrency or 1))
