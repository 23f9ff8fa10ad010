"""A small real sweep against the local vLLM engine: the run directory agrees with itself and with
the server's own /metrics counters (requests and tokens)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from tests.integration.conftest import MAX_MODEL_LEN

from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir
from inferctl.config import Target
from inferctl.ops import bench as ops
from inferctl.server.client import VLLMClient
from inferctl.server.metrics import parse_metrics

pytestmark = pytest.mark.integration

OUT = 16


async def _snapshot(url: str):
    async with VLLMClient(Target(name="url", url=url)) as c:
        return parse_metrics(await c.metrics_text(), taken_at=time.time())


def test_small_sweep_agrees_with_server_counters(local_engine, tmp_path: Path) -> None:
    url = local_engine.url
    spec = SweepSpec(contexts=[64, 256, MAX_MODEL_LEN], concurrencies=[1, 4], output_tokens=OUT, requests=8,
                     warmup=1).validate_grid()
    before = asyncio.run(_snapshot(url))
    summary = asyncio.run(ops.sweep(Target(name="url", url=url), spec, root=tmp_path))
    after = asyncio.run(_snapshot(url))

    assert summary.status == "complete"
    assert summary.cells_complete == 4 and summary.cells_infeasible == 2
    store = RunDir(Path(summary.path))
    meta = store.read_meta()
    assert meta.model == local_engine.served_model_name and meta.max_model_len == MAX_MODEL_LEN
    assert meta.vllm_version and meta.source == "measured" and meta.format_version == 1

    counted = list(store.requests())
    every = list(store.requests(counted_only=False))
    assert len(counted) == len(every)  # nothing was interrupted, so every record counts
    for cell in store.cells():
        mine = [r for r in counted if r.cell == cell.id]
        assert cell.metrics.requests == sum(not r.warmup for r in mine)
        if cell.status == "infeasible":
            assert all(r.status == "infeasible" for r in mine)
            continue
        assert cell.metrics.ok == cell.metrics.requests == 8, cell.metrics.first_errors
        # Exact prefill: the chat template's tokens were measured and subtracted.
        assert cell.metrics.prompt_tokens_min == cell.metrics.prompt_tokens_max == cell.context
        assert cell.metrics.completion_tokens_total == 8 * OUT
        assert cell.metrics.ttft.p50 and cell.metrics.itl.count
        # Every request has a TPOT; it may be 0 when a busy API server delivers a whole answer in one
        # packet (seen on a loaded 2-core CI host): that is what the client received.
        assert cell.metrics.tpot.count == 8 and cell.metrics.tpot.min >= 0
        assert cell.server["available"]

    sent = [r for r in every if r.status != "infeasible"]
    assert all(r.status == "ok" for r in sent)
    assert after.requests_finished - before.requests_finished == len(sent)
    assert after.prompt_tokens - before.prompt_tokens == sum(r.prompt_tokens for r in sent)
    assert after.generation_tokens - before.generation_tokens == sum(r.completion_tokens for r in sent)
    # Every prompt is unique from its first token: the prefix cache must not turn cells into hits.
    if after.prefix_cache_queries and before.prefix_cache_queries is not None:
        queries = after.prefix_cache_queries - before.prefix_cache_queries
        hits = (after.prefix_cache_hits or 0) - (before.prefix_cache_hits or 0)
        assert hits <= 0.2 * queries
