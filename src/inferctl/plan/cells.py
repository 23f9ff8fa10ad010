"""Simulate sweep cells: the same cells, request records and metrics a measured sweep produces.

A simulated cell runs the bench's own load (one wave of warm-up, then the measured requests, closed
loop at the cell's concurrency or open loop at its rate with the bench's arrival process) through the
scheduler simulation, turns every request into a :class:`~inferctl.bench.records.RequestRecord` and
aggregates them with the bench's own :func:`~inferctl.bench.stats.aggregate`, so TTFT, TPOT, E2E and
throughputs mean exactly what they mean for measured runs. ITL is pooled from the simulated step gaps
(records carry no per-chunk times, which keeps requests.jsonl small).
"""

from __future__ import annotations

import itertools
from functools import cached_property

from inferctl.bench.records import RequestRecord
from inferctl.bench.spec import CellSpec, SweepSpec
from inferctl.bench.stats import ClientHealth, Dist, aggregate
from inferctl.bench.store import CellResult
from inferctl.plan.config import Resolved, ServingConfig, resolve
from inferctl.plan.memory import MemoryPlan, plan_resolved
from inferctl.plan.perf import PerfParams, StepModel
from inferctl.plan.scheduler import Scheduler, SimRequest, SimStats


class SimEngine:
    """One simulated deployment: resolved config, memory plan, step model (shared by simulate, sim serve,
    calibrate)."""

    def __init__(self, cfg: ServingConfig | Resolved, params: PerfParams | None = None) -> None:
        self.resolved = cfg if isinstance(cfg, Resolved) else resolve(cfg)
        self.params = params or PerfParams.default(self.resolved)

    @cached_property
    def memory(self) -> MemoryPlan:
        return plan_resolved(self.resolved)

    @cached_property
    def step(self) -> StepModel:
        return StepModel(self.resolved, self.params)

    @cached_property
    def _blocks_cache(self) -> dict:
        return {}

    def scheduler(self) -> Scheduler:
        r = self.resolved
        return Scheduler(self.step, self.memory.kv, max_num_seqs=r.max_num_seqs,
                         max_num_batched_tokens=r.max_num_batched_tokens,
                         request_overhead_s=self.params.request_overhead_ms / 1000,
                         blocks_cache=self._blocks_cache)  # fmt: skip


def weighted_dist(segments: list[tuple[float, float]]) -> Dist:
    """A Dist (ms) of values given as (seconds, how many times) pairs: the pooled ITL."""
    segs = sorted((v * 1000.0, n) for v, n in segments if n > 0)
    total = sum(n for _, n in segs)
    if not total:
        return Dist()

    # The first value whose cumulative count reaches p% of the total, for all four p in one pass.
    targets = [p / 100 * total for p in (50, 90, 95, 99)]
    found: list[float] = []
    acc = 0.0
    for v, n in segs:
        acc += n
        while len(found) < len(targets) and acc >= targets[len(found)]:
            found.append(v)
        if len(found) == len(targets):
            break
    found += [segs[-1][0]] * (len(targets) - len(found))

    r = lambda x: round(x, 4)  # noqa: E731
    return Dist(count=int(total), mean=r(sum(v * n for v, n in segs) / total), p50=r(found[0]), p90=r(found[1]),
                p95=r(found[2]), p99=r(found[3]), min=r(segs[0][0]), max=r(segs[-1][0]))  # fmt: skip


def _load(spec: SweepSpec, cell: CellSpec) -> tuple[int, int]:
    from inferctl.bench.sweep import load_for

    load = load_for(spec, cell)
    measured = load.requests or max(20, 4 * (cell.concurrency or 1))
    return load.warmup, measured


def simulate_cell(engine: SimEngine, spec: SweepSpec, cell: CellSpec, attempt: int = 0
                  ) -> tuple[CellResult, list[RequestRecord], SimStats | None]:  # fmt: skip
    """Simulate one cell of a sweep; returns its CellResult, its records and the scheduler's stats."""
    r = engine.resolved
    warmup, measured = _load(spec, cell)
    n = warmup + measured
    out = spec.output_tokens
    if cell.context + out > r.max_model_len:
        reason = (f"context {cell.context} + {out} output tokens exceeds max_model_len {r.max_model_len}")
        recs = [RequestRecord(cell=cell.id, attempt=attempt, index=i, status="infeasible", error=reason,
                              prompt_tokens_target=cell.context) for i in range(measured)]  # fmt: skip
        res = CellResult(id=cell.id, row=cell.row, context=cell.context, concurrency=cell.concurrency, rate=cell.rate,
                         output_tokens=out, attempt=attempt, status="infeasible", reason=reason,
                         requests_planned=measured, warmup=0, metrics=aggregate(recs))  # fmt: skip
        return res, recs, None
    reqs = [SimRequest(index=i, prompt=cell.context, output=out, send=0.0) for i in range(n)]
    concurrency = cell.concurrency
    if cell.rate is not None:
        from inferctl.bench.loadgen import arrivals
        from inferctl.bench.sweep import hash_seed

        times = arrivals(cell.rate, spec.burstiness, hash_seed(spec.seed, cell.id))
        for q, t in zip(reqs, itertools.islice(times, n), strict=True):
            q.send = t
        concurrency = None
    # Open loop with --max-concurrency: a request waits client-side while the cap is in flight.
    stats = engine.scheduler().run(reqs, concurrency, cap=cell.concurrency if cell.rate is not None else None)
    records = []
    o = engine.params.request_overhead_ms / 1000  # client-visible: HTTP, tokenization, detokenization
    for q in reqs:
        if q.first_token is not None:
            q.first_token += o
        if q.end is not None:
            q.end += o
        ok = q.status == "ok" and q.end is not None
        records.append(RequestRecord(
            cell=cell.id, attempt=attempt, index=q.index, warmup=q.index < warmup,
            status="ok" if ok else "http_error", http_status=None if ok else 400,
            error="" if ok else "request cannot fit the KV cache",
            scheduled=q.scheduled, send=q.send, first_token=q.first_token if ok else None,
            end=q.end if ok else None, done=q.end if q.end is not None else q.send,
            prompt_tokens_target=cell.context, prompt_tokens=cell.context if ok else None,
            completion_tokens=out if ok else None, finish_reason="length" if ok else None,
        ))  # fmt: skip
    metrics = aggregate(records, spec.slos)
    metrics.itl = weighted_dist(stats.itl_segments)
    t0 = min((q.send for q in reqs if q.index >= warmup), default=0.0)
    res = CellResult(
        id=cell.id, row=cell.row, context=cell.context, concurrency=cell.concurrency, rate=cell.rate,
        output_tokens=out, attempt=attempt, status="complete", started_at=t0,
        ended_at=max((q.end or 0.0) for q in reqs), requests_planned=measured, warmup=warmup, metrics=metrics,
        server={"kv_cache_usage_peak": round(min(1.0, stats.max_blocks_used / max(1, engine.memory.kv.num_blocks)), 4),
                "preemptions": stats.preemptions, "max_running": stats.max_running, "engine_steps": stats.steps},
        client=ClientHealth(achieved_concurrency=_achieved(records, metrics.window_s)),
    )  # fmt: skip
    return res, records, stats


def _achieved(records: list[RequestRecord], window: float) -> float | None:
    from inferctl.bench.stats import achieved_concurrency

    return achieved_concurrency(records, window)
