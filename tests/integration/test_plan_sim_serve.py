"""A sweep by the benchmark engine (issue 3) against `sim serve` recovers the simulator's own figures.

The simulated server is a target with known ground truth: what `inferctl simulate` predicts for a cell is
what the load generator should measure against `sim serve` for the same configuration, up to HTTP and
client overhead. Real time (speed 1) on a configuration whose steps take tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import uvicorn
from tests.integration.plan_engines import free_port

from inferctl.bench.spec import SweepSpec
from inferctl.ops.bench import sweep
from inferctl.ops.targets import resolve_target
from inferctl.plan.cells import SimEngine, simulate_cell
from inferctl.profiles.serving import ServingConfig
from inferctl.sim.server import build_app

# Gemma 4 E2B on an L4: a decode step is ~26 ms, so client overhead is small next to it.
CFG = ServingConfig(model="gemma-4-e2b", accelerator="l4", max_model_len=4096)


@pytest.fixture(scope="module")
def sim_url():
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(CFG, served_model_name="sim"), host="127.0.0.1", port=port,
                                           log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "sim serve did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_bench_sweep_recovers_simulated_figures(sim_url, tmp_path):
    spec = SweepSpec(contexts=[256], concurrencies=[1, 4], output_tokens=24, requests=8, warmup=2).validate_grid()
    summary = asyncio.run(sweep(resolve_target(url=sim_url), spec, root=tmp_path))
    assert summary.cells_complete == 2
    engine = SimEngine(CFG)
    for measured in summary.cells:
        cell = next(c for c in spec.cells() if c.id == measured.id)
        predicted, _, _ = simulate_cell(engine, spec, cell)
        m, p = measured.metrics, predicted.metrics
        assert m.ok == 8 and m.completion_tokens_total == 8 * 24
        assert m.tpot.p50 == pytest.approx(p.tpot.p50, rel=0.15), measured.id
        assert m.request_throughput == pytest.approx(p.request_throughput, rel=0.2), measured.id
        assert m.ttft.p50 == pytest.approx(p.ttft.p50, rel=0.5, abs=15), measured.id
