"""Was the client the bottleneck? Per-cell checks of the load generator's own lag.

A benchmark client that cannot keep up reports the client's limits as the server's. We measure:

- **send lag**: send − scheduled per request. Open loop: how late requests left versus the arrival
  schedule. Closed loop: the gap between a worker freeing up and its next send.
- **event-loop lag**: how late a 10 ms ticker wakes up; a busy loop also delays chunk timestamps.
- **achieved vs target concurrency** (Little's law over the window).
- **client CPU**: process CPU seconds / wall seconds, where 1.0 is one saturated core. One asyncio
  loop cannot use more than one core, so near 1.0 it is the limit, whatever the server does.

The thresholds are deliberately plain and written in the flag's reason so a reader can judge.
"""

from __future__ import annotations

from collections.abc import Sequence

from inferctl.bench.loadgen import CellRun
from inferctl.bench.records import RequestRecord
from inferctl.bench.stats import CellMetrics, ClientHealth, Dist, achieved_concurrency

CPU_LIMIT = 0.85  # fraction of one core per load-generator process
LOOP_LAG_P99_MS = 5.0
SEND_LAG_P50_MS = 2.0


def assess(run: CellRun, records: Sequence[RequestRecord], metrics: CellMetrics, *,
           concurrency: int | None, rate: float | None, cpu_fraction: float | None = None) -> ClientHealth:
    """ClientHealth of one cell, with ``client_bound`` set and the reasons spelled out."""
    measured = [r for r in records if not r.warmup and r.status != "infeasible"]
    h = ClientHealth(workers=run.workers)
    h.send_lag = Dist.of(max(0.0, r.send - r.scheduled) for r in measured)
    h.loop_lag = Dist.of(run.loop_lags)
    h.target_concurrency = float(concurrency) if concurrency else None
    h.achieved_concurrency = achieved_concurrency(records, metrics.window_s)
    if cpu_fraction is None and run.elapsed > 0:
        cpu_fraction = run.cpu_seconds / run.elapsed / max(1, run.workers)
    h.cpu_fraction = None if cpu_fraction is None else round(cpu_fraction, 3)
    reasons: list[str] = []
    if h.cpu_fraction is not None and h.cpu_fraction >= CPU_LIMIT:
        reasons.append(f"client CPU at {h.cpu_fraction:.0%} of a core per process (limit {CPU_LIMIT:.0%}); "
                       "try --workers")
    if h.loop_lag.p99 is not None and h.loop_lag.p99 > LOOP_LAG_P99_MS:
        ttft50 = metrics.ttft.p50 or 0.0
        if h.loop_lag.p99 > 0.1 * ttft50:  # only matters when it is a visible share of the TTFT
            why = f"loop lag p99 {h.loop_lag.p99:.1f} ms (TTFT p50 {ttft50:.1f} ms)"
            if h.cpu_fraction is not None and h.cpu_fraction < 0.5:
                why += f" at {h.cpu_fraction:.0%} client CPU: other processes on this host delayed it"
            reasons.append(why)
    # With a concurrency cap, waiting for a slot is expected queueing, not client lag.
    if rate is not None and not concurrency and h.send_lag.p50 is not None and h.send_lag.p50 > SEND_LAG_P50_MS:
        reasons.append(f"requests left {h.send_lag.p50:.1f} ms behind schedule at p50")
    if (concurrency and rate is None and h.achieved_concurrency is not None
            and h.achieved_concurrency < 0.5 * concurrency and h.cpu_fraction and h.cpu_fraction > 0.5):
        reasons.append(f"achieved concurrency {h.achieved_concurrency:.1f} of {concurrency} with a busy client")
    h.reasons = reasons
    h.client_bound = bool(reasons)
    return h
