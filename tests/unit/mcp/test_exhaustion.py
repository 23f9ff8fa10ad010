"""The MCP server cannot be exhausted: grids are bounded by their cost, long simulations stop when their call
ends (time limit or cancellation), and concurrent calls never collide on a run id."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from tests.unit.mcp.conftest import client, text

from inferctl.mcp import tools_runs

pytestmark = pytest.mark.anyio

# ~70,000 simulated requests: seconds of CPU, well inside the cost bound.
LONG = {"model": "gemma-4-12b", "quant": "w4a16", "accelerator": "l4", "concurrencies": [2**i for i in range(12)],
        "contexts": [512, 2048, 8192, 16384], "output_tokens": 512}
SMALL = {"model": "gemma-4-12b", "quant": "w4a16", "concurrencies": [1, 8], "contexts": [128], "output_tokens": 32}


def runs(isolated) -> list[dict]:
    root = Path(isolated) / "home"
    return [json.loads(p.read_text()) for p in sorted(root.rglob("meta.json"))]


async def wait_until_ended(isolated, seconds: float = 10.0) -> dict:
    with anyio.fail_after(seconds):
        while True:
            metas = runs(isolated)
            if metas and metas[-1]["status"] != "running":
                return metas[-1]
            await anyio.sleep(0.05)


async def test_a_huge_grid_is_refused_at_once_with_the_limit_and_the_tool_words(isolated):
    t0 = time.monotonic()
    async with client() as c:
        r = await c.call_tool("simulate_sweep", {"model": "gemma-4-12b", "concurrencies": [1_000_000],
                                                 "contexts": [100_000]})
    assert r.is_error
    msg = text(r)
    assert "too large to simulate" in msg and "1,000,000 requests" in msg and "2,000,000,000 tokens" in msg
    assert "concurrencies" in msg and "contexts" in msg and "output_tokens" in msg and "--" not in msg
    assert time.monotonic() - t0 < 10
    assert runs(isolated) == []  # refused before anything was written


async def test_a_simulation_over_its_time_limit_stops_itself(isolated, monkeypatch):
    monkeypatch.setattr(tools_runs, "SIMULATE_DEADLINE_S", 0.5)
    async with client() as c:
        r = await c.call_tool("simulate_sweep", LONG)
        answered = time.time()
    assert r.is_error and "simulate_sweep did not finish within" in text(r)
    meta = await wait_until_ended(isolated)
    assert meta["status"] == "interrupted"
    assert meta["ended_at"] - answered < 1.0  # the work ended with the call, not seconds later


async def test_a_cancelled_simulation_stops_consuming_cpu(isolated):
    # What a client time-out or cancellation does to the tool: its task is cancelled.
    with anyio.move_on_after(0.5) as scope:
        await tools_runs.simulate_sweep(**LONG)
    assert scope.cancelled_caught
    cancelled = time.time()
    meta = await wait_until_ended(isolated)
    assert meta["status"] == "interrupted"  # without the stop it finishes 'complete' seconds later
    assert meta["ended_at"] - cancelled < 1.0


async def test_four_identical_simulations_at_once_all_succeed(isolated):
    results = [None] * 4
    async with client() as c:
        async def call(i: int) -> None:
            results[i] = await c.call_tool("simulate_sweep", SMALL)

        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(call, i)
    assert all(not r.is_error for r in results), [text(r) for r in results if r.is_error]
    ids = {r.structured_content["run_id"] for r in results}
    assert len(ids) == 4
    assert [m["status"] for m in runs(isolated)] == ["complete"] * 4
