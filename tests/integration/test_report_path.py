"""The whole path on the real engine: quick sweep -> report -> compare -> cost, kept short."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferctl.bench.spec import SweepSpec
from inferctl.cli.app import app
from inferctl.config import Target
from inferctl.ops import bench as ops


def test_sweep_report_compare_cost(local_engine, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    target = Target(name="url", url=local_engine.url)
    ids = []
    for out in (16, 32):  # two configurations of the workload: compare must match their cells
        spec = SweepSpec(contexts=[64, 256], concurrencies=[1, 2], output_tokens=out, requests=4, warmup=1)
        ids.append(asyncio.run(ops.sweep(target, spec.validate_grid(), root=tmp_path)).run_id)

    r = CliRunner().invoke(app, ["report", ids[0], "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert Path(rep["html"]).stat().st_size > 3_000_000 and len(rep["charts"]) >= 3
    kinds = {f["kind"] for f in rep["findings"]["findings"]}
    assert {"saturation", "slo_capacity", "operating_range"} <= kinds
    assert {row["context"] for row in rep["findings"]["rows"]} == {64, 256}

    r = CliRunner().invoke(app, ["compare", *ids, "-l", "out16", "-l", "out32", "--json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.stdout)["comparison"]
    assert len(cmp["cells"]) == 4 and cmp["config_differences"]["grid.output_tokens"] == ["16", "32"]
    # 32 output tokens per request vs 16: each request carries twice the tokens, so tokens per request double
    for c in cmp["cells"]:
        rps, tps = c["values"]["request_throughput"], c["values"]["output_throughput"]
        assert tps[0] / rps[0] == pytest.approx(16, rel=1e-3) and tps[1] / rps[1] == pytest.approx(32, rel=1e-3)

    r = CliRunner().invoke(app, ["cost", ids[0], "--hardware", "cloudrun-l4", "--json"])
    assert r.exit_code == 0, r.output
    cost = json.loads(r.stdout)
    cell = cost["cells"][0]
    assert cell["usd_per_million_requests"] * cell["request_throughput"] * 3600 / 1e6 == pytest.approx(
        cost["hardware"]["usd_per_hour"], rel=1e-3)
