"""Cell metrics from per-request records: one meaning per name (docs/metrics.md repeats these).

Definitions (times are the client's ``perf_counter``; token counts are the server's ``usage``):

- **TTFT**: first content chunk − send. **E2E**: last content chunk − send.
- **TPOT**: (last − first content chunk) / (completion_tokens − 1), per request; requests with
  fewer than two output tokens have none. Equals vLLM bench's TPOT and AIPerf/GuideLLM "ITL".
- **ITL**: every gap between consecutive content chunks, pooled over all requests (a chunk may
  carry several tokens, e.g. speculative decoding, so ITL is per chunk).
- **queue wait**: send − scheduled. Time a request spent in the client before it was sent (open
  loop at a concurrency cap, or a client that cannot keep up). It is not part of TTFT/E2E: a
  benchmark that hid it would flatter the server, so it is reported on its own.
- **window**: from the first measured send to the last measured end (warm-up excluded).
- **request throughput**: ok requests / window. **output throughput**: Σ completion_tokens of ok
  requests / window. **total token throughput**: Σ (prompt + completion) of ok requests / window.
- **goodput**: ok requests meeting every SLO / window (DistServe's definition).
- **achieved concurrency**: Σ (end − send) of measured requests / window (Little's law).

Percentiles interpolate linearly between closest ranks (numpy's default), so p95 of 10 values
is not simply the maximum.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError

if TYPE_CHECKING:
    from inferctl.bench.records import RequestRecord

PERCENTILES = (50, 90, 95, 99)
# no_text is not the server's fault, but such a request has no TTFT/TPOT: it is not a measurement either.
ERROR_STATUSES = ("http_error", "timeout", "connection_error", "stream_broken", "no_text")


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) of already sorted values, linear interpolation."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    if n == 1:
        return float(sorted_values[0])
    k = (n - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, n - 1)
    frac = k - lo
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac)


class Dist(BaseModel):
    """Summary of one distribution, in milliseconds."""

    count: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values_s: Iterable[float]) -> Dist:
        """Summarise values given in seconds (stored in ms)."""
        vals = sorted(v * 1000.0 for v in values_s)
        if not vals:
            return cls()
        r = lambda x: round(x, 4)  # noqa: E731 - 0.1 µs resolution is plenty
        return cls(
            count=len(vals), mean=r(sum(vals) / len(vals)),
            p50=r(percentile(vals, 50)), p90=r(percentile(vals, 90)),
            p95=r(percentile(vals, 95)), p99=r(percentile(vals, 99)),
            min=r(vals[0]), max=r(vals[-1]),
        )

    def get(self, stat: str) -> float | None:
        return getattr(self, stat)


# -- SLOs -----------------------------------------------------------------------------------

_SLO_RE = re.compile(r"^(ttft|tpot|e2e|itl)(?:_(p50|p90|p95|p99|mean))?_ms$")


class Slo(BaseModel):
    """One service-level objective: ``ttft_p95_ms=500`` = every request's TTFT ≤ 500 ms counts
    toward goodput, and the cell meets the SLO when its p95 TTFT ≤ 500 ms."""

    metric: str = Field(description="ttft | tpot | e2e | itl")
    stat: str = Field(default="p95", description="Which cell statistic the cell-level check uses.")
    limit_ms: float

    @property
    def key(self) -> str:
        return f"{self.metric}_{self.stat}_ms"


def parse_slo(text: str) -> Slo:
    """Parse ``ttft_p95_ms=500`` (or ``tpot_ms=50``, stat defaulting to p95)."""
    name, sep, value = text.partition("=")
    m = _SLO_RE.match(name.strip())
    if not sep or not m:
        raise ConfigError(
            f"Bad --slo {text!r}; use METRIC[_STAT]_ms=LIMIT with METRIC in ttft, tpot, e2e, itl and STAT in "
            "p50, p90, p95, p99, mean, e.g. --slo ttft_p95_ms=500."
        )
    try:
        limit = float(value)
    except ValueError:
        raise ConfigError(f"Bad --slo {text!r}: {value!r} is not a number of milliseconds.") from None
    return Slo(metric=m.group(1), stat=m.group(2) or "p95", limit_ms=limit)


def _request_meets(rec: RequestRecord, slos: Sequence[Slo]) -> bool:
    for slo in slos:
        lim = slo.limit_ms / 1000.0
        if slo.metric == "ttft":
            v = rec.ttft
        elif slo.metric == "tpot":
            v = rec.tpot
            if v is None:  # one output token: no decode phase to judge
                continue
        elif slo.metric == "e2e":
            v = rec.e2e
        else:
            gaps = rec.itls()
            v = max(gaps) if gaps else None
            if v is None:
                continue
        if v is None or v > lim:
            return False
    return True


# -- the cell's numbers -----------------------------------------------------------------------


class ClientHealth(BaseModel):
    """How much the client itself may have distorted the cell (see docs/metrics.md)."""

    send_lag: Dist = Field(default_factory=Dist, description="send − scheduled, ms (open loop: vs the schedule).")
    loop_lag: Dist = Field(default_factory=Dist, description="Event-loop oversleep of a 10 ms ticker, ms.")
    target_concurrency: float | None = None
    achieved_concurrency: float | None = None
    cpu_fraction: float | None = Field(default=None, description="Client CPU seconds / wall seconds (1.0 = one core).")
    workers: int = 1
    client_bound: bool = False
    reasons: list[str] = Field(default_factory=list)


class CellMetrics(BaseModel):
    """Aggregates of one cell's measured (non-warm-up) requests."""

    requests: int = 0
    ok: int = 0
    errors: int = 0
    http_error: int = 0
    timeout: int = 0
    connection_error: int = 0
    stream_broken: int = 0
    no_text: int = Field(default=0, description="Well-formed streams whose tokens carried no text (untimeable).")
    infeasible: int = 0
    warmup: int = 0
    missing_usage: int = Field(default=0, description="ok requests whose stream carried no usage (tokens unknown).")
    error_rate: float = 0.0
    window_s: float = 0.0
    request_throughput: float = 0.0
    output_throughput: float = 0.0
    total_token_throughput: float = 0.0
    goodput: float | None = None
    slo_met: bool | None = None
    prompt_tokens_mean: float | None = None
    prompt_tokens_min: int | None = None
    prompt_tokens_max: int | None = None
    completion_tokens_mean: float | None = None
    prompt_tokens_total: int = 0
    completion_tokens_total: int = 0
    ttft: Dist = Field(default_factory=Dist)
    tpot: Dist = Field(default_factory=Dist)
    itl: Dist = Field(default_factory=Dist)
    e2e: Dist = Field(default_factory=Dist)
    queue_wait: Dist = Field(default_factory=Dist)
    http_codes: dict[str, int] = Field(default_factory=dict)
    first_errors: list[str] = Field(default_factory=list, description="Up to 5 distinct error messages.")


def aggregate(records: Sequence[RequestRecord], slos: Sequence[Slo] = ()) -> CellMetrics:
    """Fold a cell's records (warm-up included; it is counted, not measured) into CellMetrics."""
    m = CellMetrics()
    measured = [r for r in records if not r.warmup]
    m.warmup = len(records) - len(measured)
    m.requests = len(measured)
    sent = [r for r in measured if r.status != "infeasible"]
    ok = [r for r in sent if r.status == "ok"]
    m.ok = len(ok)
    m.infeasible = len(measured) - len(sent)
    errors: list[str] = []
    for r in sent:
        if r.status == "ok":
            continue
        setattr(m, r.status, getattr(m, r.status) + 1)
        if r.http_status is not None and r.status == "http_error":
            m.http_codes[str(r.http_status)] = m.http_codes.get(str(r.http_status), 0) + 1
        if len(errors) < 5 and r.error and r.error not in errors:
            errors.append(r.error)
    m.errors = len(sent) - len(ok)
    m.first_errors = errors
    m.error_rate = round(m.errors / len(sent), 4) if sent else 0.0
    if not sent:
        return m
    start = min(r.send for r in sent)
    end = max((r.end if r.end is not None else r.done) for r in sent)
    window = max(end - start, 1e-9)
    m.window_s = round(window, 6)
    ptoks = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    ctoks = [r.completion_tokens for r in ok if r.completion_tokens is not None]
    m.prompt_tokens_total, m.completion_tokens_total = sum(ptoks), sum(ctoks)
    m.missing_usage = sum(1 for r in ok if r.completion_tokens is None)
    if ptoks:
        m.prompt_tokens_mean = round(sum(ptoks) / len(ptoks), 2)
        m.prompt_tokens_min, m.prompt_tokens_max = min(ptoks), max(ptoks)
    if ctoks:
        m.completion_tokens_mean = round(sum(ctoks) / len(ctoks), 2)
    m.request_throughput = round(len(ok) / window, 4)
    m.output_throughput = round(m.completion_tokens_total / window, 3)
    m.total_token_throughput = round((m.prompt_tokens_total + m.completion_tokens_total) / window, 3)
    m.ttft = Dist.of(t for r in ok if (t := r.ttft) is not None)
    m.tpot = Dist.of(t for r in ok if (t := r.tpot) is not None)
    m.e2e = Dist.of(t for r in ok if (t := r.e2e) is not None)
    m.itl = Dist.of(g for r in ok for g in r.itls())
    m.queue_wait = Dist.of(max(0.0, r.send - r.scheduled) for r in sent)
    if slos:
        good = sum(1 for r in ok if _request_meets(r, slos))
        m.goodput = round(good / window, 4)
        met = True
        for slo in slos:
            value = getattr(m, slo.metric).get(slo.stat)
            if value is None or value > slo.limit_ms:
                met = False
        m.slo_met = met
    return m


def achieved_concurrency(records: Sequence[RequestRecord], window_s: float) -> float | None:
    """Little's law over the measured window: Σ time in flight / window."""
    if window_s <= 0:
        return None
    busy = sum(r.done - r.send for r in records if not r.warmup and r.status != "infeasible")
    return round(busy / window_s, 3)
