"""Server-side truth next to the client's numbers: does vLLM's own histogram agree with what we measured?

vLLM times every request inside the server (``vllm:time_to_first_token_seconds``,
``vllm:request_time_per_output_token_seconds``, ``vllm:e2e_request_latency_seconds``); the load
generator times the same requests from outside. The server's numbers come as histograms, so its median
is only known to lie in one bucket: the check is whether the client's median lies in that bucket too,
give or take a small allowance for what legitimately happens outside the engine (HTTP, chat template,
detokenization: ``ALLOWANCE_MS`` or 5%). A client median above the bucket means the client (or the
network, or the API server) added time the engine did not spend: the number is the client's, not the
server's. Below it means the server counted something the client did not see (e.g. queueing before the
first byte was sent is in both; a clock or histogram error is the usual cause). Either way it is
flagged, never silently reported as the server's latency.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.bench.stats import CellMetrics
from inferctl.server.histogram import HistogramSummary

ALLOWANCE_MS = 2.0
ALLOWANCE_FRACTION = 0.05
# Client metric -> the server histogram with the same definition.
PAIRS = (("ttft", "ttft"), ("tpot", "tpot"), ("e2e", "e2e"))


class ServerP50(BaseModel):
    """The server's median of one histogram over a cell, and the bucket it is known to lie in (ms)."""

    p50_ms: float
    bucket_lo_ms: float
    bucket_hi_ms: float | None = Field(description="None: the median is above the last finite bucket.")
    count: float


class MetricAgreement(BaseModel):
    metric: str = Field(description="ttft, tpot or e2e.")
    client_p50_ms: float
    server_p50_ms: float
    server_bucket_ms: list[float | None] = Field(description="[low, high] of the bucket holding the server's p50.")
    agrees: bool
    text: str = ""


def server_p50(h: HistogramSummary | None) -> ServerP50 | None:
    """The median and its bucket bounds (ms) of a histogram delta; None when it saw nothing."""
    if h is None or h.count <= 0 or h.p50 is None:
        return None
    rank, lo = 0.5 * h.count, 0.0
    for b in h.buckets:
        if b.count >= rank:
            return ServerP50(p50_ms=round(h.p50 * 1000, 3), bucket_lo_ms=round(lo * 1000, 3),
                             bucket_hi_ms=round(b.le * 1000, 3), count=h.count)
        lo = b.le
    return ServerP50(p50_ms=round(h.p50 * 1000, 3), bucket_lo_ms=round(lo * 1000, 3), bucket_hi_ms=None,
                     count=h.count)


def compare(server: dict[str, ServerP50], metrics: CellMetrics) -> list[MetricAgreement]:
    """One row per metric both sides measured."""
    out: list[MetricAgreement] = []
    for client_name, server_name in PAIRS:
        s = server.get(server_name)
        c = getattr(metrics, client_name).p50
        if s is None or c is None:
            continue
        hi = s.bucket_hi_ms
        slack = max(ALLOWANCE_MS, ALLOWANCE_FRACTION * (hi if hi is not None else s.bucket_lo_ms))
        above = hi is not None and c > hi + slack
        below = c < s.bucket_lo_ms - slack
        text = ""
        if above:
            text = (f"client {client_name.upper()} p50 {c:.1f} ms is above the server's bucket "
                    f"({s.bucket_lo_ms:g}-{hi:g} ms): the client, network or API server added time the engine "
                    "did not spend")
        elif below:
            text = (f"client {client_name.upper()} p50 {c:.1f} ms is below the server's bucket "
                    f"({s.bucket_lo_ms:g}-{hi if hi is not None else '+Inf'} ms): the server counted time the "
                    "client did not see")
        out.append(MetricAgreement(metric=client_name, client_p50_ms=round(c, 3), server_p50_ms=s.p50_ms,
                                   server_bucket_ms=[s.bucket_lo_ms, hi], agrees=not (above or below), text=text))
    return out
