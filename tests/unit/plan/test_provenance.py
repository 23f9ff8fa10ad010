"""Every prediction says which speed parameters it used, their measured error band, and the config reader
(issue 11.5): in the ops result, in `plan --json` / `simulate --json`, in the human output and in meta.json."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir
from inferctl.catalog import hf_config
from inferctl.catalog.accelerators import AcceleratorCalibration, ErrorBand
from inferctl.cli.app import app
from inferctl.ops.calibrate import CalibrationReport
from inferctl.ops.plan import plan
from inferctl.ops.simulate import simulate
from inferctl.plan.calibrate import MetricError, load_calibration
from inferctl.plan.cells import SimEngine
from inferctl.plan.config import ServingConfig, resolve
from inferctl.plan.perf import PerfParams
from inferctl.plan.provenance import provenance

runner = CliRunner()
QAT = ["gemma-4-12b", "--accelerator", "l4", "--quant", "w4a16", "--max-model-len", "8192"]
CFG = ServingConfig(model="gemma-4-12b", accelerator="l4", quant="w4a16", max_model_len=8192)
# No public measurement of this one is in the corpus: its priors have never been scored.
UNMEASURED = ["gemma-4-12b", "--accelerator", "rtx-pro-6000", "--quant", "w4a16", "--max-model-len", "8192"]
UNMEASURED_CFG = ServingConfig(model="gemma-4-12b", accelerator="rtx-pro-6000", quant="w4a16", max_model_len=8192)
FITTED = PerfParams(bw_efficiency=0.55, compute_efficiency=0.3, step_overhead_ms=6.0, per_seq_overhead_ms=0.05,
                    request_overhead_ms=2.0, per_token_us=1.0)  # fmt: skip


def _calibration_file(tmp_path, accelerator="l4"):
    """A calibration file in the format `inferctl calibrate` writes (its own report model)."""
    errors = {"request_throughput": MetricError(mape=9.0, median_abs=7.5, max_abs=21.0, cells=12),
              "tpot_p50": MetricError(mape=6.0, median_abs=4.0, max_abs=11.0, cells=12)}  # fmt: skip
    report = CalibrationReport(run_id="run-a", accelerator=accelerator, model="gemma-4-12b", params=FITTED,
                               prior=FITTED, errors=errors, prior_errors=errors, cells=[], cells_used=12,
                               params_path="x", heatmap_path="x", serving_config=CFG, runs=["run-a"])  # fmt: skip
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(report.model_dump(mode="json")))
    return path


def test_uncalibrated_accelerator_says_prior_and_not_measured():
    p = plan(UNMEASURED_CFG).provenance
    assert p.speed_params == "prior" and p.measurements is None and p.calibration_file is None
    assert p.error_band == {} and p.error_band_method == "not measured"  # nothing invented
    assert p.config_reader == "catalog"


def test_prior_scored_on_the_corpus_carries_its_measured_error():
    """L4's priors were scored against the public corpus (benchmarks/corpus_calibration.py): the band is theirs."""
    p = plan(CFG).provenance
    assert p.speed_params == "prior" and p.error_band_method.startswith("prior (not fitted)")
    assert p.error_band["ttft_p50"].median_abs_pct > 0


def test_plan_json_and_human_output_carry_provenance():
    r = runner.invoke(app, ["plan", *UNMEASURED, "--json"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.stdout)["provenance"]
    assert p["speed_params"] == "prior" and p["error_band"] == {} and p["config_reader"] == "catalog"
    human = runner.invoke(app, ["plan", *UNMEASURED], env={"COLUMNS": "200"})
    assert "speed parameters" in human.output and "prior" in human.output
    assert "measured error" in human.output and "not measured" in human.output
    assert "model config" in human.output and "catalog" in human.output


def test_calibration_file_gives_its_cells_and_in_sample_band(tmp_path):
    path = _calibration_file(tmp_path)
    r = runner.invoke(app, ["plan", *QAT, "--calibration", str(path), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    p = data["provenance"]
    assert p["speed_params"] == "calibration-file" and p["calibration_file"] == str(path)
    assert p["measurements"] == 12 and p["error_band_method"] == "in-sample"
    assert p["error_band"]["request_throughput"] == {"median_abs_pct": 7.5, "max_abs_pct": 21.0}
    assert set(p["error_band"]) == {"request_throughput", "tpot_p50"}  # only what was measured
    assert data["perf_params"]["bw_efficiency"] == 0.55
    assert not any("prior efficiency" in n for n in data["notes"])


def test_calibration_file_of_another_accelerator_says_so(tmp_path):
    params, source = load_calibration(_calibration_file(tmp_path, accelerator="h100"))
    p = plan(CFG, params=params, params_source=source).provenance
    assert "fitted for h100, used here for l4" in p.speed_params_detail


def test_bare_parameters_file_has_no_band(tmp_path):
    path = tmp_path / "bare.json"
    path.write_text(FITTED.model_dump_json())
    params, source = load_calibration(path)
    p = plan(CFG, params=params, params_source=source).provenance
    assert p.speed_params == "calibration-file" and p.measurements is None
    assert p.error_band == {} and p.error_band_method == "not measured"


def test_catalog_calibration_is_used_and_reported_with_its_held_out_band():
    """An accelerator whose catalog entry holds fitted parameters: they drive the simulation and the answer
    says 'calibrated from N measurements' with their held-out error."""
    r = resolve(CFG)
    cal = AcceleratorCalibration(params={"bw_efficiency": 0.5, "step_overhead_ms": 5.0}, entries=["a", "b", "c"],
                                 error=ErrorBand(method="leave-one-source-out", measurements=3, sources=["s1", "s2"],
                                                 median_abs_pct={"request_throughput": 18.0, "ttft_p50": 35.0}),
                                 date="2026-12-01")  # fmt: skip
    r = r.model_copy(update={"accelerator": r.accelerator.model_copy(update={"calibration": cal})})
    engine = SimEngine(r)
    assert engine.params.bw_efficiency == 0.5 and engine.params.step_overhead_ms == 5.0
    assert engine.params.compute_efficiency == PerfParams.prior(r).compute_efficiency  # not fitted: the prior
    p = provenance(r)
    assert p.speed_params == "calibrated" and p.measurements == 3
    assert p.error_band_method == "leave-one-source-out" and p.error_band["ttft_p50"].median_abs_pct == 35.0
    assert "3 public measurements" in p.speed_params_detail and "2 sources" in p.error_band_detail


def test_simulate_records_provenance_in_summary_and_meta(tmp_path):
    spec = SweepSpec(contexts=[128], concurrencies=[1], output_tokens=8, requests=4, warmup=0)
    summary = simulate(UNMEASURED_CFG, spec, root=tmp_path)
    assert summary.provenance.speed_params == "prior"
    meta = RunDir.open(summary.path).read_meta()
    assert meta.engine["provenance"]["error_band_method"] == "not measured"
    r = runner.invoke(app, ["simulate", *UNMEASURED, "--concurrency", "1", "--context", "128", "--output-tokens", "8",
                            "--runs-dir", str(tmp_path), "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["provenance"]["config_reader"] == "catalog"


def test_config_reader_is_reported_for_checkpoints(tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    transformers.Gemma4TextConfig(hidden_size=128, intermediate_size=256, num_attention_heads=2, vocab_size=512,
                                  num_hidden_layers=6, num_key_value_heads=1, head_dim=64,
                                  global_head_dim=64).save_pretrained(tmp_path)  # fmt: skip
    cfg = ServingConfig(model=str(tmp_path), accelerator="cpu", max_model_len=2048, kv_cache_memory_gib=1.0)
    p = plan(cfg).provenance
    assert p.config_reader == "transformers" and "AutoConfig" in p.config_reader_detail
    hf_config.transformers_version.cache_clear()
    monkeypatch.setitem(sys.modules, "transformers", None)
    try:
        p = plan(cfg).provenance
    finally:
        hf_config.transformers_version.cache_clear()
    assert p.config_reader == "json" and "not importable" in p.config_reader_detail
