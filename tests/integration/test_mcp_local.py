"""The seed users' session, through MCP, on the real local engine: status, model details, memory layout,
metrics, query with stats, logs and their analysis, a background benchmark, its report, a comparison and cost.

One in-process client (mcp's ``Client(server)``) drives the same server ``inferctl mcp`` runs."""

from __future__ import annotations

import anyio
import pytest
from tests.integration.conftest import MAX_MODEL_LEN, SERVED_MODEL_NAME, inferctl_home

from inferctl.mcp.policy import Policy
from inferctl.mcp.server import build_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def home(local_engine, local_engine_home, tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("INFERCTL_TARGET", raising=False)
    with inferctl_home(local_engine_home):
        yield local_engine


def text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def call(c, name: str, args: dict | None = None) -> dict:
    result = await c.call_tool(name, args or {})
    assert not result.is_error, f"{name}: {text(result)}"
    return result.structured_content


async def test_observe_the_local_engine(home):
    from mcp.client import Client

    async with Client(build_server(Policy())) as c:
        targets = await call(c, "list_targets")
        assert targets["local_engine"]["status"] == "running" and targets["local_engine"]["url"] == home.url

        status = await call(c, "get_status", {"target": "local"})
        assert status["healthy"] and status["models"][0]["id"] == SERVED_MODEL_NAME

        health = await call(c, "verify_health")
        assert health["healthy"] and health["completion_tokens"] > 0

        info = await call(c, "get_model_info")
        assert info["models"]["models"][0]["max_model_len"] == MAX_MODEL_LEN
        assert "--max-model-len" in info["models"]["engine_args"]
        layout = info["memory"]["layout"]
        assert layout["kv_cache_tokens"] > 0 and info["memory"]["kv_cache_tokens_agree"] is True

        answer = await call(c, "query_model", {"prompt": "What is Gemma?", "max_tokens": 16})
        assert answer["completion_tokens"] > 0 and answer["ttft_ms"] > 0 and answer["model"] == SERVED_MODEL_NAME

        metrics = await call(c, "get_metrics")
        assert metrics["snapshot"]["generation_tokens"] >= answer["completion_tokens"]

        logs = await call(c, "fetch_logs", {"target": "local", "limit": 20})
        assert logs["source"] == "file" and logs["location"] == home.log_path and logs["records"]

        analysis = await call(c, "analyze_logs", {"target": "local", "limit": 200})
        assert analysis["lines_read"] > 0 and (analysis["summary"] or analysis["note"])


async def test_benchmark_report_compare_and_cost(home):
    from mcp.client import Client

    async with Client(build_server(Policy(allow_write=True))) as c:
        started = await call(c, "start_benchmark", {"target": "local", "concurrencies": [1, 2], "contexts": [32],
                                                    "output_tokens": 8, "requests_per_cell": 4})
        run_id = started["run_id"]
        assert run_id, started
        with anyio.fail_after(300):
            status = started
            while status["status"] not in ("complete", "failed", "interrupted"):
                status = await call(c, "get_benchmark_status", {"run_id": run_id, "wait_seconds": 20})
        assert status["status"] == "complete", status
        assert [cell["status"] for cell in status["cells"]] == ["complete", "complete"]
        assert all(cell["ttft_p50_ms"] > 0 and cell["ok"] >= 4 for cell in status["cells"])

        report = await call(c, "get_run_report", {"run_id": run_id, "write_html": False})
        assert report["findings"]["rows"][0]["context"] == 32

        # "Which hardware?": the measured laptop run against a predicted L4 run of the same grid.
        sim = await call(c, "simulate_sweep", {"model": "gemma-4-12b", "quant": "w4a16", "accelerator": "l4",
                                               "concurrencies": [1, 2], "contexts": [32], "output_tokens": 8})
        compared = await call(c, "compare_runs", {"run_ids": [run_id, sim["run_id"]],
                                                  "labels": ["cpu-measured", "l4-predicted"]})
        assert compared["comparison"]["cells"]

        cost = await call(c, "estimate_cost", {"run_ids": [run_id], "price_per_hour": 0.5,
                                               "include_cells": True})
        assert cost["result"]["cells"]
