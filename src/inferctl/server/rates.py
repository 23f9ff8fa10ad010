"""Two snapshots of one vLLM server's /metrics -> what happened in between.

Counters only ever grow while a server lives, so the difference of two scrapes divided by the time
between them is a rate. A restart resets them; we detect it (a counter went down, or the `_created`
timestamps moved) and then count from zero, as Prometheus' ``rate()`` does. Histograms are
subtracted bucket by bucket, so interval means and percentiles describe only the requests observed in
the interval.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.server.histogram import HistogramSummary, subtract
from inferctl.server.metrics import COUNTERS, HISTOGRAMS, MetricsSnapshot, SpecDecodeStats, ratio

__all__ = ["MetricsRates", "delta"]


class MetricsRates(BaseModel):
    """What happened between two snapshots of the same server."""

    interval_seconds: float = Field(description="after.taken_at - before.taken_at.")
    restarted: bool = Field(
        description="The server restarted in between (a counter went down or `_created` changed). Then "
        "every counter is taken from `after` alone over the whole interval, as Prometheus' rate() "
        "does: the work done before the restart is lost, so rates are lower bounds.",
    )
    prompt_tokens_per_s: float | None = Field(default=None, description="Prompt tokens processed per second.")
    generation_tokens_per_s: float | None = Field(
        default=None, description="Output tokens generated per second."
    )
    requests_finished: float | None = Field(default=None, description="Requests finished in the interval.")
    requests_finished_per_s: float | None = Field(default=None, description="Requests finished per second.")
    finished_by_reason: dict[str, float] = Field(
        default_factory=dict, description="Requests finished in the interval, by finish reason."
    )
    preemptions_per_s: float | None = Field(default=None, description="Preemptions per second.")
    prefix_cache_hit_rate: float | None = Field(
        default=None, description="Prefix-cache hits / queries within the interval; None if no queries."
    )
    spec_decode_acceptance_rate: float | None = Field(
        default=None, description="Accepted / drafted tokens within the interval; None if nothing drafted."
    )
    spec_decode_mean_acceptance_length: float | None = Field(
        default=None, description="1 + accepted tokens / drafts within the interval; None if no drafts."
    )
    spec_decode_per_position_acceptance: list[float] = Field(
        default_factory=list, description="Accepted at position i / drafts, within the interval."
    )
    ttft: HistogramSummary | None = Field(
        default=None, description="TTFT of requests that got their first token in the interval."
    )
    itl: HistogramSummary | None = Field(
        default=None, description="Inter-token gaps observed in the interval."
    )
    tpot: HistogramSummary | None = Field(
        default=None, description="TPOT of requests finished in the interval."
    )
    e2e: HistogramSummary | None = Field(default=None, description="E2E latency of requests finished in it.")
    queue: HistogramSummary | None = Field(default=None, description="Queue time observed in the interval.")
    prefill: HistogramSummary | None = Field(
        default=None, description="Prefill time observed in the interval."
    )
    decode: HistogramSummary | None = Field(default=None, description="Decode time observed in the interval.")
    inference: HistogramSummary | None = Field(default=None, description="Running time observed in it.")


def _restarted(before: MetricsSnapshot, after: MetricsSnapshot) -> bool:
    created = (before.series_created_at, after.series_created_at)
    if all(created) and abs(created[1] - created[0]) > 1e-3:  # type: ignore[operator]
        return True
    pairs = [(getattr(before, f), getattr(after, f)) for f in (*COUNTERS, "requests_finished")]
    pairs += [
        (h.count, a.count) for f in HISTOGRAMS if (h := getattr(before, f)) and (a := getattr(after, f))
    ]
    if before.spec_decode and after.spec_decode:
        pairs.append((before.spec_decode.draft_tokens, after.spec_decode.draft_tokens))
    return any(b is not None and a is not None and a < b for b, a in pairs)


def delta(before: MetricsSnapshot, after: MetricsSnapshot) -> MetricsRates:
    """Rates and interval statistics between two snapshots of one server (``after`` taken later).

    A counter missing from either snapshot gives None. If the server restarted in between
    (``restarted``), every counter's increase is its value in ``after`` (the count since the restart),
    like Prometheus' ``rate()``; the histogram fields are then ``after``'s histograms. Raises
    ValueError if ``after`` was not taken after ``before``.
    """
    seconds = after.taken_at - before.taken_at
    if seconds <= 0:
        raise ValueError(f"after.taken_at must be later than before.taken_at (interval {seconds:g} s)")
    reset = _restarted(before, after)

    def inc(b: float | None, a: float | None) -> float | None:
        if a is None or (b is None and not reset):
            return None
        return a if reset else max(0.0, a - b)  # type: ignore[operator]

    def per_s(field: str) -> float | None:
        d = inc(getattr(before, field), getattr(after, field))
        return None if d is None else d / seconds

    finished = inc(before.requests_finished, after.requests_finished)
    by_reason = {
        r: inc(before.finished_by_reason.get(r, 0.0), v) or 0.0 for r, v in after.finished_by_reason.items()
    }
    hits = inc(before.prefix_cache_hits, after.prefix_cache_hits)
    queries = inc(before.prefix_cache_queries, after.prefix_cache_queries)

    spec: dict[str, object] = {}
    bs, as_ = before.spec_decode, after.spec_decode
    if as_ and (bs or reset):
        zero = SpecDecodeStats(drafts=0, draft_tokens=0, accepted_tokens=0)
        bs = zero if reset or bs is None else bs
        drafts = max(0.0, as_.drafts - bs.drafts)
        accepted = max(0.0, as_.accepted_tokens - bs.accepted_tokens)
        before_pos = bs.accepted_per_position + [0.0] * len(as_.accepted_per_position)
        spec = {
            "spec_decode_acceptance_rate": ratio(accepted, as_.draft_tokens - bs.draft_tokens),
            "spec_decode_mean_acceptance_length": 1 + accepted / drafts if drafts else None,
            "spec_decode_per_position_acceptance": [
                max(0.0, a - before_pos[i]) / drafts for i, a in enumerate(as_.accepted_per_position)
            ]
            if drafts
            else [],
        }

    hists: dict[str, HistogramSummary | None] = {}
    for f in HISTOGRAMS:
        b, a = getattr(before, f), getattr(after, f)
        hists[f] = a if reset else (subtract(a, b) if a is not None and b is not None else None)

    return MetricsRates(
        interval_seconds=seconds,
        restarted=reset,
        prompt_tokens_per_s=per_s("prompt_tokens"),
        generation_tokens_per_s=per_s("generation_tokens"),
        requests_finished=finished,
        requests_finished_per_s=None if finished is None else finished / seconds,
        finished_by_reason=by_reason,
        preemptions_per_s=per_s("preemptions"),
        prefix_cache_hit_rate=ratio(hits, queries),
        **spec,  # type: ignore[arg-type]
        **hists,
    )
