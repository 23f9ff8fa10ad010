"""Prometheus histograms: a typed summary and percentile estimates from cumulative buckets.

vLLM exposes latencies only as bucketed histograms, so a percentile can only be *estimated*. We use the
same rule as Prometheus' ``histogram_quantile()`` so our numbers match a Grafana panel on the same data:

* rank = q x count, where count is the ``+Inf`` bucket (every observation);
* find the first bucket whose cumulative count >= rank;
* interpolate linearly between that bucket's lower bound (the previous bucket's ``le``, or 0 for the
  first bucket) and its upper bound, assuming observations are spread evenly inside the bucket;
* if the rank falls in the ``+Inf`` bucket, answer the highest finite bound (we cannot know more).

The estimate is exact only at bucket bounds; between them the error is at most the bucket's width.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, Field

QUANTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}


class HistogramBucket(BaseModel):
    le: float = Field(description="Upper bound of the bucket (inclusive), in the histogram's unit.")
    count: float = Field(description="Cumulative number of observations <= le.")


class HistogramSummary(BaseModel):
    """One histogram summed over engines (or the difference of two scrapes, see ``subtract``)."""

    count: float = Field(description="Number of observations.")
    sum: float = Field(description="Sum of all observed values, in the histogram's unit.")
    mean: float | None = Field(description="sum / count; None when count is 0.")
    p50: float | None = Field(
        description="Estimated median (linear interpolation in buckets); None if empty."
    )
    p90: float | None = Field(description="Estimated 90th percentile; None if empty.")
    p95: float | None = Field(description="Estimated 95th percentile; None if empty.")
    p99: float | None = Field(description="Estimated 99th percentile; None if empty.")
    buckets: list[HistogramBucket] = Field(
        default_factory=list,
        description="Cumulative buckets with finite bounds, ascending. The +Inf bucket is `count` "
        "(left out because JSON has no infinity).",
    )


def histogram_quantile(q: float, buckets: list[tuple[float, float]], count: float) -> float | None:
    """Estimate the q-quantile (0 <= q <= 1) like Prometheus ``histogram_quantile``.

    ``buckets`` are (upper bound, cumulative count) pairs with finite bounds in ascending order;
    ``count`` is the total (the ``+Inf`` bucket). Returns None when there are no observations.
    """
    if count <= 0 or not 0.0 <= q <= 1.0:
        return None
    rank = q * count
    prev_le, prev_count = 0.0, 0.0
    for le, cum in buckets:
        if cum >= rank:
            if le <= 0 and prev_count == 0:
                return le
            if cum == prev_count:  # an empty bucket can only be hit when rank == 0
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_count) / (cum - prev_count)
        prev_le, prev_count = le, cum
    # The rank is beyond every finite bucket: the value is somewhere above the last bound.
    return prev_le if buckets else None


def summarize(buckets: Iterable[tuple[float, float]], count: float, total: float) -> HistogramSummary:
    """Build a summary from (le, cumulative count) pairs (any order; ``+Inf`` may be included)."""
    finite: dict[float, float] = {}
    for le, cum in buckets:
        if math.isinf(le):
            count = max(count, cum)
        else:
            finite[le] = finite.get(le, 0.0) + cum
    ordered = sorted(finite.items())
    # Scrapes are not atomic and subtraction can add noise: force the cumulative counts to be
    # non-decreasing, as Prometheus does, so the interpolation never runs backwards.
    monotone: list[tuple[float, float]] = []
    running = 0.0
    for le, cum in ordered:
        running = max(running, min(cum, count))
        monotone.append((le, running))
    quantiles = {name: histogram_quantile(q, monotone, count) for name, q in QUANTILES.items()}
    return HistogramSummary(
        count=count,
        sum=total,
        mean=total / count if count > 0 else None,
        buckets=[HistogramBucket(le=le, count=c) for le, c in monotone],
        **quantiles,
    )


def subtract(after: HistogramSummary, before: HistogramSummary) -> HistogramSummary:
    """The observations made between two scrapes of the same (non-reset) histogram."""
    previous = {b.le: b.count for b in before.buckets}
    pairs = [(b.le, max(0.0, b.count - previous.get(b.le, 0.0))) for b in after.buckets]
    return summarize(pairs, max(0.0, after.count - before.count), max(0.0, after.sum - before.sum))
