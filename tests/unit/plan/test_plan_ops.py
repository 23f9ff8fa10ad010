"""plan / simulate use cases and their command-line faces."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir
from inferctl.cli.app import app
from inferctl.ops.plan import plan
from inferctl.ops.simulate import simulate
from inferctl.profiles.serving import ServingConfig

runner = CliRunner()


def test_12b_bf16_on_l4_does_not_fit_and_says_what_would():
    report = plan(ServingConfig(model="gemma-4-12b", accelerator="l4", max_model_len=32768))
    assert not report.fits and "weights" in report.memory.reason
    flags = [s.flags for s in report.suggestions]
    assert "--quant w4a16" in flags and "--count 2 --tp 2" in flags
    assert not report.performance  # no speed for a configuration that cannot start


def test_12b_qat_on_l4_fits_with_kv_concurrency_speed_and_cost():
    report = plan(ServingConfig(model="gemma-4-12b", accelerator="l4", quant="w4a16", max_model_len=32768,
                                price_per_device_hour=0.71))
    assert report.fits and not report.suggestions
    assert 4 < report.memory.kv.max_concurrency < 6  # 10 GiB of KV at 2,117 MiB per 32k request
    one, many = report.performance
    assert one.concurrency == 1 and many.concurrency > 1
    assert many.output_throughput > 3 * one.output_throughput
    assert many.cost_per_million_output_tokens < one.cost_per_million_output_tokens


def test_long_context_that_does_not_fit_suggests_shorter_max_model_len():
    # 0.9 GiB of KV cannot hold one 128k request of the 12B (5,701 blocks of 1 MiB needed)
    report = plan(ServingConfig(model="gemma-4-12b", accelerator="l4", quant="w4a16", max_model_len=131072,
                                kv_cache_memory_gib=0.9))
    assert not report.fits and "cannot hold one request" in report.memory.reason
    lens = [s for s in report.suggestions if s.flags.startswith("--max-model-len")]
    assert lens and lens[0].max_concurrency >= 1
    shorter = int(lens[0].flags.split()[-1])
    assert 1024 < shorter < 131072


def test_simulate_writes_a_run_directory_reports_can_read(tmp_path):
    spec = SweepSpec(contexts=[128, 1024], concurrencies=[1, 8], output_tokens=32).validate_grid()
    summary = simulate(ServingConfig(model="gemma-4-e4b", accelerator="tpu-v6e", max_model_len=4096), spec,
                       root=tmp_path, write_requests=True)
    run = RunDir.open(summary.path)
    meta = run.read_meta()
    assert meta.source == "simulated" and meta.status == "complete"
    assert meta.engine["serving_config"]["accelerator"] == "tpu-v6e"
    cells = run.cells()
    assert [c.id for c in cells] == [c.id for c in spec.cells()]
    for c in cells:
        assert c.status == "complete" and c.metrics.ok == c.requests_planned
        assert c.metrics.ttft.p50 > 0 and c.metrics.tpot.p50 > 0 and c.metrics.itl.count > 0
    assert sum(1 for _ in run.requests()) == sum(c.metrics.requests + c.warmup for c in cells)
    assert (run.path / "cells.csv").read_text().startswith("cell,context")


def test_infeasible_cells_are_marked_not_simulated(tmp_path):
    spec = SweepSpec(contexts=[4000], concurrencies=[1], output_tokens=200).validate_grid()
    summary = simulate(ServingConfig(model="gemma-4-e2b", accelerator="l4", max_model_len=4096), spec, root=tmp_path)
    assert summary.cells[0].status == "infeasible" and summary.cells_infeasible == 1


def test_cli_plan_json_has_fits_and_exit_code():
    r = runner.invoke(app, ["plan", "gemma-4-12b", "--accelerator", "l4", "--max-model-len", "32768", "--json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data["fits"] is False and data["suggestions"]
    r = runner.invoke(app, ["plan", "gemma-4-12b", "--accelerator", "l4", "--quant", "w4a16", "--max-model-len",
                            "32768", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["fits"] is True


def test_cli_unknown_names_are_one_line_errors():
    r = runner.invoke(app, ["plan", "llama-9"])
    assert r.exit_code == 2 and "Unknown model 'llama-9'" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["plan", "gemma-4-12b", "--accelerator", "b300"])
    assert r.exit_code == 2 and "tpu-v6e" in r.output
    r = runner.invoke(app, ["plan", "gemma-4-12b", "--speculative", "eagle:3"])
    assert r.exit_code == 2 and "METHOD" in r.output


def test_cli_simulate_quiet_prints_the_run(tmp_path):
    r = runner.invoke(app, ["simulate", "gemma-4-e2b", "--accelerator", "l4", "--max-model-len", "4096",
                            "--concurrency", "1,2", "--context", "128", "--output-tokens", "16",
                            "--runs-dir", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    assert RunDir.open(r.stdout.strip()).read_meta().source == "simulated"
