"""Calibration: fitting recovers the behaviour of a known hardware profile, and scores itself honestly."""

from __future__ import annotations

import json

import pytest

from inferctl.bench.spec import SweepSpec
from inferctl.errors import ConfigError
from inferctl.plan.calibrate import fit, load_params, nelder_mead, score
from inferctl.plan.cells import SimEngine, simulate_cell
from inferctl.plan.config import resolve
from inferctl.plan.perf import PerfParams, StepModel
from inferctl.profiles.serving import ServingConfig

CFG = ServingConfig(model="gemma-4-e2b", accelerator="l4", max_model_len=4096, max_num_seqs=8)
SPEC = SweepSpec(contexts=[128, 1024], concurrencies=[1, 4, 16], output_tokens=32, requests=16,
                 warmup=2).validate_grid()
TRUTH = PerfParams(bw_efficiency=0.35, compute_efficiency=0.2, step_overhead_ms=9.0, per_seq_overhead_ms=0.4,
                   request_overhead_ms=12.0, per_token_us=3.0)


def test_nelder_mead_finds_a_quadratic_minimum():
    x, fx = nelder_mead(lambda v: (v[0] - 1) ** 2 + 3 * (v[1] + 2) ** 2, [0.0, 0.0], iters=300)
    assert x == pytest.approx([1, -2], abs=1e-2) and fx < 1e-4


def test_fit_recovers_a_known_profile():
    resolved = resolve(CFG)

    def engine_for(p):
        return SimEngine(resolved, p)

    truth = engine_for(TRUTH)
    measured = [simulate_cell(truth, SPEC, c)[0] for c in SPEC.cells()]
    prior = PerfParams.prior(resolved)
    _, prior_err = score(engine_for, prior, SPEC, measured)
    fitted = fit(engine_for, SPEC, measured, prior, prior_weight=0.0)  # data only: recovers the truth
    _, err = score(engine_for, fitted, SPEC, measured)
    for metric in ("request_throughput", "output_throughput", "ttft_p50", "tpot_p50"):
        assert err[metric].mape < 5.0, (metric, err[metric], fitted)
        assert err[metric].mape <= prior_err[metric].mape
    assert prior_err["tpot_p50"].mape > 30  # the priors were far off: the fit did the work
    # With the default pull towards the priors the fit is a little biased, still far better than the priors.
    _, err_reg = score(engine_for, fit(engine_for, SPEC, measured, prior), SPEC, measured)
    for metric in ("request_throughput", "ttft_p50", "tpot_p50"):
        assert err_reg[metric].mape < min(15.0, prior_err[metric].mape), (metric, err_reg[metric])


def test_load_params_reads_calibration_output(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"params": TRUTH.model_dump()}))
    assert load_params(path) == TRUTH
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ConfigError, match="does not hold performance parameters"):
        load_params(bad)


def test_two_model_sizes_fit_the_size_curve_and_predict_a_third_size(tmp_path):
    """A profile whose efficiency grows with matrix size: one size cannot learn it, two sizes can."""
    from inferctl.local import tinymodel
    from inferctl.plan.calibrate import FitGroup, fit_groups

    sizes = {64: {}, 256: {"hidden_size": 256, "intermediate_size": 1024, "head_dim": 64, "global_head_dim": 128},
             128: {"hidden_size": 128, "intermediate_size": 512}}  # fmt: skip
    resolved = {}
    for h, over in sizes.items():
        tinymodel.build_tiny_model(tmp_path / str(h), **over)
        resolved[h] = resolve(ServingConfig(model=str(tmp_path / str(h)), accelerator="cpu", max_model_len=4096,
                                            kv_cache_memory_gib=1.0))  # fmt: skip
    spec = SweepSpec(contexts=[128, 1024], concurrencies=[1, 4], output_tokens=16, requests=8,
                     warmup=1).validate_grid()  # fmt: skip
    prior = PerfParams.prior(resolved[64])
    truth = prior.model_copy(update={"compute_efficiency": 0.4, "compute_half_hidden": 400.0})

    def group(h):
        def engine_for(p):
            return SimEngine(resolved[h], p)

        measured = [simulate_cell(engine_for(truth), spec, c)[0] for c in spec.cells()]
        return FitGroup(engine_for=engine_for, spec=spec, measured=measured, hidden_size=h)

    one = fit_groups([group(64)], prior)
    two = fit_groups([group(64), group(256)], prior)
    assert one.compute_half_hidden == 0  # one size: not fitted
    assert two.compute_half_hidden > 0
    held_out = group(128)
    _, err_one = score(held_out.engine_for, one, spec, held_out.measured)
    _, err_two = score(held_out.engine_for, two, spec, held_out.measured)
    assert err_two["request_throughput"].median_abs < 10, (err_two, err_one)
    assert err_two["request_throughput"].median_abs < err_one["request_throughput"].median_abs


def test_attention_rate_follows_head_dim_not_hidden_size(tmp_path):
    """Attention charged at its own rate: a larger hidden size with the same head dims costs no more per pair."""
    from inferctl.local import tinymodel

    shapes = {"a": {}, "d": {"hidden_size": 128, "intermediate_size": 512}}  # same head dims (32 / 64)
    steps = {}
    for name, over in shapes.items():
        tinymodel.build_tiny_model(tmp_path / name, **over)
        r = resolve(ServingConfig(model=str(tmp_path / name), accelerator="cpu", max_model_len=4096,
                                  kv_cache_memory_gib=1.0))  # fmt: skip
        base = PerfParams.prior(r).model_copy(update={"compute_half_hidden": 240.0})
        steps[name] = (StepModel(r, base), StepModel(r, base.model_copy(update={"attention_efficiency": 0.05})))
    for old, new in steps.values():
        assert new.peak == old.peak  # the matmul rate is untouched
    # Attention at the matmul rate: the same (query, key) pair costs a different time at another hidden size.
    # At its own rate: the same head dims cost the same time per pair, whatever the hidden size.
    assert steps["a"][1].attn_full / steps["a"][1].peak == pytest.approx(steps["d"][1].attn_full / steps["d"][1].peak)
    assert steps["a"][0].attn_full / steps["a"][0].peak != pytest.approx(steps["d"][0].attn_full / steps["d"][0].peak)
    # 0 (the GPU/TPU default) leaves every coefficient exactly as it was.
    assert PerfParams.prior(r).attention_cost_factor(64, 128) == 1.0


def test_two_sizes_fit_attention_rate_and_predict_a_longer_context(tmp_path):
    """A profile whose attention kernel has its own head-dim-driven rate: a two-size fit recovers enough of it to
    predict a third size at a context twice the longest fitted."""
    from inferctl.local import tinymodel
    from inferctl.plan.calibrate import FitGroup, fit_groups

    sizes = {64: {}, 256: {"hidden_size": 256, "intermediate_size": 1024, "head_dim": 64, "global_head_dim": 128},
             128: {"hidden_size": 128, "intermediate_size": 512,
                   "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2}}  # fmt: skip
    resolved = {}
    for h, over in sizes.items():
        tinymodel.build_tiny_model(tmp_path / str(h), **over)
        resolved[h] = resolve(ServingConfig(model=str(tmp_path / str(h)), accelerator="cpu", max_model_len=4096,
                                            kv_cache_memory_gib=1.0))  # fmt: skip
    fit_spec = SweepSpec(contexts=[128, 1024], concurrencies=[1, 4], output_tokens=16, requests=8,
                         warmup=1).validate_grid()  # fmt: skip
    long_spec = SweepSpec(contexts=[256, 2048], concurrencies=[1, 4], output_tokens=16, requests=8,
                          warmup=1).validate_grid()  # fmt: skip
    prior = PerfParams.prior(resolved[64])
    truth = prior.model_copy(update={"compute_efficiency": 0.06, "compute_half_hidden": 250.0,
                                     "attention_efficiency": 0.2, "attention_half_head_dim": 48.0})  # fmt: skip

    def group(h, spec):
        def engine_for(p):
            return SimEngine(resolved[h], p)

        measured = [simulate_cell(engine_for(truth), spec, c)[0] for c in spec.cells()]
        return FitGroup(engine_for=engine_for, spec=spec, measured=measured, hidden_size=h,
                        head_dims=sorted({la.head_dim for la in resolved[h].model.layers}))  # fmt: skip

    two = fit_groups([group(64, fit_spec), group(256, fit_spec)], prior)
    assert two.attention_efficiency > 0 and two.attention_half_head_dim > 0
    held_out = group(128, long_spec)
    _, err = score(held_out.engine_for, two, long_spec, held_out.measured)
    assert err["request_throughput"].median_abs < 10, (err, two)
    assert err["ttft_p50"].median_abs < 15, (err, two)
