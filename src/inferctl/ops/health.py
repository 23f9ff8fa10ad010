"""`health`: is the endpoint up, and does the model really answer?

/health only says the engine process is alive; a real completion round trip says the model
generates. Both are reported, with their latencies.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.config import Target
from inferctl.errors import EndpointError
from inferctl.server.client import VLLMClient

HEALTH_PROMPT = "Reply with one word: are you working?"


class HealthReport(BaseModel):
    """The answer to "is the model healthy?"."""

    target: str
    url: str
    healthy: bool = Field(description="True when /health is 200 and a completion round trip succeeded.")
    model: str | None = Field(default=None, description="The served model that was asked.")
    health_endpoint_ms: float | None = Field(default=None, description="GET /health round trip.")
    completion_ms: float | None = Field(default=None, description="End-to-end time of the test completion.")
    ttft_ms: float | None = Field(default=None, description="Time to first token of the test completion.")
    completion_tokens: int | None = None
    reply: str | None = Field(default=None, description="What the model answered (first 200 characters).")
    problem: str | None = Field(default=None, description="Why it is unhealthy, in one sentence.")


async def check_health(
    target: Target, *, model: str | None = None, max_tokens: int = 16, client: VLLMClient | None = None
) -> HealthReport:
    """Probe /health, then a short real chat completion. Never raises for endpoint failures."""
    report = HealthReport(target=target.name, url=target.display_url, healthy=False)
    own = client is None
    client = client or VLLMClient(target)
    try:
        report.health_endpoint_ms = round(await client.health() * 1000, 2)
        served = await client.resolve_model(model)
        report.model = served.id
        result = await client.chat(
            [{"role": "user", "content": HEALTH_PROMPT}], model=served.id, max_tokens=max_tokens
        )
        result.raise_for_status(target.url + "/v1/chat/completions")
        report.completion_ms = round((result.e2e or 0.0) * 1000, 2)
        report.ttft_ms = round(result.ttft * 1000, 2) if result.ttft is not None else None
        report.completion_tokens = result.completion_tokens
        report.reply = (result.reasoning + result.text)[:200]
        if not result.completion_tokens:
            report.problem = "The model answered with no tokens."
        else:
            report.healthy = True
    except EndpointError as exc:
        report.problem = str(exc)
    finally:
        if own:
            await client.aclose()
    return report
