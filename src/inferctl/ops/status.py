"""`status`: one screen about an endpoint - is it up, what does it serve, how busy is it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.config import Target
from inferctl.errors import EndpointError, MetricsParseError
from inferctl.ops.scrape import snapshot_with_rates
from inferctl.server.client import ServedModel, VLLMClient
from inferctl.server.metrics import MetricsSnapshot
from inferctl.server.rates import MetricsRates


class ServerLoad(BaseModel):
    """How busy the engine is now, and over the last interval."""

    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage: float | None = Field(default=None, description="Fraction of KV-cache blocks in use, 0..1.")
    prefix_cache_hit_rate: float | None = Field(
        default=None, description="Hits / queried tokens, over the interval when there was traffic, else lifetime."
    )
    prompt_tokens_per_s: float | None = None
    generation_tokens_per_s: float | None = None
    interval_seconds: float | None = Field(default=None, description="The interval the rates cover.")
    preemptions_total: float | None = None
    spec_decode_acceptance_rate: float | None = Field(
        default=None, description="Accepted / drafted tokens; None when speculative decoding is off."
    )
    spec_decode_mean_acceptance_length: float | None = Field(
        default=None, description="1 + accepted / drafts: tokens per step; None when off."
    )


class StatusReport(BaseModel):
    """The answer to "status" for one target."""

    target: str
    url: str
    reachable: bool
    healthy: bool = Field(description="/health answered 200.")
    health_ms: float | None = None
    version: str | None = Field(default=None, description="vLLM version from /version.")
    models: list[ServedModel] = Field(default_factory=list)
    load: ServerLoad | None = None
    not_exposed: list[str] = Field(
        default_factory=list, description="Endpoints the server does not serve (an OpenAI-compatible server that "
                                          "is not vLLM has no /metrics, /version or /tokenize).")
    problem: str | None = Field(default=None, description="What is wrong, in one sentence.")


def load_from(snap: MetricsSnapshot, rates: MetricsRates | None) -> ServerLoad:
    spec = snap.spec_decode
    load = ServerLoad(
        requests_running=snap.requests_running,
        requests_waiting=snap.requests_waiting,
        kv_cache_usage=snap.kv_cache_usage,
        prefix_cache_hit_rate=snap.prefix_cache_hit_rate,
        preemptions_total=snap.preemptions,
        spec_decode_acceptance_rate=spec.acceptance_rate if spec else None,
        spec_decode_mean_acceptance_length=spec.mean_acceptance_length if spec else None,
    )
    if rates is not None:
        load.interval_seconds = round(rates.interval_seconds, 3)
        load.prompt_tokens_per_s = rates.prompt_tokens_per_s
        load.generation_tokens_per_s = rates.generation_tokens_per_s
        if rates.prefix_cache_hit_rate is not None:
            load.prefix_cache_hit_rate = rates.prefix_cache_hit_rate
        if rates.spec_decode_acceptance_rate is not None:
            load.spec_decode_acceptance_rate = rates.spec_decode_acceptance_rate
            load.spec_decode_mean_acceptance_length = rates.spec_decode_mean_acceptance_length
    return load


async def get_status(target: Target, *, interval: float = 1.0) -> StatusReport:
    """Probe an endpoint. Never raises for endpoint failures: they become ``problem``."""
    report = StatusReport(target=target.name, url=target.display_url, reachable=False, healthy=False)
    async with VLLMClient(target) as client:
        try:
            report.health_ms = round(await client.health() * 1000, 2)
            report.reachable = report.healthy = True
        except EndpointError as exc:
            report.problem = str(exc)
            if exc.status is None:  # nothing answered at all: no point asking more
                return report
            report.reachable = True
        # Each endpoint on its own: a server that lacks one (not vLLM) still shows the others.
        try:
            report.models = await client.models()
        except EndpointError as exc:
            if exc.status == 404:
                report.not_exposed.append("/v1/models")
            else:
                report.problem = report.problem or str(exc)
        report.version = await client.version()
        if report.version is None:
            report.not_exposed.append("/version")
        try:
            snap, rates = await snapshot_with_rates(client, interval=interval)
            report.load = load_from(snap, rates)
        except EndpointError as exc:
            if exc.status == 404:
                report.not_exposed.append("/metrics")
            else:
                report.problem = report.problem or str(exc)
        except MetricsParseError as exc:
            report.problem = report.problem or str(exc)
    return report
