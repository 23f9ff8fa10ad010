"""`models`: what is served, and the engine configuration visible from outside."""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from inferctl.config import Target
from inferctl.errors import MetricsParseError, NotVLLM
from inferctl.server.client import ServedModel, VLLMClient
from inferctl.server.metrics import CacheConfigInfo, parse_metrics


class ModelsReport(BaseModel):
    target: str
    url: str
    version: str | None = Field(default=None, description="vLLM version from /version.")
    models: list[ServedModel]
    cache_config: CacheConfigInfo | None = Field(
        default=None, description="The engine's KV-cache configuration (vllm:cache_config_info)."
    )
    speculative_decoding: bool = Field(
        default=False, description="True when the engine exports spec-decode counters."
    )
    engine_args: list[str] | None = Field(
        default=None, description="The exact engine command line (local engine only)."
    )


async def list_models(target: Target) -> ModelsReport:
    """/v1/models, /version and cache_config_info from /metrics; raises EndpointError when unreachable."""
    async with VLLMClient(target) as client:
        models = await client.models()
        version = await client.version()
        cache_config, spec = None, False
        try:
            snap = parse_metrics(await client.metrics_text(), taken_at=time.time())
            cache_config, spec = snap.cache_config, snap.spec_decode is not None
        except (NotVLLM, MetricsParseError):
            pass  # an OpenAI-compatible server without vLLM metrics still has models to list
    engine_args = None
    if target.local:
        from inferctl.local.state import read_state

        state = read_state()
        engine_args = state.argv if state else None
    return ModelsReport(target=target.name, url=target.display_url, version=version, models=models,
                        cache_config=cache_config, speculative_decoding=spec, engine_args=engine_args)
